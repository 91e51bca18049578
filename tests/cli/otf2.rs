//! OTF2 both ways: `overlap merge --format otf2` writes a run's rank directory as an
//! OTF2 archive that the OTF2 library's own reader (`otf2-print`) reads without an
//! error, with as many records as overlap says it wrote; and `overlap analyze` reads
//! the archive back to the very report the rank directory gives.
//!
//! The reports are compared whole, as JSON. What differs is only the paths the report
//! names (the rank directory and its files against the archive). What OTF2 cannot carry
//! is not in these runs: GPU work, and the buffer uses `overlap trace --buffers` learns
//! (both said by `merge` as not written); everything else the rank files hold, OTF2
//! carries in its own records or in overlap's attributes and properties.
//!
//! OTF2's own records alone (the archive copied by the OTF2 library's Python bindings
//! without overlap's attributes and properties, as another tool would keep it) give
//! the same verdicts: wait states (descheduled ones not told apart: OTF2 does not say
//! which CPUs a rank could run on), false overlap, messages, POP; and for nbc_rma.c
//! the one-sided ones, from OTF2's RMA records.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::trace::{program, trace, trace_with};
use crate::util::{overlap, run_false_overlap};

/// The records `otf2-print` prints, by kind (`ENTER`, `MPI_ISEND`...).
pub(crate) fn otf2_print_counts(anchor: &Path) -> BTreeMap<String, u64> {
    let out = Command::new("otf2-print")
        .arg(anchor)
        .output()
        .expect("otf2-print runs (install otf2-tools: make setup)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "otf2-print {} failed: {}",
        anchor.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(kind), Some(location)) = (words.next(), words.next()) else {
            continue;
        };
        let is_kind = kind.chars().all(|c| c.is_ascii_uppercase() || c == '_');
        if is_kind && !line.starts_with(' ') && location.parse::<u64>().is_ok() {
            *counts.entry(kind.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

/// The number just before `after` in `text` (`12 events`, `(40 OTF2 records`).
fn number_before(text: &str, after: &str) -> u64 {
    let head = text.split(after).next().unwrap_or_default();
    let word = head
        .split_whitespace()
        .last()
        .unwrap_or_default()
        .trim_start_matches('(');
    word.parse()
        .unwrap_or_else(|_| panic!("a number before {after:?} in {text}"))
}

/// `overlap analyze PATH --json`, with the paths it names replaced by `<source>`.
fn report(path: &Path, names: &[String]) -> serde_json::Value {
    let run = overlap(&["analyze", path.to_str().expect("utf-8"), "--json"]);
    assert!(
        run.success(),
        "analyze {}: {}",
        path.display(),
        run.describe()
    );
    let mut text = run.stdout();
    for n in names {
        text = text.replace(n.as_str(), "<source>");
    }
    serde_json::from_str(&text).expect("the report is JSON")
}

/// Writes the rank directory `dir` as an archive beside it and checks it both ways:
/// `otf2-print` reads it with the records `merge` counted (an `ENTER` and a `LEAVE`
/// per call and compute span), and its report is the rank directory's.
pub(crate) fn round_trip(dir: &Path) {
    let archive = dir.with_extension("otf2d");
    let merge = overlap(&[
        "merge",
        dir.to_str().expect("utf-8"),
        "--format",
        "otf2",
        "--out",
        archive.to_str().expect("utf-8"),
    ]);
    assert!(merge.success(), "{}", merge.describe());
    let anchor = archive.join("traces.otf2");
    let said = merge.stdout();
    let events = number_before(&said, " events");
    let records = number_before(&said, " OTF2 records");
    assert!(events > 0, "{said}");
    let printed = otf2_print_counts(&anchor);
    assert_eq!(
        printed.values().sum::<u64>(),
        records,
        "otf2-print reads every record written: {printed:?}"
    );
    assert_eq!(printed.get("ENTER"), Some(&events), "{printed:?}");
    assert_eq!(printed.get("LEAVE"), Some(&events), "{printed:?}");

    let d = dir.to_str().expect("utf-8").to_string();
    let mut names: Vec<String> = (0..64)
        .rev()
        .map(|r| format!("{d}/rank-{r}.ovlp"))
        .collect();
    names.push(d);
    let from_dir = report(dir, &names);
    let from_archive = report(&anchor, &[anchor.to_str().expect("utf-8").to_string()]);
    if from_dir != from_archive {
        let a = serde_json::to_string_pretty(&from_dir).unwrap_or_default();
        let b = serde_json::to_string_pretty(&from_archive).unwrap_or_default();
        let first = a
            .lines()
            .zip(b.lines())
            .position(|(x, y)| x != y)
            .unwrap_or(0);
        let around = |t: &str| {
            t.lines()
                .skip(first.saturating_sub(5))
                .take(15)
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!("the archive's report differs from the rank directory's at line {first}:\n--- rank directory\n{}\n--- archive\n{}", around(&a), around(&b));
    }
}

/// Copies an archive with OTF2's own records only: `python3 strip.py FROM TO_DIR`.
const STRIP_PY: &str = r#"# Copies an OTF2 archive with only OTF2's own records: no event attributes but
# OTF2's own SOURCE_CODE_LOCATION, no location-group properties (what another tool, or
# Vampir, would keep of it).
import sys, otf2
src, dst = sys.argv[1], sys.argv[2]
with otf2.reader.open(src) as trace:
    defs = trace.definitions
    defs._location_group_properties._elements = []
    with otf2.writer.open(dst, definitions=defs) as out:
        for location, event in trace.events:
            kept = {a: v for a, v in (event.attributes or {}).items() if a.name == "SOURCE_CODE_LOCATION"}
            event.attributes = kept or None
            out.event_writer_from_location(location)(event)
"#;

/// The verdicts of a report that do not depend on what only overlap's attributes and
/// properties say. Waits are counted with those the rank was descheduled in: OTF2 does
/// not carry the CPUs each rank could run on, so an archive of another writer cannot
/// tell descheduled waits apart (its report says the CPUs are unknown).
fn verdicts(r: &serde_json::Value) -> serde_json::Value {
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let kinds: Vec<_> = r["wait_states"]["kinds"]
        .as_array()
        .expect("kinds")
        .iter()
        .map(|k| {
            let count = n(&k["count"]) + n(&k["descheduled_count"]);
            let total = n(&k["total_ns"]) + n(&k["descheduled_ns"]);
            (k["kind"].clone(), count, total)
        })
        .collect();
    serde_json::json!({
        "wait_states": kinds,
        "false_overlap": [r["false_overlap"]["count"].clone(), r["false_overlap"]["lost_ns"].clone()],
        "messages": r["run"]["messages"].clone(),
        "events": r["run"]["events"].clone(),
        "parallel_efficiency": r["pop"]["parallel_efficiency"].clone(),
        "requests": r["requests"]["count"].clone(),
    })
}

/// The one-sided verdicts of a report: the windows' wait states (at their creation,
/// fences and freeing; Late Post, Early Wait and Late Complete, whose epochs are matched
/// by their groups and whose operations by their targets), with their worst findings,
/// and the requests of request-based operations.
fn one_sided_verdicts(r: &serde_json::Value) -> serde_json::Value {
    let windows = [
        "wait_at_create",
        "wait_at_fence",
        "wait_at_free",
        "late_post",
        "early_wait",
        "late_complete",
    ];
    let kinds: Vec<_> = r["wait_states"]["kinds"]
        .as_array()
        .expect("kinds")
        .iter()
        .filter(|k| windows.iter().any(|w| k["kind"] == *w))
        .map(|k| {
            let worst: Vec<_> = k["worst"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|w| (w["rank"].clone(), w["peer"].clone(), w["amount_ns"].clone()))
                .collect();
            (
                k["kind"].clone(),
                k["count"].clone(),
                k["total_ns"].clone(),
                worst,
            )
        })
        .collect();
    // By site: file and line (OTF2's source code locations name no function).
    let mut by_site: Vec<_> = r["by_site"]["wait_states"]
        .as_array()
        .expect("by site")
        .iter()
        .filter(|s| windows.iter().any(|w| s["kind"] == *w))
        .map(|s| {
            let site = s["site"].as_str().unwrap_or_default();
            let line = site.split_once(" (").map_or(site, |(l, _)| l).to_string();
            (
                line,
                s["call"].to_string(),
                s["kind"].to_string(),
                s["total_ns"].to_string(),
            )
        })
        .collect();
    by_site.sort();
    serde_json::json!({
        "wait_states": kinds,
        "by_site": by_site,
        "one_sided_requests": r["requests"]["one_sided"].clone(),
    })
}

/// The archive of `dir` (written by [`round_trip`]) copied without overlap's attributes
/// and properties, analysed.
fn standard_records_report(dir: &Path) -> serde_json::Value {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = tmp.path().join("strip.py");
    std::fs::write(&script, STRIP_PY).expect("write the script");
    let copy = tmp.path().join("standard");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(dir.with_extension("otf2d").join("traces.otf2"))
        .arg(&copy)
        .output()
        .expect("/usr/bin/python3 runs");
    assert!(
        out.status.success(),
        "strip.py (python3-otf2 installed? make setup): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    report(&copy.join("traces.otf2"), &[])
}

/// The archive of `dir` (written by [`round_trip`]) without overlap's attributes and
/// properties gives the rank directory's verdicts.
fn standard_records_alone(dir: &Path) {
    let standard = standard_records_report(dir);
    let from_dir = report(dir, &[]);
    assert_eq!(
        verdicts(&standard),
        verdicts(&from_dir),
        "OTF2's records alone give the verdicts"
    );
    // The calls' sites, from OTF2's source code locations: file and line (the
    // function, which OTF2's location does not name, dropped from the directory's).
    let sites = |r: &serde_json::Value, strip: bool| -> Vec<String> {
        let mut found = Vec::new();
        for w in r["requests"]["worst"].as_array().expect("worst requests") {
            for call in ["post", "completion"] {
                let site = w[call]["site"].as_str().unwrap_or("site unknown");
                let site = match site.split_once(" (") {
                    Some((line, _)) if strip => line,
                    _ => site,
                };
                found.push(site.to_string());
            }
        }
        found
    };
    let named = sites(&from_dir, true);
    assert!(
        named.iter().all(|s| s.contains(':')),
        "the run's sites are known: {named:?}"
    );
    assert_eq!(
        sites(&standard, false),
        named,
        "the sites, from OTF2's records"
    );
}

#[test]
fn test_programs_round_trip_through_otf2() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // calls.c: every point-to-point and collective form, persistent requests, Test
    // families, a communicator split; nbc_rma.c: non-blocking collectives and one-sided
    // epochs (their groups); pcontrol.c: named regions.
    for name in ["calls", "nbc_rma", "pcontrol"] {
        let out = tmp.path().join(format!("{name}.pftrace"));
        let run = trace(4, &program(name), &out);
        assert!(run.success(), "{name}: {}", run.describe());
        round_trip(&out.with_extension("ranks"));
        if name == "nbc_rma" {
            // One-sided epochs of every kind, from the RMA records alone. (The starts
            // of persistent collectives are tied to their inits by overlap's attribute
            // only: OTF2 has no record of persistent requests; so the collectives'
            // verdicts are not compared here.)
            let dir = out.with_extension("ranks");
            let standard = standard_records_report(&dir);
            assert_eq!(
                one_sided_verdicts(&standard),
                one_sided_verdicts(&report(&dir, &[])),
                "OTF2's RMA records alone give the one-sided verdicts"
            );
        }
    }
    // A bundled kernel: compute spans with the buffers they declare.
    let out = tmp.path().join("kernel.json");
    let run = run_false_overlap(4, "naive", 6, &out, &[]);
    assert!(run.success(), "{}", run.describe());
    round_trip(&out.with_extension("ranks"));
    standard_records_alone(&out.with_extension("ranks"));
}

/// More of the test programs, each a shape of its own: threads making MPI calls
/// (threads.c), a Cartesian communicator (torus.c), a halo exchange whose sends are
/// waited for early (halo.c, twins.c), Fortran with a C half (mixed), Fortran 2008
/// (ring_f08), one-sided epochs from Fortran (onesided), MPI-4's large-count calls
/// (large_count.c), request handles freed, cancelled and reused (handles.c).
#[test]
fn more_test_programs_round_trip_through_otf2() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let programs: [(&str, u32, &[&str]); 9] = [
        ("threads", 2, &[]),
        ("torus", 2, &[]),
        ("halo", 4, &["early"]),
        ("twins", 2, &["early", "64"]),
        ("mixed", 2, &[]),
        ("ring_f08", 3, &[]),
        ("onesided", 2, &[]),
        ("large_count", 2, &[]),
        ("handles", 2, &[]),
    ];
    for (name, ranks, args) in programs {
        let out = tmp.path().join(format!("{name}.pftrace"));
        let run = trace_with(ranks, &program(name), args, &[], &out);
        assert!(run.success(), "{name}: {}", run.describe());
        round_trip(&out.with_extension("ranks"));
    }
}

#[test]
fn what_otf2_cannot_hold_is_refused_or_said() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("run.json");
    let run = run_false_overlap(2, "naive", 2, &out, &[]);
    assert!(run.success(), "{}", run.describe());
    let dir = out.with_extension("ranks");
    let d = dir.to_str().expect("utf-8");
    let archive = tmp.path().join("a.otf2");
    let a = archive.to_str().expect("utf-8");
    // A part of the run: .pftrace only.
    let part = overlap(&["merge", d, "--out", a, "--from", "1ms"]);
    assert!(!part.success(), "{}", part.describe());
    part.assert_stderr_has("an OTF2 archive holds the whole run");
    // `trace` and `run` write .pftrace or .json; OTF2 comes from `merge`.
    let traced = overlap(&["run", "false-overlap", "--ranks", "2", "--out", a]);
    assert!(!traced.success(), "{}", traced.describe());
    traced.assert_stderr_has("overlap merge DIR --format otf2");
    // Named *.otf2, the archive's files go beside it; a second one there is refused.
    let first = overlap(&["merge", d, "--out", a]);
    assert!(first.success(), "{}", first.describe());
    assert!(
        archive.is_file() && tmp.path().join("a.def").is_file() && tmp.path().join("a").is_dir()
    );
    let again = overlap(&["merge", d, "--out", a]);
    assert!(!again.success(), "{}", again.describe());
    again.assert_stderr_has("an archive of that name is there already");
}

#[test]
fn what_is_no_archive_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bogus = tmp.path().join("traces.otf2");
    std::fs::write(&bogus, "not an OTF2 anchor file\n").expect("write");
    let run = overlap(&["analyze", bogus.to_str().expect("utf-8")]);
    assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
    run.assert_stderr_has(&format!("{}: ", bogus.display()));
    // The anchor without its definitions and events.
    let tmp2 = tempfile::tempdir().expect("tempdir");
    let out = tmp2.path().join("run.json");
    assert!(run_false_overlap(2, "naive", 2, &out, &[]).success());
    let archive = tmp2.path().join("arch");
    let d = out.with_extension("ranks");
    assert!(overlap(&[
        "merge",
        d.to_str().expect("utf-8"),
        "--format",
        "otf2",
        "--out",
        archive.to_str().expect("utf-8")
    ])
    .success());
    std::fs::remove_file(archive.join("traces.def")).expect("remove the definitions");
    let anchor = archive.join("traces.otf2");
    let run = overlap(&["analyze", anchor.to_str().expect("utf-8")]);
    assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
    run.assert_stderr_has(&format!("{}: ", anchor.display()));
    assert!(!run.stderr().contains("panicked"), "{}", run.describe());
}
