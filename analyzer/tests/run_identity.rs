//! Rank files that are not one run, ranks and peers outside the world, and clocks that
//! cannot be true: refused with the files named, or flagged and handled, never merged
//! into "5 of 4 ranks" or a 9.2e9 s run without a word.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use crate::common::*;
use overlap_analyzer::import::read_rank_file;
use overlap_analyzer::load::load_dir;
use overlap_analyzer::merge::{merge, merge_dir, warnings};
use overlap_analyzer::model::RankTrace;
use overlap_analyzer::Error;
use overlap_instrument::clock::{ClockSource, Stamp};
use overlap_instrument::recorder::{RankFileSink, Recorder, RecorderConfig};
use overlap_instrument::schema::{ClockProblem, Event, Nanos, SyncPhase, FORMAT_VERSION};

/// Two ranks, each a barrier and a compute span, on one clock.
fn pair(size: u32) -> Vec<RankTrace> {
    (0..2)
        .map(|r| {
            rank_trace(
                header(r, size, 1_000_000, "boot-1"),
                vec![sync(SyncPhase::Init, 0, 0, 0)],
                vec![barrier(0, 100), compute(100, 900, "work")],
            )
        })
        .collect()
}

/// `merge_dir` and `load_dir` on `dir` both refuse it; returns the message.
fn refused(dir: &Path) -> String {
    let merged = merge_dir(dir).expect_err("merge refuses");
    assert!(matches!(merged, Error::NotOneRun { .. }), "{merged:?}");
    let loaded = load_dir(dir, &mut |_, _| {}).expect_err("load refuses");
    assert_eq!(loaded.to_string(), merged.to_string());
    merged.to_string()
}

#[test]
fn files_of_two_runs_are_refused_naming_the_files_and_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    for mut t in (0..4).map(|r| {
        rank_trace(
            header(r, 4, 1_000_000, "boot-1"),
            vec![sync(SyncPhase::Init, 0, 0, 0)],
            vec![barrier(0, 100)],
        )
    }) {
        let old = t.rank() == 3;
        t.header.run_id = if old {
            "8f00000000000001"
        } else {
            "1c00000000000002"
        }
        .into();
        t.header.program = if old { "./a" } else { "./b" }.into();
        write_rank_file(dir.path(), &t, true);
    }
    let m = refused(dir.path());
    assert!(
        m.contains(
            "not from one run (they differ in run id, program): rank-3.json from run \
             8f00000000000001, program \"./a\", world of 4 rank(s); rank-0.json, rank-1.json, \
             rank-2.json from run 1c00000000000002, program \"./b\", world of 4 rank(s)"
        ),
        "{m}"
    );
    assert!(
        m.contains("a reused trace directory? remove the old files"),
        "{m}"
    );
}

#[test]
fn the_same_program_and_size_with_another_run_id_is_another_run() {
    let dir = tempfile::tempdir().unwrap();
    for (i, mut t) in pair(2).into_iter().enumerate() {
        t.header.run_id = format!("000000000000000{i}");
        write_rank_file(dir.path(), &t, true);
    }
    let m = refused(dir.path());
    assert!(m.contains("(they differ in run id)"), "{m}");
    assert!(m.contains("rank-0.json from run 0000000000000000"), "{m}");
}

#[test]
fn older_files_without_run_id_are_told_apart_by_program_or_world_size() {
    // Same program and size, no run ids: one run as far as can be told.
    let dir = tempfile::tempdir().unwrap();
    for t in pair(2) {
        write_rank_file(dir.path(), &t, true);
    }
    assert_eq!(merge_dir(dir.path()).unwrap().merged.timelines.len(), 2);
    // Another program.
    let dir = tempfile::tempdir().unwrap();
    for mut t in pair(2) {
        if t.rank() == 1 {
            t.header.program = "other".into();
        }
        write_rank_file(dir.path(), &t, true);
    }
    let m = refused(dir.path());
    assert!(m.contains("(they differ in program)"), "{m}");
    assert!(
        m.contains("no run id (written before format version 5)"),
        "{m}"
    );
    // Another world size.
    let dir = tempfile::tempdir().unwrap();
    for mut t in pair(2) {
        if t.rank() == 1 {
            t.header.size = 3;
        }
        write_rank_file(dir.path(), &t, true);
    }
    let m = refused(dir.path());
    assert!(m.contains("(they differ in world size)"), "{m}");
    assert!(m.contains("rank-1.json from no run id (written before format version 5), program \"hand-built\", world of 3 rank(s)"), "{m}");
}

#[test]
fn a_rank_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for t in pair(3) {
        write_rank_file(dir.path(), &t, true);
    }
    // rank-2.json holds another copy of rank 1.
    std::fs::copy(
        dir.path().join("rank-1.json"),
        dir.path().join("rank-2.json"),
    )
    .unwrap();
    let m = refused(dir.path());
    assert!(
        m.contains("rank 1 comes from 2 files (rank-1.json, rank-2.json)"),
        "{m}"
    );
}

#[test]
fn five_ranks_of_a_world_of_four_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for r in 0..5 {
        let t = rank_trace(
            header(r, 4, 1_000_000, "boot-1"),
            vec![sync(SyncPhase::Init, 0, 0, 0)],
            vec![barrier(0, 100)],
        );
        write_rank_file(dir.path(), &t, true);
    }
    let m = refused(dir.path());
    assert!(
        m.contains("rank-4.json say(s) rank 4 of a world of 4 rank(s) (ranks are 0 to 3)"),
        "{m}"
    );
}

/// Rank 0 sends to and receives from rank 7 in a world of 2; rank 1 exchanges with
/// rank 0 as it should. One clock, times are the run's.
///
/// ```text
/// ns        0     200  300  400       900
/// rank 0   |Send(to 7)|    |Recv(from 7)|         both out of the world
/// rank 1   |Send(to 0)|    |Recv(from 0)|         no partner: 1 send, 1 receive unmatched
/// ```
#[test]
fn peers_outside_the_world_are_reported_and_not_matched() {
    let ranks: Vec<RankTrace> = (0..2)
        .map(|r| {
            let peer = if r == 0 { 7 } else { 0 };
            rank_trace(
                header(r, 2, 0, "boot-1"),
                vec![sync(SyncPhase::Init, 0, 0, 0)],
                vec![send(200, 300, peer, 1, 8), recv(400, 900, peer, 1, 8)],
            )
        })
        .collect();
    let m = merge(ranks);
    let bad = &m.info.peers_out_of_range;
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(
        (bad[0].rank, bad[0].calls, bad[0].first_call.as_str()),
        (0, 2, "MPI_Send")
    );
    assert_eq!((bad[0].first_ns, bad[0].first_peer), (200, 7));
    assert_eq!(bad[0].file, "rank-0.json");
    // Rank 7's calls are not counted as unmatched: only rank 1's lonely pair is.
    assert_eq!(m.info.messages, 0);
    assert_eq!((m.info.unmatched_sends, m.info.unmatched_receives), (1, 1));
    let w = warnings(&m.info);
    assert_eq!(
        w,
        vec![
            "rank 0: 2 call(s) in rank-0.json name a peer outside the world of 2 rank(s), the \
             first MPI_Send at 200 ns into the run, naming rank 7: not matched as messages"
                .to_string()
        ]
    );
}

/// Rank 1 reads rank 0's clock (same domain) but its header's epoch is 9.2e18 ns, as
/// if it had started 292 years later. Rank 0 started recording at E = 1_000_000 and
/// finished its init synchronisation at local 500; rank 1's ping-pong with it was at
/// its local 300, so it happened in [E, E + 500] on rank 0's clock: rank 1 is placed
/// at the middle, local 300 = E + 250, error bound 250.
///
/// ```text
/// rank 0 clock  E ......... E+250 ......... E+500
///               |--- rank 0's init sync window ---|
/// rank 1 local  -50         300 (its sync)
/// run start = rank 1's local 0 = E - 50; rank 0's local t is run time t + 50,
/// rank 1's local t is run time t.
/// ```
#[test]
fn an_epoch_that_cannot_be_true_is_flagged_and_aligned_by_the_init_sync() {
    let r0 = rank_trace(
        header(0, 2, 1_000_000, "boot-1"),
        vec![sync(SyncPhase::Init, 500, 0, 0)],
        vec![barrier(600, 700)],
    );
    let r1 = rank_trace(
        header(1, 2, 9_200_000_000_000_000_000, "boot-1"),
        vec![sync(SyncPhase::Init, 300, 0, 0)],
        vec![barrier(400, 700)],
    );
    let m = merge(vec![r0, r1]);
    let flagged = &m.info.clock_implausible;
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert_eq!(
        (flagged[0].rank, flagged[0].problem),
        (1, ClockProblem::Anchor)
    );
    assert!(
        flagged[0]
            .reason
            .contains("its epoch puts its init clock synchronisation"),
        "{}",
        flagged[0].reason
    );
    assert_eq!(m.timelines[0].spans[0].start, Nanos(650));
    assert_eq!(m.timelines[1].spans[0].start, Nanos(400));
    assert_eq!(m.timelines[1].spans[0].end, Nanos(700));
    let rc = &m.info.ranks[1];
    assert_eq!(rc.init_error_ns, 250);
    assert_eq!(m.info.max_clock_error_ns, 250);
    let trace = m.to_trace(Path::new("x"));
    assert_eq!(trace.clock_error(1), Nanos(250));
    // The run lasts from rank 1's Barrier (400) to rank 0's (750), not 9.2e9 s.
    let (report, _) = overlap_analyzer::analysis::analyze(&trace, &Default::default());
    assert_eq!(report.totals.wall_ns, 350);
    assert_eq!(report.run.clock_implausible, m.info.clock_implausible);
}

/// Rank 1 is on another host; its measured offset is -9e18 ns (centuries): aligned
/// with it, its sync would land 9e9 s after rank 0's. Same window as above: it is
/// placed at E + 250.
#[test]
fn an_absurd_offset_is_flagged_and_not_computed_with() {
    let r0 = rank_trace(
        header(0, 2, 1_000_000, "boot-1"),
        vec![sync(SyncPhase::Init, 500, 0, 0)],
        vec![barrier(600, 700)],
    );
    let r1 = rank_trace(
        header(1, 2, 5_000_000, "boot-2"),
        vec![sync(SyncPhase::Init, 300, -9_000_000_000_000_000_000, 10)],
        vec![barrier(400, 700)],
    );
    let m = merge(vec![r0, r1]);
    let flagged = &m.info.clock_implausible;
    assert_eq!(
        (flagged[0].rank, flagged[0].problem),
        (1, ClockProblem::Anchor)
    );
    assert!(
        flagged[0]
            .reason
            .contains("measured offset of -9000000000.000 s"),
        "{}",
        flagged[0].reason
    );
    assert_eq!(m.timelines[1].spans[0].start, Nanos(400));
    assert_eq!(m.timelines[0].spans[0].start, Nanos(650));
    // The offset used: rank 1's local 300 (absolute 5_000_300) is rank 0's E + 250.
    assert_eq!(m.info.ranks[1].init_offset_ns, 5_000_300 - 1_000_250);
    assert_eq!(m.info.ranks[1].final_offset_ns, None);
}

#[test]
fn an_absurd_error_bound_or_drift_is_flagged() {
    // Error bound of 5 s: aligned by the init sync instead (window [E, E + 500]).
    let r0 = rank_trace(
        header(0, 2, 1_000_000, "boot-1"),
        vec![sync(SyncPhase::Init, 500, 0, 0)],
        vec![barrier(600, 700)],
    );
    let r1 = rank_trace(
        header(1, 2, 1_000_000, "boot-2"),
        vec![sync(SyncPhase::Init, 300, 0, 5_000_000_000)],
        vec![barrier(400, 700)],
    );
    let m = merge(vec![r0.clone(), r1]);
    assert_eq!(
        m.info.clock_implausible[0].problem,
        ClockProblem::ErrorBound
    );
    assert_eq!(m.info.ranks[1].init_error_ns, 250);
    // A drift of 1.5e6 ppm (the offset grows 1500 ns in 1000): the final offset is
    // dropped, the init one (0) kept; nothing else is wrong, so times stay as they are.
    let r1 = rank_trace(
        header(1, 2, 1_000_000, "boot-2"),
        vec![
            sync(SyncPhase::Init, 300, 0, 10),
            sync(SyncPhase::Final, 1300, 1500, 10),
        ],
        vec![barrier(400, 700)],
    );
    let m = merge(vec![r0, r1]);
    let flagged = &m.info.clock_implausible;
    assert_eq!(
        (flagged[0].rank, flagged[0].problem),
        (1, ClockProblem::Drift)
    );
    assert!(
        flagged[0].reason.contains("drifts 1500000 ppm"),
        "{}",
        flagged[0].reason
    );
    assert_eq!(m.info.ranks[1].final_offset_ns, None);
    assert_eq!(m.info.ranks[1].drift_ppb, None);
    assert_eq!(m.timelines[1].spans[0].start, Nanos(400));
}

#[test]
fn plausible_clocks_are_not_flagged() {
    // Rank 1's sync at its local 300 with offset -1000 lands at E + 300 + ... inside
    // rank 0's window [E, E + 500]: its epoch is E - 1000 + 1000 = E on rank 0's clock.
    let r0 = rank_trace(
        header(0, 2, 1_000_000, "boot-1"),
        vec![sync(SyncPhase::Init, 500, 0, 0)],
        vec![barrier(600, 700)],
    );
    let r1 = rank_trace(
        header(1, 2, 999_000, "boot-2"),
        vec![sync(SyncPhase::Init, 300, -1000, 20)],
        vec![barrier(400, 700)],
    );
    let m = merge(vec![r0, r1]);
    assert!(
        m.info.clock_implausible.is_empty(),
        "{:?}",
        m.info.clock_implausible
    );
    assert_eq!(m.timelines[1].spans[0].start, Nanos(400));
    assert_eq!(m.info.ranks[1].init_offset_ns, -1000);
}

#[test]
fn without_rank_0_the_lowest_rank_stands_in_and_a_sound_run_is_not_flagged() {
    // Ranks 1 and 2 on two hosts, rank 0's file lost. Rank 1 synchronised at its local
    // 2 ms, rank 2 at its local 1.5 s (rank 0 did it last, after a slow start): 1.5 s
    // after rank 1's on rank 0's clock, beyond the 1 s slack but not beyond the longest
    // start-to-sync time (1.5 s).
    let r1 = rank_trace(
        header(1, 3, 10_000_000_000, "boot-1"),
        vec![sync(SyncPhase::Init, 2_000_000, 500, 20)],
        vec![barrier(3_000_000, 4_000_000)],
    );
    let r2 = rank_trace(
        header(2, 3, 20_000_000_000, "boot-2"),
        vec![sync(SyncPhase::Init, 1_500_000_000, 9_998_000_500, 20)],
        vec![barrier(1_600_000_000, 1_700_000_000)],
    );
    let m = merge(vec![r1.clone(), r2.clone()]);
    assert!(
        m.info.clock_implausible.is_empty(),
        "{:?}",
        m.info.clock_implausible
    );
    assert_eq!(m.info.missing_ranks, vec![0]);
    // 3 s later instead is beyond even that (1 s + 1.5 s): flagged against rank 1's.
    let mut late = r2;
    late.syncs[0].offset_ns -= 1_500_000_000;
    let m = merge(vec![r1, late]);
    let flagged = &m.info.clock_implausible;
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert!(
        flagged[0].reason.contains("3.000 s away from rank 1's"),
        "{}",
        flagged[0].reason
    );
}

/// A binary rank file keeps the run id and start time it was written with.
#[test]
fn the_stream_header_carries_the_run_identity() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank-0.ovlp");
    let mut h = header(0, 1, 5_000, "boot-1");
    h.format_version = FORMAT_VERSION;
    h.run_id = "0123456789abcdef".into();
    h.start_unix_ns = 1_700_000_000_000_000_000;
    let mut config = RecorderConfig::default();
    config.flush_interval = Duration::from_millis(2);
    config.clock = ClockSource::Monotonic;
    let rec =
        Recorder::with_epoch(RankFileSink::create(&path, &h).unwrap(), config, 5_000).unwrap();
    rec.record_compute(
        "work",
        Stamp::from_nanos(Nanos(10)),
        Stamp::from_nanos(Nanos(20)),
    );
    rec.finish().unwrap();
    let back = read_rank_file(&path).unwrap();
    assert_eq!(back.header.run_id, "0123456789abcdef");
    assert_eq!(back.header.start_unix_ns, 1_700_000_000_000_000_000);
    assert!(matches!(back.events[0], Event::Compute(_)));
    let m = merge_dir(dir.path()).unwrap().merged;
    assert_eq!(m.info.run_id, "0123456789abcdef");
    // The timeline starts at rank 0's epoch: the run's start is its start time.
    assert_eq!(m.info.start_unix_ns, 1_700_000_000_000_000_000);
}
