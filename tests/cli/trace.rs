//! `overlap trace` on unmodified C and Fortran programs (tests/programs), compiled with
//! mpicc / mpif90 and run under real `mpiexec`: the merged trace holds every call the
//! program issued, messages and requests all match, the program prints the same as
//! without tracing, and a rank that calls MPI_Abort still leaves a merged trace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use overlap_analyzer::import::read_merged;
use overlap_analyzer::model::MergedTrace;
use overlap_instrument::schema::{Event, Op};

use crate::mpis::{open_mpi, program_in, trace_in, untraced_then_traced, Launch, Mpi};
use crate::preload_calls::never_completed;
use crate::traces::counts;
use crate::util::{overlap_bin, Run};

/// tests/programs/NAME compiled with the default MPI.
pub(crate) fn program(name: &str) -> PathBuf {
    program_in(Mpi::Default, name)
}

/// `overlap trace --out OUT -- mpiexec -n RANKS PROGRAM`.
pub(crate) fn trace(ranks: u32, program: &Path, out: &Path) -> Run {
    trace_in(Mpi::Default, ranks, program, &[], &[], out)
}

/// `overlap trace --out OUT -- mpiexec -n RANKS PROGRAM ARGS...`, with `env` set.
pub(crate) fn trace_with(
    ranks: u32,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    out: &Path,
) -> Run {
    trace_in(Mpi::Default, ranks, program, args, env, out)
}

/// The counts the program reported on stderr for its polling loops, by rank.
fn reported(run: &Run) -> BTreeMap<u32, (usize, usize)> {
    run.stderr()
        .lines()
        .filter_map(|l| l.strip_prefix("issued "))
        .map(|l| {
            let field = |name: &str| -> usize {
                let v = l
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix(name))
                    .unwrap_or_else(|| panic!("{name} in {l}"));
                v.parse().expect("a count")
            };
            (
                field("rank=") as u32,
                (field("MPI_Testsome="), field("MPI_Iprobe=")),
            )
        })
        .collect()
}

/// What tests/programs/calls.c issues on `rank` (ITERS = 3), with its reported polls.
fn expected_calls(rank: u32, testsome: usize, iprobe: usize) -> BTreeMap<Op, usize> {
    let even = rank.is_multiple_of(2);
    let mut e: BTreeMap<Op, usize> = [
        (Op::Init, 1),
        (Op::Finalize, 1),
        (Op::Irecv, 5),
        (Op::Isend, 5),
        (Op::Waitall, 6),
        (Op::Waitany, 2),
        (Op::Testsome, testsome),
        (Op::RecvInit, 1),
        (Op::SendInit, 1),
        (Op::Startall, 3),
        (Op::Start, 2),
        (Op::Wait, 4),
        (Op::RequestFree, 2),
        (Op::Send, 2),
        (Op::Recv, if even { 2 } else { 3 }),
        (Op::Ssend, if even { 1 } else { 0 }),
        (Op::Probe, if even { 0 } else { 1 }),
        (Op::Iprobe, iprobe),
        (Op::Sendrecv, 1),
        (Op::SendrecvReplace, 1),
        (Op::Barrier, 2),
        (Op::Bcast, 1),
        (Op::Reduce, 2),
        (Op::Allreduce, 2),
        (Op::Allgather, 1),
        (Op::Allgatherv, 1),
        (Op::Alltoall, 1),
        (Op::Alltoallv, 1),
        (Op::Gather, 1),
        (Op::Gatherv, 1),
        (Op::Scatter, 1),
        (Op::Scatterv, 1),
        (Op::Ibarrier, 1),
        (Op::Iallreduce, 1),
        (Op::CommSplit, 1),
        (Op::CommFree, 1),
    ]
    .into_iter()
    .collect();
    e.retain(|_, n| *n > 0);
    e
}

/// calls.c on `ranks` ranks, launched by `launch`: every call issued is recorded, as
/// often as issued; messages and requests match and complete; sites and provenance.
/// Returns what of its analysis does not depend on timing ([`AnalysisShape`]).
pub(crate) fn check_calls_program(launch: &Launch, ranks: u32) -> AnalysisShape {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("calls.json");
    let (_, run) = untraced_then_traced(launch, ranks, "calls", &out);
    assert!(
        run.stdout()
            .contains(&format!("calls: {ranks} ranks, checksum")),
        "{}",
        run.describe()
    );
    let t = read_merged(&out).expect("merged trace reads back");
    assert_eq!(t.info.world_size, ranks);
    assert_eq!(t.info.program, "calls");
    let polls = reported(&run);
    let got = counts(&t);
    assert_eq!(got.len(), ranks as usize);
    for (rank, per) in &got {
        let (testsome, iprobe) = polls[rank];
        assert_eq!(
            *per,
            expected_calls(*rank, testsome, iprobe),
            "rank {rank}\n{}",
            run.describe()
        );
    }
    // Per rank: 3 ring + 1 Waitany + 1 Testsome + 4 persistent + 1 Sendrecv + 1
    // Sendrecv_replace messages, and per pair 5 blocking ones.
    assert_eq!(t.info.messages, u64::from(11 * ranks + 5 * ranks / 2));
    assert_eq!((t.info.unmatched_sends, t.info.unmatched_receives), (0, 0));
    // Every request completed: 5 Irecv, 5 Isend, 8 persistent starts (Startall thrice
    // with two requests, Start twice with one), Ibarrier and Iallreduce.
    let per_rank_requests = 5 + 5 + (3 * 2 + 2) + 2;
    assert_eq!(t.requests.len(), (per_rank_requests * ranks) as usize);
    assert_eq!(never_completed(&out), BTreeMap::new(), "all completed");
    let persistent = t
        .requests
        .iter()
        .filter(|r| r.name.starts_with("Start"))
        .count();
    assert_eq!(persistent, (8 * ranks) as usize, "starts are named as such");
    check_sites_and_comms(&t, ranks);
    check_symbolized_sites(&out, ranks);
    check_provenance(&out, launch, "C");
    AnalysisShape::of(&out)
}

/// What of a run's analysis does not depend on its timing: the requests counted and
/// never completed, the messages, and the call sites the report names.
#[derive(Debug, PartialEq)]
pub(crate) struct AnalysisShape {
    requests: u64,
    never_completed: u64,
    messages: u64,
    sites: std::collections::BTreeSet<String>,
}

impl AnalysisShape {
    fn of(out: &Path) -> AnalysisShape {
        let run = crate::util::overlap(&["analyze", out.to_str().expect("utf-8"), "--json"]);
        assert!(run.success(), "{}", run.describe());
        let r: serde_json::Value = serde_json::from_str(&run.stdout()).expect("JSON");
        let number = |v: &serde_json::Value| v.as_u64().expect("a count");
        AnalysisShape {
            requests: number(&r["requests"]["count"]),
            never_completed: number(&r["requests"]["never_completed"]),
            messages: number(&r["run"]["messages"]),
            sites: r["by_site"]["sites"]
                .as_array()
                .expect("by_site.sites")
                .iter()
                .filter_map(|s| s["label"].as_str().map(str::to_string))
                .collect(),
        }
    }
}

/// The report's second line says where the recording came from: the MPI library, the
/// launcher, the bindings the program called through and the preload's MPI.
pub(crate) fn check_provenance(out: &Path, launch: &Launch, bindings: &str) {
    let run = crate::util::overlap(&["analyze", out.to_str().expect("utf-8 path")]);
    assert!(run.success(), "{}", run.describe());
    let text = run.stdout();
    let line = text.lines().nth(1).unwrap_or("");
    // Versions vary between machines: compared without their digits and dots.
    let (library, built_for) = match launch.mpi {
        Mpi::Default => ("MPICH Version:", "MPICH"),
        Mpi::OpenMpi => ("Open MPI", "Open MPI"),
    };
    let launcher = launch.described;
    let want = format!(
        "MPI: {library}; launcher: {launcher}; bindings: {bindings}; preload built for: \
         {built_for}"
    );
    let without_versions = |l: &str| {
        let kept: String = l
            .chars()
            .filter(|c| !c.is_ascii_digit() && *c != '.')
            .collect();
        kept.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace(" ;", ";")
            .replace(" )", ")")
    };
    let got = without_versions(line);
    let want = without_versions(&want);
    // Open MPI's library line goes on ("package: Debian OpenMPI, ident: ..."): its start
    // and the rest are compared apart.
    let (head, tail) = want.split_once("; launcher").expect("two parts");
    assert!(
        got.starts_with(head) && got.ends_with(&format!("; launcher{tail}")),
        "{line}\nwant: {want}"
    );
}

/// The line of tests/programs/FILE that holds `text` (found, not hard-coded, so tests
/// follow edits of the program).
pub(crate) fn program_line(file: &str, text: &str) -> u32 {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(file);
    let source = std::fs::read_to_string(src).expect("the program's source reads");
    let found: Vec<usize> = (source.lines().enumerate())
        .filter(|(_, l)| l.contains(text))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(found.len(), 1, "exactly one line of {file} holds {text:?}");
    found[0] as u32
}

/// The analyzer symbolizes each rank's sites with its own code maps and the program's
/// debug info: the ring's Isend is named by its line of calls.c on every rank, and the
/// report lists it among the run's sites.
fn check_symbolized_sites(out: &Path, ranks: u32) {
    let line = program_line("calls.c", "MPI_Isend(&out, 1, MPI_DOUBLE, right, 10,");
    let want = format!("calls.c:{line} (main)");
    let trace = overlap_analyzer::load::load(out, &mut |_, _| {})
        .expect("loads")
        .trace;
    let table = overlap_analyzer::sites::SiteTable::build(&trace);
    for t in &trace.ranks {
        let ring_isends: Vec<String> = (0..t.spans.len())
            .filter(|&i| {
                t.call(i)
                    .is_some_and(|(op, c)| op == Op::Isend && c.tag() == Some(10))
            })
            .map(|i| table.label_of_call(&trace, t.rank, i).expect("has a site"))
            .collect();
        assert_eq!(ring_isends, vec![want.clone(); 3], "rank {}", t.rank);
    }
    let site = table
        .sites()
        .iter()
        .find(|s| s.label == want)
        .expect("listed");
    assert!(
        site.file
            .as_deref()
            .is_some_and(|f| f.ends_with("tests/programs/calls.c")),
        "{site:?}"
    );
    assert_eq!(
        site.resolution,
        overlap_analyzer::sites::Resolution::DebugInfo
    );
    assert!(site
        .object
        .as_deref()
        .is_some_and(|o| o.ends_with("/calls")));
    let run = crate::util::overlap(&["analyze", out.to_str().expect("utf-8"), "--json"]);
    assert!(run.success(), "{}", run.describe());
    let report: serde_json::Value = serde_json::from_str(&run.stdout()).expect("JSON");
    let labels: Vec<&str> = report["by_site"]["sites"]
        .as_array()
        .expect("by_site.sites")
        .iter()
        .filter_map(|s| s["label"].as_str())
        .collect();
    assert!(labels.contains(&want.as_str()), "{ranks} ranks: {labels:?}");
    // Every wait-state group names a site of calls.c (all calls are made in main).
    for g in report["by_site"]["wait_states"].as_array().expect("groups") {
        let site = g["site"].as_str().expect("a site");
        assert!(site.starts_with("calls.c:"), "{g}");
    }
}

/// Every call carries its call site, the same for every pass through a loop; the
/// parity communicator's collectives carry one id per half, not world's.
fn check_sites_and_comms(t: &MergedTrace, ranks: u32) {
    let mut half_ids: BTreeMap<u32, u32> = BTreeMap::new();
    for (rank, events) in &t.events {
        let mut ring_sites = Vec::new();
        let mut allreduce_comms = Vec::new();
        for e in events {
            let Event::Call(c) = e else { continue };
            assert!(
                c.args.site.is_some_and(|s| s > 0),
                "rank {rank}: {:?} has no call site",
                c.op
            );
            if c.op == Op::Isend && c.args.tag == Some(10) {
                ring_sites.push(c.args.site);
            }
            if c.op == Op::Allreduce {
                allreduce_comms.push(c.args.comm);
            }
        }
        assert_eq!(ring_sites.len(), 3);
        let site = ring_sites[0].expect("site");
        assert!(
            in_program_code(t, *rank, site),
            "rank {rank}: site {site:#x} is not in the program's code"
        );
        assert!(
            ring_sites.windows(2).all(|w| w[0] == w[1]),
            "one loop, one site"
        );
        assert_eq!(
            allreduce_comms[0],
            Some(0),
            "the first Allreduce is on world"
        );
        let half = allreduce_comms[1].expect("comm recorded");
        assert_ne!(half, 0, "rank {rank}: the split communicator is not world");
        half_ids.insert(*rank, half);
    }
    for r in 0..ranks {
        for s in 0..ranks {
            assert_eq!(
                half_ids[&r] == half_ids[&s],
                r % 2 == s % 2,
                "ranks {r} and {s}: {half_ids:?}"
            );
        }
    }
}

/// True when `site` lies in an executable mapping of the `calls` program on `rank`, as
/// its `code_maps` list them (`start-end offset path` per line).
fn in_program_code(t: &MergedTrace, rank: u32, site: u64) -> bool {
    let clock = t
        .info
        .ranks
        .iter()
        .find(|r| r.rank == rank)
        .expect("rank listed");
    let maps = clock
        .code_maps
        .as_deref()
        .expect("the preload lists code maps");
    maps.lines().any(|l| {
        let mut f = l.split_whitespace();
        let (Some(range), Some(_), Some(path)) = (f.next(), f.next(), f.next()) else {
            return false;
        };
        let Some((a, b)) = range.split_once('-') else {
            return false;
        };
        let (a, b) = (
            u64::from_str_radix(a, 16).unwrap_or(u64::MAX),
            u64::from_str_radix(b, 16).unwrap_or(0),
        );
        path.ends_with("/calls") && (a..b).contains(&site)
    })
}

#[test]
fn c_program_on_2_ranks() {
    check_calls_program(&Launch::of(Mpi::Default), 2);
}

#[test]
fn c_program_on_4_ranks() {
    check_calls_program(&Launch::of(Mpi::Default), 4);
}

#[test]
fn c_program_under_open_mpi_on_2_and_4_ranks() {
    let Some(mpi) = open_mpi() else { return };
    for ranks in [2, 4] {
        let open = check_calls_program(&Launch::of(mpi), ranks);
        let mpich = check_calls_program(&Launch::of(Mpi::Default), ranks);
        assert_eq!(
            open, mpich,
            "{ranks} ranks: the same analysis under both MPIs"
        );
    }
}

/// ring.f90 (`use mpi`) on `ranks` ranks, launched by `launch`.
pub(crate) fn check_fortran(launch: &Launch, ranks: u32) {
    let mpi = launch.mpi;
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("ring.json");
    let (_, run) = untraced_then_traced(launch, ranks, "ring", &out);
    run.assert_records_every_call();
    let t = read_merged(&out).expect("merged trace reads back");
    let expected: BTreeMap<Op, usize> = [
        (Op::Init, 1),
        (Op::Irecv, 4),
        (Op::Isend, 4),
        (Op::Waitall, 4),
        (Op::Allreduce, 1),
        (Op::Barrier, 1),
        (Op::Finalize, 1),
    ]
    .into_iter()
    .collect();
    for (rank, per) in counts(&t) {
        assert_eq!(per, expected, "rank {rank}");
    }
    assert_eq!(t.info.messages, u64::from(4 * ranks));
    assert_eq!((t.info.unmatched_sends, t.info.unmatched_receives), (0, 0));
    assert_eq!(t.requests.len(), (8 * ranks) as usize);
    assert_eq!(never_completed(&out), BTreeMap::new(), "all completed");
    check_provenance(&out, launch, "Fortran mpif.h/mpi");
    let analysis = crate::util::overlap(&["analyze", out.to_str().expect("utf-8 path")]);
    assert!(analysis.success(), "{}", analysis.describe());
    let text = analysis.stdout();
    // Each call is placed on its line, among the run's sites: under Open MPI the
    // preload's Fortran entry points are called by the program itself; MPICH's bindings
    // call the C entry points from inside libmpichfort, whose callers the preload's
    // site-only trampolines note (tests/cli/fortran_sites.rs checks every call).
    assert!(
        !text.contains("site unknown"),
        "{mpi:?}: {}",
        analysis.describe()
    );
    let isend = program_line("ring.f90", "call MPI_Isend(");
    let json = crate::util::overlap(&["analyze", out.to_str().expect("utf-8"), "--json"]);
    assert!(json.success(), "{}", json.describe());
    let report: serde_json::Value = serde_json::from_str(&json.stdout()).expect("JSON");
    let want = format!("ring.f90:{isend} (ring)");
    let sites = report["by_site"]["sites"]
        .as_array()
        .expect("by_site.sites");
    assert!(
        sites
            .iter()
            .any(|s| s["label"].as_str() == Some(want.as_str())),
        "{want} among {sites:?}"
    );
}

#[test]
fn fortran_program_on_2_and_4_ranks() {
    check_fortran(&Launch::of(Mpi::Default), 2);
    check_fortran(&Launch::of(Mpi::Default), 4);
}

#[test]
fn fortran_program_under_open_mpi_on_2_and_4_ranks() {
    let Some(mpi) = open_mpi() else { return };
    check_fortran(&Launch::of(mpi), 2);
    check_fortran(&Launch::of(mpi), 4);
}

#[test]
fn a_rank_that_aborts_still_leaves_a_merged_trace() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("abort.json");
    let run = trace(2, &program("abort"), &out);
    assert_eq!(run.output.status.code(), Some(3), "{}", run.describe());
    run.assert_stderr_has("what the ranks recorded is merged in");
    let t = read_merged(&out).expect("merged trace reads back");
    let got = counts(&t);
    assert_eq!(got.len(), 2, "{}", run.describe());
    for (rank, per) in &got {
        for op in [Op::Init, Op::Irecv, Op::Isend, Op::Waitall] {
            assert_eq!(per.get(&op), Some(&1), "rank {rank} {op:?}");
        }
    }
    // The rank that gave up closed its file itself, the abort recorded.
    assert_eq!(got[&1].get(&Op::Abort), Some(&1));
    assert!(
        t.info.incomplete.iter().all(|i| i.rank != 1),
        "{:?}",
        t.info.incomplete
    );
    assert_eq!(t.info.messages, 2);
    assert_eq!(t.requests.len(), 4);
    assert_eq!(never_completed(&out), BTreeMap::new(), "all completed");
}

#[test]
fn calls_made_while_thread_locals_are_destroyed_are_traced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("atexit.json");
    let run = trace(2, &program("atexit"), &out);
    assert!(run.success(), "{}", run.describe());
    assert!(
        !run.stderr().contains("tracing stopped"),
        "{}",
        run.describe()
    );
    let t = read_merged(&out).expect("merged trace reads back");
    let got = counts(&t);
    assert_eq!(got.len(), 2, "{}", run.describe());
    for (rank, per) in &got {
        // Iprobe from the worker, then from its key destructor; Finalize from the
        // atexit handler.
        for (op, n) in [
            (Op::InitThread, 1),
            (Op::Iprobe, 2),
            (Op::Barrier, 1),
            (Op::Finalize, 1),
        ] {
            assert_eq!(per.get(&op), Some(&n), "rank {rank} {op:?}");
        }
    }
}

#[test]
fn a_missing_preload_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(overlap_bin())
        .args([
            "trace",
            "--preload",
            "/no/such/liboverlap_preload.so",
            "--out",
        ])
        .arg(dir.path().join("x.json"))
        .args(["--", "true"])
        .output()
        .expect("overlap runs");
    let run = Run { output };
    assert!(!run.success());
    run.assert_stderr_has("the preload library /no/such/liboverlap_preload.so does not exist");
}

#[test]
fn a_program_that_records_nothing_is_explained() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(overlap_bin())
        .args(["trace", "--out"])
        .arg(dir.path().join("x.json"))
        .args(["--", "true"])
        .output()
        .expect("overlap runs");
    let run = Run { output };
    assert!(!run.success());
    run.assert_stderr_has("left no readable trace");
    run.assert_stderr_has("was it an MPI program");
    // `true` links no MPI and names none: the default preload is taken, and said so
    // when another MPI's lies beside it.
    let other = overlap_bin().with_file_name("liboverlap_preload-openmpi.so");
    assert_eq!(
        run.stderr()
            .contains("could not tell which MPI `true` runs"),
        other.is_file(),
        "{}",
        run.describe()
    );
}
