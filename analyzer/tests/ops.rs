//! A trace as programs of operations (`ops::extract`), on hand-built traces: what each
//! call and gap becomes, their costs, and the messages linking ranks.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
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
            OpKind::Compute { until_span, .. } => assert_eq!(*until_span, Some(r.ops[3].span)),
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
    assert_eq!((m.from, m.to, m.bytes, m.tag), ((0, 1), (1, 0), 64, 9));
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
