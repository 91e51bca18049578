//! `overlap trace --callpath N`: a wait inside a helper called from two places
//! (tests/programs/helper_wait.c) is one site at depth 1, the helper's line, and two at
//! depth 2, the helper's line followed by each caller's (`a.c:12 (wait_all) ← a.c:19
//! (exchange)`), as mpiP's `-k 2` groups them, and the waits there are reported by
//! path.

use std::collections::BTreeSet;

use crate::mpis::trace_options;
use crate::trace::{program, program_line, trace_with};
use crate::util::overlap;

/// The labels of the sites of `MPI_Waitall` calls, from `overlap analyze --json`.
fn waitall_sites(out: &std::path::Path) -> (BTreeSet<String>, serde_json::Value) {
    let analyze = overlap(&["analyze", "--json", out.to_str().expect("UTF-8")]);
    assert!(analyze.success(), "{}", analyze.describe());
    let report: serde_json::Value =
        serde_json::from_slice(&analyze.output.stdout).expect("the report is JSON");
    let labels = report["by_site"]["sites"]
        .as_array()
        .expect("sites")
        .iter()
        .filter_map(|s| s["label"].as_str())
        .filter(|l| l.contains("(wait_all)"))
        .map(str::to_string)
        .collect();
    (labels, report)
}

#[test]
fn a_helper_s_wait_is_one_site_per_caller_at_depth_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let helper = program("helper_wait");
    let wait = program_line("helper_wait.c", "/* the helper's wait */");
    let first = program_line("helper_wait.c", "/* first caller */");
    let second = program_line("helper_wait.c", "/* second caller */");

    let flat = dir.path().join("flat.json");
    let run = trace_with(2, &helper, &[], &[], &flat);
    assert!(run.success(), "{}", run.describe());
    let (labels, _) = waitall_sites(&flat);
    assert_eq!(
        labels,
        BTreeSet::from([format!("helper_wait.c:{wait} (wait_all)")]),
        "depth 1: the helper's line alone"
    );

    let deep = dir.path().join("deep.json");
    let run = trace_options(2, &["--callpath", "2"], &helper, &deep);
    assert!(run.success(), "{}", run.describe());
    let (labels, report) = waitall_sites(&deep);
    assert_eq!(
        labels,
        BTreeSet::from([
            format!("helper_wait.c:{wait} (wait_all) ← helper_wait.c:{first} (exchange)"),
            format!("helper_wait.c:{wait} (wait_all) ← helper_wait.c:{second} (main)"),
        ]),
        "depth 2: one site per caller"
    );
    // The waits are grouped by path: every wait state in a Waitall is at one of the
    // two, and the exchange rank 1 entered 20 ms late is waited for at the first.
    let groups = report["by_site"]["wait_states"].as_array().expect("groups");
    let at: Vec<&str> = groups
        .iter()
        .filter(|g| g["call"] == "MPI_Waitall")
        .map(|g| g["site"].as_str().expect("a site"))
        .collect();
    assert!(at.iter().all(|s| labels.contains(*s)), "{at:?}");
    assert!(
        at.iter()
            .any(|s| s.ends_with(&format!("helper_wait.c:{first} (exchange)"))),
        "{groups:#?}"
    );
}
