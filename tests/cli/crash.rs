//! A rank killed outright (SIGKILL: no exit handler, no footer) under `overlap trace`:
//! its binary file is read up to its last flushed page and reported as cut short, and
//! the merged trace still holds what every rank recorded before; the report says why it
//! has no self check.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use overlap_analyzer::import::{read_merged, read_rank_file};
use overlap_instrument::schema::Op;

use crate::trace::{program, trace_with};
use crate::traces::count;
use crate::util::overlap;

#[test]
fn a_rank_killed_with_sigkill_is_read_to_its_last_flushed_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("killed.json");
    // Flush every 20 ms: the 300 ms pause before the kill leaves time for several.
    let run = trace_with(
        2,
        &program("killed"),
        &[],
        &[("OVERLAP_FLUSH_MS", "20")],
        &out,
    );
    assert!(!run.success(), "the run was killed: {}", run.describe());
    run.assert_stderr_has("what the ranks recorded is merged in");

    // The killed rank's own file: every page it flushed, no footer.
    let rank1 = dir.path().join("killed.ranks").join("rank-1.ovlp");
    let file = read_rank_file(&rank1).expect("the killed rank's file reads");
    assert!(file.footer.is_none(), "no footer after SIGKILL");
    assert!(!file.is_complete());
    assert!(
        file.incompleteness()
            .is_some_and(|why| why.contains("ends without its footer")),
        "{:?}",
        file.incompleteness()
    );
    assert!(
        file.problems.is_empty(),
        "whole pages only: {:?}",
        file.problems
    );

    let t = read_merged(&out).expect("merged trace reads back");
    for rank in 0..2 {
        assert_eq!(count(&t, rank, Op::Init), 1, "rank {rank}");
        assert_eq!(
            count(&t, rank, Op::Barrier),
            50,
            "rank {rank}: {}",
            run.describe()
        );
    }
    let killed = t.info.incomplete.iter().find(|i| i.rank == 1);
    assert!(
        killed.is_some_and(|i| i.events_read == 51),
        "rank 1 is reported cut short with its 51 calls: {:?}",
        t.info.incomplete
    );

    // The self check is not made on what is left, and the report says why (mpiexec
    // takes rank 0 down with rank 1: both are cut short).
    let path = out.to_str().unwrap();
    let text = overlap(&["analyze", path, "--full"]);
    assert!(text.success(), "{}", text.describe());
    text.assert_stdout_has("replay.self_error unknown: rank(s) ");
    text.assert_stdout_has(" cut short: a replay of what is left would not be the run");
    let json = overlap(&["analyze", path, "--json"]);
    assert!(json.success(), "{}", json.describe());
    let r: serde_json::Value = serde_json::from_str(&json.stdout()).unwrap();
    assert!(r["replay"].is_null(), "{:#}", r["replay"]);
    assert_eq!(r["replay_unknown"]["reason"], "cut_short");
    let cut: Vec<u64> = (r["replay_unknown"]["ranks"].as_array().unwrap().iter())
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(cut.contains(&1), "{cut:?}");
}
