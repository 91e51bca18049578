//! A traced rank that forks (tests/programs/fork_exit.c): the child, which calls
//! `exit(5)`, ends with 5 exactly as it does untraced (before the preload detached
//! forked children from the parent's recording, the child's exit handler joined a
//! writer thread the child does not have and died of SIGABRT), `system()` returns its
//! command's status, and the parent's recording is whole: every call before and after
//! the fork, every message matched, under MPICH and under Open MPI.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use overlap_analyzer::import::read_merged;
use overlap_instrument::schema::Op;

use crate::mpis::{open_mpi, program_in, trace_in, untraced_launch, Launch, Mpi};
use crate::traces::counts;

/// Rounds of each of fork_exit.c's two exchanges (one before the fork, one after).
const ROUNDS: usize = 10;

/// What each rank of fork_exit.c prints, untraced.
fn expected_lines() -> Vec<String> {
    (0..2)
        .map(|rank| format!("fork_exit rank={rank} child=exited:5 system=exited:7"))
        .collect()
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

fn a_forked_child_exits_as_untraced(mpi: Mpi) {
    let program = program_in(mpi, "fork_exit");
    let plain = untraced_launch(&Launch::of(mpi), 2, &program);
    assert!(plain.success(), "{}", plain.describe());
    assert_eq!(sorted_lines(&plain.stdout()), expected_lines());

    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("fork.json");
    let run = trace_in(mpi, 2, &program, &[], &[], &out);
    assert_eq!(
        sorted_lines(&run.stdout()),
        expected_lines(),
        "the children end as untraced\n{}",
        run.describe()
    );
    assert!(run.success(), "{}", run.describe());
    assert!(
        !run.stderr().contains("panicked"),
        "nothing of ours panics in the child\n{}",
        run.describe()
    );

    let t = read_merged(&out).expect("merged trace reads back");
    assert!(t.info.incomplete.is_empty(), "{:?}", t.info.incomplete);
    assert_eq!((t.info.unmatched_sends, t.info.unmatched_receives), (0, 0));
    let want: BTreeMap<Op, usize> = [
        (Op::Init, 1),
        (Op::Irecv, 2 * ROUNDS),
        (Op::Isend, 2 * ROUNDS),
        (Op::Waitall, 2 * ROUNDS),
        (Op::Barrier, 1),
        (Op::Finalize, 1),
    ]
    .into_iter()
    .collect();
    for (rank, got) in counts(&t) {
        let got: BTreeMap<Op, usize> = got
            .into_iter()
            .filter(|(op, _)| want.contains_key(op))
            .collect();
        assert_eq!(
            got, want,
            "rank {rank}: the parent's calls, before and after the fork"
        );
    }
}

#[test]
fn a_forked_child_exits_with_its_own_status_under_mpich() {
    a_forked_child_exits_as_untraced(Mpi::Default);
}

#[test]
fn a_forked_child_exits_with_its_own_status_under_open_mpi() {
    if let Some(mpi) = open_mpi() {
        a_forked_child_exits_as_untraced(mpi);
    }
}
