//! `overlap trace` on a Fortran (`use mpi`) program with one-sided communication, a
//! Cartesian ring, neighbourhood collectives and the calls with arrays of datatypes
//! (tests/programs/onesided.f90), under
//! MPICH and Open MPI: every call is recorded as often as the program makes it, and
//! every window call names its window. Under Open MPI this goes through the preload's
//! own Fortran entry points (Open MPI's bindings call PMPI_* directly).

use std::collections::BTreeMap;

use overlap_analyzer::import::read_merged;
use overlap_instrument::schema::Op;

use crate::mpis::{open_mpi, untraced_then_traced, Launch, Mpi};
use crate::preload_calls::never_completed;
use crate::traces::{calls, counts};

fn check_onesided(mpi: Mpi, ranks: u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("onesided.json");
    let (_, run) = untraced_then_traced(&Launch::of(mpi), ranks, "onesided", &out);
    run.assert_records_every_call();
    let t = read_merged(&out).expect("merged trace reads back");
    let want: BTreeMap<Op, usize> = [
        (Op::Init, 1),
        (Op::WinCreate, 1),
        (Op::WinFence, 3),
        (Op::Put, 1),
        (Op::Get, 1),
        (Op::WinLock, 1),
        (Op::Accumulate, 1),
        (Op::WinUnlock, 1),
        (Op::WinFree, 2),
        (Op::WinAllocate, 1),
        (Op::WinLockAll, 1),
        (Op::FetchAndOp, 1),
        (Op::WinFlush, 1),
        (Op::WinUnlockAll, 1),
        (Op::CartCreate, 1),
        (Op::NeighborAlltoall, 1),
        (Op::NeighborAllgather, 1),
        (Op::IneighborAlltoall, 2),
        (Op::NeighborAlltoallw, 1),
        (Op::Alltoallw, 1),
        (Op::Wait, 2),
        (Op::CommFree, 1),
        (Op::Finalize, 1),
    ]
    .into_iter()
    .collect();
    for (rank, per) in counts(&t) {
        assert_eq!(per, want, "rank {rank}\n{}", run.describe());
        for c in calls(&t, rank) {
            if c.op.is_window_call() {
                assert!(
                    c.args.win.is_some(),
                    "rank {rank}: {:?} names its window",
                    c.op
                );
            }
            // One integer to and from every rank, and each of the two neighbours: the
            // sizes come from the arrays of datatypes.
            let moved = (c.args.send_bytes, c.args.recv_bytes);
            let all = Some(4 * u64::from(ranks));
            match c.op {
                Op::Alltoallw => assert_eq!(moved, (all, all), "rank {rank}"),
                Op::NeighborAlltoallw => assert_eq!(moved, (Some(8), Some(8)), "rank {rank}"),
                _ => {}
            }
        }
    }
    // The two non-blocking neighbourhood collectives of each rank, completed.
    assert_eq!(t.requests.len(), (2 * ranks) as usize);
    assert_eq!(never_completed(&out), BTreeMap::new(), "all completed");
}

#[test]
fn fortran_one_sided_and_neighbourhood_calls_under_mpich() {
    check_onesided(Mpi::Default, 3);
}

#[test]
fn fortran_one_sided_and_neighbourhood_calls_under_open_mpi() {
    let Some(mpi) = open_mpi() else { return };
    check_onesided(mpi, 3);
}
