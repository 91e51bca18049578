//! The metrics on hand-built traces whose answers were worked out by hand; each test
//! draws its timeline (times in ns, all ranks on one clock unless said otherwise).

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::analysis::analyze;
use overlap_analyzer::metrics::pop::TIdealMethod;
use overlap_analyzer::metrics::WaitKind;
use overlap_instrument::schema::{CallArgs, CallEvent, Event, Nanos, Op, SyncPhase};

/// (total, count) of one kind.
#[test]
fn late_sender_on_a_blocking_receive() {
    // rank 0  |compute 0-10|Send 10-11|compute 11-20|
    // rank 1  |compute 0-4|Recv 4 ------ 12|compute 12-20|
    //                       ^E(recv)=4  ^E(send)=10: Late Sender 10 - 4 = 6, peer 0
    let t = run(vec![
        vec![
            compute(0, 10, "c"),
            send(10, 11, 1, 7, 64),
            compute(11, 20, "c"),
        ],
        vec![
            compute(0, 4, "c"),
            recv(4, 12, 0, 7, 64),
            compute(12, 20, "c"),
        ],
    ]);
    let r = report(&t);
    assert_eq!(kind(&r, WaitKind::LateSender), (6, 1));
    assert_eq!(kind(&r, WaitKind::LateReceiver), (0, 0));
    let w = &r.wait_states.kinds[0].worst[0];
    assert_eq!(
        (w.rank, w.peer, w.call, w.start_ns),
        (1, Some(0), "MPI_Recv", 4)
    );
    // The call it waited for: rank 0's Send, its event 1.
    assert_eq!(w.peer_index, Some(1));
    assert_eq!(r.wait_states.per_rank_ns[&1], 6);

    // POP: T = 20, Useful = 19 (rank 0) and 12 (rank 1).
    // LB = 15.5 / 19, CommE = 19 / 20, PE = 31 / 40.
    // Replay: rank 0 computes 10, sends at 10, computes 9: 19. Rank 1 computes 4, its
    // Recv waits for the send (10), computes 8: 18. T_ideal = 19: SerE 1, TE 0.95.
    // Subtraction: max(19 + 0, 12 + 6) = 19.
    let p = &r.pop;
    assert!(close(p.load_balance.unwrap(), 15.5 / 19.0), "{p:?}");
    assert!(close(p.communication_efficiency.unwrap(), 0.95));
    assert!(close(p.parallel_efficiency.unwrap(), 0.775));
    assert_eq!(p.t_ideal_replay_ns, Some(19));
    assert_eq!(p.t_ideal_subtraction_ns, 19);
    assert_eq!(p.t_ideal_method, TIdealMethod::Replay);
    assert!(close(p.serialization_efficiency.unwrap(), 1.0));
    assert!(close(p.transfer_efficiency.unwrap(), 0.95));
    assert!(r.false_overlap.is_empty());
}

#[test]
fn late_receiver_only_when_the_send_waited_for_the_post() {
    // rank 0  |Isend 0-1|Wait 1 ---------------- 10|
    // rank 1  |compute 0-6|Irecv 6-7|Wait 7-10|
    //            the send's Wait began at 1, the receive was posted at 6: 5, peer 1
    let t = run(vec![
        vec![
            isend(0, 1, 1, 3, 1 << 20, 1),
            complete(Op::Wait, 1, 10, &[(1, None)]),
        ],
        vec![
            compute(0, 6, "c"),
            irecv(6, 7, 0, 3, 1 << 20, 1),
            complete(Op::Wait, 7, 10, &[(1, Some((0, 3)))]),
        ],
    ]);
    let r = report(&t);
    assert_eq!(kind(&r, WaitKind::LateReceiver), (5, 1));
    assert_eq!(kind(&r, WaitKind::LateSender), (0, 0));
    let w = &r.wait_states.kinds[1].worst[0];
    assert_eq!((w.rank, w.peer, w.call), (0, Some(1), "MPI_Wait"));
    // The receive it waited for: rank 1's Irecv, its event 1.
    assert_eq!(w.peer_index, Some(1));

    // An eager send: its Wait (1-2) ended before the receive was posted (6).
    let t = run(vec![
        vec![
            isend(0, 1, 1, 3, 8, 1),
            complete(Op::Wait, 1, 2, &[(1, None)]),
        ],
        vec![
            compute(0, 6, "c"),
            irecv(6, 7, 0, 3, 8, 1),
            complete(Op::Wait, 7, 10, &[(1, Some((0, 3)))]),
        ],
    ]);
    assert_eq!(kind(&report(&t), WaitKind::LateReceiver), (0, 0));
}

#[test]
fn wait_at_barrier_and_at_nxn() {
    // rank 0  |c 0-2|Barrier 2 --------- 10|c|Allreduce 12 ---- 20|
    // rank 1  |c 0-5|Barrier 5 ---- 10|c 10-17|Allreduce 17 - 20|
    // rank 2  |c 0-9|Barrier 9-10|c 10-11|Allreduce 11 ------ 20|
    // Barrier: last in at 9 -> waits 7, 4, 0. Allreduce: last in at 17 -> 5, 0, 6.
    let t = run(vec![
        vec![
            compute(0, 2, "c"),
            barrier(2, 10),
            compute(10, 12, "c"),
            allreduce(12, 20),
        ],
        vec![
            compute(0, 5, "c"),
            barrier(5, 10),
            compute(10, 17, "c"),
            allreduce(17, 20),
        ],
        vec![
            compute(0, 9, "c"),
            barrier(9, 10),
            compute(10, 11, "c"),
            allreduce(11, 20),
        ],
    ]);
    let r = report(&t);
    assert_eq!(kind(&r, WaitKind::WaitAtBarrier), (11, 2));
    assert_eq!(kind(&r, WaitKind::WaitAtNxN), (11, 2));
    let b = &r.wait_states.kinds[2].worst;
    assert_eq!((b[0].rank, b[0].amount_ns, b[0].peer), (0, 7, Some(2)));
    // The last to arrive's own Barrier: rank 2's event 1.
    assert_eq!(b[0].peer_index, Some(1));
    assert_eq!((b[1].rank, b[1].amount_ns), (1, 4));
    let n = &r.wait_states.kinds[3].worst;
    assert_eq!((n[0].rank, n[0].amount_ns, n[0].peer), (2, 6, Some(1)));
    assert_eq!((n[1].rank, n[1].amount_ns), (0, 5));
    // Replay: barrier leaves at 9, allreduce entered at 11, 16, 10 -> all leave at 16.
    assert_eq!(r.pop.t_ideal_replay_ns, Some(16));
}

/// A rooted collective on world with its root, as the preload records it.
fn rooted(op: Op, start: u64, end: u64, root: i32) -> Event {
    Event::Call(CallEvent {
        tid: 0,
        start: Nanos(start),
        end: Nanos(end),
        op,
        args: CallArgs {
            comm: Some(0),
            root: Some(root),
            ..CallArgs::default()
        },
    })
}

#[test]
fn late_broadcast_and_early_reduce() {
    // rank 0 (root) |c 0-6|Bcast 6-8|        |Reduce 9 ------------- 15|
    // rank 1        |c 0-2|Bcast 2 ------ 8|c 8-13        |Reduce 13-15|
    // rank 2        |c 0-4|Bcast 4 ---- 8|c 8-10|Reduce 10 ------- 15|
    // Bcast: the non-roots wait for the root's entry at 6: rank 1 4, rank 2 2; the
    // root waits for nobody. Reduce (root 0): the root waits for the last other entry,
    // rank 1 at 13: 13 − 9 = 4; the others wait for nobody.
    let t = run(vec![
        vec![
            compute(0, 6, "c"),
            rooted(Op::Bcast, 6, 8, 0),
            compute(8, 9, "c"),
            rooted(Op::Reduce, 9, 15, 0),
        ],
        vec![
            compute(0, 2, "c"),
            rooted(Op::Bcast, 2, 8, 0),
            compute(8, 13, "c"),
            rooted(Op::Reduce, 13, 15, 0),
        ],
        vec![
            compute(0, 4, "c"),
            rooted(Op::Bcast, 4, 8, 0),
            compute(8, 10, "c"),
            rooted(Op::Reduce, 10, 15, 0),
        ],
    ]);
    let r = report(&t);
    assert_eq!(kind(&r, WaitKind::LateBroadcast), (6, 2));
    assert_eq!(kind(&r, WaitKind::EarlyReduce), (4, 1));
    assert_eq!(kind(&r, WaitKind::WaitAtNxN), (0, 0));
    let b = &r.wait_states.kinds[4].worst;
    assert_eq!((b[0].rank, b[0].amount_ns, b[0].peer), (1, 4, Some(0)));
    assert_eq!((b[1].rank, b[1].amount_ns, b[1].peer), (2, 2, Some(0)));
    let e = &r.wait_states.kinds[5].worst;
    assert_eq!((e[0].rank, e[0].amount_ns, e[0].peer), (0, 4, Some(1)));
    // The root's Bcast waited for nobody; the others for the root's Bcast (event 1),
    // the root's Reduce for rank 1's Reduce (event 3).
    assert_eq!((b[0].peer_index, e[0].peer_index), (Some(1), Some(3)));
}

#[test]
fn transfers_with_mpi_proc_null_are_not_messages_nor_requests() {
    // The ends of a chain talk to MPI_PROC_NULL (-1), as MIDAPACK does:
    // rank 0  |Irecv(-1) 0-1|Isend(-1) 1-2|Waitall 2-3 (recv status source -1)|
    // rank 1  |Recv(-1) 0-1 (status source -1)|c 1-3|
    // No message, nothing unmatched, and no request in the overlap figures.
    let t = run(vec![
        vec![
            irecv(0, 1, -1, 5, 8, 1),
            isend(1, 2, -1, 5, 8, 2),
            complete(Op::Waitall, 2, 3, &[(1, Some((-1, -1))), (2, None)]),
        ],
        vec![
            Event::Call(CallEvent {
                tid: 0,
                start: Nanos(0),
                end: Nanos(1),
                op: Op::Recv,
                args: CallArgs {
                    peer: Some(-1),
                    tag: Some(5),
                    comm: Some(0),
                    completed: vec![overlap_instrument::schema::Completion {
                        request: None,
                        source: Some(-1),
                        tag: Some(-1),
                        bytes: Some(0),
                    }],
                    ..CallArgs::default()
                },
            }),
            compute(1, 3, "c"),
        ],
    ]);
    assert!(t.messages.is_empty());
    assert_eq!((t.info.unmatched_sends, t.info.unmatched_receives), (0, 0));
    let r = report(&t);
    assert_eq!(r.requests.count, 0, "{:?}", r.requests);
}

#[test]
fn a_waitall_over_mixed_requests_counts_its_largest_late_sender_once() {
    // rank 0  |Irecv(1) 0-1|compute 1-10|Isend(1) 10-11|Waitall 11 ------- 21|
    // rank 1  |Irecv(0) 0-1|Irecv(2) 1-2|Isend(0) 2-3|Waitall 3 ------------ 20|
    // rank 2  |compute 0-15|Isend(1) 15-16|Wait 16-17|
    // rank 1's Waitall: from rank 0 (sent 10): 7; from rank 2 (sent 15): 12 -> 12 once.
    let t = run(vec![
        vec![
            irecv(0, 1, 1, 0, 8, 1),
            compute(1, 10, "c"),
            isend(10, 11, 1, 0, 8, 2),
            complete(Op::Waitall, 11, 21, &[(1, Some((1, 0))), (2, None)]),
        ],
        vec![
            irecv(0, 1, 0, 0, 8, 1),
            irecv(1, 2, 2, 0, 8, 2),
            isend(2, 3, 0, 0, 8, 3),
            complete(
                Op::Waitall,
                3,
                20,
                &[(1, Some((0, 0))), (2, Some((2, 0))), (3, None)],
            ),
        ],
        vec![
            compute(0, 15, "c"),
            isend(15, 16, 1, 0, 8, 1),
            complete(Op::Wait, 16, 17, &[(1, None)]),
        ],
    ]);
    let r = report(&t);
    assert_eq!(kind(&r, WaitKind::LateSender), (12, 1));
    let w = &r.wait_states.kinds[0].worst[0];
    assert_eq!((w.rank, w.peer, w.call), (1, Some(2), "MPI_Waitall"));
    assert_eq!(kind(&r, WaitKind::LateReceiver), (0, 0));
    assert_eq!(r.requests.count, 6);
    assert_eq!(r.requests.never_completed, 0);
    // Nothing runs after any of the waits: no false overlap.
    assert!(r.false_overlap.is_empty());
}

#[test]
fn per_request_overlap_follows_the_imb_formula() {
    // Three blocking warm-ups, each a clean transfer (rank 1 in its Recv when rank 0
    // sends): 13 - 0 = 13 three times -> t_pure(64 B) = 13.
    // rank 0  |Send 0-1|..|Send 20-21|..|Send 40-41|..|Isend 60-61|compute 61-71|Wait 71-73|
    // rank 1  |Recv 0-13|.|Recv 20-33|.|Recv 40-53|..|Irecv 60-61|Wait 61 ------------ 73|
    // The non-blocking message is no clean transfer (rank 1 entered its Wait at 61,
    // after the send at 60).
    // Send: window 61-71, t_cpu 10, t_ovrl 13 -> (13 + 10 - 13) / min(13, 10) = 1.
    // Receive: window empty -> 0.
    let mut r0: Vec<_> = (0..3).map(|k| send(20 * k, 20 * k + 1, 1, 0, 64)).collect();
    let mut r1: Vec<_> = (0..3)
        .map(|k| recv(20 * k, 20 * k + 13, 0, 0, 64))
        .collect();
    r0.extend([
        isend(60, 61, 1, 0, 64, 1),
        compute(61, 71, "c"),
        complete(Op::Wait, 71, 73, &[(1, None)]),
    ]);
    r1.extend([
        irecv(60, 61, 0, 0, 64, 1),
        complete(Op::Wait, 61, 73, &[(1, Some((0, 0)))]),
    ]);
    let t = run(vec![r0, r1]);
    let (r, d) = analyze(&t, &opts());
    let model = &r.requests.transfer_model;
    assert_eq!(model.classes.len(), 1);
    assert_eq!((model.messages, model.clean), (4, 3));
    assert_eq!(model.classes[0].estimate_ns, Some(13));
    // One class: no line (latency and bandwidth cannot be told apart), never "0 ns".
    assert_eq!(
        (model.latency_ns, model.bandwidth_bytes_per_s),
        (None, None)
    );
    let text = overlap_analyzer::report::render(&r, Default::default());
    assert!(
        text.contains(
            "network unknown (3 clean transfer(s) of 4 message(s)): one size class only (64 B \
             in 13 ns): latency and bandwidth cannot be told apart; t_pure known only for 64 B \
             (eager) 13 ns"
        ),
        "{text}"
    );
    let send = d.requests.iter().find(|q| q.is_send()).unwrap();
    assert_eq!(
        (
            send.window_ns,
            send.cpu_ns,
            send.t_ovrl_ns,
            send.t_pure_ns(),
            send.exposed_wait_ns
        ),
        (10, 10, 13, Some(13), 2)
    );
    assert_eq!(send.overlap(), Some(1.0));
    let recv = d.requests.iter().find(|q| !q.is_send()).unwrap();
    assert_eq!(
        (recv.window_ns, recv.cpu_ns, recv.overlap()),
        (0, 0, Some(0.0))
    );
    assert!(close(r.requests.mean_overlap.unwrap(), 0.5));
    assert_eq!(r.requests.zero_overlap, 1);
}

#[test]
fn zero_length_and_never_completed_requests_and_an_unmatched_send() {
    // rank 0  |Isend(1) 0-0|Wait 0-0|Isend(1, tag 9) 1-2|       (the second never waited)
    // rank 1  |Irecv(0) 0-0|Wait 0-5|                          (no receive for tag 9)
    let t = run(vec![
        vec![
            isend(0, 0, 1, 0, 8, 1),
            complete(Op::Wait, 0, 0, &[(1, None)]),
            isend(1, 2, 1, 9, 8, 2),
        ],
        vec![
            irecv(0, 0, 0, 0, 8, 1),
            complete(Op::Wait, 0, 5, &[(1, Some((0, 0)))]),
        ],
    ]);
    let (r, d) = analyze(&t, &opts());
    assert_eq!(r.run.unmatched_sends, 1);
    assert_eq!(r.requests.never_completed, 1);
    let zero = d
        .requests
        .iter()
        .find(|q| q.rank == 0 && q.request == 1)
        .unwrap();
    assert_eq!((zero.window_ns, zero.t_ovrl_ns), (0, 0));
    // A zero-length window is a figure; a request never completed has none.
    assert_eq!((zero.window(), zero.t_ovrl()), (Some(0), Some(0)));
    let never = d
        .requests
        .iter()
        .find(|q| q.rank == 0 && q.request == 2)
        .unwrap();
    assert_eq!(
        (
            never.window(),
            never.cpu(),
            never.exposed_wait(),
            never.t_ovrl()
        ),
        (None, None, None, None)
    );
    assert_eq!((never.progress_wait(), never.overlap()), (None, None));
    assert_eq!(kind(&r, WaitKind::LateSender), (0, 0));
}

#[test]
fn a_single_rank() {
    // rank 0  |compute 0-30|Barrier 30-31|compute 31-40|
    let t = run(vec![vec![
        compute(0, 30, "c"),
        barrier(30, 31),
        compute(31, 40, "c"),
    ]]);
    let r = report(&t);
    assert_eq!(r.wait_states.total_ns, 0);
    assert!(close(r.pop.parallel_efficiency.unwrap(), 39.0 / 40.0));
    assert!(close(r.pop.load_balance.unwrap(), 1.0));
    assert_eq!(r.pop.t_ideal_replay_ns, Some(39));
}

#[test]
fn clock_suspect_and_indeterminate_waits() {
    // Two hosts: rank 1's clock is known to within 50 ns of rank 0's.
    // rank 0  |compute 0-1200|Send 1200-1201|compute|Send 2050-2051|
    // rank 1  |Recv 0 ---- 1000|compute 1000-2000|Recv 2000 - 2080|
    // First: the send (1200) lands after the receive's end (1000): clock-suspect, the
    // wait is clipped to 1000 - 0 = 1000. Second: 2050 - 2000 = 50 <= 0 + 50: within
    // the error bound, indeterminate.
    let h0 = header(0, 2, 0, "host-a");
    let h1 = header(1, 2, 0, "host-b");
    let s1 = vec![
        sync(SyncPhase::Init, 0, 0, 50),
        sync(SyncPhase::Final, 3000, 0, 50),
    ];
    let r0 = rank_trace(
        h0,
        vec![sync(SyncPhase::Init, 0, 0, 0)],
        vec![
            compute(0, 1200, "c"),
            send(1200, 1201, 1, 1, 8),
            compute(1201, 2050, "c"),
            send(2050, 2051, 1, 1, 8),
        ],
    );
    let r1 = rank_trace(
        h1,
        s1,
        vec![
            recv(0, 1000, 0, 1, 8),
            compute(1000, 2000, "c"),
            recv(2000, 2080, 0, 1, 8),
        ],
    );
    let t = overlap_analyzer::merge::merge(vec![r0, r1]).to_trace(std::path::Path::new("x"));
    let r = report(&t);
    let ls = &r.wait_states.kinds[0];
    assert_eq!((ls.total_ns, ls.count), (1000, 1));
    assert_eq!((ls.indeterminate_count, ls.indeterminate_ns), (1, 50));
    assert_eq!(ls.clock_suspect, 1);
    assert!(ls.worst[0].clock_suspect);
    assert_eq!(r.clock.suspect_messages, 1);
    assert_eq!((r.clock.indeterminate_waits, r.clock.max_error_ns), (1, 50));
    assert!(!r.clock.shared_clock);
}

#[test]
fn a_sendrecv_exchange_replays_and_nested_compute_counts_once() {
    // rank 0  |compute 0-10|Sendrecv(1) 10-14|
    // rank 1  |compute 0-4|Sendrecv(0) 4 ---- 14|
    // Rank 1 waits for rank 0's send (10): Late Sender [4, 10); its own send waits for
    // rank 0's receive, posted by the same call at 10: Late Receiver [4, 10). One wait,
    // two causes: split evenly, 3 each (docs/metrics.md 3.4). Replay: rank 0 enters at
    // 10, rank 1 at 4 and leaves when rank 0's send is posted (10): T_ideal = 10.
    let sr = |start, end, peer: i32| sendrecv(start, end, peer, peer, 0, 8);
    let t = run(vec![
        vec![compute(0, 10, "c"), sr(10, 14, 1)],
        vec![compute(0, 4, "c"), sr(4, 14, 0)],
    ]);
    let r = report(&t);
    assert_eq!(kind(&r, WaitKind::LateSender), (3, 1));
    assert_eq!(kind(&r, WaitKind::LateReceiver), (3, 1));
    assert_eq!(r.wait_states.per_rank_ns[&1], 6);
    assert_eq!(r.pop.t_ideal_replay_ns, Some(10));

    // rank 0  |outer 0 ---------------- 100|      (inner 10-20 nested inside)
    //         |Isend 0-1|... Wait 50-51|          window 1-50: covered 49, not 49 + 10
    let t = run(vec![
        vec![
            isend(0, 1, 1, 0, 8, 1),
            compute(0, 100, "outer"),
            compute(10, 20, "inner"),
            complete(Op::Wait, 50, 51, &[(1, None)]),
        ],
        vec![
            irecv(0, 1, 0, 0, 8, 1),
            complete(Op::Wait, 1, 60, &[(1, Some((0, 0)))]),
        ],
    ]);
    let (_, d) = analyze(&t, &opts());
    let send = d.requests.iter().find(|q| q.is_send()).unwrap();
    assert_eq!(send.cpu_ns, 49);
}
