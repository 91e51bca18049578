//! `overlap trace` on a `use mpi_f08` program (tests/programs/ring_f08.f90) under MPICH
//! and Open MPI: every call is recorded exactly as often as the program made it, every
//! message and request matches and completes, the program sees what it sees untraced
//! (its output, and the numbering of the indices Waitany and Waitsome return, which
//! MPICH 4.0's mpi_f08 starts at 0), a freed datatype's handle reused by the next is
//! recorded with the new type's size, and the report says the bindings were mpi_f08.

use std::collections::BTreeMap;

use overlap_analyzer::import::read_merged;
use overlap_instrument::schema::Op;

use crate::mpis::{open_mpi, untraced_then_traced, Launch, Mpi};
use crate::preload_calls::never_completed;
use crate::trace::check_provenance;
use crate::traces::{calls, counts};
use crate::util::Run;

/// The `key=value` words of each rank's "issued" line.
fn issued(run: &Run) -> BTreeMap<u32, BTreeMap<String, i64>> {
    run.stderr()
        .lines()
        .filter_map(|l| l.strip_prefix("issued "))
        .map(|l| {
            let words: BTreeMap<String, i64> = l
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_string(), v.parse().expect("a number")))
                .collect();
            (words["rank"] as u32, words)
        })
        .collect()
}

fn check_f08(mpi: Mpi, ranks: u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("ring_f08.json");
    let (plain, run) = untraced_then_traced(&Launch::of(mpi), ranks, "ring_f08", &out);
    run.assert_records_every_call();
    let traced = issued(&run);
    let untraced = issued(&plain);
    assert_eq!(traced.len(), ranks as usize, "{}", run.describe());
    for (rank, words) in &traced {
        for base in ["any_base", "some_base"] {
            assert_eq!(
                words[base], untraced[rank][base],
                "rank {rank}: the index numbering is the MPI's own ({base})"
            );
        }
    }
    let t = read_merged(&out).expect("merged trace reads back");
    for (rank, per) in counts(&t) {
        let waitsome = traced[&rank]["MPI_Waitsome"] as usize;
        let testall = traced[&rank]["MPI_Testall"] as usize;
        // 3 ring turns, then one each for Waitany, Waitsome, Testall and the two
        // datatypes; 3 persistent starts.
        let want: BTreeMap<Op, usize> = [
            (Op::Init, 1),
            (Op::Irecv, 3 + 5),
            (Op::Isend, 3 + 5),
            (Op::Waitall, 3 + 1 + 2 + 3),
            (Op::Waitany, 1),
            (Op::Waitsome, waitsome),
            (Op::Testall, testall),
            (Op::RecvInit, 1),
            (Op::SendInit, 1),
            (Op::Startall, 3),
            (Op::RequestFree, 2),
            (Op::Allreduce, 2),
            (Op::Bcast, 1),
            (Op::CommSplit, 1),
            (Op::CommFree, 1),
            (Op::Ibarrier, 1),
            (Op::Wait, 1),
            (Op::Barrier, 1),
            (Op::Finalize, 1),
        ]
        .into_iter()
        .collect();
        assert_eq!(per, want, "rank {rank}\n{}", run.describe());
    }
    // Per rank: 3 + 5 messages on the ring, 3 persistent.
    assert_eq!(t.info.messages, u64::from(11 * ranks));
    assert_eq!((t.info.unmatched_sends, t.info.unmatched_receives), (0, 0));
    // Per rank: 8 Irecv, 8 Isend, 6 persistent starts, the Ibarrier.
    assert_eq!(t.requests.len(), (23 * ranks) as usize);
    // The second datatype may have the first one's handle once it is freed: its sends
    // are recorded with its own size, not the freed type's.
    for rank in 0..ranks {
        let bytes: BTreeMap<i32, u64> = calls(&t, rank)
            .iter()
            .filter(|c| c.op == Op::Isend)
            .filter_map(|c| Some((c.args.tag?, c.args.bytes?)))
            .filter(|(tag, _)| *tag >= 12)
            .collect();
        assert_eq!(bytes, BTreeMap::from([(12, 16), (13, 32)]), "rank {rank}");
    }
    assert_eq!(never_completed(&out), BTreeMap::new(), "all completed");
    check_provenance(&out, &Launch::of(mpi), "Fortran mpi_f08");
}

#[test]
fn an_mpi_f08_program_under_mpich_on_2_and_4_ranks() {
    check_f08(Mpi::Default, 2);
    check_f08(Mpi::Default, 4);
}

#[test]
fn an_mpi_f08_program_under_open_mpi_on_2_and_4_ranks() {
    let Some(mpi) = open_mpi() else { return };
    check_f08(mpi, 2);
    check_f08(mpi, 4);
}
