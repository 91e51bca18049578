//! `merge --format otf2` writes each thread's events in their order though the rank
//! file has a span after the calls it encloses (a span is recorded at its end), and
//! reads each rank file again rather than holding it. Rank 0 (times in ns from its
//! epoch):
//!
//! ```text
//!  file order   Isend 10-11   Wait 12-20   solve 5-30   Isend 31-32   Wait 33-40
//!  written      solve 5-30 { Isend 10-11  Wait 12-20 }  Isend 31-32   Wait 33-40
//! ```
//!
//! Rank 1 receives both messages.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common::*;
use overlap_format::schema::Op;
use overlap_otf2::Record;

#[test]
fn a_span_after_the_calls_it_encloses_is_written_first() {
    if !overlap_otf2::available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run.ranks");
    std::fs::create_dir(&dir).unwrap();
    let rank0 = vec![
        isend(10, 11, 1, 7, 64, 1),
        complete(Op::Wait, 12, 20, &[(1, None)]),
        compute(5, 30, "solve"),
        isend(31, 32, 1, 7, 64, 2),
        complete(Op::Wait, 33, 40, &[(2, None)]),
    ];
    let rank1 = vec![
        irecv(1, 2, 0, 7, 64, 1),
        irecv(3, 4, 0, 7, 64, 2),
        complete(Op::Waitall, 5, 45, &[(1, Some((0, 7))), (2, Some((0, 7)))]),
    ];
    for (rank, events) in [rank0, rank1].into_iter().enumerate() {
        let h = header(rank as u32, 2, 1_000, "clock");
        write_rank_file(&dir, &rank_trace(h, Vec::new(), events), true);
    }
    let out = tmp.path().join("archive");
    let written = overlap_analyzer::merge::otf2::write_otf2(&dir, &out).unwrap();
    assert_eq!(written.events, 8);
    let defs = overlap_otf2::Archive::open(&written.anchor)
        .unwrap()
        .definitions()
        .clone();
    let name = |r: u32| defs.regions[&r].name.clone();
    let mut seen: Vec<(u64, String)> = Vec::new();
    overlap_otf2::read_archive(&written.anchor, |location, t, r, _| {
        if location == 0 {
            match r {
                Record::Enter { region } => seen.push((t, format!("enter {}", name(*region)))),
                Record::Leave { region } => seen.push((t, format!("leave {}", name(*region)))),
                _ => {}
            }
        }
        Ok(())
    })
    .unwrap();
    let want = [
        (1_005, "enter solve"),
        (1_010, "enter MPI_Isend"),
        (1_011, "leave MPI_Isend"),
        (1_012, "enter MPI_Wait"),
        (1_020, "leave MPI_Wait"),
        (1_030, "leave solve"),
        (1_031, "enter MPI_Isend"),
        (1_032, "leave MPI_Isend"),
        (1_033, "enter MPI_Wait"),
        (1_040, "leave MPI_Wait"),
    ];
    let want: Vec<(u64, String)> = want.iter().map(|(t, s)| (*t, s.to_string())).collect();
    assert_eq!(seen, want);
}
