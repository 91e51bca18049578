//! What a trace says of the MPI calls it does not record (tests/programs/unseen.c):
//! the functions the program called, counted as it called them (not the symbols its
//! libraries import), and the requests completed that no recorded call posted, which
//! `trace`, `analyze` and the gate all name, rank by rank; the gate refuses such a
//! trace (exit 2).

use crate::trace::{program, trace};
use crate::util::overlap;

#[test]
fn requests_no_recorded_call_posted_are_named_and_the_gate_refuses_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("unseen.json");
    let run = trace(2, &program("unseen"), &out);
    assert!(run.success(), "{}", run.describe());
    // Two ranks: one MPI_Comm_idup and five MPI_Pack each (the generalized requests'
    // start and complete are local, negligible calls).
    run.assert_stderr_has(
        "this program calls MPI functions overlap does not record: MPI_Comm_idup ×2, \
         MPI_Pack ×10; time inside them counts as computation",
    );
    for rank in 0..2 {
        run.assert_stderr_has(&format!(
            "warning: rank {rank}: 3 request(s) completed that no recorded call posted \
             (posted by a call overlap does not record: this rank calls MPI_Comm_idup ×1, \
             MPI_Pack ×5): the trace lacks their transfers"
        ));
    }

    let out = out.to_str().expect("a UTF-8 path");
    let analyze = overlap(&["analyze", "--json", out]);
    assert!(analyze.success(), "{}", analyze.describe());
    let report: serde_json::Value =
        serde_json::from_slice(&analyze.output.stdout).expect("the report is JSON");
    let unseen = report["run"]["unseen_requests"].as_array().expect("a list");
    assert_eq!(unseen.len(), 2, "{unseen:?}");
    assert_eq!(unseen[1]["rank"], 1);
    assert_eq!(unseen[1]["completions"], 3);
    assert_eq!(unseen[1]["unrecorded_calls"]["MPI_Pack"], 5);

    let base = dir.path().join("baseline.json");
    let baseline = overlap(&["baseline", out, "--out", base.to_str().expect("UTF-8")]);
    assert_eq!(baseline.output.status.code(), Some(2), "refused");
    baseline.assert_stderr_has(
        "incomplete trace: rank 0: 3 request(s) completed that no recorded call posted",
    );
}
