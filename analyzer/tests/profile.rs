//! The profile (time per function and site, communication matrix, message sizes,
//! phases) of hand-built traces whose figures were worked out by hand.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::profile::{CallStats, PairTraffic, SizeClass};
use overlap_instrument::schema::{CallArgs, Op};

fn init(start: u64, end: u64) -> overlap_instrument::schema::Event {
    call(Op::Init, start, end, CallArgs::default())
}

fn finalize(start: u64, end: u64) -> overlap_instrument::schema::Event {
    call(Op::Finalize, start, end, CallArgs::default())
}

fn row<'a>(rows: &'a [CallStats], call: &str) -> &'a CallStats {
    rows.iter().find(|r| r.call == call).unwrap()
}

/// ```text
///  rank 0 |Init 0-5|prep 5-9|Isend 9-10|Send 10-12|Wait 12-14| ... |Finalize 40-42|
///                             8 B to 1   4 KiB to 1
///  rank 1 |Init 0-3|Irecv 3-4|Recv 4 -------- 13|Wait 14-16| ... |Finalize 38-41|
///                              ^ entered at 4, the Send at 10: Late Sender 6
/// ```
/// Time in MPI: 8 + 5 + 1 + 2 + 4 + 1 + 9 = 30 ns.
#[test]
fn time_per_function_matrix_sizes_and_phases() {
    let t = run(vec![
        vec![
            init(0, 5),
            compute(5, 9, "prepare"),
            isend(9, 10, 1, 1, 8, 1),
            send(10, 12, 1, 2, 4096),
            complete(Op::Wait, 12, 14, &[(1, None)]),
            compute(14, 40, "c"),
            finalize(40, 42),
        ],
        vec![
            init(0, 3),
            irecv(3, 4, 0, 1, 8, 7),
            recv(4, 13, 0, 2, 4096),
            complete(Op::Wait, 14, 16, &[(7, Some((0, 1)))]),
            compute(16, 38, "c"),
            finalize(38, 41),
        ],
    ]);
    let p = report(&t).profile;

    let order: Vec<&str> = p.functions.iter().map(|r| r.call).collect();
    assert_eq!(
        order,
        [
            "MPI_Recv",
            "MPI_Init",
            "MPI_Finalize",
            "MPI_Wait",
            "MPI_Send",
            "MPI_Irecv",
            "MPI_Isend"
        ],
        "largest total first, then by name"
    );
    let init = row(&p.functions, "MPI_Init");
    assert_eq!(
        (init.count, init.ranks, init.total_ns, init.mean_ns),
        (2, 2, 8, 4)
    );
    assert_eq!((init.min_ns, init.max_ns, init.max_rank), (3, 5, 0));
    assert_eq!(init.mpi_share, Some(8.0 / 30.0));
    let recv = row(&p.functions, "MPI_Recv");
    assert_eq!((recv.total_ns, recv.wait_state_ns), (9, 6));
    assert_eq!((recv.sent_bytes, recv.received_bytes), (0, 4096));
    let wait = row(&p.functions, "MPI_Wait");
    assert_eq!((wait.count, wait.total_ns, wait.wait_state_ns), (2, 4, 0));
    assert_eq!(
        wait.received_bytes, 8,
        "rank 1's Wait completed the Isend's message"
    );
    assert_eq!(row(&p.functions, "MPI_Isend").sent_bytes, 8);
    assert_eq!(row(&p.functions, "MPI_Send").sent_bytes, 4096);
    let finalize = row(&p.functions, "MPI_Finalize");
    assert_eq!((finalize.total_ns, finalize.max_rank), (5, 1));

    // No call recorded a site: one row per function, its site unknown.
    assert_eq!(p.sites.len(), 7);
    assert!(p.sites.iter().all(|s| s.site.is_none()));
    assert_eq!(p.sites[0].stats, *row(&p.functions, "MPI_Recv"));

    assert_eq!(p.matrix.ranks, 2);
    assert_eq!(
        p.matrix.pairs,
        [PairTraffic {
            from: 0,
            to: 1,
            messages: 2,
            bytes: 4104
        }]
    );
    assert_eq!(p.matrix.by_comm.len(), 1);
    assert_eq!(
        (p.matrix.by_comm[0].comm, p.matrix.by_comm[0].messages),
        (0, 2)
    );

    let calls: Vec<&str> = p.sizes.iter().map(|s| s.call).collect();
    assert_eq!(calls, ["MPI_Isend", "MPI_Send"]);
    assert_eq!(
        p.sizes[0].classes,
        [SizeClass {
            min_bytes: 8,
            max_bytes: 15,
            messages: 1,
            bytes: 8
        }]
    );
    assert_eq!(
        (
            p.sizes[1].classes[0].min_bytes,
            p.sizes[1].classes[0].max_bytes
        ),
        (4096, 8191)
    );

    // Setup: Init's start to the end of the next call (Isend 9-10, Irecv 3-4); body to
    // Finalize's start. No wait fell in setup.
    let ph = &p.phases;
    let r0 = &ph.ranks[0];
    assert_eq!(
        (r0.setup_ns, r0.body_ns, r0.finalize_ns),
        (Some(10), Some(30), Some(2))
    );
    let r1 = &ph.ranks[1];
    assert_eq!(
        (r1.setup_ns, r1.body_ns, r1.finalize_ns),
        (Some(4), Some(34), Some(3))
    );
    assert!(r0.unknown.is_empty() && r1.unknown.is_empty());
    assert_eq!(
        (ph.setup_max_ns, ph.body_max_ns, ph.finalize_max_ns),
        (Some(10), Some(34), Some(3))
    );
    assert_eq!(ph.setup_wait_state_ns, 0);

    // The window [9, 13): the calls that overlap it, clipped; the Late Sender started
    // at 4, before it.
    let (r, d) = overlap_analyzer::analysis::analyze(&t, &opts());
    let (w, _) = overlap_analyzer::profile::calls::tables_in(&t, &d.sites, &d.waits, Some((9, 13)));
    let in_window: Vec<(&str, u64, u64)> =
        w.iter().map(|s| (s.call, s.count, s.total_ns)).collect();
    assert_eq!(
        in_window,
        [
            ("MPI_Recv", 1, 4),
            ("MPI_Send", 1, 2),
            ("MPI_Isend", 1, 1),
            ("MPI_Wait", 1, 1)
        ]
    );
    assert_eq!(row(&w, "MPI_Recv").wait_state_ns, 0);
    assert_eq!(r.profile, p, "the report's profile is the whole run's");

    let text = overlap_analyzer::report::render_profile(&p, Default::default(), 10);
    for want in [
        "Time per MPI function",
        "MPI_Recv",
        "Communication matrix",
        "4.0 KiB to 8.0 KiB",
        "setup 10 ns, body 34 ns, finalize 3 ns",
    ] {
        assert!(text.contains(want), "{want:?} in\n{text}");
    }
}

/// A rank without Init or Finalize says which part is unknown and why, never 0.
///
/// ```text
///  rank 0 |Barrier 0-2|
///  rank 1 |Barrier 1-2|
/// ```
#[test]
fn phases_without_init_or_finalize_are_unknown() {
    let t = run(vec![vec![barrier(0, 2)], vec![barrier(1, 2)]]);
    let p = report(&t).profile;
    for r in &p.phases.ranks {
        assert_eq!((r.setup_ns, r.body_ns, r.finalize_ns), (None, None, None));
        assert_eq!(
            r.unknown,
            ["MPI_Init was not recorded", "MPI_Finalize was not recorded"]
        );
    }
    assert_eq!(p.phases.setup_max_ns, None);
    assert!(p.matrix.pairs.is_empty() && p.sizes.is_empty());
    let b = row(&p.functions, "MPI_Barrier");
    assert_eq!((b.count, b.total_ns, b.wait_state_ns), (2, 3, 1));
    let text = overlap_analyzer::report::render_profile(&p, Default::default(), 10);
    assert!(text.contains("setup unknown"), "{text}");
    assert!(text.contains("no matched messages"), "{text}");
}

/// Start-up skew: rank 1 initialises late, so rank 0's first call that communicates (a
/// Barrier, after an MPI_Pcontrol that meets no one) waits for it. That wait is counted
/// among the wait states and said to fall during setup.
///
/// ```text
///  rank 0 |Init 0-5|Pcontrol|Barrier 5 --------- 20|compute 20-30|Finalize 30-31|
///  rank 1 |Init 0 ------------ 18|Barrier 18-20|compute 20-30|Finalize 30-31|
///                                 ^ Wait at Barrier 18 - 5 = 13, during rank 0's setup
/// ```
#[test]
fn waits_of_the_first_call_after_init_are_setup_skew() {
    let pcontrol = pcontrol(5, 5, 0, "");
    let t = run(vec![
        vec![
            init(0, 5),
            pcontrol,
            barrier(5, 20),
            compute(20, 30, "c"),
            finalize(30, 31),
        ],
        vec![
            init(0, 18),
            barrier(18, 20),
            compute(20, 30, "c"),
            finalize(30, 31),
        ],
    ]);
    let r = report(&t);
    let ph = &r.profile.phases;
    assert_eq!(ph.ranks[0].setup_end_ns, Some(20));
    assert_eq!(ph.ranks[0].setup_wait_state_ns, 13);
    assert_eq!(ph.setup_wait_state_ns, 13);
    assert_eq!(r.wait_states.total_ns, 13, "still among the wait states");
    let summary = overlap_analyzer::report::render_summary(&r, Default::default());
    assert!(summary.contains("13 ns of them during setup"), "{summary}");
    let full = overlap_analyzer::report::render(&r, Default::default());
    assert!(full.contains("(during setup)"), "{full}");
}
