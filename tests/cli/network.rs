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
/// a size class): `suggest` and `whatif` stop, saying why and what would give one;
/// given a latency and a bandwidth they predict.
#[test]
fn a_network_the_trace_cannot_give_is_asked_for_by_name() {
    let kept = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("analyzer/tests/data/reports/gpu-bulk/merged.json");
    let path = kept.to_str().unwrap();
    for command in ["suggest", "whatif"] {
        let run = overlap(&[command, path]);
        assert!(!run.success(), "{}", run.describe());
        run.assert_stderr_has("cannot predict: the network is unknown: too few clean transfers");
        run.assert_stderr_has("--model FILE");
        run.assert_stderr_has("--latency and --bandwidth");
        let given = overlap(&[command, path, "--latency", "1us", "--bandwidth", "1GB/s"]);
        assert!(given.success(), "{}", given.describe());
        given.assert_stdout_has("latency 1.0 us, bandwidth 1.00 GB/s");
    }
}
