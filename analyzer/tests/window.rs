//! Windows of a run (`--from/--to`, `--region`, `--ranks`): hand-built traces cut by
//! [`overlap_analyzer::window::cut`], whose cuts (what crosses which edge, what is
//! clipped, what the analysis of the part then says) were worked out by hand.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::metrics::WaitKind;
use overlap_analyzer::model::{EventRef, Trace};
use overlap_analyzer::window::{cut, Choice, Clipped, Crossing, Edge, UnknownWaits, WindowError};
use overlap_instrument::schema::{CallArgs, Event, Nanos, Op};

fn times(from: u64, to: u64) -> Choice {
    Choice {
        from_ns: Some(from),
        to_ns: Some(to),
        ..Choice::default()
    }
}

fn bcast(start: u64, end: u64, root: i32) -> Event {
    call(
        Op::Bcast,
        start,
        end,
        CallArgs {
            comm: Some(0),
            root: Some(root),
            send_bytes: Some(8),
            recv_bytes: Some(8),
            ..CallArgs::default()
        },
    )
}

/// The calls of a rank in the cut, as (name, start, end).
fn calls(t: &Trace, rank: u32) -> Vec<(&'static str, u64, u64)> {
    t.rank(rank)
        .unwrap()
        .spans
        .iter()
        .filter_map(|s| Some((s.op()?.mpi_name(), s.start.0, s.end.0)))
        .collect()
}

/// Two ranks, a message before the window's start and one inside it, a barrier inside:
///
/// ```text
///  time       0    2    8   10 12 14 16   20 22      28 29 30 31  35   40  45 47  50
///  rank 0    |Isend a|          |Wait a|      |Barrier|         |Isend b|   |Wait b|
///  rank 1    |Irecv a|     |Wait a -----|  |Barrier ---|  |Irecv b|   |Wait b ------|
///  window                  10 |===================================|  40
/// ```
/// Message a was sent and posted before the window and completed in it: it crosses the
/// start, and the two Waits in the window that waited on it (rank 0's 2 ns, rank 1's
/// cut to 10-14: 4 ns) have unknown wait states. Message b is whole in the window (its
/// receive's Wait cut at the end, 35-40). Requests: a's two posts are before the
/// window (2 cross its start), rank 0's Isend b completes after it (1 crosses its
/// end); rank 1's Irecv b is whole. Rank 1 waits at the barrier from 16 to rank 0's
/// 20: 4 ns, in the cut as in the run.
#[test]
fn what_crosses_which_edge() {
    let t = run(vec![
        vec![
            isend(0, 2, 1, 1, 8, 1),
            complete(Op::Wait, 10, 12, &[(1, None)]),
            barrier(20, 22),
            isend(30, 31, 1, 2, 8, 2),
            complete(Op::Wait, 45, 47, &[(2, None)]),
        ],
        vec![
            irecv(0, 1, 0, 1, 8, 7),
            complete(Op::Wait, 8, 14, &[(7, Some((0, 1)))]),
            barrier(16, 22),
            irecv(28, 29, 0, 2, 8, 8),
            complete(Op::Wait, 35, 50, &[(8, Some((0, 2)))]),
        ],
    ]);
    let whole = report(&t);
    let c = cut(t, &times(10, 40)).unwrap();
    assert_eq!(
        calls(&c.trace, 0),
        [
            ("MPI_Wait", 10, 12),
            ("MPI_Barrier", 20, 22),
            ("MPI_Isend", 30, 31)
        ]
    );
    assert_eq!(
        calls(&c.trace, 1),
        [
            ("MPI_Wait", 10, 14),
            ("MPI_Barrier", 16, 22),
            ("MPI_Irecv", 28, 29),
            ("MPI_Wait", 35, 40)
        ]
    );
    let at = |rank, index| EventRef { rank, index };
    assert_eq!(
        c.clipped,
        [
            Clipped {
                at: at(1, 0),
                edge: Edge::Start,
                start: Nanos(8),
                end: Nanos(14)
            },
            Clipped {
                at: at(1, 3),
                edge: Edge::End,
                start: Nanos(35),
                end: Nanos(50)
            }
        ]
    );
    let w = &c.report;
    assert_eq!(
        (w.from_ns, w.to_ns, w.ranks, w.ranks_left_out),
        (10, 40, 2, 0)
    );
    assert_eq!((w.calls_cut, w.compute_cut, w.edge_marks), (2, 0, 0));
    assert_eq!(w.rank_time_ns, 60, "30 ns of each rank");
    let crossing = |count, before, after, rank_left_out| Crossing {
        count,
        before,
        after,
        rank_left_out,
    };
    assert_eq!(w.messages, crossing(1, 1, 0, 0));
    assert_eq!(w.requests, crossing(3, 2, 1, 0));
    assert_eq!(w.unknown_waits, UnknownWaits { calls: 2, ns: 6 });

    // The part analysed: message b alone, its receive's request alone, each rank 30 ns
    // of wall time, and the barrier's wait as in the run.
    assert_eq!(c.trace.messages.len(), 1);
    assert_eq!(c.trace.requests.len(), 1);
    assert_eq!(
        (c.trace.requests[0].rank, c.trace.requests[0].request()),
        (1, 8)
    );
    let r = report(&c.trace);
    assert_eq!(kind(&r, WaitKind::WaitAtBarrier), (4, 1));
    assert_eq!(kind(&whole, WaitKind::WaitAtBarrier), (4, 1));
    let walls: Vec<u64> = r.ranks.iter().map(|b| b.wall_ns).collect();
    assert_eq!(walls, [30, 30]);
    // In MPI: rank 0 2 + 2 + 1; rank 1 4 + 6 + 1 + 5.
    let in_mpi: Vec<u64> = r.ranks.iter().map(|b| b.in_mpi_ns).collect();
    assert_eq!(in_mpi, [5, 16]);
}

/// Rank 1 alone: every message crosses to the rank left out (both of them), and the
/// barrier instance has its other member left out.
///
/// ```text
///  rank 0 (left out)  |Isend a|   |Wait a|  |Barrier|   |Isend b|     |Wait b|
///  rank 1             |Irecv a| |Wait a --| |Barrier --| |Irecv b|   |Wait b ---|
/// ```
#[test]
fn a_rank_left_out_takes_its_ends_with_it() {
    let t = run(vec![
        vec![
            isend(0, 2, 1, 1, 8, 1),
            complete(Op::Wait, 10, 12, &[(1, None)]),
            barrier(20, 22),
            isend(30, 31, 1, 2, 8, 2),
            complete(Op::Wait, 45, 47, &[(2, None)]),
        ],
        vec![
            irecv(0, 1, 0, 1, 8, 7),
            complete(Op::Wait, 8, 14, &[(7, Some((0, 1)))]),
            barrier(16, 22),
            irecv(28, 29, 0, 2, 8, 8),
            complete(Op::Wait, 35, 50, &[(8, Some((0, 2)))]),
        ],
    ]);
    let choice = Choice {
        ranks: Some(vec![1, 5]),
        ..Choice::default()
    };
    let c = cut(t, &choice).unwrap();
    assert_eq!(
        c.trace.ranks.iter().map(|t| t.rank).collect::<Vec<_>>(),
        [1]
    );
    let w = &c.report;
    assert_eq!(
        (w.ranks, w.ranks_left_out, w.collectives_partial),
        (1, 1, 1)
    );
    assert_eq!(w.messages.count, 2);
    assert_eq!(w.messages.rank_left_out, 2);
    // Both of rank 1's requests are whole on it; its two Waits wait on messages of the
    // rank left out: 6 + 15 ns.
    assert_eq!(w.requests.count, 0);
    assert_eq!(c.trace.requests.len(), 2);
    assert_eq!(w.unknown_waits, UnknownWaits { calls: 2, ns: 21 });
    assert!(c.clipped.is_empty());
    assert_eq!(c.trace.info.ranks.len(), 1);
    let r = report(&c.trace);
    assert_eq!(r.ranks.len(), 1);
    assert_eq!(kind(&r, WaitKind::LateSender), (0, 0));
}

/// A broadcast whose root left early, before the window; the barrier after it in it:
///
/// ```text
///  time     2 3    5    8   12  14       20 22
///  rank 0  |Bcast|           . . . . . . |Barrier|
///  rank 1              |Bcast|  |Barrier -------|
///  window       5 |===========================| 30
/// ```
/// Rank 0's Bcast lies before the window, but its instance has a member in it: it
/// stays as an instant at 5, so that each rank's first collective in the cut is still
/// the Bcast and the barriers pair up (rank 1 waits 14 to 20 = 6 ns). Without it rank
/// 0's Barrier would pair with rank 1's Bcast.
#[test]
fn a_collective_instance_stays_paired_across_the_edge() {
    let t = run(vec![
        vec![bcast(2, 3, 0), barrier(20, 22)],
        vec![bcast(8, 12, 0), barrier(14, 22)],
    ]);
    let c = cut(t, &times(5, 30)).unwrap();
    assert_eq!(
        calls(&c.trace, 0),
        [("MPI_Bcast", 5, 5), ("MPI_Barrier", 20, 22)]
    );
    assert_eq!(c.report.edge_marks, 1);
    assert_eq!(c.report.calls_cut, 0);
    assert_eq!(c.clipped[0].edge, Edge::Outside);
    let r = report(&c.trace);
    assert_eq!(kind(&r, WaitKind::WaitAtBarrier), (6, 1));
    assert_eq!(kind(&r, WaitKind::LateBroadcast), (0, 0));
    // The instant stands for a call made before the window: the profile counts the
    // calls made in it: one Bcast, rank 1's, 8 to 12 (4 ns).
    let bcast = r.profile.functions.iter().find(|f| f.call == "MPI_Bcast");
    let bcast = bcast.map(|f| (f.count, f.ranks, f.total_ns));
    assert_eq!(bcast, Some((1, 1, 4)));
}

/// A persistent send, its init before the window, started and completed in it:
///
/// ```text
///  time     0 1        5   9 10 11    15 16 17
///  rank 0  |Send_init|     . |Start|  |Wait|          (request 5 of persistent 100)
///  rank 1                  |Recv ------------|        Late Sender 10 - 9 = 1
///  window              5 |=========================| 30
/// ```
/// The init describes the request: it stays as an instant at 5, and the request and
/// its message are whole in the window.
#[test]
fn a_persistent_request_keeps_its_init() {
    let init = call(
        Op::SendInit,
        0,
        1,
        CallArgs {
            request: Some(100),
            peer: Some(1),
            tag: Some(1),
            bytes: Some(8),
            comm: Some(0),
            ..CallArgs::default()
        },
    );
    let start = call(
        Op::Start,
        10,
        11,
        CallArgs {
            started: vec![overlap_instrument::schema::Started {
                request: 5,
                persistent: 100,
            }],
            ..CallArgs::default()
        },
    );
    let t = run(vec![
        vec![init, start, complete(Op::Wait, 15, 16, &[(5, None)])],
        vec![recv(9, 17, 0, 1, 8)],
    ]);
    assert_eq!(t.requests.len(), 1);
    let c = cut(t, &times(5, 30)).unwrap();
    assert_eq!(
        calls(&c.trace, 0),
        [
            ("MPI_Send_init", 5, 5),
            ("MPI_Start", 10, 11),
            ("MPI_Wait", 15, 16)
        ]
    );
    assert_eq!(c.report.edge_marks, 1);
    assert_eq!(c.report.requests, Crossing::default());
    assert_eq!(c.trace.requests.len(), 1);
    assert_eq!(
        (c.trace.requests[0].post(), c.trace.requests[0].args()),
        (1, 0)
    );
    assert_eq!(c.trace.messages.len(), 1);
    assert_eq!(kind(&report(&c.trace), WaitKind::LateSender), (1, 1));
}

/// Compute that began before the window is compute in it, as in the run; the wall
/// time runs from the window's start to the rank's end in it.
///
/// ```text
///  time     0   2                 20  22           40
///  rank 0  |Barrier|..(gap: compute)..|Barrier|
///  rank 1  |Barrier|..(gap: compute)..|Barrier|
///  window           10 |=====================| 30
/// ```
/// Each rank: wall 10 to 22 (its last event) = 12, compute 10 to 20 = 10, in MPI 2.
#[test]
fn compute_across_the_edge_counts_in_the_window() {
    let t = run(vec![
        vec![barrier(0, 2), barrier(20, 22)],
        vec![barrier(0, 2), barrier(20, 22)],
    ]);
    let c = cut(t, &times(10, 30)).unwrap();
    let r = report(&c.trace);
    for b in &r.ranks {
        assert_eq!((b.wall_ns, b.compute_ns, b.in_mpi_ns), (12, 10, 2), "{b:?}");
    }
}

/// A region is the window from its first enter to its last leave; a rank that never
/// entered it is said, and analysed in its time all the same.
///
/// ```text
///  time     0  1   4 5     9  10   14 15     20  24
///  rank 0  |Pc+|  |Barrier|  |Pc-|
///  rank 1      |Pc+|  |Barrier | |Pc-|
///  rank 2            |Barrier ---|           |Barrier|
///  region solve: 0 (rank 0's enter) to 15 (rank 1's leave)
/// ```
#[test]
fn a_region_is_a_window() {
    let t = run(vec![
        vec![
            pcontrol(0, 1, 1, "solve"),
            barrier(5, 9),
            pcontrol(10, 11, -1, "solve"),
            barrier(20, 24),
        ],
        vec![
            pcontrol(1, 2, 1, "solve"),
            barrier(4, 9),
            pcontrol(14, 15, -1, "solve"),
            barrier(20, 24),
        ],
        vec![barrier(5, 10), barrier(20, 24)],
    ]);
    let by_region = Choice {
        region: Some("solve".into()),
        ..Choice::default()
    };
    let c = cut(t.clone(), &by_region).unwrap();
    assert_eq!((c.report.from_ns, c.report.to_ns), (0, 15));
    assert_eq!(c.report.never_entered, [2]);
    let by_times = cut(t.clone(), &times(0, 15)).unwrap();
    assert!(c.trace == by_times.trace);
    assert_eq!(calls(&c.trace, 2), [("MPI_Barrier", 5, 10)]);

    let unknown = cut(
        t.clone(),
        &Choice {
            region: Some("halo".into()),
            ..Choice::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "--region halo: no region `halo` in the run; its regions: solve (1 instance)"
    );
    let second = cut(
        t,
        &Choice {
            region: Some("solve#2".into()),
            ..Choice::default()
        },
    );
    assert!(matches!(second, Err(WindowError::Region { .. })));
}

/// A window that is empty, after the run, or of no rank the trace has is refused.
#[test]
fn windows_that_cannot_be_cut() {
    let t = run(vec![vec![barrier(0, 2), barrier(20, 22)]]);
    assert_eq!(
        cut(t.clone(), &times(10, 10)).unwrap_err(),
        WindowError::Empty { from: 10, to: 10 }
    );
    let after = Choice {
        from_ns: Some(30),
        ..Choice::default()
    };
    assert_eq!(
        cut(t.clone(), &after).unwrap_err(),
        WindowError::AfterTheRun { from: 30, end: 22 }
    );
    let ranks = Choice {
        ranks: Some(vec![3, 4, 5]),
        ..Choice::default()
    };
    assert_eq!(
        cut(t.clone(), &ranks).unwrap_err().to_string(),
        "no rank of 3-5 is in the trace (it has ranks 0)"
    );
    // Up to a time past the run's end: the run's end.
    let c = cut(t, &times(1, 1000)).unwrap();
    assert_eq!((c.report.from_ns, c.report.to_ns), (1, 22));
    assert_eq!(c.report.calls_cut, 1);
}

/// The kept runs of `tests/data/reports` (real runs of C, Fortran and Rust programs:
/// persistent and non-blocking collectives, one-sided, threads, GPU), loaded.
fn kept_runs() -> Vec<Trace> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path().join("ranks")))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    (dirs.iter())
        .map(|d| {
            overlap_analyzer::load::load_dir(d, &mut |_, _| {})
                .unwrap()
                .trace
        })
        .collect()
}

/// A window holding the whole run analyses as the run, figure for figure; one that
/// keeps every rank's whole time but some ranks gives those ranks the run's time per
/// rank.
#[test]
fn the_whole_run_as_a_window_is_the_run() {
    for t in kept_runs() {
        let name = t.source.display().to_string();
        let whole = report(&t);
        let c = cut(t.clone(), &times(0, u64::MAX)).unwrap();
        assert_eq!(c.report.messages, Crossing::default(), "{name}");
        assert_eq!(c.report.requests, Crossing::default(), "{name}");
        assert!(c.clipped.is_empty(), "{name}");
        let r = report(&c.trace);
        assert!(r.ranks == whole.ranks, "{name}");
        assert!(r.wait_states == whole.wait_states, "{name}");
        assert!(r.requests == whole.requests, "{name}");
        assert!(r.false_overlap == whole.false_overlap, "{name}");
        assert!(r.profile == whole.profile, "{name}");

        let first = t.ranks[0].rank;
        let one = Choice {
            ranks: Some(vec![first]),
            ..Choice::default()
        };
        let c = cut(t, &one).unwrap();
        let r = report(&c.trace);
        assert_eq!(r.ranks.len(), 1, "{name}");
        assert!(r.ranks[0] == whole.ranks[0], "{name}: {:?}", r.ranks[0]);
    }
}

/// Windows at a few places of every kept run: the cut holds only what overlaps the
/// window, cut to it; every message and request of the cut names calls of the cut; and
/// the analysis runs on it.
#[test]
fn every_cut_is_a_trace_the_analysis_takes() {
    for t in kept_runs() {
        let name = t.source.display().to_string();
        let (lo, hi) = (t.ranks.iter())
            .filter_map(|r| {
                Some((
                    r.spans.first()?.start.0,
                    r.spans.iter().map(|s| s.end.0).max()?,
                ))
            })
            .fold((u64::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1)));
        let at = |share: u64| lo + (hi - lo) * share / 10;
        for (a, b) in [(1, 9), (0, 3), (4, 6), (7, 10), (5, 5)] {
            let (from, to) = (at(a), at(b).max(at(a) + 1));
            let c = cut(t.clone(), &times(from, to)).unwrap();
            for r in &c.trace.ranks {
                for s in &r.spans {
                    assert!(from <= s.start.0 && s.end.0 <= to, "{name}: {s:?}");
                }
            }
            for m in &c.trace.messages {
                for e in [Some(m.send()), Some(m.recv_post()), m.completion()]
                    .into_iter()
                    .flatten()
                {
                    assert!(c.trace.span(e).is_some(), "{name}: {m:?}");
                }
            }
            for q in &c.trace.requests {
                let t = c.trace.rank(q.rank).unwrap();
                for i in [Some(q.post()), Some(q.args()), q.completion(), q.freed()]
                    .into_iter()
                    .flatten()
                {
                    assert!(i < t.spans.len(), "{name}: {q:?}");
                }
            }
            let r = report(&c.trace);
            for b in &r.ranks {
                assert!(b.wall_ns <= to - from, "{name}: {b:?}");
            }
        }
    }
}
