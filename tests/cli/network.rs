//! The network a replay needs and the CPUs the ranks had: a real run records each rank's
//! CPU affinity, and the analysis tells whether its host ran more ranks than CPUs; a
//! trace whose network cannot be fitted makes `suggest` and `whatif` stop with the
//! reason and the options that give one.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::Value;

use crate::trace::{program, trace_with};
use crate::util::overlap;

/// This process's CPUs as Linux lists them (`Cpus_allowed_list`): the ranks `mpiexec`
/// starts inherit them (MPICH's Hydra binds nothing by default).
fn own_cpus() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

fn count(list: &str) -> usize {
    list.split(',')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

/// Two ranks of a C program under the preload: each rank's CPUs reach the merged
/// trace, and the report says whether the host had more ranks than them (on a machine
/// of one CPU it did, on more it did not).
#[test]
fn each_rank_records_its_cpus_and_the_run_says_whether_they_were_shared() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("twins.json");
    let run = trace_with(2, &program("twins"), &["early", "64"], &[], &out);
    assert!(run.success(), "{}", run.describe());
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let cpus = own_cpus();
    for r in merged["otherData"]["ranks"].as_array().unwrap() {
        assert_eq!(r["cpu_affinity"], cpus.as_str(), "{r:#}");
        assert!(r["online_cpus"].as_u64().unwrap() >= 1, "{r:#}");
    }
    let report = overlap(&["analyze", out.to_str().unwrap(), "--json"]);
    assert!(report.success(), "{}", report.describe());
    let r: Value = serde_json::from_str(&report.stdout()).unwrap();
    let o = &r["run"]["oversubscription"];
    assert_eq!(o["oversubscribed"], count(&cpus) < 2, "{o:#}");
    assert_eq!(o["hosts"][0]["cpus"], count(&cpus) as u64, "{o:#}");
}

/// A kept run whose messages give no network (gpu-bulk: at most two clean transfers in
/// a size class): `whatif` stops, saying why and what would give one; `suggest` lists
/// its proven moves with their gains unknown, the reason and the options (exit 0), and
/// `--confirm` says it has nothing to confirm; given a latency and a bandwidth both
/// predict.
#[test]
fn a_network_the_trace_cannot_give_is_asked_for_by_name() {
    let kept = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("analyzer/tests/data/reports/gpu-bulk/merged.json");
    let path = kept.to_str().unwrap();
    let run = overlap(&["whatif", path]);
    assert!(!run.success(), "{}", run.describe());
    run.assert_stderr_has("cannot predict: the network is unknown: too few clean transfers");
    run.assert_stderr_has("--model FILE");
    run.assert_stderr_has("--latency and --bandwidth");
    let run = overlap(&["suggest", path]);
    assert!(run.success(), "{}", run.describe());
    run.assert_stdout_has(
        "replay: none: gains unknown: the network is unknown: too few clean transfers",
    );
    run.assert_stdout_has("give --model FILE or --latency/--bandwidth");
    // Its one proven move defers a Waitall past next to no work: whatever the network,
    // it cannot gain 1 % of the run, and says so without a network too.
    run.assert_stdout_has("nothing to move: no move's waits took enough to gain a measurable share of the run, whatever the network");
    run.assert_stdout_has("1 whose waits took too little");
    let run = overlap(&["suggest", path, "--json", "--confirm", path]);
    assert!(run.success(), "{}", run.describe());
    let s: Value = serde_json::from_str(&run.stdout()).unwrap();
    assert_eq!(s["network"]["unknown"]["reason"], "too_few_clean", "{s:#}");
    let moves = s["groups"][0]["moves"].as_array().unwrap();
    assert!(!moves.is_empty(), "{s:#}");
    let run_ns = s["confirmation"]["original"]["median_ns"].as_u64().unwrap();
    for m in moves {
        let at_most = m["at_most_ns"].as_u64().unwrap();
        assert!(
            m["gain_ns"].is_null() && m["verdict"] == "too_short" && at_most * 100 <= run_ns,
            "{m:#} (run {run_ns} ns)"
        );
    }
    let verdict = &s["confirmation"]["gain"]["verdict"];
    assert_eq!(verdict["verdict"], "not_confirmable", "{verdict:#}");
    assert_eq!(verdict["why"]["reason"], "no_prediction", "{verdict:#}");
    for command in ["suggest", "whatif"] {
        let given = overlap(&[command, path, "--latency", "1us", "--bandwidth", "1GB/s"]);
        assert!(given.success(), "{}", given.describe());
        given.assert_stdout_has("latency 1.0 us, bandwidth 1.00 GB/s");
    }
}

/// The kept false-overlap run: 8 KiB and 64 KiB messages, 64 KiB no slower, so no line;
/// both classes were measured, and `whatif` and `suggest` replay on them, saying so.
#[test]
fn a_run_of_measured_classes_off_a_line_replays_on_them() {
    let kept = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("analyzer/tests/data/reports/false-overlap/merged.json");
    let path = kept.to_str().unwrap();
    for command in ["suggest", "whatif"] {
        let run = overlap(&[command, path]);
        assert!(run.success(), "{}", run.describe());
        run.assert_stdout_has(
            "per size class as measured: 8.0 KiB (eager) 67.0 us, 64.0 KiB (eager) 97.4 us; \
             no line: the transfer times do not grow with the size (8192 B to 65536 B)",
        );
        run.assert_stdout_has("replay.self_error -7.0%");
    }
}
