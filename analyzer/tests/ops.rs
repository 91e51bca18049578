//! A trace as programs of operations (`ops::extract`), on hand-built traces: what each
//! call and gap becomes, their costs, and the messages linking ranks.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::ops::{extract, OpKind, RequestRole};
use overlap_instrument::schema::{CallArgs, Op};

/// Two ranks without compute spans (as under the preload), times in ns:
///
/// ```text
///  rank r  |Init 0-1|Irecv 1-2|Isend 2-3|.......|Waitall(r,s) 10-14|..|Barrier 16-17|Finalize 17-18|
///                                      ^ gap 3-10: compute 7      ^ gap 14-16: compute 2
/// ```
///
/// Each rank: Post(r) 1, Post(s) 1, Compute 7 (inferred), Complete(r) 2, Complete(s) 2
/// (the Waitall's 4 ns shared), Compute 2, Collective 1; Init and Finalize left out; the
/// measured run is 1..17 = 16 ns. Rank 0's send is rank 1's receive and back.
#[test]
fn calls_and_gaps_become_operations() {
    let rank = |peer: i32| {
        vec![
            call(Op::Init, 0, 1, CallArgs::default()),
            irecv(1, 2, peer, 9, 64, 1),
            isend(2, 3, peer, 9, 64, 2),
            complete(Op::Waitall, 10, 14, &[(1, Some((peer, 9))), (2, None)]),
            barrier(16, 17),
            call(Op::Finalize, 17, 18, CallArgs::default()),
        ]
    };
    let trace = run(vec![rank(1), rank(0)]);
    let p = extract(&trace).unwrap();
    assert_eq!(p.measured_ns, 16);
    assert_eq!(p.messages.len(), 2);
    assert_eq!(p.collectives.len(), 1);
    assert_eq!(p.collectives[0].members.len(), 2);
    for r in &p.ranks {
        assert!(r.inferred_compute && r.complete);
        let shape: Vec<(&str, u64)> = r
            .ops
            .iter()
            .map(|o| {
                let kind = match &o.kind {
                    OpKind::Post { request } => match p.requests[*request].role {
                        RequestRole::Recv => "post recv",
                        _ => "post send",
                    },
                    OpKind::Complete { request } => match p.requests[*request].role {
                        RequestRole::Recv => "complete recv",
                        _ => "complete send",
                    },
                    OpKind::Compute { inferred: true, .. } => "inferred compute",
                    OpKind::Compute { .. } => "compute",
                    OpKind::Collective { .. } => "collective",
                    OpKind::Blocking { .. } => "blocking",
                    OpKind::Local => "local",
                };
                (kind, o.cost_ns)
            })
            .collect();
        assert_eq!(
            shape,
            [
                ("post recv", 1),
                ("post send", 1),
                ("inferred compute", 7),
                ("complete recv", 2),
                ("complete send", 2),
                ("inferred compute", 2),
                ("collective", 1),
            ],
            "rank {}",
            r.rank
        );
        // The completions share the Waitall's span; the compute names the calls around.
        assert_eq!(r.ops[3].span, r.ops[4].span);
        match &r.ops[2].kind {
            OpKind::Compute { until_span, .. } => {
                assert_eq!(until_span.map(|u| u.get()), Some(r.ops[3].span as usize))
            }
            other => panic!("{other:?}"),
        }
    }
    // Each request knows its post, its completion and its message; the message links
    // rank 0's send post to rank 1's receive post.
    for q in &p.requests {
        assert!(q.complete().is_some() && q.message().is_some(), "{q:?}");
        assert!(!q.proc_null);
    }
    let m = &p.messages[p
        .requests
        .iter()
        .find(|q| q.rank == 0 && q.role == RequestRole::Send)
        .unwrap()
        .message()
        .unwrap()];
    assert_eq!((m.from(), m.to(), m.bytes, m.tag), ((0, 1), (1, 0), 64, 9));
}

/// A rank with compute spans keeps unmarked time with the operation after it:
///
/// ```text
///  rank 0  |Isend 0-1|..|compute 3-9|.|Wait 10-11|
///  ops      Post 1, Compute 6 (lead-in 2), Complete (lead-in 1)
/// ```
#[test]
fn unmarked_time_stays_with_the_next_operation() {
    let trace = run(vec![vec![
        isend(0, 1, 0, 1, 8, 1),
        compute(3, 9, "work"),
        complete(Op::Wait, 10, 11, &[(1, None)]),
    ]]);
    let p = extract(&trace).unwrap();
    let r = &p.ranks[0];
    assert!(!r.inferred_compute);
    let leads: Vec<(u64, u64)> = r.ops.iter().map(|o| (o.lead_in_ns, o.cost_ns)).collect();
    assert_eq!(leads, [(0, 1), (2, 6), (1, 1)]);
    assert_eq!(p.name(0), "work");
}

/// Ranks are built in parallel, each writing its requests into its share of the
/// program's; what links them is numbered in rank order, as one pass over the ranks
/// would. Nine ranks in a ring, each with its own compute name and a non-blocking
/// collective between two barriers:
///
/// ```text
///  rank r  |Irecv(r-1) 0-1|Isend(r+1) 1-2|compute "even"/"odd" 2-6|Waitall 6-8|
///          |Barrier 8-9|Ibarrier 9-10|Wait 10-11|Barrier 11-12|
/// ```
///
/// Whether built on one thread or three, the program is the same, and its ids are those
/// of rank order: names "even" then "odd"; rank r's requests 3r (receive), 3r + 1
/// (send), 3r + 2 (Ibarrier); instances 0 (first barrier), 1 (Ibarrier), 2 (second
/// barrier), each with its members in rank order.
#[test]
fn ranks_built_in_parallel_are_numbered_in_rank_order() {
    const RANKS: i32 = 9;
    let trace = run((0..RANKS)
        .map(|r| {
            let (left, right) = ((r + RANKS - 1) % RANKS, (r + 1) % RANKS);
            vec![
                irecv(0, 1, left, 5, 32, 1),
                isend(1, 2, right, 5, 32, 2),
                compute(2, 6, if r % 2 == 0 { "even" } else { "odd" }),
                complete(Op::Waitall, 6, 8, &[(1, Some((left, 5))), (2, None)]),
                barrier(8, 9),
                ibarrier(9, 10, 3),
                complete(Op::Wait, 10, 11, &[(3, None)]),
                barrier(11, 12),
            ]
        })
        .collect());
    let on = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| extract(&trace).unwrap())
    };
    let p = on(1);
    assert_eq!(p, on(3));
    assert_eq!(p.names, ["even", "odd"]);
    assert_eq!(p.requests.len(), 3 * RANKS as usize);
    assert_eq!(p.messages.len(), RANKS as usize);
    for (r, rank) in p.ranks.iter().enumerate() {
        let posts: Vec<usize> = rank
            .ops
            .iter()
            .filter_map(|o| match o.kind {
                OpKind::Post { request } => Some(request),
                _ => None,
            })
            .collect();
        assert_eq!(posts, [3 * r, 3 * r + 1, 3 * r + 2], "rank {r}");
        let names: Vec<u32> = rank
            .ops
            .iter()
            .filter_map(|o| match o.kind {
                OpKind::Compute { name, .. } => Some(name),
                _ => None,
            })
            .collect();
        assert_eq!(names, [(r % 2) as u32], "rank {r}");
        let instances: Vec<usize> = rank
            .ops
            .iter()
            .filter_map(|o| match o.kind {
                OpKind::Collective { instance, .. } => Some(instance),
                _ => None,
            })
            .collect();
        assert_eq!(instances, [0, 2], "rank {r}");
        assert_eq!(p.requests[3 * r + 2].instance(), Some(1), "rank {r}");
        // Each send's message reaches the right neighbour's receive.
        let m = &p.messages[p.requests[3 * r + 1].message().unwrap()];
        assert_eq!(
            (m.from().0, m.to().0),
            (r as u32, (r as u32 + 1) % RANKS as u32)
        );
        assert_eq!(
            p.requests[3 * ((r + 1) % RANKS as usize)].message(),
            p.requests[3 * r + 1].message()
        );
    }
    let members = |k: usize| -> Vec<u32> { p.collectives[k].members.iter().map(|m| m.0).collect() };
    let in_order: Vec<u32> = (0..RANKS as u32).collect();
    for k in 0..3 {
        assert_eq!(members(k), in_order, "instance {k}");
    }
    assert_eq!(p.collectives[1].op, Op::Ibarrier);
}

/// A blocking MPI_Sendrecv to itself, as a periodic dimension one rank wide makes: the
/// call's one message is both the send and the receive of its one operation.
///
/// ```text
///  rank 0  |compute 0-10|Sendrecv(0 -> 0) 10-12|compute 12-20|Sendrecv(0 -> 0) 20-22|
/// ```
///
/// Two messages, each from and to the Sendrecv's own operation; each operation sends
/// and receives its own.
#[test]
fn a_sendrecv_to_itself_is_one_message_sent_and_received_by_one_operation() {
    let trace = run(vec![vec![
        compute(0, 10, "c"),
        sendrecv(10, 12, 0, 0, 3, 64),
        compute(12, 20, "c"),
        sendrecv(20, 22, 0, 0, 3, 64),
    ]]);
    let p = extract(&trace).unwrap();
    assert_eq!(p.messages.len(), 2);
    let blocking: Vec<usize> = (p.ranks[0].ops.iter().enumerate())
        .filter(|(_, o)| matches!(o.kind, OpKind::Blocking { .. }))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(blocking.len(), 2);
    let of = |i| {
        let b = &p.ranks[0].blocking;
        (
            b.sends(i).collect::<Vec<_>>(),
            b.recvs(i).collect::<Vec<_>>(),
        )
    };
    for (m, i) in blocking.into_iter().enumerate() {
        assert_eq!(of(i), (vec![m], vec![m]));
        let msg = &p.messages[m];
        assert_eq!((msg.from(), msg.to(), msg.bytes), ((0, i), (0, i), 64));
    }
    // Both replays run through: with an ideal network the calls take no time (T_ideal =
    // the 18 ns of compute), and the measured order replays (it deadlocked when the
    // receive half was taken for a second send).
    let r = report(&trace);
    assert_eq!(r.pop.t_ideal_replay_ns, Some(18));
    assert!(r.replay.is_some());
}
