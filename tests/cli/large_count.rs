//! `overlap trace` on a program that makes every MPI-4 large-count (`_c`) call the
//! preload records, MPI_Isendrecv(_replace) in both forms, the matched probes and
//! receives, and persistent sends of every mode (tests/programs/large_count.c): each
//! call is recorded as many times as the program made it (a `_c` call as its classic
//! op), every message is matched, every request completes, and the note of calls not
//! recorded names only the one the program makes that overlap does not record.

use std::collections::BTreeMap;

use overlap_analyzer::import::read_merged;
use overlap_instrument::schema::Op;

use crate::mpis::{program_in, trace_in, Mpi};
use crate::preload_calls::never_completed;
use crate::traces::counts;

/// The `name=count` words of the "issued rank=R ..." lines, by rank.
fn issued(stderr: &str) -> BTreeMap<u32, BTreeMap<String, usize>> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("issued "))
        .map(|l| {
            let fields: BTreeMap<String, usize> = l
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_string(), v.parse().expect("a number")))
                .collect();
            (fields["rank"] as u32, fields)
        })
        .collect()
}

/// The op a call of the MPI function `name` is recorded as: a large-count form as its
/// classic function.
fn recorded_as(name: &str) -> Op {
    let classic = name.strip_suffix("_c").unwrap_or(name);
    Op::from_mpi_name(classic).unwrap_or_else(|| panic!("{name} is recorded"))
}

fn check(ranks: u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("large_count.json");
    let program = program_in(Mpi::Default, "large_count");
    let run = trace_in(Mpi::Default, ranks, &program, &[], &[], &out);
    assert!(run.success(), "{}", run.describe());
    // Counted as called (attaching a buffer is negligible; detaching it waits for the
    // buffered sends).
    run.assert_stderr_has(&format!(
        "this program calls MPI functions overlap does not record: MPI_Buffer_detach \
         ×{ranks}; time inside them counts as computation",
    ));
    assert!(!run.stderr().contains("warning:"), "{}", run.describe());
    let issued = issued(&run.stderr());
    assert_eq!(issued.len(), ranks as usize, "{}", run.describe());
    let t = read_merged(&out).expect("merged trace reads back");
    for (rank, got) in counts(&t) {
        let mut want: BTreeMap<Op, usize> = BTreeMap::new();
        for (name, n) in issued[&rank].iter().filter(|(k, _)| *k != "rank") {
            *want.entry(recorded_as(name)).or_default() += n;
        }
        // Outside the counted calls: Init, Finalize, the barriers that order the ready
        // sends (2, then one per persistent send mode), the cartesian ring and the
        // shared-memory communicator (created and freed), the last Reduce.
        for (op, n) in [
            (Op::Init, 1),
            (Op::Finalize, 1),
            (Op::Barrier, 6),
            (Op::CartCreate, 1),
            (Op::CommSplitType, 1),
            (Op::CommFree, 2),
            (Op::Reduce, 1),
        ] {
            *want.entry(op).or_default() += n;
        }
        assert_eq!(got, want, "rank {rank}\n{}", run.describe());
    }
    // Per rank: Sendrecv, Sendrecv_replace, Bsend, Send, Ssend, Rsend, Isend, Issend,
    // Ibsend, Irsend, two Isendrecv and two Isendrecv_replace, three Isends received
    // after a matched probe, and four persistent sends.
    assert_eq!(t.info.messages, 21 * u64::from(ranks));
    assert_eq!((t.info.unmatched_sends, t.info.unmatched_receives), (0, 0));
    assert_eq!(never_completed(&out), BTreeMap::new(), "all completed");
    // Sizes are the program's 4 doubles, through 64-bit counts.
    let sends = crate::traces::calls(&t, 0)
        .into_iter()
        .filter(|c| c.op == Op::Isend)
        .filter_map(|c| c.args.bytes)
        .collect::<Vec<_>>();
    assert!(
        sends.len() >= 4 && sends.iter().all(|b| *b == 32),
        "{sends:?}"
    );
}

#[test]
fn every_large_count_call_is_recorded_on_2_and_3_ranks() {
    check(2);
    check(3);
}
