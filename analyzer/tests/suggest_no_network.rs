//! `overlap suggest` where no network is known: the proven moves are made and checked
//! all the same (the order does not need the network, only the predictions do), each
//! with its gain unknown and why, and nothing is predicted. Hand-built traces whose
//! few messages leave the network unknown (too few clean transfers).

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::dag::{Mode, Options as DagOptions, Policy};
use overlap_analyzer::model::Trace;
use overlap_analyzer::ops::RequestRole;
use overlap_analyzer::replay::{NetworkFit, ProgressMode};
use overlap_analyzer::suggest::{
    program_of, remedies::ProgressRemedy, render, suggest_without_network, Options, SuggestNetwork,
    Suggestion, Verdict,
};
use overlap_instrument::schema::{BufferUse, ComputeEvent, Event, Nanos, Op, SpanBuffers};

const US: u64 = 1000;
const MIB: u64 = 1 << 20;

/// The suggestion of `trace`, whose network is unknown, with `policies` in `mode`.
fn without_network(trace: &Trace, policies: Vec<Policy>, mode: Mode) -> Suggestion {
    let unknown = NetworkFit::from_trace(trace, None).unwrap_err();
    let options = Options {
        dag: DagOptions { policies, mode },
        progress: ProgressMode::InMpi,
        conservative: false,
    };
    suggest_without_network(trace, &program_of(trace).unwrap(), unknown, &options).unwrap()
}

/// A compute span that declares it writes only the 8 bytes at `addr`.
fn declared(start: u64, end: u64, name: &str, addr: u64) -> Event {
    Event::Compute(ComputeEvent {
        tid: 0,
        start: Nanos(start),
        end: Nanos(end),
        name: name.into(),
        buffers: Some(std::sync::Arc::new(SpanBuffers {
            reads: Vec::new(),
            writes: vec![BufferUse {
                name: name.into(),
                buf: addr,
                len: 8,
            }],
        })),
    })
}

/// Rank 0 computes, sends 1 MiB to rank 1, waits for it, computes again; rank 1 waits
/// for it all along (µs, after an 8 B exchange that makes a Wait's cost):
///
/// ```text
///  rank 0  |Isend 8 B|Wait| work1 2-52 |Isend 52-53|Wait 53-103|work2 103-153|
///  rank 1  |Recv 8 B 0-2  | Recv 2-103                         |
/// ```
///
/// Two messages, one clean transfer each at most: too few for any class's estimate, so
/// no network. Both spans declare what they write (not the send's buffer): posting the
/// Isend before `work1` and deferring its Wait past `work2` are proven, and suggested
/// with their gains unknown; the order with them is the consensus.
fn transfer_between_computes() -> Trace {
    let at = |t: u64| (t + 2) * US;
    let rank0 = vec![
        with_buf(isend(0, US, 1, 9, 8, 2), 0x500_0000),
        complete(Op::Wait, US, 2 * US, &[(2, None)]),
        declared(at(0), at(50), "work1", 0x900_0000),
        with_buf(isend(at(50), at(51), 1, 5, MIB, 1), 0x100_0000),
        complete(Op::Wait, at(51), at(101), &[(1, None)]),
        declared(at(101), at(151), "work2", 0x900_0000),
    ];
    let rank1 = vec![
        with_buf(recv(0, 2 * US, 0, 9, 8), 0x600_0000),
        with_buf(recv(at(0), at(101), 0, 5, MIB), 0x300_0000),
    ];
    run(vec![rank0, rank1])
}

#[test]
fn proven_moves_are_suggested_with_their_gains_unknown() {
    let trace = transfer_between_computes();
    let s = without_network(&trace, DagOptions::default().policies, Mode::Proven);
    let SuggestNetwork::Unknown { unknown } = &s.network else {
        panic!("a network: {:?}", s.network)
    };
    let why = unknown.to_string();
    assert!(why.contains("too few clean transfers"), "{why}");
    // Nothing predicted, no figure in place of one.
    assert_eq!((s.replay, s.suggested, s.consensus), (None, None, None));
    assert_eq!(s.rejected, None);
    assert_eq!(s.remedies.progress, ProgressRemedy::NoNetwork);
    let g = s.groups.iter().find(|g| g.ranks == [0]).unwrap();
    let moved = |what: &str| g.moves.iter().any(|m| m.text.contains(what));
    assert!(moved("move MPI_Isend to rank 1 (tag 5, 1.0 MiB)"), "{g:#?}");
    assert!(
        moved("move MPI_Wait (the MPI_Isend to rank 1 (tag 5"),
        "{g:#?}"
    );
    // Deferring the 8-byte send's Wait (it took 1 us) to the end gains at most 1 us,
    // under 1 % of the 153 us run whatever the network: left out. Deferring the MiB's
    // Wait (50 us) past work2 (50 us) may gain up to 50 us: suggested, gain unknown.
    for m in &g.moves {
        let expected = match m.text.contains("(tag 9, 8 B)") {
            true => (Verdict::TooShort, None, Some(US)),
            false if m.text.starts_with("move MPI_Wait") => {
                (Verdict::NoNetwork, None, Some(50 * US))
            }
            false => (Verdict::NoNetwork, None, None),
        };
        assert_eq!((m.verdict, m.gain_ns, m.at_most_ns), expected, "{m:#?}");
    }
    assert_eq!((g.left_out.total(), g.left_out.too_short), (1, 1));
    assert!(g.ends.is_empty());
    // The suggested order is the consensus: rank 0's Isend of 1 MiB (op 3) now comes
    // before work1 (op 2).
    let program = program_of(&trace).unwrap();
    let slot = program.ranks.iter().position(|r| r.rank == 0).unwrap();
    let order = &s.orders[slot];
    let at = |op: usize| order.iter().position(|&i| i == op).unwrap();
    assert!(at(3) < at(2), "{order:?}");
    // In words: the reason once, each move's gain unknown, no prediction.
    let text = render(&s, false);
    assert!(
        text.contains(&format!(
            "replay: none: gains unknown: {why}; give --model FILE or --latency/--bandwidth"
        )),
        "{text}"
    );
    assert!(
        text.contains("suggested (proven safe; gains unknown: no network):"),
        "{text}"
    );
    assert!(text.contains("[1 iteration(s); gain unknown]"), "{text}");
    assert!(text.contains("no prediction: no network (above)"), "{text}");
    assert!(!text.contains("self_error"), "{text}");
    // In JSON: the network unknown with its reason, each gain null, its verdict.
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["network"]["unknown"]["reason"], "too_few_clean");
    assert!(json["replay"].is_null() && json["suggested"].is_null());
    for m in json["groups"][0]["moves"].as_array().unwrap() {
        assert!(m["gain_ns"].is_null(), "{m:#}");
        let short = m["text"].as_str().unwrap().contains("(tag 9, 8 B)");
        assert_eq!(m["verdict"], if short { "too_short" } else { "no_network" });
    }
    assert!(
        text.contains(
            "left out: 1 move(s) that gain nothing measurable: 1 whose waits took too little"
        ),
        "{text}"
    );
    assert_eq!(json["remedies"]["progress"]["verdict"], "no_network");
}

/// A comparator that wants every receive completed before any send is posted.
fn recv_before_send() -> Policy {
    Policy::comparator("receive-before-send", |a, b| {
        let role = |v: &overlap_analyzer::dag::OpView| v.request().map(|r| r.role);
        let recv_done = |v: &overlap_analyzer::dag::OpView| {
            v.is_completion() && role(v) == Some(RequestRole::Recv)
        };
        let send_post =
            |v: &overlap_analyzer::dag::OpView| v.is_post() && role(v) == Some(RequestRole::Send);
        if recv_done(a) && send_post(b) {
            std::cmp::Ordering::Less
        } else if send_post(a) && recv_done(b) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    })
}

/// Two ranks exchange 8 B each way, compute, then wait for both (ns); a permissive
/// order that completes each receive before posting the send deadlocks, network or
/// none (both wait for a message the other has not sent):
///
/// ```text
///  rank r  |Irecv 0-1|Isend 1-2|compute 2-12|Wait(r) 12-13|Wait(s) 13-14|
///  order   |Irecv|Wait(r) ... blocked: the partner's Isend comes after its own Wait(r)
/// ```
///
/// It is rejected without a network too, and its moves are left out, not suggested.
#[test]
fn an_order_that_deadlocks_is_rejected_without_a_network_too() {
    let rank = |peer: i32| {
        vec![
            irecv(0, 1, peer, 5, 8, 1),
            isend(1, 2, peer, 5, 8, 2),
            compute(2, 12, "work"),
            complete(Op::Wait, 12, 13, &[(1, Some((peer, 5)))]),
            complete(Op::Wait, 13, 14, &[(2, None)]),
        ]
    };
    let trace = run(vec![rank(1), rank(0)]);
    let s = without_network(&trace, vec![recv_before_send()], Mode::Permissive);
    let why = s.rejected.as_deref().expect("rejected");
    assert!(why.contains("deadlock"), "{why}");
    let moves: Vec<_> = s.groups.iter().flat_map(|g| &g.moves).collect();
    assert!(!moves.is_empty(), "{s:#?}");
    for m in moves {
        assert_eq!(m.verdict, Verdict::Unknown, "{m:#?}");
    }
    let text = render(&s, false);
    assert!(text.contains("The consensus order is rejected"), "{text}");
    assert!(!text.contains("gain unknown]"), "{text}");
}
