//! Safe moves on hand-built traces of programs without compute spans (compute is the
//! gaps between MPI calls, as the preload records it), with and without the buffer uses
//! `overlap trace --buffers` learns: what `overlap suggest` moves, what it only says is
//! possible, and where `overlap analyze`'s false-overlap finding says the wait can go:
//! the same point, from the same rule.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use std::num::NonZeroU64;

use crate::common::*;
use overlap_analyzer::analysis::analyze;
use overlap_analyzer::dag::{order_rank, Options as DagOptions};
use overlap_analyzer::metrics::false_overlap::{findings, Finding, Limit};
use overlap_analyzer::metrics::{self, TransferModel};
use overlap_analyzer::model::Trace;
use overlap_analyzer::ops::{OpKind, Program};
use overlap_analyzer::replay::{NetworkFit, ProgressMode};
use overlap_analyzer::suggest::{program_of, render, suggest, Options, Suggestion, Verdict};
use overlap_instrument::schema::{
    ByteRange, Event, LearnedUse, Nanos, Op, Outcome, Touch, WatchEnd,
};

const S: u64 = 0x10000;
const R: u64 = 0x20000;
const BYTES: u64 = 4096;
/// Iterations of the hand-built loops, and their length in ns.
const ITERATIONS: u64 = 5;
const PERIOD: u64 = 100;

/// The halo's iteration `k` of rank `me` (the other rank mirrors it), at `b = 100 k`:
///
/// ```text
///  |Irecv R 0-1|Isend S 1-2|Wait(r) 2-3|Wait(s) 3-10|  gap A 10-40  |Allreduce 40-42|
///                                                    unpack: reads R
///  |  gap B 42-100: pack writes S at 50  |   (then the next iteration)
/// ```
///
/// The requests are `2k + 1` (receive) and `2k + 2` (send); a Barrier at the end.
fn halo(me: i32) -> Vec<Event> {
    let peer = 1 - me;
    let mut events = Vec::new();
    for k in 0..ITERATIONS {
        let b = k * PERIOD;
        events.extend([
            with_buf(irecv(b, b + 1, peer, 5, BYTES, 2 * k + 1), R),
            with_buf(isend(b + 1, b + 2, peer, 5, BYTES, 2 * k + 2), S),
            complete(Op::Wait, b + 2, b + 3, &[(2 * k + 1, Some((peer, 5)))]),
            complete(Op::Wait, b + 3, b + 10, &[(2 * k + 2, None)]),
            allreduce(b + 40, b + 42),
        ]);
    }
    let end = ITERATIONS * PERIOD;
    events.push(barrier(end, end + 1));
    events
}

fn range(addr: u64) -> Option<ByteRange> {
    Some(ByteRange { addr, len: BYTES })
}

/// What the buffer watch learns of the halo: each receive buffer first read by the
/// unpack at `b + 12`, each send buffer first written by the pack at `b + 50` (the
/// instruction at 0x4242).
fn learn(trace: &mut Trace) {
    for t in &mut trace.ranks {
        t.learned = (0..ITERATIONS)
            .flat_map(|k| {
                let b = k * PERIOD;
                let used = |at: u64, touch, addr| Outcome::Used {
                    earliest: Nanos(at),
                    latest: Nanos(at),
                    touch,
                    addr,
                    ip: NonZeroU64::new(0x4242),
                };
                [
                    LearnedUse {
                        request: 2 * k + 1,
                        from: Nanos(b + 3),
                        reads: range(R),
                        writes: range(R),
                        outcome: used(b + 12, Touch::Read, R),
                    },
                    LearnedUse {
                        request: 2 * k + 2,
                        from: Nanos(b + 10),
                        reads: None,
                        writes: range(S),
                        outcome: used(b + 50, Touch::Write, S + 8),
                    },
                ]
            })
            .collect();
    }
}

fn run_suggest(trace: &Trace) -> Suggestion {
    let program = program_of(trace).unwrap();
    // Too few clean transfers for a network: 1 µs and 1 GB/s are given.
    let fit = NetworkFit::from_trace(trace, None)
        .or_else(|unknown| unknown.with_given(Some(1_000.0), Some(1e9)))
        .unwrap();
    let options = Options {
        dag: DagOptions::default(),
        progress: ProgressMode::InMpi,
        conservative: false,
    };
    suggest(trace, &program, fit, &options).unwrap()
}

/// Rank 0's findings, by the start of their wait.
fn findings_of_rank_0(trace: &Trace) -> Vec<Finding> {
    let (_, details) = analyze(trace, &opts());
    let mut found: Vec<Finding> = (details.findings.into_iter())
        .filter(|f| f.rank == 0)
        .collect();
    found.sort_by_key(|f| f.wait.start_ns);
    found
}

/// Where the completion of each send lands in rank 0's proven consensus: the
/// measured start of the operation right after it.
fn send_waits_land_before(trace: &Trace, program: &Program) -> Vec<(u64, u64)> {
    let rank = &program.ranks[0];
    let order = order_rank(program, trace, rank, &DagOptions::default())
        .consensus
        .order;
    let mut out = Vec::new();
    for (p, &i) in order.iter().enumerate() {
        let op = &rank.ops[i];
        if let OpKind::Complete { request } = op.kind {
            if program.requests[request].bytes == BYTES && op.measured_end_ns % PERIOD == 10 {
                let next = order.get(p + 1).map(|&j| rank.ops[j].measured_start_ns);
                out.push((op.measured_start_ns, next.unwrap_or(u64::MAX)));
            }
        }
    }
    out
}

/// The pack is learned: the send's wait moves past gap A and the Allreduce, into gap B
/// to just before the pack's first write at `b + 50` (each write a fault: one instant,
/// where gap B is cut), and no further; analyze's finding names the same point. The
/// unpack's read at `b + 12` cuts gap A: the receive's wait moves to just before it.
#[test]
fn a_learned_pack_holds_the_send_wait_before_it() {
    let mut trace = run(vec![halo(0), halo(1)]);
    learn(&mut trace);
    let program = program_of(&trace).unwrap();
    // Each Wait(s) at b + 3 now comes right before the part of gap B from b + 50.
    let landed = send_waits_land_before(&trace, &program);
    assert_eq!(landed.len(), ITERATIONS as usize);
    for (wait, next) in &landed {
        assert_eq!(*next, wait - 3 + 50, "{landed:?}");
    }
    // The finding of each but the last iteration: proven, before the write inside gap
    // B (after the Allreduce), for the learned write; nothing more is possible.
    let found = findings_of_rank_0(&trace);
    assert_eq!(found.len(), ITERATIONS as usize, "{found:#?}");
    for (f, (wait, next)) in found.iter().zip(&landed) {
        assert_eq!(f.wait.start_ns, *wait);
        let p = f.proven.as_ref().unwrap();
        let before = p.before_compute.as_ref().unwrap();
        assert_eq!(before.start_ns, *next, "analyze and suggest agree");
        assert_eq!(before.after.as_ref().unwrap().call, "MPI_Allreduce");
        assert_eq!(p.limit, Limit::LearnedUse);
        let first = p.first_use.as_ref().unwrap();
        assert_eq!((first.touch, first.ip), (Touch::Write, Some(0x4242)));
        assert_eq!(
            before.from_touch.as_ref(),
            Some(first),
            "the part from the write"
        );
        // Lost 7 (3-10); gap A 30 and gap B up to the write 8 of work: hideable 7.
        assert_eq!(
            (f.lost_ns, p.independent_work_ns, p.hideable_ns),
            (7, 38, 7)
        );
        assert_eq!(f.needs, None);
        assert_eq!(&f.possible, p);
    }
    // suggest moves each wait to its buffer's first touch (whatever their gain).
    let s = run_suggest(&trace);
    let moves = &s.groups[0].moves;
    assert_eq!(moves.len(), 2, "{moves:#?}");
    let to = |request: &str, touch: &str| {
        let m = (moves.iter())
            .find(|m| m.text.contains(request))
            .unwrap_or_else(|| panic!("{moves:#?}"));
        // A hand-built trace lists no code maps: the instruction is its address.
        let at = format!("to just before 0x4242 (the first {touch})");
        assert!(m.text.ends_with(&at), "{}", m.text);
        assert!(m.assumptions.is_empty());
    };
    to("(the MPI_Isend", "write of the send buffer");
    to("(the MPI_Irecv", "read of the receive buffer");
    // Permissively, the send's wait could go further (the next Isend), but gap B is a
    // learned write: nothing more is possible.
    assert!(
        s.groups[0].possible.is_empty(),
        "{:#?}",
        s.groups[0].possible
    );
}

/// Nothing learned: no move is proven (gap A may write the send buffer), the wait's move
/// is only possible, and the finding says what it needs.
#[test]
fn without_learned_uses_a_move_is_only_possible() {
    let trace = run(vec![halo(0), halo(1)]);
    let s = run_suggest(&trace);
    let g = &s.groups[0];
    assert!(g.moves.is_empty(), "{:#?}", g.moves);
    let send = g
        .possible
        .iter()
        .find(|m| m.text.contains("(the MPI_Isend"))
        .unwrap_or_else(|| panic!("{:#?}", g.possible));
    let needs: Vec<String> = send.assumptions.iter().map(|a| a.to_string()).collect();
    assert!(
        needs.contains(
            &"the compute between MPI_Wait and MPI_Allreduce does not write the send buffer \
              [0x10000, +4.0 KiB)"
                .to_string()
        ),
        "{needs:#?}"
    );
    assert!(s.possible.is_some());
    let found = findings_of_rank_0(&trace);
    // The last iteration's wait has no later use of S: it may go to the end.
    assert_eq!(found.len(), ITERATIONS as usize, "{found:#?}");
    for f in &found[..found.len() - 1] {
        assert_eq!(f.proven, None);
        let needs = f.needs.as_ref().unwrap();
        assert_eq!(needs.compute.start_ns, f.wait.start_ns + 7);
        assert_eq!(needs.compute.after.as_ref().unwrap().call, "MPI_Wait");
        assert_eq!((needs.must_not, needs.buffer), ("write", "the send buffer"));
        // Possible: before the next Isend of S, after the next Irecv: gaps A and B.
        let m = &f.possible;
        assert_eq!(m.limit, Limit::BufferReuse);
        assert_eq!(
            m.move_before.as_ref().unwrap().start_ns,
            f.wait.start_ns + 98
        );
        assert_eq!((m.independent_work_ns, m.hideable_ns), (30 + 58, 7));
    }
}

/// A receive read right after its wait: its wait moves only to the read (the gap is cut
/// there, 1 ns after the wait), which gains nothing: nothing is suggested, and no move
/// past the read is possible; the send's wait, of unknown neighbours, only possibly.
///
/// ```text
///  |Irecv R 0-1|Isend S 1-2|Wait(s) 2-3|Wait(r) 3-10| gap 10-40: reads R at 11 |Allreduce 40-42| gap
/// ```
#[test]
fn a_receive_read_right_after_its_wait_moves_only_to_the_read() {
    let rank = |me: i32| {
        let peer = 1 - me;
        let mut events = Vec::new();
        for k in 0..ITERATIONS {
            let b = k * PERIOD;
            events.extend([
                with_buf(irecv(b, b + 1, peer, 5, BYTES, 2 * k + 1), R),
                with_buf(isend(b + 1, b + 2, peer, 5, BYTES, 2 * k + 2), S),
                complete(Op::Wait, b + 2, b + 3, &[(2 * k + 2, None)]),
                complete(Op::Wait, b + 3, b + 10, &[(2 * k + 1, Some((peer, 5)))]),
                allreduce(b + 40, b + 42),
            ]);
        }
        let end = ITERATIONS * PERIOD;
        events.push(barrier(end, end + 1));
        events
    };
    let mut trace = run(vec![rank(0), rank(1)]);
    for t in &mut trace.ranks {
        t.learned = (0..ITERATIONS)
            .map(|k| LearnedUse {
                request: 2 * k + 1,
                from: Nanos(k * PERIOD + 10),
                reads: range(R),
                writes: range(R),
                outcome: Outcome::Used {
                    earliest: Nanos(k * PERIOD + 11),
                    latest: Nanos(k * PERIOD + 11),
                    touch: Touch::Read,
                    addr: R,
                    ip: None,
                },
            })
            .collect();
    }
    let s = run_suggest(&trace);
    let g = &s.groups[0];
    let read = "to just before an unrecorded instruction (the first read of the receive buffer)";
    assert!(!g.moves.is_empty());
    for m in &g.moves {
        assert!(m.text.contains("(the MPI_Irecv"), "{:#?}", g.moves);
        assert!(m.text.ends_with(read), "{:#?}", g.moves);
        assert!(!matches!(
            m.verdict,
            Verdict::Gains | Verdict::GainsTogether
        ));
    }
    assert!(
        g.possible
            .iter()
            .all(|m| !m.text.contains("(the MPI_Irecv")),
        "{:#?}",
        g.possible
    );
    assert!(render(&s, false).contains("nothing to move"));
    // Its wait is no finding: 1 ns after it is proven independent, too little to hide.
    assert!(findings_of_rank_0(&trace).is_empty());
}

/// A receive whose buffer the watch saw untouched until the next Irecv named it: its
/// wait is a finding (the whole wait is lost; gap and Allreduce are proven independent)
/// whose proven point is the next Irecv.
#[test]
fn a_receive_wait_is_a_finding_when_its_buffer_is_proven_untouched() {
    let rank = |me: i32| {
        let peer = 1 - me;
        let mut events = Vec::new();
        for k in 0..ITERATIONS {
            let b = k * PERIOD;
            events.extend([
                with_buf(irecv(b, b + 1, peer, 5, BYTES, k + 1), R),
                complete(Op::Wait, b + 1, b + 10, &[(k + 1, Some((peer, 5)))]),
                allreduce(b + 40, b + 42),
            ]);
        }
        events
    };
    let sender = |me: i32| {
        let peer = 1 - me;
        (0..ITERATIONS)
            .flat_map(|k| {
                let b = k * PERIOD;
                [
                    with_buf(send(b + 5, b + 9, peer, 5, BYTES), S),
                    allreduce(b + 40, b + 42),
                ]
            })
            .collect::<Vec<_>>()
    };
    let mut trace = run(vec![rank(0), sender(1)]);
    trace.ranks[0].learned = (0..ITERATIONS)
        .map(|k| LearnedUse {
            request: k + 1,
            from: Nanos(k * PERIOD + 10),
            reads: range(R),
            writes: range(R),
            outcome: Outcome::Untouched {
                until: Nanos((k + 1) * PERIOD),
                why: WatchEnd::HandedToMpi,
            },
        })
        .collect();
    let found = findings_of_rank_0(&trace);
    assert_eq!(found.len(), ITERATIONS as usize, "{found:#?}");
    let (last, others) = found.split_last().unwrap();
    for f in others {
        let p = f.proven.as_ref().unwrap();
        assert_eq!(p.limit, Limit::BufferReuse);
        assert_eq!(p.move_before.as_ref().unwrap().call, "MPI_Irecv");
        // Lost 9 (1-10); gaps 10-40 and 42-100: 88 of work.
        assert_eq!(
            (f.lost_ns, p.independent_work_ns, p.hideable_ns),
            (9, 88, 9)
        );
        assert_eq!(f.needs, None);
    }
    // The last: nothing after it but gap 410-440 and the Allreduce, where the rank ends.
    let p = last.proven.as_ref().unwrap();
    assert_eq!((p.limit, p.independent_work_ns), (Limit::EndOfTrace, 30));
}

/// Item 7 of issue 36: a bandwidth loop sends from one buffer with 2 ns of loop between
/// its calls. The wait lost 8, the work after it is 2: a finding only while that 2
/// exceeds the transfer's uncertainty.
///
/// ```text
///  |Isend S 0-1|Wait(s) 1-9|gap 9-11|Isend S 11-12|Wait(s) 12-20|gap 20-22| ...
/// ```
#[test]
fn a_finding_must_hide_more_than_the_transfer_uncertainty() {
    let rank = |me: i32| {
        let peer = 1 - me;
        (0..4u64)
            .flat_map(|k| {
                let b = 11 * k;
                if me == 0 {
                    vec![
                        with_buf(isend(b, b + 1, peer, 5, BYTES, k + 1), S),
                        complete(Op::Wait, b + 1, b + 9, &[(k + 1, None)]),
                    ]
                } else {
                    vec![with_buf(recv(b, b + 9, peer, 5, BYTES), R)]
                }
            })
            .collect::<Vec<_>>()
    };
    let trace = run(vec![rank(0), rank(1)]);
    let o = opts();
    let rows = metrics::requests::per_request(
        &trace,
        &TransferModel::fit(&trace),
        &metrics::collective_model::CollectiveModel::fit(&trace),
        &o,
    );
    let late =
        metrics::false_overlap::late_sender_by_call(&metrics::wait_states::instances(&trace));
    let with = |uncertainty: u64| findings(&trace, &rows, &late, &o, &move |_| uncertainty);
    // Permissively the wait could cross the 2 ns gap to the next Isend: hideable 2.
    let certain = with(0);
    assert_eq!(certain.len(), 3, "{certain:#?}");
    assert!(certain.iter().all(|f| f.possible.hideable_ns == 2));
    assert!(with(1).len() == 3 && with(2).is_empty() && with(50).is_empty());
}
