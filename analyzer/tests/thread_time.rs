//! A rank whose threads wait at the same time (`MPI_THREAD_MULTIPLE`): its time is
//! counted once, not once per thread. Its wait states add up to the union of its
//! threads' waits, never more than its wall time, and the compute the merge summary
//! shows is the time outside MPI that `analyze` calls useful. The answers were worked
//! out by hand from the drawn timeline (times in ns, one clock).

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::metrics::WaitKind;
use overlap_instrument::schema::{Event, Op};

/// `e`, recorded on thread `tid`.
fn on_thread(mut e: Event, tid: u32) -> Event {
    if let Event::Call(c) = &mut e {
        c.tid = tid;
    }
    e
}

#[test]
fn two_threads_waiting_at_once_count_the_rank_time_once() {
    //            0    2    4         10        14   16
    // rank 0
    //  thread 0  |Irecv|.|Wait 2 ------------ 12|              Late Sender [2, 10) = 8
    //  thread 1  |Irecv|......|Wait 4 --------------------- 16|  Late Sender [4, 14) = 10
    // rank 1     |compute 0-10       |Send t1 10-11|c 11-14|Send t2 14-15|c 15-16|
    //
    // One cause per nanosecond of rank 0: [2, 4) thread 0 alone: 2; [4, 10) both: 3
    // each; [10, 14) thread 1 alone: 4. Thread 0's wait 2 + 3 = 5 (of 8), thread 1's
    // 3 + 4 = 7 (of 10): 12 in all, the union [2, 14), not 8 + 10 = 18, which is more
    // than rank 0's wall time of 16.
    // Rank 0: in MPI [0, 1) and [2, 16) = 15, waiting [2, 16) = 14, useful 16 - 15 = 1.
    // Its compute, inferred from each thread's gaps: [1, 2) on thread 0, [1, 4) on
    // thread 1; outside MPI only [1, 2): 1, the useful time (not the 3 they cover).
    let t = run(vec![
        vec![
            on_thread(irecv(0, 1, 1, 1, 8, 1), 0),
            on_thread(irecv(0, 1, 1, 2, 8, 2), 1),
            on_thread(complete(Op::Wait, 2, 12, &[(1, Some((1, 1)))]), 0),
            on_thread(complete(Op::Wait, 4, 16, &[(2, Some((1, 2)))]), 1),
        ],
        vec![
            compute(0, 10, "c"),
            send(10, 11, 0, 1, 8),
            compute(11, 14, "c"),
            send(14, 15, 0, 2, 8),
            compute(15, 16, "c"),
        ],
    ]);
    let r = report(&t);
    assert_eq!(kind(&r, WaitKind::LateSender), (12, 2));
    assert_eq!(kind(&r, WaitKind::LateReceiver), (0, 0));
    assert_eq!(r.wait_states.per_rank_ns[&0], 12);
    assert_eq!(r.wait_states.total_ns, 12);
    // Of the ranks' summed wall time, 16 + 16.
    assert!(close(r.wait_states.fraction.unwrap(), 12.0 / 32.0));
    let mut waits: Vec<(u64, Option<u64>)> = r.wait_states.kinds[0]
        .worst
        .iter()
        .map(|w| (w.amount_ns, w.split_from_ns))
        .collect();
    waits.sort_unstable();
    assert_eq!(waits, vec![(5, Some(8)), (7, Some(10))]);

    let rank0 = &r.ranks[0];
    assert_eq!(
        (
            rank0.wall_ns,
            rank0.in_mpi_ns,
            rank0.waiting_ns,
            rank0.useful_ns,
            rank0.compute_ns
        ),
        (16, 15, 14, 1, 1)
    );
    // The merge summary reads the same budget.
    let summary = overlap_analyzer::summary::summarize(&t);
    assert_eq!(summary.ranks[0].compute_ns, 1);
    assert_eq!(summary.ranks[0].useful_ns, 1);
}
