//! Compute inferred from a gap between MPI calls, cut at the first touches of buffers
//! the watch learned inside it (`overlap trace --buffers`), on hand-built traces of a
//! program without compute spans: the gap that holds both the interior compute and the
//! unpack is two operations, a wait moves to the unpack's read and no further, analyze's
//! finding names the same point, the replay of the measured order is what it was, and
//! the iteration is still found.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use std::num::NonZeroU64;

use crate::common::*;
use overlap_analyzer::analysis::analyze;
use overlap_analyzer::dag::{order_rank, rank_period, Options as DagOptions};
use overlap_analyzer::metrics::false_overlap::{Finding, Limit};
use overlap_analyzer::model::Trace;
use overlap_analyzer::ops::{OpKind, Program};
use overlap_analyzer::replay::{self, NetworkFit, ProgressMode, ReplayConfig};
use overlap_analyzer::suggest::{program_of, suggest, Options, Suggestion, Verdict};
use overlap_instrument::schema::{ByteRange, Event, LearnedUse, Nanos, Op, Outcome, Touch};

const S: u64 = 0x10000;
const R: u64 = 0x20000;
const BYTES: u64 = 4096;
const ITERATIONS: u64 = 5;
const PERIOD: u64 = 100;
/// The instructions of the unpack's first read and of the pack's first write.
const UNPACK: u64 = 0x4500;
const PACK: u64 = 0x7000;

/// Iteration `k` of rank `me` (the other rank mirrors it), at `b = 100 k`:
///
/// ```text
///  |Irecv R 0-1|Isend S 1-2|Wait(r) 2-10|Wait(s) 10-18|
///  |.......... gap 18-60: interior 18-45, unpack from 45 (reads R) ..........|
///  |Allreduce 60-62|...... gap 62-100: pack from 70 (writes S) ......|
///                    learned: R first read at 45, S first written at 70
///  operations: Post(r) Post(s) Complete(r) Complete(s) Compute 18-45 Compute 45-60
///              Allreduce Compute 62-70 Compute 70-100          (9 an iteration)
///  proven:     Complete(r) just before Compute 45-60, Complete(s) just before 70-100
/// ```
///
/// The requests are `2k + 1` (receive) and `2k + 2` (send); a Barrier at the end.
fn rank(me: i32) -> Vec<Event> {
    let peer = 1 - me;
    let mut events = Vec::new();
    for k in 0..ITERATIONS {
        let b = k * PERIOD;
        events.extend([
            with_buf(irecv(b, b + 1, peer, 5, BYTES, 2 * k + 1), R),
            with_buf(isend(b + 1, b + 2, peer, 5, BYTES, 2 * k + 2), S),
            complete(Op::Wait, b + 2, b + 10, &[(2 * k + 1, Some((peer, 5)))]),
            complete(Op::Wait, b + 10, b + 18, &[(2 * k + 2, None)]),
            allreduce(b + 60, b + 62),
        ]);
    }
    let end = ITERATIONS * PERIOD;
    events.push(barrier(end, end + 1));
    events
}

/// The touches learned of every iteration: R read at `b + 45`, S written in `[b + 70,
/// b + 70 + pack_late]` (0: one instant, a fault).
fn learn(trace: &mut Trace, pack_late: u64) {
    let range = |addr| Some(ByteRange { addr, len: BYTES });
    for t in &mut trace.ranks {
        t.learned = (0..ITERATIONS)
            .flat_map(|k| {
                let b = k * PERIOD;
                let used = |at: u64, late: u64, touch, addr, ip| Outcome::Used {
                    earliest: Nanos(at),
                    latest: Nanos(at + late),
                    touch,
                    addr,
                    ip: NonZeroU64::new(ip),
                };
                [
                    LearnedUse {
                        request: 2 * k + 1,
                        from: Nanos(b + 10),
                        reads: range(R),
                        writes: range(R),
                        outcome: used(b + 45, 0, Touch::Read, R, UNPACK),
                    },
                    LearnedUse {
                        request: 2 * k + 2,
                        from: Nanos(b + 18),
                        reads: None,
                        writes: range(S),
                        outcome: used(b + 70, pack_late, Touch::Write, S, PACK),
                    },
                ]
            })
            .collect();
    }
}

fn traces() -> (Trace, Trace) {
    let plain = run(vec![rank(0), rank(1)]);
    let mut learned = plain.clone();
    learn(&mut learned, 0);
    (plain, learned)
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

/// Rank 0's operations of iteration `k`: (start, end, cost) of each.
fn iteration(program: &Program, k: u64) -> Vec<(u64, u64, u64)> {
    let b = k * PERIOD;
    (program.ranks[0].ops.iter())
        .filter(|o| o.measured_start_ns >= b && o.measured_start_ns < b + PERIOD)
        .map(|o| (o.measured_start_ns, o.measured_end_ns, o.cost_ns))
        .collect()
}

/// Each gap of the iteration is cut at its touch: two compute operations each, between
/// the same calls, adding up to the gap; the part from a touch is known by it, and the
/// learned use's first unproven operation is that part.
#[test]
fn a_gap_is_cut_at_a_learned_touch() {
    let (plain, learned) = traces();
    let uncut = program_of(&plain).unwrap();
    let cut = program_of(&learned).unwrap();
    let b = 2 * PERIOD;
    let compute = |ops: &[(u64, u64, u64)]| -> Vec<(u64, u64, u64)> {
        ops.iter().copied().filter(|o| o.1 - o.0 > 2).collect()
    };
    let before = compute(&iteration(&uncut, 2));
    assert_eq!(
        &before[2..],
        [(b + 18, b + 60, 42), (b + 62, b + 100, 38)],
        "{before:?}"
    );
    let after = compute(&iteration(&cut, 2));
    assert_eq!(
        &after[2..],
        [
            (b + 18, b + 45, 27),
            (b + 45, b + 60, 15),
            (b + 62, b + 70, 8),
            (b + 70, b + 100, 30)
        ],
        "{after:?}"
    );
    let rank = &cut.ranks[0];
    let part = |start: u64| {
        (rank.ops.iter())
            .position(|o| o.measured_start_ns == start && matches!(o.kind, OpKind::Compute { .. }))
            .unwrap()
    };
    // Both parts of a gap name the calls around it.
    let (interior, unpack) = (part(b + 18), part(b + 45));
    assert_eq!(rank.ops[interior].span, rank.ops[unpack].span);
    assert!(matches!(
        (&rank.ops[interior].kind, &rank.ops[unpack].kind),
        (
            OpKind::Compute { inferred: true, until_span: Some(a), .. },
            OpKind::Compute { inferred: true, until_span: Some(c), .. }
        ) if a == c
    ));
    // The part from the read is known by it, the part before by nothing.
    let read = rank.cut_at(unpack).unwrap();
    assert_eq!(read.touched().map(|t| t.1), Some(Touch::Read));
    assert_eq!(
        (read.ip.map(NonZeroU64::get), read.until()),
        (Some(UNPACK), Some(unpack))
    );
    assert_eq!(rank.cut_at(interior), None);
    let write = rank.cut_at(part(b + 70)).unwrap();
    assert_eq!(write.touched().map(|t| t.1), Some(Touch::Write));
    // Two operations more an iteration; the iteration is still found, as many times.
    assert_eq!(
        rank.ops.len(),
        uncut.ranks[0].ops.len() + 2 * ITERATIONS as usize
    );
    let plain_period = rank_period(&uncut, &plain, &uncut.ranks[0]).unwrap();
    let cut_period = rank_period(&cut, &learned, rank).unwrap();
    assert_eq!(cut_period.length, plain_period.length + 2);
    assert_eq!(cut_period.iterations, plain_period.iterations);
    assert!(
        cut_period.iterations >= ITERATIONS as usize - 1,
        "{cut_period:?}"
    );
}

/// The receive's wait moves past the interior compute to just before the unpack's read,
/// and the send's past the Allreduce to just before the pack's write; neither further.
/// Without the watch, neither moves.
#[test]
fn a_wait_moves_to_the_cut_and_no_further() {
    let (plain, learned) = traces();
    // Where each completion lands: the measured start of the operation right after it.
    let landed = |trace: &Trace| {
        let program = program_of(trace).unwrap();
        let rank = &program.ranks[0];
        let order = order_rank(&program, trace, rank, &DagOptions::default())
            .consensus
            .order;
        let mut out = Vec::new();
        for (p, &i) in order.iter().enumerate() {
            if let OpKind::Complete { request } = rank.ops[i].kind {
                let next = order.get(p + 1).map(|&j| rank.ops[j].measured_start_ns);
                let role = program.requests[request].role;
                out.push((rank.ops[i].measured_start_ns, role, next.unwrap()));
            }
        }
        out
    };
    for (wait, role, next) in landed(&learned) {
        let b = wait / PERIOD * PERIOD;
        let to = match role {
            overlap_analyzer::ops::RequestRole::Recv => b + 45,
            _ => b + 70,
        };
        assert_eq!(next, to, "the completion at {wait} ({role:?})");
    }
    // Nothing learned: each completion stays where it was (before the next call).
    for (wait, _, next) in landed(&plain) {
        assert_eq!(next, wait + 8, "the completion at {wait}");
    }
    // suggest says where, by the touch's instruction (a hand-built trace has no code
    // maps to name its line with), and nothing needs an assumption.
    let s = run_suggest(&learned);
    let moves = &s.groups[0].moves;
    let to = |request: &str, at: &str| {
        let m = (moves.iter())
            .find(|m| m.text.contains(request) && m.iterations > 1)
            .unwrap_or_else(|| panic!("{moves:#?}"));
        assert!(m.text.ends_with(at), "{}", m.text);
        assert!(m
            .to_before
            .as_deref()
            .unwrap()
            .starts_with("the compute from "));
        assert!(m.assumptions.is_empty());
        m
    };
    let recv = to(
        "(the MPI_Irecv",
        "to just before 0x4500 (the first read of the receive buffer)",
    );
    assert_eq!(
        recv.to_before.as_deref(),
        Some(
            "the compute from 0x4500 (first read of the receive buffer of MPI_Irecv) to \
             MPI_Allreduce [15 ns]"
        )
    );
    assert!(matches!(
        recv.verdict,
        Verdict::Gains | Verdict::BelowUncertainty
    ));
    to(
        "(the MPI_Isend",
        "to just before 0x7000 (the first write of the send buffer)",
    );
}

/// A touch known only to an interval that reaches the next call (a changed edge byte
/// found there) is not known to lie in the gap: the gap is not cut, and the send's wait
/// stops before the whole of it.
#[test]
fn a_touch_not_known_inside_one_gap_does_not_cut_it() {
    let mut trace = run(vec![rank(0), rank(1)]);
    learn(&mut trace, 31);
    let program = program_of(&trace).unwrap();
    let b = 2 * PERIOD;
    let ops = iteration(&program, 2);
    assert!(ops.contains(&(b + 62, b + 100, 38)), "{ops:?}");
    assert!(
        ops.contains(&(b + 45, b + 60, 15)),
        "the read still cuts its gap"
    );
    let s = run_suggest(&trace);
    let send = (s.groups[0].moves.iter())
        .find(|m| m.text.contains("(the MPI_Isend") && m.iterations > 1)
        .unwrap();
    assert!(
        (send.text).ends_with("to before the compute between MPI_Allreduce and MPI_Irecv [38 ns]"),
        "{}",
        send.text
    );
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

/// analyze's false-overlap finding of each wait names the point suggest moves it to: the
/// part of the gap from its buffer's first touch, with the touch.
#[test]
fn analyze_names_the_same_point() {
    let (plain, learned) = traces();
    let found = findings_of_rank_0(&learned);
    // Each iteration's two waits.
    assert_eq!(found.len(), 2 * ITERATIONS as usize, "{found:#?}");
    for f in &found {
        let b = f.wait.start_ns / PERIOD * PERIOD;
        let p = f.proven.as_ref().unwrap();
        let before = p.before_compute.as_ref().unwrap();
        let first = p.first_use.as_ref().unwrap();
        assert_eq!(p.limit, Limit::LearnedUse);
        assert_eq!(
            before.from_touch.as_ref(),
            Some(first),
            "the part from the touch"
        );
        assert_eq!(&f.possible, p);
        assert_eq!(f.needs, None);
        // Lost 8; the compute up to the touch is proven independent.
        let (at, touch, ip, work) = if f.wait.start_ns == b + 2 {
            (b + 45, Touch::Read, UNPACK, 27)
        } else {
            (b + 70, Touch::Write, PACK, 42 + 8)
        };
        assert_eq!(before.start_ns, at);
        assert_eq!((first.touch, first.ip), (touch, Some(ip)));
        assert_eq!(
            (f.lost_ns, p.independent_work_ns, p.hideable_ns),
            (8, work, 8)
        );
        // The call before the gap: the send's wait for the read, the Allreduce for the
        // write.
        let after = before.after.as_ref().unwrap().call;
        assert_eq!(
            after,
            if touch == Touch::Read {
                "MPI_Wait"
            } else {
                "MPI_Allreduce"
            }
        );
    }
    // Without the watch, no move of either is proven.
    assert!(findings_of_rank_0(&plain)
        .iter()
        .all(|f| f.proven.is_none()));
}

/// The replay of the measured order is the same with the gaps cut: each part keeps its
/// measured length, the parts of a gap replay back to back where the gap did, and the
/// self error is what it was.
#[test]
fn the_replay_of_the_measured_order_is_unchanged_by_a_cut() {
    let (plain, learned) = traces();
    let fit = NetworkFit::from_trace(&plain, None)
        .or_else(|unknown| unknown.with_given(Some(1_000.0), Some(1e9)))
        .unwrap();
    let replayed = |trace: &Trace| {
        let program = program_of(trace).unwrap();
        let config = ReplayConfig::on(fit.mid, ProgressMode::InMpi);
        let r = replay::replay(&program, &replay::measured_orders(&program), &config).unwrap();
        let compute: Vec<(u64, u64)> = (program.ranks[0].ops.iter().zip(&r.ranks[0].ops))
            .filter(|(o, _)| matches!(o.kind, OpKind::Compute { .. }))
            .map(|(_, t)| (t.start_ns, t.end_ns))
            .collect();
        let ends: Vec<u64> = r.ranks.iter().map(|x| x.end_ns).collect();
        (r.makespan_ns, r.self_error(&program), ends, compute)
    };
    let (plain_ns, plain_error, plain_ends, plain_compute) = replayed(&plain);
    let (cut_ns, cut_error, cut_ends, cut_compute) = replayed(&learned);
    assert_eq!((cut_ns, cut_ends), (plain_ns, plain_ends));
    assert_eq!(cut_error, plain_error);
    // Each gap's parts, joined, are where the gap was replayed.
    let mut joined: Vec<(u64, u64)> = Vec::new();
    for (start, end) in cut_compute {
        match joined.last_mut() {
            Some(last) if last.1 == start && !plain_compute.contains(last) => last.1 = end,
            _ => joined.push((start, end)),
        }
    }
    assert_eq!(joined, plain_compute);
    // suggest's self check says the same.
    let (a, b) = (run_suggest(&plain), run_suggest(&learned));
    let (a_check, b_check) = (a.replay.unwrap(), b.replay.unwrap());
    assert_eq!(a_check.replayed.ns, b_check.replayed.ns);
    assert_eq!(a_check.self_error, b_check.self_error);
    assert_eq!(
        b.groups[0].period.map(|p| p.0),
        a.groups[0].period.map(|p| p.0 + 2),
        "suggest's iteration (its touches keyed by their symbolized site): two parts more"
    );
}
