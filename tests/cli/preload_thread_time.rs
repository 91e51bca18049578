//! `overlap trace` on a rank whose four threads wait at the same time under
//! `MPI_THREAD_MULTIPLE` (tests/programs/threads_wait.c): its time is counted once, not
//! once per thread. The wait states' share of all rank time stays within 100 % and no
//! rank's wait states exceed its waiting time; the merge summary's compute share is
//! `analyze`'s useful share (compute is inferred from the gaps between calls, and
//! counted only while no thread is in MPI); `overlap baseline` gates the wait share.
//! Summed per thread, the waits read 178.8 % of all rank time and the summary said
//! compute 100 % where `analyze` said useful 0.6 %.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use crate::trace::{program, trace};
use crate::util::overlap;

/// The first share (a word ending in `%`) of each row of a per-rank table, by rank: the
/// merge summary's compute, `analyze`'s useful.
fn first_share_by_rank(table: &str, ranks: u32) -> BTreeMap<u32, String> {
    table
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let rank: u32 = words.next()?.parse().ok()?;
            let share = words.find(|w| w.ends_with('%'))?;
            (rank < ranks).then(|| (rank, share.to_string()))
        })
        .collect()
}

/// The share in "Wait states: 614.63 ms (178.8% of all rank time)", in percent.
fn wait_share_pct(report: &str) -> f64 {
    let line = report
        .lines()
        .find(|l| l.starts_with("Wait states:"))
        .unwrap_or_else(|| panic!("no wait states line in\n{report}"));
    let inside = line.split('(').nth(1).unwrap();
    inside.split('%').next().unwrap().trim().parse().unwrap()
}

#[test]
fn four_threads_waiting_at_once_count_the_rank_time_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("threads_wait.json");
    let run = trace(2, &program("threads_wait"), &out);
    assert!(run.success(), "{}", run.describe());
    let path = out.to_str().unwrap();

    let text = overlap(&["analyze", path, "--full"]);
    assert!(text.success(), "{}", text.describe());
    let share = wait_share_pct(&text.stdout());
    assert!(
        share <= 100.0,
        "wait states {share}% of all rank time\n{}",
        text.stdout()
    );

    let json = overlap(&["analyze", "--json", path]);
    assert!(json.success(), "{}", json.describe());
    let r: serde_json::Value = serde_json::from_str(&json.stdout()).unwrap();
    for rank in r["ranks"].as_array().unwrap() {
        let figure = |key: &str| rank[key].as_u64().unwrap();
        let id = figure("rank");
        let waits = r["wait_states"]["per_rank_ns"][id.to_string()]
            .as_u64()
            .unwrap();
        assert!(
            waits <= figure("waiting_ns") && figure("waiting_ns") <= figure("in_mpi_ns"),
            "rank {id}: wait states {waits} ns, waiting {} ns, in MPI {} ns",
            figure("waiting_ns"),
            figure("in_mpi_ns")
        );
        assert!(figure("in_mpi_ns") <= figure("wall_ns"), "rank {id}");
        // Every gap of the main thread (from MPI_Init_thread to MPI_Barrier) is compute:
        // the rank computes whenever none of its threads is in MPI.
        assert_eq!(
            figure("compute_ns"),
            figure("useful_ns"),
            "rank {id}: compute is the time outside MPI"
        );
    }
    assert!(r["wait_states"]["fraction"].as_f64().unwrap() <= 1.0);

    // The merge summary (on `trace`'s stderr) agrees with `analyze`'s table.
    let compute = first_share_by_rank(&run.stderr(), 2);
    let useful = first_share_by_rank(
        text.stdout()
            .split("Time per rank")
            .nth(1)
            .unwrap()
            .split("Wait states")
            .next()
            .unwrap(),
        2,
    );
    assert_eq!(compute.len(), 2, "{}", run.describe());
    assert_eq!(compute, useful, "merge summary's compute, analyze's useful");

    let baseline = dir.path().join("baseline.json");
    let made = overlap(&["baseline", "--out", baseline.to_str().unwrap(), path]);
    assert!(made.success(), "{}", made.describe());
    assert!(
        !made.stdout().contains("wait_states.fraction"),
        "the wait share is gated like any other\n{}",
        made.describe()
    );
}
