//! The "Hung run" section on hand-built ranks and dumps (the hang's own tests and
//! builders: [`crate::hang`]'s), every rank reading one clock (times are as written):
//! what the analysis finds and how the section says it.

use overlap_format::schema::{CallArgs, DumpReason, InFlightCall, Op};

use super::render;
use crate::hang::tests::{dump, in_flight, p2p, rank, recv_from, report};
use crate::hang::*;
use overlap_format::testing::call;

/// ```text
///  ns        0    100        1000                          3000
///  rank 0    |Init|          |Recv(from 1, tag 7) ......... stalled dump
///  rank 1    |Init|          |Recv(from 0, tag 8) ......... stalled dump (at 3100)
/// ```
#[test]
fn two_ranks_receiving_from_each_other_are_a_cycle() {
    let init = || call(Op::Init, 0, 100, CallArgs::default());
    let h = report(vec![
        rank(
            0,
            2,
            vec![init()],
            Some(dump(DumpReason::Stalled, 3000, vec![recv_from(1, 7, 1000)])),
        ),
        rank(
            1,
            2,
            vec![init()],
            Some(dump(DumpReason::Stalled, 3100, vec![recv_from(0, 8, 1000)])),
        ),
    ]);
    assert_eq!(h.verdict, Verdict::Hung);
    assert_eq!(h.ranks[0].state, RankState::Stalled);
    let c = &h.ranks[0].calls[0];
    assert_eq!((c.call, c.start_ns, c.blocked_ns), ("MPI_Recv", 1000, 2000));
    assert_eq!(h.ranks[1].calls[0].blocked_ns, 2100);
    let edges: Vec<(u32, u32)> = h.wait_for.iter().map(|e| (e.from, e.to)).collect();
    assert_eq!(edges, [(0, 1), (1, 0)]);
    assert_eq!(h.cycle, Some(vec![0, 1, 0]));
    assert!(h.waited_not_blocked.is_empty());
    let mut text = String::new();
    render(&mut text, &h);
    assert!(
        text.contains(
            "rank 0 blocked in MPI_Recv from rank 1 tag 7 since 0.000 s, 2.0 us before the dump"
        ),
        "{text}"
    );
    assert!(
        text.contains("rank 1 blocked in MPI_Recv from rank 0 tag 8"),
        "{text}"
    );
    assert!(
        text.contains("wait-for cycle: rank 0 -> rank 1 -> rank 0"),
        "{text}"
    );
}

/// ```text
///  ns        0   100  200             300                         5000
///  rank 0    |Irecv(from 1, t3, req 1)|Isend(to 2, t4, req 2)|Waitall(2) .. dump
///  rank 1    |Bcast from root 0 on world ............................. dump
///  rank 2    (computing)                                              dump, not in MPI
/// ```
/// Rank 0 waits for 1 (its receive) and 2 (its send); rank 1's broadcast waits for the
/// ranks not in a world collective (0 and 2). The cycle is 0 -> 1 -> 0; rank 2 is
/// waited for by both and is not in MPI.
#[test]
fn waits_name_their_pending_requests_and_collectives_name_the_missing_ranks() {
    let bcast = InFlightCall {
        root: Some(0),
        ..in_flight(Op::Bcast, 50)
    };
    let waitall = InFlightCall {
        requests: Some(2),
        comm: None,
        ..in_flight(Op::Waitall, 300)
    };
    let h = report(vec![
        rank(
            0,
            3,
            vec![
                call(Op::Irecv, 0, 100, p2p(1, 3, Some(1))),
                call(Op::Isend, 100, 200, p2p(2, 4, Some(2))),
            ],
            Some(dump(DumpReason::Stalled, 5000, vec![waitall])),
        ),
        rank(
            1,
            3,
            vec![],
            Some(dump(DumpReason::Stalled, 5000, vec![bcast])),
        ),
        rank(
            2,
            3,
            vec![call(Op::Init, 0, 10, CallArgs::default())],
            Some(dump(DumpReason::Stalled, 5000, vec![])),
        ),
    ]);
    let w = &h.ranks[0].calls[0].waits_for;
    type Seen = (WaitedKind, Option<u32>, Option<i32>, Option<u64>);
    let got: Vec<Seen> = w
        .iter()
        .map(|w| (w.kind, w.rank, w.tag, w.request))
        .collect();
    assert_eq!(
        got,
        [
            (WaitedKind::Receive, Some(1), Some(3), Some(1)),
            (WaitedKind::Send, Some(2), Some(4), Some(2)),
        ]
    );
    assert_eq!(h.ranks[2].state, RankState::NotInMpi);
    let edges: Vec<(u32, u32)> = h.wait_for.iter().map(|e| (e.from, e.to)).collect();
    assert_eq!(edges, [(0, 1), (0, 2), (1, 0), (1, 2)]);
    assert_eq!(h.cycle, Some(vec![0, 1, 0]));
    assert_eq!(h.waited_not_blocked.len(), 1);
    assert_eq!(h.waited_not_blocked[0].rank, 2);
    assert_eq!(h.waited_not_blocked[0].waited_by, [0, 1]);
    let mut text = String::new();
    render(&mut text, &h);
    assert!(
        text.contains("MPI_Waitall (2 requests: receive from rank 1 tag 3 (request 1), send to rank 2 tag 4 (request 2))"),
        "{text}"
    );
    assert!(
        text.contains(
            "rank 1 blocked in MPI_Bcast (root 0) on MPI_COMM_WORLD, waiting for ranks 0, 2"
        ),
        "{text}"
    );
    assert!(
        text.contains("rank 2 is not in MPI at its dump: computing (waited for by ranks 0, 1)"),
        "{text}"
    );
}

/// ```text
///  ns        0          400   500         900
///  rank 0    |Send(to 1, t1) signal dump at 450 ... returns at 500 |Finalize|
///  rank 1    |Recv(from 0, t1)|                                    |Finalize|  (no dump)
/// ```
/// A dump taken while the run went on: nothing is blocked, and no cycle is claimed.
#[test]
fn a_dump_of_a_run_that_went_on_blocks_nobody() {
    let send = InFlightCall {
        peer: Some(1),
        tag: Some(1),
        ..in_flight(Op::Send, 0)
    };
    let fin = || call(Op::Finalize, 900, 950, CallArgs::default());
    let mut r0 = rank(
        0,
        2,
        vec![call(Op::Send, 0, 500, p2p(1, 1, None)), fin()],
        None,
    );
    r0.in_flight = vec![dump(DumpReason::Signal, 450, vec![send])];
    let h = report(vec![
        r0,
        rank(
            1,
            2,
            vec![call(Op::Recv, 0, 400, p2p(0, 1, None)), fin()],
            None,
        ),
    ]);
    assert_eq!(h.verdict, Verdict::WentOn);
    assert_eq!(h.ranks[0].state, RankState::WentOn);
    assert!(h.ranks[0].calls[0].completed_after_dump);
    assert_eq!(h.ranks[1].state, RankState::Finalized);
    assert!(h.wait_for.is_empty() && h.cycle.is_none());
    let mut text = String::new();
    render(&mut text, &h);
    assert!(
        text.contains("every call in flight at the dump completed afterwards"),
        "{text}"
    );
}

/// ```text
///  rank 0   |Send| compute ......... signal dump (no call in flight)
///  rank 1   |Recv| compute ......... signal dump (no call in flight)
/// ```
/// A dump of ranks that were computing says so, not that calls completed.
#[test]
fn a_dump_of_ranks_outside_mpi_says_none_was_inside() {
    let mut ranks = Vec::new();
    for r in 0..2 {
        let mut t = rank(
            r,
            2,
            vec![call(Op::Send, 0, 50, p2p(1 - r as i32, 1, None))],
            None,
        );
        t.in_flight = vec![dump(DumpReason::Signal, 900, vec![])];
        ranks.push(t);
    }
    let h = report(ranks);
    assert_eq!(h.verdict, Verdict::WentOn);
    assert!(h.ranks.iter().all(|r| r.state == RankState::NotInMpi));
    let mut text = String::new();
    render(&mut text, &h);
    assert!(
        text.contains("In-flight dump: no rank was inside an MPI call when it dumped"),
        "{text}"
    );
    assert!(
        text.contains("rank 1 is not in MPI at its dump: computing"),
        "{text}"
    );
    assert!(!text.contains("(since:"), "{text}");
}

/// ```text
///  rank 0    |Recv(from 1, t5) ...... stalled dump
///  rank 1    |Finalize|                (finished; no dump)
///  rank 2    (no trace file)
/// ```
#[test]
fn a_rank_waited_for_that_finished_or_left_no_trace_is_named() {
    let h = report(vec![
        rank(
            0,
            3,
            vec![],
            Some(dump(
                DumpReason::Stalled,
                900,
                vec![recv_from(1, 5, 100), {
                    let mut c = recv_from(2, 6, 100);
                    c.tid = 1;
                    c
                }],
            )),
        ),
        rank(
            1,
            3,
            vec![call(Op::Finalize, 10, 20, CallArgs::default())],
            None,
        ),
    ]);
    assert_eq!(h.ranks[1].state, RankState::Finalized);
    assert_eq!(h.ranks[2].state, RankState::NoTrace);
    assert_eq!(h.cycle, None);
    let states: Vec<(u32, RankState)> = h
        .waited_not_blocked
        .iter()
        .map(|n| (n.rank, n.state))
        .collect();
    assert_eq!(states, [(1, RankState::Finalized), (2, RankState::NoTrace)]);
    let mut text = String::new();
    render(&mut text, &h);
    assert!(
        text.contains("rank 0 thread 1 blocked in MPI_Recv from rank 2 tag 6"),
        "{text}"
    );
    assert!(text.contains("no wait-for cycle"), "{text}");
    assert!(text.contains("rank 1 finalized"), "{text}");
    assert!(text.contains("rank 2 has no trace file"), "{text}");
}
