//! `overlap baseline`, `check` and `diff` as a CI job uses them: every reason `check`
//! refuses to judge (exit 2), a real regression (exit 1), a pass (exit 0), on hand-built
//! two-rank traces whose figures are worked out below. No MPI run is needed.
//!
//! The balanced run (`Shape::Balanced`), times in µs, Init and Finalize outside the
//! analysed part:
//!
//! ```text
//!          0    1                 11  11.1 11.2 11.3
//! rank 0   |Init|compute 10       |Send|Barr|Fin|
//! rank 1   |Init|compute 10       |Recv|Barr|Fin|
//! ```
//! Each rank: wall 10.2, in MPI 0.2, useful 10: load balance 10/10 = 100%.
//!
//! The imbalanced run (`Shape::Imbalanced`): rank 1 computes 20 µs, rank 0 waits for it
//! in the Barrier.
//!
//! ```text
//!          0    1                 11  11.1               21  21.1 21.2 21.3
//! rank 0   |Init|compute 10       |Send|Barrier ..........  .........|Fin|
//! rank 1   |Init|compute 20                                  |Recv|Barr|Fin|
//! ```
//! Rank 0: wall 20.2, in MPI 10.2, useful 10; rank 1: useful 20. Load balance
//! mean/max = 15/20 = 75%: a drop of 25 points, far beyond 5% of 100%.

mod build;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::{overlap, Run};
use build::{events, header, run_dir, write_rank, Shape};

fn params() -> Value {
    json!({"n": 2})
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

fn baseline(trace: &Path, out: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["baseline", s(trace), "--out", s(out)];
    args.extend_from_slice(extra);
    overlap(&args)
}

fn check(trace: &Path, base: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["check", s(trace), "--baseline", s(base)];
    args.extend_from_slice(extra);
    overlap(&args)
}

fn code(r: &Run) -> Option<i32> {
    r.output.status.code()
}

/// The balanced run's directory and its baseline.
fn balanced_baseline(root: &Path) -> (PathBuf, PathBuf) {
    let dir = run_dir(root, "balanced", Shape::Balanced, 2, &params());
    let base = root.join("base.json");
    let b = baseline(&dir, &base, &[]);
    assert!(b.success(), "{}", b.describe());
    (dir, base)
}

/// Exit 2, and stderr names every needle.
fn assert_refused(r: &Run, needles: &[&str]) {
    assert_eq!(code(r), Some(2), "{}", r.describe());
    for n in needles {
        r.assert_stderr_has(n);
    }
    assert!(!r.stdout().contains("within tolerance"), "{}", r.describe());
}

#[test]
fn a_baseline_records_its_run_and_unknown_figures_as_null() {
    let root = tempfile::tempdir().expect("tempdir");
    let (_, base) = balanced_baseline(root.path());
    let b: Value =
        serde_json::from_str(&std::fs::read_to_string(&base).expect("baseline")).expect("json");
    assert_eq!(b["version"], 2);
    assert_eq!(b["program"], "gate-test");
    assert_eq!(b["params"], params());
    assert_eq!(b["world_size"], 2);
    assert_eq!(b["complete"], true);
    assert_eq!(b["tolerance_pct"], 5.0);
    // Per rank: Init, Send or Recv, Barrier, Finalize, and one compute span.
    let ranks = b["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 2);
    for (i, r) in ranks.iter().enumerate() {
        assert_eq!(r["rank"], i);
        assert_eq!(r["mpi_calls"], 4);
        assert_eq!(r["events"], 5);
        assert_eq!(r["polls"], 0);
    }
    let metric = |name: &str| {
        b["metrics"]
            .as_array()
            .expect("metrics")
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .expect(name)
    };
    // No request: no overlap figure, null, not 0.
    assert_eq!(metric("requests.mean_overlap")["value"], Value::Null);
    assert_eq!(metric("pop.load_balance")["value"], 1.0);
}

#[test]
fn same_run_passes_and_a_regression_exits_1() {
    let root = tempfile::tempdir().expect("tempdir");
    let (dir, base) = balanced_baseline(root.path());
    let ok = check(&dir, &base, &[]);
    assert_eq!(code(&ok), Some(0), "{}", ok.describe());
    ok.assert_stdout_has("within tolerance (5%)");
    // The mean overlap has no figure in the baseline: shown, not gated, not 0.
    ok.assert_stdout_has("not gated: no figure in the baseline");

    let worse = run_dir(root.path(), "imbalanced", Shape::Imbalanced, 2, &params());
    let junit = root.path().join("check.xml");
    let bad = check(&worse, &base, &["--junit", s(&junit)]);
    assert_eq!(code(&bad), Some(1), "{}", bad.describe());
    let line = bad
        .stdout()
        .lines()
        .find(|l| l.starts_with("pop.load_balance"))
        .map(str::to_string)
        .expect("a load balance row");
    assert!(
        line.contains("100.0%") && line.contains("75.0%") && line.contains("REGRESSED"),
        "{line}"
    );
    bad.assert_stdout_has("regressed beyond 5%");
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(
        xml.contains("<failure message=\"pop.load_balance regressed"),
        "{xml}"
    );
    assert!(!xml.contains("<error"), "{xml}");
    // A wider tolerance than the baseline's, given on the command line: 25 points
    // is within 30% of 100%, and the wait fraction's baseline is 0, so it still fails.
    let wide = check(&worse, &base, &["--tolerance", "30"]);
    assert_eq!(code(&wide), Some(1), "{}", wide.describe());
    wide.assert_stdout_has("regressed beyond 30%");
    let lb = wide
        .stdout()
        .lines()
        .find(|l| l.starts_with("pop.load_balance"))
        .map(str::to_string)
        .expect("a load balance row");
    assert!(lb.ends_with(" ok"), "{lb}");
}

/// The balanced run damaged four ways, under `root`: rank 1 never wrote a file; its
/// file ends early (no footer); its file is garbage; no rank has an event (header and
/// footer only).
fn damaged_runs(root: &Path) -> [PathBuf; 4] {
    let [missing, cut, garbage, empty] =
        ["missing", "cut", "garbage", "empty"].map(|name| root.join(name));
    for dir in [&missing, &cut, &garbage, &empty] {
        std::fs::create_dir(dir).expect("mkdir");
    }
    for dir in [&missing, &cut, &garbage] {
        write_rank(
            dir,
            &header(0, 2, &params()),
            &events(Shape::Balanced, 0),
            true,
        );
    }
    write_rank(
        &cut,
        &header(1, 2, &params()),
        &events(Shape::Balanced, 1),
        false,
    );
    std::fs::write(garbage.join("rank-1.json"), "not a trace\n").expect("write");
    for r in 0..2 {
        write_rank(&empty, &header(r, 2, &params()), &[], true);
    }
    [missing, cut, garbage, empty]
}

#[test]
fn incomplete_traces_exit_2_naming_the_rank() {
    let root = tempfile::tempdir().expect("tempdir");
    let (_, base) = balanced_baseline(root.path());
    let [missing, cut, garbage, empty] = damaged_runs(root.path());
    assert_refused(
        &check(&missing, &base, &[]),
        &["incomplete trace: rank 1: missing"],
    );
    assert_refused(
        &check(&cut, &base, &[]),
        &["rank 1: cut short", "rank-1.json"],
    );
    assert_refused(&check(&garbage, &base, &[]), &["rank-1.json", "unreadable"]);
    assert_refused(&check(&empty, &base, &[]), &["the trace holds no event"]);
    // Nor is a baseline made from any of them.
    let out = root.path().join("never.json");
    for dir in [&missing, &cut, &garbage, &empty] {
        let b = baseline(dir, &out, &[]);
        assert_refused(&b, &["no baseline made", "incomplete trace"]);
        assert!(!out.exists());
    }
}

/// A directory read a part of its ranks at a time (`--hold parts`) is gated as it is
/// held whole: `baseline`, `check` and `diff` print the same, exit alike and write the
/// same baseline, for a pass, a regression and every refusal above.
#[test]
fn a_run_held_in_parts_is_gated_as_held_whole() {
    let root = tempfile::tempdir().expect("tempdir");
    let (balanced, base) = balanced_baseline(root.path());
    let imbalanced = run_dir(root.path(), "imbalanced", Shape::Imbalanced, 2, &params());
    let damaged = damaged_runs(root.path());
    let same = |what: &str, run: &dyn Fn(&str) -> Run| {
        let (whole, parts) = (run("whole"), run("parts"));
        assert_eq!(code(&whole), code(&parts), "{what}: {}", parts.describe());
        assert_eq!(whole.stdout(), parts.stdout(), "{what}");
        assert_eq!(whole.stderr(), parts.stderr(), "{what}");
        code(&whole)
    };
    let mut codes = Vec::new();
    for dir in [&balanced, &imbalanced].into_iter().chain(&damaged) {
        codes.push(same(&format!("check {dir:?}"), &|hold| {
            check(dir, &base, &["--hold", hold])
        }));
        // Written to one path (which the output names), kept aside after each.
        let made = root.path().join("made.json");
        let kept = |hold: &str| root.path().join(format!("made-{hold}.json"));
        same(&format!("baseline {dir:?}"), &|hold| {
            let r = baseline(dir, &made, &["--hold", hold]);
            let _ = std::fs::rename(&made, kept(hold));
            r
        });
        let read = |hold| std::fs::read_to_string(kept(hold)).ok();
        assert_eq!(read("whole"), read("parts"), "the baseline of {dir:?}");
        for hold in ["whole", "parts"] {
            let _ = std::fs::remove_file(kept(hold));
        }
        same(&format!("diff {dir:?}"), &|hold| {
            overlap(&["diff", s(&balanced), s(dir), "--hold", hold])
        });
    }
    assert_eq!(
        codes,
        [Some(0), Some(1), Some(2), Some(2), Some(2), Some(2)]
    );
}

/// Merges `dir` into `out` with `overlap merge`.
fn merged(dir: &Path, out: &Path) -> String {
    let m = overlap(&["merge", s(dir), "--out", s(out)]);
    assert!(m.success(), "{}", m.describe());
    std::fs::read_to_string(out).expect("merged")
}

#[test]
fn damaged_or_cut_merged_files_exit_2() {
    let root = tempfile::tempdir().expect("tempdir");
    let (dir, base) = balanced_baseline(root.path());
    let whole = root.path().join("whole.json");
    let text = merged(&dir, &whole);
    let ok = check(&whole, &base, &[]);
    assert_eq!(code(&ok), Some(0), "{}", ok.describe());

    // An event line replaced by garbage.
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .rposition(|l| l.contains("\"MPI_Barrier\""))
        .expect("a barrier event");
    let mut damaged = lines.clone();
    damaged[at] = "{\"ph\": oops},";
    let bad = root.path().join("damaged.json");
    std::fs::write(&bad, damaged.join("\n")).expect("write");
    assert_refused(
        &check(&bad, &base, &[]),
        &["damaged.json", "not a valid trace event"],
    );

    // Cut in the middle of its last events (99 %).
    let cut = root.path().join("cut.json");
    std::fs::write(&cut, &text.as_bytes()[..text.len() * 99 / 100]).expect("write");
    assert_refused(&check(&cut, &base, &[]), &["cut.json"]);
}

#[test]
fn a_merged_file_cut_between_events_exits_2() {
    let root = tempfile::tempdir().expect("tempdir");
    let (dir, base) = balanced_baseline(root.path());
    let text = merged(&dir, &root.path().join("whole.json"));
    // Cut right after the line of rank 1's last call: every line left is whole.
    let at = text.rfind("\"MPI_Finalize\"").expect("a finalize");
    let end = at + text[at..].find('\n').expect("a line end") + 1;
    let cut = root.path().join("cut.json");
    std::fs::write(&cut, &text.as_bytes()[..end]).expect("write");
    assert_refused(&check(&cut, &base, &[]), &["cut"]);
}

#[test]
fn another_program_other_ranks_or_other_work_exit_2_unless_allowed() {
    let root = tempfile::tempdir().expect("tempdir");
    let (_, base) = balanced_baseline(root.path());

    let other = run_dir(root.path(), "other", Shape::Balanced, 2, &json!({"n": 3}));
    let r = check(&other, &base, &[]);
    assert_refused(
        &r,
        &[
            "gate-test {\"n\":2}",
            "gate-test {\"n\":3}",
            "--allow-different",
        ],
    );
    let r = check(&other, &base, &["--allow-different"]);
    assert_eq!(code(&r), Some(0), "{}", r.describe());
    r.assert_stderr_has("warning: the baseline was made from gate-test {\"n\":2}");
    r.assert_stdout_has("--allow-different");

    // Three ranks: another world, and rank 2 not in the baseline.
    let three = run_dir(root.path(), "three", Shape::Balanced, 3, &params());
    assert_refused(
        &check(&three, &base, &[]),
        &[
            "2 rank(s) in MPI_COMM_WORLD, this one 3",
            "only this trace has rank(s) 2",
        ],
    );

    // One more Send/Recv on each rank: 5 calls instead of 4, 25% more work.
    let more = run_dir(root.path(), "more", Shape::MoreWork, 2, &params());
    assert_refused(
        &check(&more, &base, &[]),
        &["the traced work differs", "rank 0 5 (baseline 4)"],
    );
    // Allowed: counts are compared per 1000 calls, and it says so.
    let r = check(&more, &base, &["--allow-different"]);
    assert_eq!(code(&r), Some(0), "{}", r.describe());
    r.assert_stdout_has("per 1000 MPI calls");
    r.assert_stdout_has("0.00/1k");
}

/// The baseline file as JSON, changed by `edit`, written back.
fn edit_baseline(base: &Path, edit: impl FnOnce(&mut Value)) {
    let mut b: Value =
        serde_json::from_str(&std::fs::read_to_string(base).expect("baseline")).expect("json");
    edit(&mut b);
    std::fs::write(base, serde_json::to_string_pretty(&b).expect("json")).expect("write");
}

fn set_metric(b: &mut Value, name: &str, value: Value) {
    for m in b["metrics"].as_array_mut().expect("metrics") {
        if m["name"] == name {
            m["value"] = value.clone();
        }
    }
}

#[test]
fn unusable_baselines_and_unknown_figures_exit_2() {
    let root = tempfile::tempdir().expect("tempdir");
    let (dir, base) = balanced_baseline(root.path());

    // A figure the baseline has and this trace has not (no request now).
    edit_baseline(&base, |b| {
        set_metric(b, "requests.mean_overlap", json!(0.5))
    });
    let junit = root.path().join("check.xml");
    let r = check(&dir, &base, &["--junit", s(&junit)]);
    assert_refused(&r, &["requests.mean_overlap: no figure in this trace"]);
    r.assert_stdout_has("UNKNOWN");
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(
        xml.contains("<error message=\"requests.mean_overlap"),
        "{xml}"
    );

    // At its worst (0 overlap, higher is better): it can only improve, no gate, said so.
    edit_baseline(&base, |b| {
        set_metric(b, "requests.mean_overlap", json!(0.0))
    });
    let r = check(&dir, &base, &[]);
    assert_eq!(code(&r), Some(0), "{}", r.describe());
    assert!(r
        .stdout()
        .contains("at its worst in the baseline, can only improve"));

    // No metrics.
    edit_baseline(&base, |b| b["metrics"] = json!([]));
    assert_refused(&check(&dir, &base, &[]), &["the baseline has no metrics"]);

    // Made from an incomplete trace.
    let (_, base) = {
        let sub = root.path().join("again");
        std::fs::create_dir(&sub).expect("mkdir");
        balanced_baseline(&sub)
    };
    edit_baseline(&base, |b| b["complete"] = json!(false));
    assert_refused(&check(&dir, &base, &[]), &["made from an incomplete trace"]);

    // Version 1, as overlap wrote it before.
    edit_baseline(&base, |b| b["version"] = json!(1));
    let junit = root.path().join("v1.xml");
    let r = check(&dir, &base, &["--junit", s(&junit)]);
    assert_refused(&r, &["version 1", "remake it with `overlap baseline"]);
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(
        xml.contains("<error") && xml.contains("errors=\"1\""),
        "{xml}"
    );
}

#[test]
fn tolerances_that_cannot_fail_are_refused() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = run_dir(root.path(), "balanced", Shape::Balanced, 2, &params());
    let out = root.path().join("base.json");
    // 100%: an efficiency of 100% may drop to 0, the lowest there is.
    let r = baseline(&dir, &out, &["--tolerance", "100"]);
    assert_refused(
        &r,
        &[
            "pop.load_balance: a tolerance of 100% can never fail",
            "reaches 0",
        ],
    );
    assert!(!out.exists());
    for bad in ["--tolerance=-1", "--tolerance=NaN", "--tolerance=inf"] {
        let r = baseline(&dir, &out, &[bad]);
        assert_refused(&r, &["must be a finite, non-negative percentage"]);
    }
    // Kept in the baseline, and overridden by check (refused the same way).
    let r = baseline(&dir, &out, &["--tolerance", "20"]);
    assert!(r.success(), "{}", r.describe());
    let ok = check(&dir, &out, &[]);
    ok.assert_stdout_has("within tolerance (20%)");
    assert_refused(
        &check(&dir, &out, &["--tolerance", "150"]),
        &["can never fail"],
    );
}

#[test]
fn diff_shows_unknown_not_zero() {
    let root = tempfile::tempdir().expect("tempdir");
    let a = run_dir(root.path(), "a", Shape::Balanced, 2, &params());
    let b = run_dir(root.path(), "b", Shape::Imbalanced, 2, &params());
    let d = overlap(&["diff", s(&a), s(&b)]);
    assert!(d.success(), "{}", d.describe());
    let line = d
        .stdout()
        .lines()
        .find(|l| l.starts_with("requests.mean_overlap"))
        .map(str::to_string)
        .expect("a mean overlap row");
    assert_eq!(line.matches("unknown").count(), 3, "{line}");
    let j = overlap(&["diff", s(&a), s(&b), "--json"]);
    let rows: Value = serde_json::from_str(&j.stdout()).expect("json");
    let row = rows
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["name"] == "requests.mean_overlap")
        .cloned()
        .expect("row");
    assert_eq!((&row["a"], &row["delta"]), (&Value::Null, &Value::Null));
    let lb = rows
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["name"] == "pop.load_balance")
        .cloned()
        .expect("row");
    assert_eq!(
        (lb["a"].as_f64(), lb["b"].as_f64()),
        (Some(1.0), Some(0.75))
    );
}
