//! `overlap trace` on a program that calls MPI from two threads at once under
//! `MPI_THREAD_MULTIPLE` (tests/programs/threads.c): a request completed on another
//! thread than the one that posted it is still named, with its status read, and a
//! datatype handle that MPI reuses after `MPI_Type_free` is recorded with the new type's
//! size, not the size the preload cached for the old one.

use std::collections::BTreeMap;

use overlap_analyzer::import::read_merged;
use overlap_instrument::schema::Op;

use crate::preload_calls::never_completed;
use crate::trace::{program, trace};
use crate::traces::calls;

/// Rounds of threads.c; each completes four pairs of a receive and a send per rank.
const ROUNDS: usize = 50;

#[test]
fn requests_completed_on_another_thread_and_reused_type_handles_are_recorded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("threads.json");
    let run = trace(2, &program("threads"), &out);
    assert!(run.success(), "{}", run.describe());
    assert_eq!(
        run.stderr().matches("reused=1").count(),
        2,
        "MPI gave the second type the first's freed handle (the case under test)\n{}",
        run.describe()
    );
    assert_eq!(
        never_completed(&out),
        BTreeMap::new(),
        "every request is completed"
    );
    let t = read_merged(&out).expect("merged trace reads back");
    assert_eq!((t.info.unmatched_sends, t.info.unmatched_receives), (0, 0));
    for rank in 0..2u32 {
        let calls = calls(&t, rank);
        let completed: Vec<_> = calls
            .iter()
            .filter(|c| c.op == Op::Waitall)
            .flat_map(|c| &c.args.completed)
            .collect();
        assert_eq!(
            completed.len(),
            ROUNDS * 8,
            "rank {rank}: every request named"
        );
        let received: Vec<_> = completed.iter().filter(|c| c.source.is_some()).collect();
        assert_eq!(
            received.len(),
            ROUNDS * 4,
            "rank {rank}: every receive's status"
        );
        let peer = 1 - rank as i32;
        assert!(
            received
                .iter()
                .all(|c| c.source == Some(peer) && c.bytes == Some(8)),
            "rank {rank}: {received:?}"
        );
        let bytes_of = |tag| {
            calls
                .iter()
                .find(|c| c.op == Op::Sendrecv && c.args.tag == Some(tag))
                .map(|c| c.args.bytes)
        };
        assert_eq!(bytes_of(3), Some(Some(16)), "rank {rank}: four ints");
        assert_eq!(bytes_of(4), Some(Some(64)), "rank {rank}: eight doubles");
    }
}
