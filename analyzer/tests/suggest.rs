//! `overlap suggest` on hand-built traces: an order that deadlocks is rejected, a rank
//! cut short is refused, a move crossing compute of unknown buffers is only "possible
//! if", with what it needs, and conservative mode does not look for it.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use crate::common::*;
use overlap_analyzer::dag::{BuiltIn, Mode, Options as DagOptions, Policy};
use overlap_analyzer::model::Trace;
use overlap_analyzer::ops::RequestRole;
use overlap_analyzer::replay::{NetworkFit, ProgressMode};
use overlap_analyzer::suggest::{program_of, suggest, Options, SuggestError, Suggestion, Verdict};
use overlap_instrument::schema::{Op, SyncPhase};

/// True for a completion (`true`) or a post (`false`).
fn v_is(v: &overlap_analyzer::dag::OpView, completion: bool) -> bool {
    if completion {
        v.is_completion()
    } else {
        v.is_post()
    }
}

fn run_suggest(trace: &Trace, policies: Vec<Policy>, conservative: bool) -> Suggestion {
    run_suggest_in(trace, policies, Mode::Proven, conservative)
}

fn run_suggest_in(
    trace: &Trace,
    policies: Vec<Policy>,
    mode: Mode,
    conservative: bool,
) -> Suggestion {
    let program = program_of(trace).unwrap();
    // The hand-built traces measure too few clean transfers for a network: a given one.
    let fit = NetworkFit::from_trace(trace, None)
        .or_else(|unknown| unknown.with_given(Some(1.0), Some(8e9)))
        .unwrap();
    let options = Options {
        dag: DagOptions { policies, mode },
        progress: ProgressMode::InMpi,
        conservative,
    };
    suggest(trace, &program, fit, &options).unwrap()
}

/// Two ranks exchange 8 bytes each way, then compute, then wait for both requests:
///
/// ```text
///  rank r  |Irecv 0-1|Isend 1-2|compute 2-12|Wait(r) 12-13|Wait(s) 13-14|
/// ```
fn exchange() -> Trace {
    let rank = |peer: i32| {
        vec![
            irecv(0, 1, peer, 5, 8, 1),
            isend(1, 2, peer, 5, 8, 2),
            compute(2, 12, "work"),
            complete(Op::Wait, 12, 13, &[(1, Some((peer, 5)))]),
            complete(Op::Wait, 13, 14, &[(2, None)]),
        ]
    };
    run(vec![rank(1), rank(0)])
}

/// A comparator that wants every receive completed before any send is posted.
fn recv_before_send() -> Policy {
    Policy::comparator("receive-before-send", |a, b| {
        let role = |v: &overlap_analyzer::dag::OpView| v.request().map(|r| r.role);
        let recv_done = |v| v_is(v, true) && role(v) == Some(RequestRole::Recv);
        let send_post = |v| v_is(v, false) && role(v) == Some(RequestRole::Send);
        if recv_done(a) && send_post(b) {
            std::cmp::Ordering::Less
        } else if send_post(a) && recv_done(b) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    })
}

#[test]
fn an_order_that_deadlocks_is_rejected_with_the_reason() {
    // A comparator that wants every receive completed before any send is posted puts
    // each rank's Wait(recv) before its own Isend: both wait for a message the other has
    // not sent. The replay finds no rank able to proceed.
    // The compute (which declares nothing) stays in flight in a proven order, which
    // forbids that one: permissively, the replay finds no rank able to proceed.
    let s = run_suggest(&exchange(), vec![recv_before_send()], false);
    assert_eq!(s.rejected, None);
    let s = run_suggest_in(
        &exchange(),
        vec![recv_before_send()],
        Mode::Permissive,
        false,
    );
    let why = s.rejected.as_deref().expect("rejected");
    assert!(why.contains("deadlock"), "{why}");
    assert!(why.contains("rank 0") && why.contains("rank 1"), "{why}");
    assert_eq!(s.suggested, None);
    // The built-ins find the order already right: nothing moves, nothing is rejected.
    let s = run_suggest(
        &exchange(),
        BuiltIn::DEFAULT.iter().map(|b| b.policy()).collect(),
        false,
    );
    assert_eq!(s.rejected, None);
    assert!(s.groups.iter().all(|g| g.moves.is_empty()), "{s:#?}");
    assert_eq!(s.groups.len(), 1, "both ranks have the same program");
}

#[test]
fn a_rank_cut_short_is_refused_and_named() {
    let mut ranks: Vec<_> = (0..2)
        .map(|r| {
            let peer = 1 - r as i32;
            rank_trace(
                header(r, 2, 0, "boot-1"),
                vec![sync(SyncPhase::Init, 0, 0, 0)],
                vec![
                    isend(0, 1, peer, 5, 8, 1),
                    complete(Op::Wait, 1, 2, &[(1, None)]),
                ],
            )
        })
        .collect();
    ranks[1].footer = None;
    let trace = overlap_analyzer::merge::merge(ranks).to_trace(Path::new("cut.json"));
    match program_of(&trace) {
        Err(SuggestError::CutShort { ranks, .. }) => assert_eq!(ranks, "1"),
        other => panic!("{other:?}"),
    }
}

/// The send's wait sits before a compute whose buffers are unknown (no `reads`/`writes`):
///
/// ```text
///  rank r  |Irecv 0-1|Isend 1-2|Wait(r) 2-3|Wait(s) 3-4|compute 4-14|Barrier 14-15|
/// ```
///
/// Waits late would move Wait(s) to the end (past the compute and the Barrier), which
/// needs "the compute does not write the send buffer": it is not suggested (nothing
/// moves in the proven order) but listed as possible; conservative mode does not look
/// for it.
#[test]
fn a_move_across_unknown_compute_is_only_possible() {
    let rank = |peer: i32| {
        vec![
            irecv(0, 1, peer, 5, 8, 1),
            with_buf(isend(1, 2, peer, 5, 8, 2), 0x2000),
            complete(Op::Wait, 2, 3, &[(1, Some((peer, 5)))]),
            complete(Op::Wait, 3, 4, &[(2, None)]),
            compute(4, 14, "work"),
            barrier(14, 15),
        ]
    };
    let trace = run(vec![rank(1), rank(0)]);
    let policies = || BuiltIn::DEFAULT.iter().map(|b| b.policy()).collect();
    let s = run_suggest(&trace, policies(), false);
    let g = &s.groups[0];
    assert!(g.moves.is_empty(), "{:#?}", g.moves);
    let send_wait = g
        .possible
        .iter()
        .find(|m| m.text.contains("(the MPI_Isend"))
        .unwrap_or_else(|| panic!("{:#?}", g.possible));
    assert!(
        send_wait
            .text
            .ends_with("from after MPI_Wait[recv from 1] to the end"),
        "{}",
        send_wait.text
    );
    let assumed: Vec<String> = send_wait
        .assumptions
        .iter()
        .map(|a| a.to_string())
        .collect();
    assert_eq!(
        assumed,
        ["compute \"work\" does not write the send buffer [0x2000, +8 B)"]
    );
    // Moving an 8-byte send's wait past 10 ns of compute gains nothing measurable: the
    // short text counts the possible moves in one line, --verbose names each.
    let extra = s.possible.as_ref().and_then(|p| p.extra_gain_ns).unwrap();
    assert!(
        extra <= s.replay.as_ref().unwrap().uncertainty_ns as i64,
        "{extra}"
    );
    let text = overlap_analyzer::suggest::render(&s, false);
    assert!(
        text.contains("possible, not proven: 2 move(s) that together gain nothing measurable"),
        "{text}"
    );
    let verbose = overlap_analyzer::suggest::render(&s, true);
    assert!(
        verbose.contains("possible if compute \"work\" does not write the send buffer"),
        "{verbose}"
    );
    let s = run_suggest(&trace, policies(), true);
    assert!(
        s.groups
            .iter()
            .all(|g| g.possible.is_empty() && g.moves.is_empty()),
        "{s:#?}"
    );
    assert_eq!(s.possible, None);
}

/// A compute span of rank `me` that declares it writes only `addr` (so moves of other
/// buffers' requests across it are proven).
fn declared(start: u64, end: u64, name: &str, addr: u64) -> overlap_instrument::schema::Event {
    use overlap_instrument::schema::{BufferUse, ComputeEvent, Event, Nanos, SpanBuffers};
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
/// for it all along (µs):
///
/// ```text
///  rank 0  |Isend 8 B|Wait| work1 2-52 |Isend 52-53|Wait 53-103|work2 103-153|
///  rank 1  |Recv 8 B 0-2  | Recv 2-103                         |
/// ```
///
/// Both spans declare what they write (not the send's buffer): posting the Isend before
/// `work1` and deferring its Wait past `work2` are both proven. Either hides the
/// transfer: undoing one alone costs nothing, so each is within the uncertainty; without
/// both, the transfer is exposed again. They are suggested together, asynchronous
/// progress assumed (the transfer moves while rank 0 computes).
#[test]
fn moves_that_gain_only_together_are_suggested_together() {
    const US: u64 = 1000;
    const MIB: u64 = 1 << 20;
    // A small message first, so that a Wait with nothing to wait for costs 1 µs.
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
    let trace = run(vec![rank0, rank1]);
    let program = program_of(&trace).unwrap();
    // Too few clean transfers for a network: the one the trace shows is given, 1 µs and
    // 1 MiB in about 48 µs (22 GB/s), so the transfer fits in either compute.
    let fit = NetworkFit::from_trace(&trace, None)
        .or_else(|unknown| unknown.with_given(Some(1_000.0), Some(2.2e10)))
        .unwrap();
    let options = Options {
        dag: DagOptions::default(),
        progress: ProgressMode::Async,
        conservative: false,
    };
    let s = suggest(&trace, &program, fit, &options).unwrap();
    let g = s.groups.iter().find(|g| g.ranks == [0]).unwrap();
    // Each (the 1 MiB Isend, its Wait, and the small one's moved along) gains nothing
    // alone.
    for m in &g.moves {
        assert_eq!(
            (m.verdict, m.gain_ns),
            (Verdict::GainsTogether, Some(0)),
            "{m:#?}"
        );
    }
    let moved = |what: &str| g.moves.iter().any(|m| m.text.contains(what));
    assert!(
        moved("move MPI_Isend to rank 1 (tag 5, 1.0 MiB)"),
        "{:#?}",
        g.moves
    );
    assert!(
        moved("move MPI_Wait (the MPI_Isend to rank 1 (tag 5"),
        "{:#?}",
        g.moves
    );
    assert_eq!(g.left_out.total(), 0);
    // The order replayed is the one with both: the transfer hidden.
    let check = s.replay.unwrap();
    let gain = check.replayed.ns - s.suggested.unwrap().ns;
    assert!(gain > check.uncertainty_ns, "{gain} {check:#?}");
    let text = overlap_analyzer::suggest::render(&s, false);
    assert!(
        text.contains("it gains with the other moves within the uncertainty"),
        "{text}"
    );
}
