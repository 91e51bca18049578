//! The verdicts on traces without compute spans (as the preload writes them), the split
//! of a call's wait among its causes, overlap written but not achieved, non-blocking
//! collectives and one-sided synchronisation, on hand-built traces whose answers were
//! worked out by hand (times in ns, all ranks on one clock).

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::analysis::{analyze, Details, Report};
use overlap_analyzer::metrics::false_overlap::Limit;
use overlap_analyzer::metrics::request_metrics::RequestClass;
use overlap_analyzer::metrics::WaitKind;
use overlap_analyzer::model::compute::ComputeSource;
use overlap_analyzer::model::Trace;
use overlap_instrument::schema::{CallArgs, Event, Op};

fn both(t: &Trace) -> (Report, Details) {
    analyze(t, &opts())
}

/// (total, count) of one kind.
fn env(op: Op, start: u64, end: u64) -> Event {
    call(op, start, end, CallArgs::default())
}

#[test]
fn gaps_are_compute_and_false_overlap_names_the_call_to_move_after() {
    // No compute spans: compute is the gaps between calls, inside Init and Finalize.
    // S = send buffer 0x1000, R = receive buffer 0x2000.
    // rank 0 |Init 0-10|Irecv R 10-11|Isend S 11-12|Waitall 12 ------- 40|..60..
    //        |Irecv R 100-101|Isend S 101-102|Waitall 102-110|Finalize 110-120|
    // rank 1 |Init 0-10|..20..|Irecv R 30-31|Isend S 31-32|Waitall 32-40|..60..
    //        |Irecv R 100-101|Isend S 101-102|Waitall 102-110|Finalize 110-120|
    // compute: rank 0 [40, 100) = 60; rank 1 [10, 30) + [40, 100) = 80
    // rank 0's first Waitall: Late Sender [12, 31) (rank 1 sends at 31) and Late
    // Receiver [12, 30) (rank 1 posts its receive at 30): split (3.4)
    //   [12, 30) both: 9 each; [30, 31) Late Sender only: 1 -> LS 10, LR 9 (19 <= 28)
    // false overlap, rank 0: lost = 28 - LS before the split 19 = 9; window empty;
    //   next use of S: the Isend at 101 -> independent work [40, 101) = 60;
    //   the wait may go after the Irecv at 100 (the last call before the Isend)
    // rank 1's first Waitall: lost 8, the same independent work and limit
    let round = |post: u64, wait: (u64, u64), reqs: (u64, u64), peer: i32| {
        vec![
            with_buf(irecv(post, post + 1, peer, 0, 8, reqs.0), 0x2000),
            isend(post + 1, post + 2, peer, 0, 8, reqs.1),
            complete(
                Op::Waitall,
                wait.0,
                wait.1,
                &[(reqs.0, Some((peer, 0))), (reqs.1, None)],
            ),
        ]
    };
    let rank = |first: u64, wait: (u64, u64), peer: i32| {
        let mut e = vec![env(Op::Init, 0, 10)];
        e.extend(round(first, wait, (1, 2), peer));
        e.extend(round(100, (102, 110), (3, 4), peer));
        e.push(env(Op::Finalize, 110, 120));
        e
    };
    let t = run(vec![rank(10, (12, 40), 1), rank(30, (32, 40), 0)]);
    let (r, d) = both(&t);
    assert_eq!(r.run.compute_source, ComputeSource::Gaps);
    assert_eq!(
        (r.ranks[0].compute_ns, r.ranks[1].compute_ns),
        (60, 80),
        "{:?}",
        r.ranks
    );
    assert_eq!(r.ranks[0].compute_source, ComputeSource::Gaps);
    assert_eq!(r.ranks[0].in_mpi_ns, 40);

    assert_eq!(kind(&r, WaitKind::LateSender), (10, 1));
    assert_eq!(kind(&r, WaitKind::LateReceiver), (9, 1));
    let ls = &r.wait_states.kinds[0].worst[0];
    assert_eq!((ls.rank, ls.index, ls.split_from_ns), (0, 3, Some(19)));
    for b in &r.ranks {
        assert!(r.wait_states.per_rank_ns[&b.rank] <= b.in_mpi_ns);
    }
    assert!(r.pop.t_ideal_subtraction_ns <= r.pop.runtime_ns);

    assert_eq!(r.false_overlap.count, 2, "{:#?}", r.false_overlap);
    let f = &r.false_overlap.worst[0];
    assert_eq!((f.rank, f.wait.index, f.lost_ns), (0, 3, 9));
    let m = &f.possible;
    assert_eq!((m.independent_work_ns, m.independent_spans), (60, 1));
    assert_eq!(m.limit, Limit::BufferReuse);
    let before = m.move_before.as_ref().unwrap();
    assert_eq!((before.call, before.start_ns), ("MPI_Isend", 101));
    let after = m.move_after.as_ref().unwrap();
    assert_eq!((after.call, after.start_ns), ("MPI_Irecv", 100));
    assert_eq!(m.hideable_ns, 9);
    // The gap after the wait is compute of unknown effect: the move is only possible if
    // it does not write the send buffer.
    assert_eq!(f.proven, None);
    let needs = f.needs.as_ref().unwrap();
    assert_eq!((needs.compute.start_ns, needs.must_not), (40, "write"));
    assert_eq!(
        (
            r.false_overlap.worst[1].rank,
            r.false_overlap.worst[1].lost_ns
        ),
        (1, 8)
    );

    // The requests' windows are empty: t_cpu 0 from the gaps too.
    assert!(d.requests.iter().all(|q| q.cpu_ns == 0));
    let text = overlap_analyzer::report::render(&r, Default::default());
    assert!(text.contains("compute inferred from the gaps"), "{text}");
    assert!(text.contains("after MPI_Irecv"), "{text}");
}

/// One rank of the written-not-achieved traces: three blocking warm-up exchanges of
/// 1 MiB (0-10, 10-20, 20-30: rank 0 sends, rank 1 receives), a non-blocking one posted
/// at 30-31, compute to 71 and its Wait at `wait`, Finalize from `end`.
fn progress_rank(rank: u32, wait: (u64, u64), end: u64) -> Vec<Event> {
    const MIB: u64 = 1 << 20;
    let mut e: Vec<Event> = (0..3)
        .map(|k| match rank {
            0 => send(10 * k, 10 * k + 10, 1, 1, MIB),
            _ => recv(10 * k, 10 * k + 10, 0, 1, MIB),
        })
        .collect();
    let done = match rank {
        0 => {
            e.push(isend(30, 31, 1, 2, MIB, 1));
            None
        }
        _ => {
            e.push(irecv(30, 31, 0, 2, MIB, 1));
            Some((0, 2))
        }
    };
    e.push(complete(Op::Wait, wait.0, wait.1, &[(1, done)]));
    e.push(env(Op::Finalize, end, end + 9));
    e
}

#[test]
fn overlap_written_not_achieved() {
    // Three warm-ups without compute give the 1 MiB class its pure transfer: each a
    // clean transfer (the receiver in its Recv when the send was posted) of 10.
    // rank 0 |Send 0-10|Send 10-20|Send 20-30|Isend 30-31|..compute 31-71..|Wait 71-81|Fin|
    // rank 1 |Recv 0-10|Recv 10-20|Recv 20-30|Irecv 30-31|..compute 31-71..|Wait 71-81|Fin|
    // Both requests: t_cpu 40 >= t_pure 10, partners posted at 30 (not late), yet each
    // Wait took 10 >= 0.5 x 10: written, not achieved. IMB (10 + 40 - 51) / 10 < 0 -> 0.
    let t = run(vec![
        progress_rank(0, (71, 81), 90),
        progress_rank(1, (71, 81), 90),
    ]);
    let (r, d) = both(&t);
    for q in &d.requests {
        assert_eq!(
            (q.cpu_ns, q.t_pure_ns(), q.progress_wait_ns),
            (40, Some(10), 10)
        );
        assert_eq!(q.written_not_achieved, Some(true));
        assert_eq!(q.overlap(), Some(0.0));
    }
    let na = &r.requests.written_not_achieved;
    assert_eq!((na.count, na.calls, na.wait_ns, na.unknown), (2, 2, 20, 0));
    assert_eq!(na.worst[0].completion.as_ref().unwrap().call, "MPI_Wait");
    let text = overlap_analyzer::report::render(&r, Default::default());
    assert!(
        text.contains("overlap written, not achieved: 2 request(s) computed in their window yet their 2 completing call(s) waited 20 ns"),
        "{text}"
    );
    assert!(text.contains("MPICH_ASYNC_PROGRESS=1"), "{text}");
}

/// A Waitall that completes two requests written but not achieved waited once: its
/// time is summed once, not once per request (issue 36: "waited 25.8 s" where every
/// Waitall of the run took 12.6 s).
///
/// ```text
///  rank 0 |Send|Send|Send 20-30|Isend→1 30-31|Irecv←1 31-32|..compute 32-72..|Waitall 72-82|
///  rank 1 |Recv|Recv|Recv 20-30|Irecv←0 30-31|Isend→0 31-32|..compute 32-72..|Waitall 72-82|
/// ```
///
/// t_pure(1 MiB) = 10 (the three warm-ups); each of the four requests: t_cpu 40, its
/// call's partners posted by 31 (not late), the Waitall took 10 >= 0.5 x 10: written,
/// not achieved. Four requests, two calls, 10 + 10 = 20 waited (not 40).
#[test]
fn a_shared_waitall_is_summed_once() {
    const MIB: u64 = 1 << 20;
    let rank = |me: u32| {
        let peer = 1 - me as i32;
        let mut e = progress_rank(me, (0, 0), 0);
        e.truncate(3);
        let (first, second) = if me == 0 {
            (
                isend(30, 31, peer, 2, MIB, 1),
                irecv(31, 32, peer, 3, MIB, 2),
            )
        } else {
            (
                irecv(30, 31, peer, 2, MIB, 1),
                isend(31, 32, peer, 3, MIB, 2),
            )
        };
        let done = if me == 0 {
            [(1, None), (2, Some((peer, 3)))]
        } else {
            [(1, Some((peer, 2))), (2, None)]
        };
        e.extend([first, second, complete(Op::Waitall, 72, 82, &done)]);
        e.push(env(Op::Finalize, 90, 99));
        e
    };
    let t = run(vec![rank(0), rank(1)]);
    let (r, d) = both(&t);
    assert_eq!(d.requests.len(), 4);
    for q in &d.requests {
        assert_eq!((q.t_pure_ns(), q.progress_wait_ns), (Some(10), 10), "{q:?}");
        assert_eq!(q.written_not_achieved, Some(true));
    }
    let na = &r.requests.written_not_achieved;
    assert_eq!((na.count, na.calls, na.wait_ns), (4, 2, 20));
}

#[test]
fn a_wait_far_longer_than_the_transfer_is_not_the_transfers() {
    // As above, but each Wait takes 100 (71-171): ten times t_pure 10, past the
    // ceiling 4 x 10 + min_wait 1 = 41. Not a transfer left to the wait (a partner
    // descheduled, say): not counted as written, not achieved, and still known.
    let t = run(vec![
        progress_rank(0, (71, 171), 180),
        progress_rank(1, (71, 171), 180),
    ]);
    let (r, d) = both(&t);
    for q in &d.requests {
        assert_eq!((q.t_pure_ns(), q.progress_wait_ns), (Some(10), 100));
        assert_eq!(q.written_not_achieved, Some(false));
    }
    let na = &r.requests.written_not_achieved;
    assert_eq!((na.count, na.unknown), (0, 0));
}

fn ibcast(start: u64, end: u64, request: u64) -> Event {
    call(
        Op::Ibcast,
        start,
        end,
        CallArgs {
            comm: Some(0),
            bytes: Some(64),
            root: Some(0),
            request: Some(request),
            ..CallArgs::default()
        },
    )
}

#[test]
fn non_blocking_collectives_get_imb_and_osu_figures() {
    // instance 1 (waited at once): last post at 0; observed 5 - 0 = 5, 6 - 0 = 6
    // rank 0 |Ibcast 0-1|Wait 1-5|..|Ibcast 10-11|...compute 11-31...|Wait 31-32|..|Fin 40|
    // rank 1 |Ibcast 0-1|Wait 1-6|..|Ibcast 10-11|.compute 11-21.|Wait 21 -- 33|..|Fin 40|
    // instance 2: observed 22 and 23; t_pure(Ibcast, 64 B) = min = 5
    // rank 0 req 2: t_cpu 20, t_ovrl 22: IMB (5 + 20 - 22) / 5 = 0.6, OSU 1 - 2/5 = 0.6
    // rank 1 req 2: t_cpu 10, t_ovrl 23: both 0; waited 12 >= 2.5 after computing
    //   10 >= 5: written, not achieved (rank 0's wait of 1 is not)
    // requests 1: t_cpu 0: IMB 0; OSU 1 - 5/5 = 0 and 1 - 6/5 -> 0
    let t = run(vec![
        vec![
            ibcast(0, 1, 1),
            complete(Op::Wait, 1, 5, &[(1, None)]),
            ibcast(10, 11, 2),
            complete(Op::Wait, 31, 32, &[(2, None)]),
            env(Op::Finalize, 40, 41),
        ],
        vec![
            ibcast(0, 1, 1),
            complete(Op::Wait, 1, 6, &[(1, None)]),
            ibcast(10, 11, 2),
            complete(Op::Wait, 21, 33, &[(2, None)]),
            env(Op::Finalize, 40, 41),
        ],
    ]);
    let (r, d) = both(&t);
    assert_eq!(r.requests.collectives, 4);
    assert!(d
        .requests
        .iter()
        .all(|q| q.kind == RequestClass::Collective && q.t_pure_ns() == Some(5)));
    let q = |rank: u32, req: u64| {
        d.requests
            .iter()
            .find(|q| q.rank == rank && q.request == req)
            .unwrap()
    };
    assert!(close(q(0, 2).overlap().unwrap(), 0.6));
    assert!(close(q(0, 2).osu_overlap().unwrap(), 0.6));
    assert_eq!(q(1, 2).overlap(), Some(0.0));
    assert_eq!(q(0, 1).osu_overlap(), Some(0.0));
    assert_eq!(q(1, 2).written_not_achieved, Some(true));
    assert_eq!(q(0, 2).written_not_achieved, Some(false));
    let c = r.requests.nbc.as_ref().unwrap();
    assert_eq!(
        (
            c.completed,
            c.mean_overall_ns,
            c.mean_pure_ns,
            c.mean_cpu_ns
        ),
        (4, 14, Some(5), 8)
    );
    assert!(close(c.mean_osu_overlap.unwrap(), 0.15));
    assert!(close(r.requests.mean_overlap.unwrap(), 0.15));
    // Every member posted before any member waited: no wait state.
    assert_eq!(r.wait_states.total_ns, 0);
}

#[test]
fn a_late_member_of_a_non_blocking_collective_makes_the_others_wait() {
    // rank 0 ......|Ibarrier 6-7|Wait 7-8|..|Ibcast 10-11 (root)|Wait 11-12|....|Fin 20|
    // rank 1 |Ibarrier 0-1|Wait 1 ---- 7|Ibcast 8-9|Wait 9 ----- 13|.........|Fin 20|
    // Ibarrier: the last to enter posted at 6: rank 1's Wait waited min(6, 7) - 1 = 5
    //   (Wait at Barrier); rank 0's Wait began after every post: nothing.
    // Ibcast: the root posted at 10: rank 1's Wait waited min(10, 13) - 9 = 1 (Late
    //   Broadcast).
    let t = run(vec![
        vec![
            ibarrier(6, 7, 1),
            complete(Op::Wait, 7, 8, &[(1, None)]),
            ibcast(10, 11, 2),
            complete(Op::Wait, 11, 12, &[(2, None)]),
            env(Op::Finalize, 20, 21),
        ],
        vec![
            ibarrier(0, 1, 1),
            complete(Op::Wait, 1, 7, &[(1, None)]),
            ibcast(8, 9, 2),
            complete(Op::Wait, 9, 13, &[(2, None)]),
            env(Op::Finalize, 20, 21),
        ],
    ]);
    let (r, d) = both(&t);
    assert_eq!(kind(&r, WaitKind::WaitAtBarrier), (5, 1));
    assert_eq!(kind(&r, WaitKind::LateBroadcast), (1, 1));
    assert_eq!(r.wait_states.per_rank_ns.get(&0).copied().unwrap_or(0), 0);
    assert_eq!(r.wait_states.per_rank_ns[&1], 6);
    let barrier = d
        .waits
        .iter()
        .find(|w| w.kind == WaitKind::WaitAtBarrier)
        .unwrap();
    assert_eq!(
        (barrier.rank, barrier.call, barrier.peer),
        (1, "MPI_Wait", Some(0))
    );
    // What it waited for is rank 0's post, its Ibarrier (event 0), not its Wait.
    assert_eq!(barrier.peer_index, Some(0));
}

fn win(op: Op, start: u64, end: u64, group: &[i32]) -> Event {
    call(
        op,
        start,
        end,
        CallArgs {
            comm: Some(0),
            win: Some(7),
            group: group.to_vec(),
            ..CallArgs::default()
        },
    )
}

fn put(start: u64, end: u64, target: i32) -> Event {
    call(
        Op::Put,
        start,
        end,
        CallArgs {
            comm: Some(0),
            win: Some(7),
            peer: Some(target),
            bytes: Some(8),
            ..CallArgs::default()
        },
    )
}

#[test]
fn one_sided_wait_states() {
    // Fences on window 7 (a barrier over the window's group):
    // rank 0 |Fence 0 ----- 10|Put→1 10-11|Fence 11-20|
    // rank 1 |..|Fence 6-10|....|Fence 10 ---- 20|
    //   first: rank 0 waits [0, 6) = 6 for rank 1; second: rank 1 waits [10, 11) = 1
    // General active target, origin 1, target 0:
    // rank 1 |Start 30 -- 36|Put→0 36-37|..|Complete 40-45|
    // rank 0 |......|Post 35-36|Wait 36 ---------- 46|
    //   Late Post: the Start ran when the post came (35): 35 - 30 = 5 (rank 1, peer 0)
    //   Win_wait: the origin entered Complete at 40, its last operation ended at 37:
    //   Early Wait [36, 37) = 1, Late Complete [37, 40) = 3 (rank 0, peer 1)
    let t = run(vec![
        vec![
            win(Op::WinFence, 0, 10, &[]),
            put(10, 11, 1),
            win(Op::WinFence, 11, 20, &[]),
            win(Op::WinPost, 35, 36, &[1]),
            win(Op::WinWait, 36, 46, &[]),
        ],
        vec![
            win(Op::WinFence, 6, 10, &[]),
            win(Op::WinFence, 10, 20, &[]),
            win(Op::WinStart, 30, 36, &[0]),
            put(36, 37, 0),
            win(Op::WinComplete, 40, 45, &[]),
        ],
    ]);
    let (r, _) = both(&t);
    assert_eq!(kind(&r, WaitKind::WaitAtFence), (7, 2));
    assert_eq!(kind(&r, WaitKind::WaitAtBarrier), (0, 0));
    assert_eq!(kind(&r, WaitKind::LatePost), (5, 1));
    assert_eq!(kind(&r, WaitKind::EarlyWait), (1, 1));
    assert_eq!(kind(&r, WaitKind::LateComplete), (3, 1));
    let lp = &r
        .wait_states
        .kinds
        .iter()
        .find(|k| k.kind == WaitKind::LatePost)
        .unwrap()
        .worst[0];
    assert_eq!((lp.rank, lp.call, lp.peer), (1, "MPI_Win_start", Some(0)));
    // Rank 0's Win_post (its event 3); the Win_wait's parts wait for rank 1's Put
    // (event 3, the last operation) and then its Win_complete (event 4).
    assert_eq!(lp.peer_index, Some(3));
    let of = |k: WaitKind| {
        let w = &r
            .wait_states
            .kinds
            .iter()
            .find(|x| x.kind == k)
            .unwrap()
            .worst[0];
        (w.rank, w.peer, w.peer_index)
    };
    assert_eq!(of(WaitKind::EarlyWait), (0, Some(1), Some(3)));
    assert_eq!(of(WaitKind::LateComplete), (0, Some(1), Some(4)));
    // No MPI time is useful: rank 0 is in MPI 10 + 1 + 9 + 1 + 10 = 31 of its 46.
    assert_eq!(r.ranks[0].in_mpi_ns, 31);
    assert_eq!(r.ranks[0].useful_ns, 46 - 31);
    // Waiting: the fences and the Win_wait, not the Put nor the Win_post.
    assert_eq!(r.ranks[0].waiting_ns, 10 + 9 + 10);
}

#[test]
fn early_scan() {
    // rank 0       |Scan 5-10|          rank i waits for the last of ranks < i:
    // rank 1 |Scan 1 ----- 10|          rank 1: 5 - 1 = 4 (peer 0)
    // rank 2   |Scan 3 --- 10|          rank 2: max(5, 1) - 3 = 2 (peer 0)
    let scan = |s, e| {
        call(
            Op::Scan,
            s,
            e,
            CallArgs {
                comm: Some(0),
                bytes: Some(8),
                ..CallArgs::default()
            },
        )
    };
    let t = run(vec![
        vec![scan(5, 10)],
        vec![scan(1, 10)],
        vec![scan(3, 10)],
    ]);
    let (r, _) = both(&t);
    assert_eq!(kind(&r, WaitKind::EarlyScan), (6, 2));
    assert_eq!(kind(&r, WaitKind::WaitAtNxN), (0, 0));
}

#[test]
fn calls_of_two_threads_at_once_count_once_in_the_rank_budget() {
    // One rank, two threads (MPI_THREAD_MULTIPLE), no compute spans:
    // thread 0 |Init 0-10|Waitall 10 ---------- 60|...........|Finalize 100-110|
    // thread 1                   |Wait 40 ------------ 80|Allreduce 82-90|
    // wall [10, 100) = 90; in MPI [10, 80) + [82, 90) = 78, not 50 + 40 + 8 = 98;
    // waiting [10, 80) = 70, not 90; useful 90 - 78 = 12, no thread inside MPI;
    // compute: thread 0's gap [60, 100) and thread 1's [80, 82) cover 40, of which
    // only [80, 82) and [90, 100) have no thread inside MPI: 12, the useful time.
    let on = |tid: u32, mut e: Event| {
        if let Event::Call(c) = &mut e {
            c.tid = tid;
        }
        e
    };
    let t = run(vec![vec![
        env(Op::Init, 0, 10),
        env(Op::Waitall, 10, 60),
        on(1, env(Op::Wait, 40, 80)),
        on(1, allreduce(82, 90)),
        env(Op::Finalize, 100, 110),
    ]]);
    let (r, _) = both(&t);
    let b = &r.ranks[0];
    assert_eq!(
        (
            b.wall_ns,
            b.in_mpi_ns,
            b.waiting_ns,
            b.useful_ns,
            b.compute_ns
        ),
        (90, 78, 70, 12, 12),
        "{b:?}"
    );
    assert_eq!(b.calls[&Op::Waitall] + b.calls[&Op::Wait], 2);
    assert_eq!((r.totals.in_mpi_ns, r.totals.waiting_ns), (78, 70));
    assert_eq!(r.totals.waiting_fraction, Some(70.0 / 90.0));
}
