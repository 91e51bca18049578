//! The replay on hand-built traces: the network fitted from the trace's own messages
//! (typical transfers, eager limit), and a trace retimed by a replay, analyzed as usual.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::analysis::analyze;
use overlap_analyzer::ops::extract;
use overlap_analyzer::replay::{measured_orders, replay, retimed, NoSelfCheck, ReplayConfig};
use overlap_instrument::schema::Op;

/// Two messages from rank 0 to rank 1 (times in ns, one clock):
///
/// ```text
///  r0 |c 0-10|Isend 8B 10-11|Wait 11-12|c 12-30|Isend 1KiB 30-31|Wait 31-32|c 32-70|
///  r1 |c 0 ------------ 20|Irecv 20-21|Wait 21-23|c 23-28|Irecv 28-29|Wait 29 --- 60|c 60-70|
/// ```
///
/// - 8 B: the send completed (12) before its receive was posted (20): eager. Observed
///   transfer 23 - max(10, 20) = 3; its receiver entered the Wait (21) after both were
///   posted, so it is no typical observation.
/// - 1 KiB: the receiver waited in its Wait (29) before the send was posted (30):
///   observed 60 - 30 = 30, typical 30.
fn two_messages() -> overlap_analyzer::model::Trace {
    run(vec![
        vec![
            compute(0, 10, "c"),
            isend(10, 11, 1, 1, 8, 1),
            complete(Op::Wait, 11, 12, &[(1, None)]),
            compute(12, 30, "c"),
            isend(30, 31, 1, 1, 1024, 2),
            complete(Op::Wait, 31, 32, &[(2, None)]),
            compute(32, 70, "c"),
        ],
        vec![
            compute(0, 20, "c"),
            irecv(20, 21, 0, 1, 8, 1),
            complete(Op::Wait, 21, 23, &[(1, Some((0, 1)))]),
            compute(23, 28, "c"),
            irecv(28, 29, 0, 1, 1024, 2),
            complete(Op::Wait, 29, 60, &[(2, Some((0, 1)))]),
            compute(60, 70, "c"),
        ],
    ])
}

#[test]
fn a_retimed_trace_analyzes_as_the_replayed_run() {
    // The ideal replay of this run: MPI calls take no time and sends are buffered, so
    // rank 0 never waits and computes 10 + 18 + 38 = 66: T_ideal 66, and the trace
    // retimed by that replay runs 66.
    let t = two_messages();
    let opts = opts();
    let measured = analyze(&t, &opts).0;
    assert_eq!(measured.pop.t_ideal_replay_ns, Some(66));
    let p = extract(&t).unwrap();
    let r = replay(&p, &measured_orders(&p), &ReplayConfig::ideal()).unwrap();
    assert_eq!(r.makespan_ns, 66);
    let again = analyze(&retimed(&t, &p, &r), &opts).0;
    assert_eq!(again.pop.runtime_ns, 66);
    // Rank 1: c 0-20, Irecv, Wait (the send was posted at 10) 20-20, c 20-25, Irecv,
    // Wait 25-28 (rank 0 posts at 10 + 18), c 28-38: it keeps its 35 ns of compute.
    assert_eq!(r.ranks[1].end_ns, 38);
    assert_eq!(r.ranks[1].ops[5].start_ns, 25);
    assert_eq!(r.ranks[1].ops[5].end_ns, 28);
    assert_eq!(again.ranks[1].useful_ns, 35);
}

/// A self check that cannot be made says why, in the JSON and the text report.
///
/// ```text
///  rank 0  |.|Send 2-3|..|Send 12-13|..|Send 22-23|...|Ssend(1) 30-40|Recv(1) 40-42|
///  rank 1  |Recv 0-5|..|Recv 10-15|..|Recv 20-25|.....|Ssend(0) 30-40|Recv(0) 40-42|
/// ```
///
/// Each synchronous send completes only once its receive is posted, and each receive
/// comes after the rank's own send: the measured order deadlocks on any network. Cut
/// rank 1 short, and the replay is not tried at all.
#[test]
fn a_self_check_that_cannot_be_made_says_why() {
    let ssend = |start, end, peer| {
        let mut e = send(start, end, peer, 0, 8);
        if let overlap_instrument::schema::Event::Call(c) = &mut e {
            c.op = Op::Ssend;
        }
        e
    };
    // Three clean transfers of 8 B first (rank 1 waits in its Recv before rank 0
    // sends), so that the trace has a network: the one size class of its messages.
    let clean = |at: u64| [send(at + 2, at + 3, 1, 0, 8), recv(at, at + 5, 0, 0, 8)];
    let (mut r0, mut r1) = (Vec::new(), Vec::new());
    for at in [0, 10, 20] {
        let [s, r] = clean(at);
        r0.push(s);
        r1.push(r);
    }
    let clean_only = run(vec![r0.clone(), r1.clone()]);
    r0.extend([ssend(30, 40, 1), recv(40, 42, 1, 0, 8)]);
    r1.extend([ssend(30, 40, 0), recv(40, 42, 0, 0, 8)]);
    let mut t = run(vec![r0, r1]);
    let r = report(&t);
    assert_eq!(r.replay, None);
    let why = r.replay_unknown.clone().unwrap();
    assert!(
        matches!(&why, NoSelfCheck::NotReplayable { error } if error.starts_with("deadlock: rank 0")),
        "{why:?}"
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["replay"], serde_json::Value::Null);
    assert_eq!(json["replay_unknown"]["reason"], "not_replayable");
    let text = overlap_analyzer::report::render(&r, Default::default());
    assert!(
        text.contains(&format!("replay.self_error unknown: {why}")),
        "{text}"
    );

    t.ranks[1].complete = false;
    let r = report(&t);
    assert_eq!(r.replay, None);
    assert_eq!(
        r.replay_unknown,
        Some(NoSelfCheck::CutShort { ranks: vec![1] })
    );
    // Without the clean transfers the trace gives no network: the self check says so.
    let r = report(&two_messages());
    assert!(matches!(
        r.replay_unknown,
        Some(NoSelfCheck::NetworkUnknown { .. })
    ));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["replay_unknown"]["reason"], "network_unknown");
    // A self check that is made has no reason beside it.
    let r = report(&clean_only);
    assert!(
        r.replay.is_some() && r.replay_unknown.is_none(),
        "{:?}",
        r.replay_unknown
    );
    let json = serde_json::to_value(&r).unwrap();
    assert!(json.get("replay_unknown").is_none());
}
