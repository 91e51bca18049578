//! `overlap run false-overlap` under real `mpiexec`: the merged trace holds what the
//! kernel issued, every message has its arrow, and the variants place the send Waitall
//! where they say.

use std::collections::BTreeMap;

use overlap_analyzer::import::read_merged;
use overlap_analyzer::model::MergedTrace;
use overlap_instrument::schema::{Event, Op};

use crate::traces::{calls, count};
use crate::util::run_false_overlap;

const ITERS: u32 = 5;

fn run_and_read(ranks: u32, variant: &str) -> MergedTrace {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join(format!("fo-{variant}-{ranks}.json"));
    let run = run_false_overlap(ranks, variant, ITERS, &out, &[]);
    assert!(run.success(), "{}", run.describe());
    run.assert_stdout_has("payloads verified");
    assert!(
        run.stdout().contains("waiting"),
        "summary table printed: {}",
        run.describe()
    );
    read_merged(&out).expect("merged trace reads back")
}

/// Counts per rank, as the kernel issues them: per iteration two halves, each with one
/// Irecv, one Isend and two Waitalls (receives, sends) when the rank has a partner, and
/// one Barrier per iteration. In `fixed` the send Waitall moves but keeps its count.
fn check_counts(trace: &MergedTrace, ranks: u32) {
    let it = ITERS as usize;
    assert_eq!(trace.info.world_size, ranks);
    assert_eq!(trace.process_names.len(), ranks as usize);
    assert_eq!(trace.events.len(), ranks as usize);
    for rank in 0..ranks {
        assert_eq!(
            trace.process_names[&rank],
            format!("rank {rank} ({})", trace.info.ranks[rank as usize].host)
        );
        let partnered = rank % 2 == 1 || rank + 1 < ranks;
        let per_half = usize::from(partnered);
        assert_eq!(
            count(trace, rank, Op::Isend),
            2 * it * per_half,
            "rank {rank} Isend"
        );
        assert_eq!(
            count(trace, rank, Op::Irecv),
            2 * it * per_half,
            "rank {rank} Irecv"
        );
        assert_eq!(
            count(trace, rank, Op::Waitall),
            4 * it * per_half,
            "rank {rank} Waitall"
        );
        assert_eq!(count(trace, rank, Op::Barrier), it, "rank {rank} Barrier");
        let computes = trace.events[&rank]
            .iter()
            .filter(|e| matches!(e, Event::Compute(c) if c.name == "compute"))
            .count();
        assert_eq!(computes, 2 * it, "rank {rank} compute spans");
    }
}

/// Every send has a flow to the call that completed its receive, on the partner rank.
fn check_flows(trace: &MergedTrace, ranks: u32) {
    let sends: usize = (0..ranks).map(|r| count(trace, r, Op::Isend)).sum();
    assert_eq!(trace.info.messages as usize, sends);
    assert_eq!(trace.info.unmatched_sends, 0);
    assert_eq!(trace.info.unmatched_receives, 0);
    assert!(trace.info.clock_suspect.is_empty());
    assert_eq!(trace.flows.len(), sends);
    for f in &trace.flows {
        let to = f.to.expect("every flow has an end");
        let partner = if f.from.rank % 2 == 0 {
            f.from.rank + 1
        } else {
            f.from.rank - 1
        };
        assert_eq!(to.rank, partner, "flow {f:?}");
        // The arrow ends inside a Waitall of the receiver that completed a receive.
        let hit = calls(trace, to.rank).into_iter().any(|c| {
            c.op == Op::Waitall
                && c.start.0 <= to.ns
                && to.ns <= c.end.0
                && c.args.completed.iter().any(|d| d.source.is_some())
        });
        assert!(
            hit,
            "flow {f:?} does not end in a receive-completing Waitall"
        );
    }
    // Request lifetimes: one async slice per post, each completed.
    let posts: usize = (0..ranks)
        .map(|r| count(trace, r, Op::Isend) + count(trace, r, Op::Irecv))
        .sum();
    assert_eq!(trace.requests.len(), posts);
    assert!(trace
        .requests
        .iter()
        .all(|r| r.end_ns.is_some_and(|e| e >= r.begin_ns)));
}

/// For each Isend: (start of the Waitall that completed it, end of the first compute span
/// that starts after the Isend).
fn send_wait_vs_compute(trace: &MergedTrace, rank: u32) -> Vec<(u64, u64)> {
    let events = &trace.events[&rank];
    let mut completed_by: BTreeMap<u64, u64> = BTreeMap::new();
    for e in events {
        if let Event::Call(c) = e {
            for d in &c.args.completed {
                if let Some(r) = d.request {
                    completed_by.insert(r, c.start.0);
                }
            }
        }
    }
    events
        .iter()
        .filter_map(|e| match e {
            Event::Call(c) if c.op == Op::Isend => Some(c),
            _ => None,
        })
        .map(|isend| {
            let wait = completed_by[&isend.args.request.expect("Isend has a request")];
            let compute_end = events
                .iter()
                .find_map(|e| match e {
                    Event::Compute(c) if c.name == "compute" && c.start >= isend.end => {
                        Some(c.end.0)
                    }
                    _ => None,
                })
                .expect("a compute span follows every Isend");
            (wait, compute_end)
        })
        .collect()
}

/// In `fixed` every send Waitall comes after the compute span that follows its Isend;
/// in `naive` every one comes before that span ends.
fn check_placement(trace: &MergedTrace, ranks: u32, variant: &str) {
    let deferred = variant == "fixed";
    for rank in 0..ranks {
        for (wait, compute_end) in send_wait_vs_compute(trace, rank) {
            assert_eq!(
                wait >= compute_end,
                deferred,
                "{variant}, rank {rank}: send Waitall at {wait}, compute ends at {compute_end}"
            );
        }
    }
}

/// Runs the kernel and checks everything the merged trace must show.
fn check_run(ranks: u32, variant: &str) {
    let t = run_and_read(ranks, variant);
    check_counts(&t, ranks);
    check_flows(&t, ranks);
    check_placement(&t, ranks, variant);
}

#[test]
fn naive_on_2_ranks() {
    check_run(2, "naive");
}

#[test]
fn fixed_on_2_ranks() {
    check_run(2, "fixed");
}

#[test]
fn naive_on_4_ranks() {
    check_run(4, "naive");
}

#[test]
fn fixed_on_4_ranks() {
    check_run(4, "fixed");
}

#[test]
fn odd_rank_count_leaves_the_last_rank_alone() {
    // Rank 2 has no partner: no sends to place, the counts say it sent nothing.
    check_run(3, "fixed");
}

#[test]
fn a_killed_rank_still_merges_and_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("killed.json");
    // Rank 1 kills itself at iteration 20 of 40; with 10 ms flushes and ~5 ms per
    // iteration its file holds a good prefix by then.
    let run = run_false_overlap(
        2,
        "naive",
        40,
        &out,
        &[
            "--compute",
            "2000",
            "--flush-ms",
            "10",
            "--kill-rank",
            "1",
            "--kill-at-iteration",
            "20",
        ],
    );
    assert!(!run.success(), "{}", run.describe());
    run.assert_stderr_has("the kernel run failed");
    run.assert_stderr_has("rank 1: trace incomplete");
    run.assert_stderr_has("killed by signal 9");
    let t = read_merged(&out).expect("what was recorded is merged");
    assert_eq!(t.events.len(), 2, "both ranks merged");
    assert!(
        t.info.incomplete.iter().any(|i| i.rank == 1),
        "{:?}",
        t.info.incomplete
    );
    let isends = count(&t, 1, Op::Isend);
    assert!(
        isends > 0 && isends < 80,
        "rank 1 kept a prefix: {isends} Isends"
    );
    assert!(!t.flows.is_empty());
}

#[test]
fn a_failing_rank_fails_the_command_with_its_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("bad.json");
    let run = run_false_overlap(2, "naive", 2, &out, &["--size", "1"]);
    assert!(!run.success(), "{}", run.describe());
    run.assert_stderr_has("error: invalid option: size must be at least 2 words");
    run.assert_stderr_has("overlap: the kernel run failed");
    assert!(out.is_file(), "what was recorded is still merged");
}

#[test]
fn a_missing_kernels_binary_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("x.json");
    let run = crate::util::overlap(&[
        "run",
        "false-overlap",
        "--kernels",
        "/nonexistent/overlap-kernels",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(!run.success());
    run.assert_stderr_has("the kernels binary /nonexistent/overlap-kernels does not exist");
}
