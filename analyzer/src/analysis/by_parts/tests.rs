//! The analysis read a part at a time against the one of the run loaded whole.

use super::{analyze_in_parts, DirAnalysis, PartSize};
use crate::analysis::analyze_owned;
use crate::exchange::{Alone, Exchange, Threads};
use crate::metrics::options::Options;
use crate::model::RankWork;
use crate::regions::RunRegions;

/// Every kept run, read a rank a part, about two ranks a part, and in one part, reports
/// what it reports loaded whole, figure for figure (the replays' too), with the same
/// regions, notes and unusable files, and the same work and ranks cut short for a gate.
#[test]
fn the_parts_report_what_the_whole_run_reports() {
    let opts = Options::default();
    let mut cut = 0;
    for dir in crate::load::kept_run_dirs() {
        let loaded = crate::load::load_dir(&dir, &mut |_, _| {}).expect("a kept run");
        let trace = loaded.trace;
        let events: u64 = trace.ranks.iter().map(|t| t.event_count() as u64).sum();
        let ranks = trace.ranks.len() as u64;
        let regions = RunRegions::of_trace(&trace).summary();
        let info = trace.info.clone();
        let work: Vec<RankWork> = trace.ranks.iter().map(RankWork::of).collect();
        let ends_early: Vec<u32> = (trace.ranks.iter())
            .filter(|t| !t.complete)
            .map(|t| t.rank)
            .collect();
        let whole = analyze_owned(trace, &opts);
        for at_least in [
            Some(PartSize::of_events(1)),
            Some(PartSize::of_events(2 * events / ranks.max(1))),
            Some(PartSize::of_events(u64::MAX)),
            None,
        ] {
            let name = format!("{}, parts of {at_least:?} events", dir.display());
            let parts = alone(&dir, &opts, at_least);
            assert!(parts.report == whole, "{name}: report");
            assert!(parts.regions.summary() == regions, "{name}: regions");
            assert!(parts.info == info, "{name}: info");
            assert_eq!(parts.notes, loaded.notes, "{name}: notes");
            assert_eq!(parts.unreadable, loaded.unreadable, "{name}: unreadable");
            assert_eq!(parts.work, work, "{name}: work");
            assert_eq!(parts.ends_early, ends_early, "{name}: ends early");
            cut += usize::from(ranks > 1 && at_least.is_some_and(|a| a.events == 1));
        }
    }
    // Most kept runs have several ranks, each then a part of its own.
    assert!(cut >= 8, "runs cut into parts: {cut}");
}

/// The analysis of one process, in parts of `at_least`.
fn alone(dir: &std::path::Path, opts: &Options, at_least: Option<PartSize>) -> DirAnalysis {
    let run = analyze_in_parts(dir, opts, at_least, &Alone, &|_, _| {}, None);
    run.expect("its passes").expect("one process is worker 0")
}

/// Every kept run analysed by 2, 3 and 7 workers (on threads), each folding its block
/// in parts as the run's size gives or a rank a part, reports at worker 0 what one
/// process reports, figure for figure, with the same regions, notes, unusable files,
/// work and ranks cut short; the other workers report nothing.
#[test]
fn the_workers_report_what_one_process_reports() {
    let opts = Options::default();
    for dir in crate::load::kept_run_dirs() {
        let one = alone(&dir, &opts, None);
        let runs = [2, 3, 7]
            .into_iter()
            .flat_map(|w| [(w, None), (w, Some(1))]);
        for (workers, events) in runs {
            let name = format!(
                "{} on {workers} workers, parts of {events:?}",
                dir.display()
            );
            let at_least = events.map(PartSize::of_events);
            let got = Threads::run(workers, |ex: &dyn Exchange| {
                analyze_in_parts(&dir, &opts, at_least, ex, &|_, _| {}, None).expect("analysed")
            });
            let mut got = got.into_iter();
            let first = got.next().flatten().expect("worker 0 reports");
            assert!(got.all(|r| r.is_none()), "{name}: only worker 0 reports");
            assert!(first.report == one.report, "{name}: report");
            let regions = first.regions.summary() == one.regions.summary();
            assert!(regions, "{name}: regions");
            assert!(first.info == one.info, "{name}: info");
            assert_eq!(first.notes, one.notes, "{name}: notes");
            assert_eq!(first.unreadable, one.unreadable, "{name}: unreadable");
            assert_eq!(first.work, one.work, "{name}: work");
            assert_eq!(first.ends_early, one.ends_early, "{name}: ends early");
        }
    }
}

/// The analysis tells how far its readings have come: every file read through once and
/// each usable one three times more, so that the bytes read end at the total, four
/// times the files' bytes, or less by three readings of a file that cannot be used; at
/// worker 0 of a job, what it reads itself.
#[test]
fn the_readings_told_end_at_their_total() {
    let dir = crate::load::kept_run_copy("c-ring");
    let size = |name: &str| std::fs::metadata(dir.path().join(name)).map_or(0, |m| m.len());
    let files: u64 = (0..3).map(|r| size(&format!("rank-{r}.ovlp"))).sum();
    let told = std::sync::Mutex::new(Vec::new());
    let tell = |done: u64, total: u64| told.lock().expect("not poisoned").push((done, total));
    let last = |told: &std::sync::Mutex<Vec<(u64, u64)>>| {
        let told = told.lock().expect("not poisoned");
        (told.iter().map(|t| t.0).max(), told.last().map(|t| t.1))
    };
    let analysed = analyze_in_parts(dir.path(), &Options::default(), None, &Alone, &tell, None);
    analysed.expect("analysed");
    assert_eq!(last(&told), (Some(4 * files), Some(4 * files)));
    // Rank 2's file replaced by one that is no rank file: read through once only.
    std::fs::write(dir.path().join("rank-2.ovlp"), b"no rank file").expect("written");
    let usable = size("rank-0.ovlp") + size("rank-1.ovlp");
    told.lock().expect("not poisoned").clear();
    let analysed = analyze_in_parts(dir.path(), &Options::default(), None, &Alone, &tell, None);
    analysed.expect("analysed");
    let listed = usable + size("rank-2.ovlp");
    let total = listed + 3 * usable;
    assert_eq!(last(&told), (Some(total), Some(total)));
    // Worker 0 of a job of two reads only its block of c-ring's three files in the
    // first pass and for the figures, and every file for the program: its readings end
    // at its own total too, not short of the run's.
    let dir = crate::load::kept_run_copy("c-ring");
    told.lock().expect("not poisoned").clear();
    Threads::run(2, |ex: &dyn Exchange| {
        let tell: &(dyn Fn(u64, u64) + Sync) = match ex.worker() {
            0 => &tell,
            _ => &|_, _| {},
        };
        analyze_in_parts(dir.path(), &Options::default(), None, ex, tell, None).expect("analysed")
    });
    let (done, total) = last(&told);
    assert_eq!(done, total, "worker 0's readings end at their total");
    assert!(
        total < Some(4 * files),
        "worker 0 reads less than the run four times"
    );
}

/// Parts are cut after whole ranks: once they hold enough events and, while they hold
/// fewer than their most, enough ranks; the last takes what is left.
///
/// ```text
///  ranks (events)   10 | 10 | 10 | 10 | 10
///  15 events        [0  1] [2  3] [4]
///  1 event, 3 ranks [0  1  2] [3  4]
///  1 event, 5 ranks, at most 25 events: [0  1  2] [3  4]
///  a rank of PART_EVENTS, 2 ranks: [big] [10 10] [big]
/// ```
#[test]
fn parts_hold_enough_events_and_enough_ranks_unless_large() {
    use super::parts::{cuts_of, PART_EVENTS};
    let five = [10; 5];
    let size = |events, ranks| PartSize {
        events,
        ranks,
        most: PART_EVENTS,
    };
    assert_eq!(cuts_of(&five, size(15, 1)), vec![0..2, 2..4, 4..5]);
    assert_eq!(
        cuts_of(&five, size(1, 1)),
        (0..5).map(|i| i..i + 1).collect::<Vec<_>>()
    );
    assert_eq!(cuts_of(&five, size(1, 3)), vec![0..3, 3..5]);
    assert_eq!(cuts_of(&five, size(u64::MAX, 1)), vec![0..5]);
    assert!(cuts_of(&[], size(1, 1)).is_empty());
    let at_most_25 = PartSize {
        most: 25,
        ..size(1, 5)
    };
    assert_eq!(cuts_of(&five, at_most_25), vec![0..3, 3..5]);
    let big = [PART_EVENTS, 10, 10, PART_EVENTS];
    assert_eq!(cuts_of(&big, size(1, 2)), vec![0..1, 1..3, 3..4]);
}

/// A run's parts take ranks for every thread up to an eighth of the run, and never
/// less than `PART_EVENTS`: 16 ranks of 6.25 M events are read two a part on two
/// threads; 4 ranks of 25 M, a rank a part.
#[test]
fn a_runs_parts_give_each_thread_a_rank_up_to_an_eighth_of_the_run() {
    use super::parts::{cuts_of, PART_EVENTS};
    let sixteen = [6_250_000; 16];
    let size = PartSize {
        ranks: 2,
        ..PartSize::of_run(sixteen.iter().sum())
    };
    assert_eq!(size.most, 12_500_000);
    assert_eq!(size.events, PART_EVENTS);
    let pairs: Vec<_> = (0..8).map(|i| 2 * i..2 * i + 2).collect();
    assert_eq!(cuts_of(&sixteen, size), pairs);
    let four = [25_000_000; 4];
    let size = PartSize {
        ranks: 2,
        ..PartSize::of_run(four.iter().sum())
    };
    let ones: Vec<_> = (0..4).map(|i| i..i + 1).collect();
    assert_eq!(cuts_of(&four, size), ones);
    assert_eq!(PartSize::of_run(1_000).most, PART_EVENTS);
}

/// A rank file spoilt after the first pass, which the worker whose block holds it then
/// cannot read again for its figures, fails the job at worker 0 with the error one
/// process gives for that file, and at that worker; no worker waits for the figures
/// that never come.
#[test]
fn a_file_a_worker_cannot_read_again_fails_the_job_with_its_error() {
    use crate::exchange::share;
    use std::sync::atomic::{AtomicBool, Ordering};
    let opts = Options::default();
    let run = |workers: usize| {
        let dir = crate::load::kept_run_copy("c-ring");
        let sizes: Vec<u64> = (0..3)
            .map(|r| std::fs::metadata(dir.path().join(format!("rank-{r}.ovlp"))))
            .map(|m| m.expect("a rank file").len())
            .collect();
        // Rank 2's file is the last worker's; spoilt once that worker has read its block
        // through and digested it (two readings of each of its files).
        let last = workers - 1;
        let block: u64 = sizes[share(&sizes, workers)[last].clone()].iter().sum();
        assert!(share(&sizes, workers)[last].contains(&2));
        let spoilt = AtomicBool::new(false);
        let spoil = || {
            if !spoilt.swap(true, Ordering::SeqCst) {
                let path = dir.path().join("rank-2.ovlp");
                std::fs::write(path, b"no rank file").expect("written");
            }
        };
        Threads::run(workers, |ex: &dyn Exchange| {
            let tell = |done: u64, _: u64| {
                if ex.worker() == last && done >= 2 * block {
                    spoil();
                }
            };
            let got = analyze_in_parts(dir.path(), &opts, None, ex, &tell, None);
            // Each run has a directory of its own: the errors are compared without it.
            let here = dir.path().display().to_string();
            got.map(|r| r.is_some())
                .map_err(|e| e.to_string().replace(&here, "DIR"))
        })
    };
    let one = run(1).remove(0).expect_err("one process fails");
    assert!(one.contains("rank-2.ovlp"), "{one}");
    for workers in [2, 3] {
        let got = run(workers);
        assert_eq!(got[0], Err(one.clone()), "worker 0 of {workers}");
        assert_eq!(got[workers - 1], Err(one.clone()), "the last of {workers}");
    }
}

/// The blocks of the workers' shares of the files tile the run's ranks, ranks without a
/// file included, and a block without a file answers for none:
///
/// ```text
///  ranks with a file   0   1   .   3   4          (rank 2 has none)
///  shares              [0   1] [] [    3   4]
///  answers for         0 1     -   2 3 4 5 ...
///  shares              [] [0   1   .   3   4]
///  answers for         -   0 1 2 3 4 5 ...
/// ```
#[test]
fn blocks_tile_the_ranks_and_an_empty_block_holds_none() {
    use super::view::Block;
    let ranks = [0, 1, 3, 4];
    let blocks = Block::of_shares(&[0..2, 2..2, 2..4], &ranks);
    let holding = |b: &Block| (0..8).filter(|&r| b.holds(r)).collect::<Vec<u32>>();
    assert_eq!(holding(&blocks[0]), vec![0, 1]);
    assert_eq!(holding(&blocks[1]), Vec::<u32>::new());
    assert_eq!(holding(&blocks[2]), vec![2, 3, 4, 5, 6, 7]);
    let blocks = Block::of_shares(&[0..0, 0..4], &ranks);
    assert_eq!(holding(&blocks[0]), Vec::<u32>::new());
    assert_eq!(holding(&blocks[1]), (0..8).collect::<Vec<u32>>());
    assert_eq!(holding(&Block::whole(4)), (0..8).collect::<Vec<u32>>());
}
