//! Other fixes than an order (`suggest::remedies`) on hand-built traces: progress during
//! compute with the replay's prediction, a partner's lateness, a collective's
//! imbalance. Times in ns, every rank on one clock.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::dag::Options as DagOptions;
use overlap_analyzer::model::Trace;
use overlap_analyzer::replay::{NetworkFit, ProgressMode};
use overlap_analyzer::suggest::remedies::{lines, ProgressRemedy};
use overlap_analyzer::suggest::{program_of, suggest, Options, Suggestion};
use overlap_instrument::schema::{Op, SyncPhase};
use std::path::Path;

const MIB: u64 = 1 << 20;

/// The suggestion of `trace` on a network of latency 0 and `ns_per_mib` per MiB, eager up
/// to 64 KiB, with `progress`, and no policy: nothing moves, so the remedies are those of
/// the program's own order.
fn suggestion(trace: &Trace, ns_per_mib: f64, progress: ProgressMode) -> Suggestion {
    let program = program_of(trace).unwrap();
    let (latency, bandwidth) = (Some(0.0), Some(MIB as f64 * 1e9 / ns_per_mib));
    let fit = match NetworkFit::from_trace(trace, None) {
        Ok(fit) => fit.with_given(latency, bandwidth),
        Err(unknown) => unknown.with_given(latency, bandwidth),
    }
    .unwrap()
    .with_eager_limit(64 << 10);
    let options = Options {
        dag: DagOptions {
            policies: Vec::new(),
            ..DagOptions::default()
        },
        progress,
        conservative: false,
    };
    suggest(trace, &program, fit, &options).unwrap()
}

/// A 1 MiB message (rendezvous) posted before 1000 ns of compute and waited for after
/// it; before it, an 8-byte exchange whose Waits show what a Wait costs (1 ns):
///
/// ```text
///  rank 0 |Irecv 8 0-1|Isend 8 1-2|W 2-3|W 3-4|Isend 1 MiB 10-11|== work 11-1011 ==|Wait 1011-1211|
///  rank 1 |Irecv 8 0-1|Isend 8 1-2|W 2-3|W 3-4|Irecv 1 MiB 10-11|== work 11-1011 ==|Wait 1011-1211|
///  in-mpi: the 200 ns transfer starts when both are posted (10) and moves only inside
///          MPI: 1 ns in the posts, then nothing until the Waits at 1011 -> both end at
///          1011 + 199 = 1210
///  async:  it moves during the work: done at 210 -> both Waits end at 1011 + 1 = 1012
///  gain 1210 - 1012 = 198 per rank and for the run
/// ```
fn stalled_transfer() -> Trace {
    let rank = |r: u32| {
        let peer = 1 - r as i32;
        let big = if r == 0 {
            isend(10, 11, peer, 7, MIB, 3)
        } else {
            irecv(10, 11, peer, 7, MIB, 3)
        };
        let done = if r == 0 { None } else { Some((peer, 7)) };
        vec![
            irecv(0, 1, peer, 5, 8, 1),
            isend(1, 2, peer, 5, 8, 2),
            complete(Op::Wait, 2, 3, &[(1, Some((peer, 5)))]),
            complete(Op::Wait, 3, 4, &[(2, None)]),
            big,
            compute(11, 1011, "work"),
            complete(Op::Wait, 1011, 1211, &[(3, done)]),
        ]
    };
    run(vec![rank(0), rank(1)])
}

#[test]
fn a_transfer_that_moves_only_inside_mpi_gets_progress_with_its_prediction() {
    let s = suggestion(&stalled_transfer(), 200.0, ProgressMode::InMpi);
    let ProgressRemedy::Gains(g) = &s.remedies.progress else {
        panic!("{:#?}", s.remedies.progress);
    };
    assert_eq!((g.in_mpi.ns, g.with_progress.ns), (1210, 1012));
    assert_eq!(g.gain_ns, 198);
    assert_eq!(g.sites.len(), 1, "{:#?}", g.sites);
    let site = &g.sites[0];
    // Both ranks' Waits (one line of code each, no site recorded) shrink by 198.
    assert_eq!((site.shortened_ns, site.requests), (396, 2));
    assert_eq!(site.compute, "compute \"work\"");
    // A quarter of the 200 ns transfer; no Test was made, so no floor from its cost.
    assert_eq!(site.test_every_ns, 50);
    let text = lines(&s.remedies).join("\n");
    assert!(
        text.contains("MPI_Test") && text.contains("MPICH_ASYNC_PROGRESS=1"),
        "{text}"
    );
    // Replayed with asynchronous progress already, there is nothing more to give.
    let s = suggestion(&stalled_transfer(), 200.0, ProgressMode::Async);
    assert_eq!(s.remedies.progress, ProgressRemedy::AlreadyAsync);
}

#[test]
fn a_transfer_short_against_the_uncertainty_gains_nothing() {
    // 2 ns for the MiB: the stall is 1 ns, within the uncertainty (1 % of the run).
    let s = suggestion(&stalled_transfer(), 2.0, ProgressMode::InMpi);
    assert!(
        matches!(s.remedies.progress, ProgressRemedy::NothingToGain { gain_ns } if gain_ns <= 1),
        "{:#?}",
        s.remedies.progress
    );
    assert!(lines(&s.remedies).iter().all(|l| !l.contains("MPI_Test")));
}

/// Rank 0 computes before it sends; rank 1 waits for it:
///
/// ```text
///  rank 0 |== slow 0-100 ==|Isend 100-101|Wait 101-102|
///  rank 1 |Irecv 0-1|Wait 1 ------------- 101|c 101-110|
///  Late Sender on rank 1's Wait: E(send) 100 - E(Wait) 1 = 99
///  rank 0 |Allreduce 102-150|            rank 1 |Allreduce 110-150|: rank 0 enters first
///  and waits 110 - 102 = 8 for rank 1 (Wait at NxN)
/// ```
#[test]
fn a_late_partner_and_an_imbalance_are_named_with_the_time_they_cost() {
    let trace = run(vec![
        vec![
            compute(0, 100, "slow"),
            isend(100, 101, 1, 5, 8, 1),
            complete(Op::Wait, 101, 102, &[(1, None)]),
            allreduce(102, 150),
        ],
        vec![
            irecv(0, 1, 0, 5, 8, 1),
            complete(Op::Wait, 1, 101, &[(1, Some((0, 5)))]),
            compute(101, 110, "fast"),
            allreduce(110, 150),
        ],
    ]);
    let s = suggestion(&trace, 200.0, ProgressMode::InMpi);
    let late = &s.remedies.late_partners;
    assert_eq!(late.len(), 1, "{late:#?}");
    let l = &late[0];
    assert_eq!(
        (l.wait.as_str(), l.late_call.as_str()),
        ("MPI_Wait", "MPI_Isend")
    );
    assert_eq!((l.late_rank, l.count, l.lost_ns), (0, 1, 99));
    assert_eq!(l.late_compute, "compute \"slow\"");
    let imbalance = &s.remedies.imbalance;
    assert_eq!(imbalance.len(), 1, "{imbalance:#?}");
    let i = &imbalance[0];
    assert_eq!(
        (i.call.as_str(), i.last_rank, i.count, i.lost_ns),
        ("MPI_Allreduce", 1, 1, 8)
    );
    let text = lines(&s.remedies).join("\n");
    assert!(
        text.contains("rank 0's MPI_Isend") && text.contains("compute \"slow\""),
        "{text}"
    );
}

/// Rank 0 leaves a barrier, computes between two calls (no span: a gap, as the preload
/// records a program), then posts two sends right after each other; rank 1 waits for
/// both. The sends were late because of the gap after the barrier, not the 2 ns
/// between them, nor the long "setup" before the barrier (waited for at the barrier):
///
/// ```text
///  rank 0 |== setup 0-300 ==|Barrier 300-310|   gap 310-400  |Isend 400-401|  |Isend 403-404|Waitall 404-405|
///  rank 1 |Barrier 0 ------------------ 310|Irecv 310-311|Irecv 311-312|Waitall 312 ------------ 404|
///  Late Sender on rank 1's Waitall: E(last send) 403 - E(Waitall) 312 = 91
///  the longest compute since rank 0's barrier: the gap 310-400 (90 ns), not 401-403 (2)
/// ```
#[test]
fn a_late_call_names_the_longest_compute_since_the_partner_last_waited() {
    let mut r0 = rank_trace(
        header(0, 2, 0, "boot-1"),
        vec![sync(SyncPhase::Init, 0, 0, 0)],
        vec![
            compute(0, 300, "setup"),
            at_site(barrier(300, 310), 4),
            at_site(isend(400, 401, 1, 5, 8, 1), 1),
            at_site(isend(403, 404, 1, 6, 8, 2), 2),
            at_site(complete(Op::Waitall, 404, 405, &[(1, None), (2, None)]), 3),
        ],
    );
    r0.sites = source_sites("k.c", &[20, 21, 22, 30]);
    let r1 = rank_trace(
        header(1, 2, 0, "boot-1"),
        vec![sync(SyncPhase::Init, 0, 0, 0)],
        vec![
            barrier(0, 310),
            irecv(310, 311, 0, 5, 8, 1),
            irecv(311, 312, 0, 6, 8, 2),
            complete(
                Op::Waitall,
                312,
                404,
                &[(1, Some((0, 5))), (2, Some((0, 6)))],
            ),
        ],
    );
    let trace = overlap_analyzer::merge::merge(vec![r0, r1]).to_trace(Path::new("hand-built"));
    let s = suggestion(&trace, 200.0, ProgressMode::InMpi);
    let late: Vec<_> = (s.remedies.late_partners.iter())
        .filter(|l| l.kind == "Late Sender")
        .collect();
    assert_eq!(late.len(), 1, "{late:#?}");
    assert!(
        late[0].late_call.starts_with("MPI_Isend at k.c:2"),
        "{late:#?}"
    );
    assert_eq!(
        late[0].late_compute,
        "the compute between MPI_Barrier at k.c:30 and MPI_Isend at k.c:20"
    );
}
