//! `overlap run pingpong|sync|halo3d` under real `mpiexec`: the table and the JSON
//! results say how many repetitions each figure took, and the merged trace holds
//! exactly the calls those repetitions imply; the ping-pong writes a network model the
//! analyzer side can read back.

use std::path::Path;

use overlap_analyzer::import::read_merged;
use overlap_analyzer::model::MergedTrace;
use overlap_instrument::network_model::NetworkModel;
use overlap_instrument::schema::Op;
use serde_json::Value;

use crate::traces::{computes, count};
use crate::util::run_kernel;

/// Few, short samples: the tests check counts and files, not the figures.
const QUICK: [&str; 8] = [
    "--min-samples",
    "3",
    "--max-samples",
    "4",
    "--sample-ms",
    "0.05",
    "--point-seconds",
    "0.5",
];

/// How one figure was measured, as its results row says.
struct Taken {
    /// Repetitions run (warm-up and measured).
    reps: usize,
    /// Batches run, each after a barrier and followed by a reduction.
    batches: usize,
}

fn taken(m: &Value) -> Taken {
    let field = |k: &str| m[k].as_u64().unwrap_or_else(|| panic!("no {k} in {m}")) as usize;
    let (warmup, reps, samples) = (field("warmup_reps"), field("reps"), field("samples"));
    assert!((3..=4).contains(&samples), "{m}");
    assert_eq!(reps, samples * field("reps_per_sample"), "{m}");
    // Calibration doubles the batch: 1 + 2 + ... + 2^(b-1) repetitions in b batches.
    assert!((warmup + 1).is_power_of_two(), "{m}");
    Taken {
        reps: warmup + reps,
        batches: (warmup + 1).trailing_zeros() as usize + samples,
    }
}

/// Runs a micro-benchmark with `--json`; returns its stdout, results rows and trace.
fn run_bench(
    kernel: &str,
    ranks: u32,
    dir: &Path,
    extra: &[&str],
) -> (String, Vec<Value>, MergedTrace) {
    let out = dir.join(format!("{kernel}-{ranks}.json"));
    let json = dir.join(format!("{kernel}-{ranks}-results.json"));
    let mut args = vec!["--json", json.to_str().expect("utf-8")];
    args.extend_from_slice(&QUICK);
    args.extend_from_slice(extra);
    let r = run_kernel(kernel, ranks, &out, &args);
    assert!(r.success(), "{}", r.describe());
    let stdout = r.stdout();
    for header in ["reps", "samples", "rse%"] {
        assert!(stdout.contains(header), "table lacks {header}:\n{stdout}");
    }
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("results file written"))
            .expect("results file is JSON");
    assert_eq!(results["format"], "overlap-microbench");
    assert_eq!(results["kernel"], kernel);
    assert_eq!(results["ranks"], ranks);
    let rows = results["results"]["rows"].as_array().expect("rows").clone();
    let trace = read_merged(&out).expect("merged trace reads back");
    assert_eq!(trace.info.unmatched_sends, 0);
    assert_eq!(trace.info.unmatched_receives, 0);
    (stdout, rows, trace)
}

fn check_pingpong(ranks: u32, patterns: &[&str]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let model = dir.path().join("net.json");
    let extra = [
        "--max-bytes",
        "64",
        "--model",
        model.to_str().expect("utf-8"),
    ];
    let (stdout, rows, t) = run_bench("pingpong", ranks, dir.path(), &extra);
    let sizes = [8, 16, 32, 64];
    assert_eq!(rows.len(), patterns.len() * sizes.len());
    for (row, (pattern, bytes)) in rows.iter().zip(
        patterns
            .iter()
            .flat_map(|p| sizes.iter().map(move |b| (p, b))),
    ) {
        assert_eq!(row["pattern"], *pattern);
        assert_eq!(row["bytes"], *bytes);
        assert!(row["latency_s"].as_f64().is_some_and(|l| l > 0.0), "{row}");
        assert!(
            stdout.contains(&format!("{pattern} ")),
            "table lacks {pattern}:\n{stdout}"
        );
    }
    // Per rank: one Isend, one Irecv and two Waits per round trip it takes part in
    // (single: the first and last rank; multiple, crossing: every rank), a barrier and
    // a reduction per batch on every rank, and the last rank's host name to rank 0.
    let last = ranks - 1;
    let mut messages = 1;
    for rank in 0..ranks {
        let (mut trips, mut batches) = (0, 0);
        for row in &rows {
            let k = taken(&row["round_trip"]);
            batches += k.batches;
            if row["pattern"] != "single" || rank == 0 || rank == last {
                trips += k.reps;
            }
        }
        messages += trips;
        assert_eq!(count(&t, rank, Op::Isend), trips, "rank {rank} Isend");
        assert_eq!(count(&t, rank, Op::Irecv), trips, "rank {rank} Irecv");
        assert_eq!(count(&t, rank, Op::Wait), 2 * trips, "rank {rank} Wait");
        assert_eq!(count(&t, rank, Op::Barrier), batches, "rank {rank} Barrier");
        assert_eq!(
            count(&t, rank, Op::Allreduce),
            batches,
            "rank {rank} Allreduce"
        );
        assert_eq!(count(&t, rank, Op::Send), usize::from(rank == last));
        assert_eq!(count(&t, rank, Op::Recv), usize::from(rank == 0));
    }
    assert_eq!(t.info.messages as usize, messages);
    let m = NetworkModel::read(&model).expect("the model reads back");
    let bytes: Vec<u64> = m.points.iter().map(|p| p.bytes).collect();
    assert_eq!(bytes, [8, 16, 32, 64]);
    assert_eq!(m.source.pattern, "single");
    assert_eq!(m.source.hosts.len(), 2);
    assert!(m.fit.latency_ns >= 0.0 && m.fit.ns_per_byte >= 0.0);
    let measured = rows[0]["latency_s"].as_f64().expect("latency") * 1e9;
    assert!((m.points[0].latency_ns / measured - 1.0).abs() < 1e-12);
    assert!(stdout.contains("network model written to"), "{stdout}");
}

#[test]
fn pingpong_on_2_ranks() {
    check_pingpong(2, &["single"]);
}

#[test]
fn pingpong_on_4_ranks() {
    check_pingpong(4, &["single", "multiple", "crossing"]);
}

fn check_sync(ranks: u32, labels: &[&str]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, rows, t) = run_bench("sync", ranks, dir.path(), &["--delay-us", "5"]);
    crate::buffers::check_sync(&t);
    let found: Vec<&str> = rows.iter().filter_map(|r| r["label"].as_str()).collect();
    assert_eq!(found, labels);
    // Every rank has the same number of neighbours in these patterns on 2 and 4 ranks.
    let (mut barriers, mut reductions, mut posts, mut waits, mut delays) = (0, 0, 0, 0, 0);
    for row in &rows {
        let k = taken(&row["overhead"]);
        // Each batch: a barrier before it, one between its two loops, a reduction after.
        barriers += 2 * k.batches;
        reductions += k.batches;
        delays += 2 * k.reps;
        if row["label"] == "barrier" {
            barriers += k.reps;
        } else {
            let neighbours = row["neighbours"].as_u64().expect("neighbours") as usize;
            posts += neighbours * k.reps;
            waits += k.reps;
        }
    }
    for rank in 0..ranks {
        assert_eq!(
            count(&t, rank, Op::Barrier),
            barriers,
            "rank {rank} Barrier"
        );
        assert_eq!(count(&t, rank, Op::Allreduce), reductions, "rank {rank}");
        assert_eq!(count(&t, rank, Op::Isend), posts, "rank {rank} Isend");
        assert_eq!(count(&t, rank, Op::Irecv), posts, "rank {rank} Irecv");
        assert_eq!(count(&t, rank, Op::Waitall), waits, "rank {rank} Waitall");
        assert_eq!(
            computes(&t, rank, "delay"),
            delays,
            "rank {rank} delay spans"
        );
    }
    assert_eq!(t.info.messages as usize, ranks as usize * posts);
}

#[test]
fn sync_on_2_ranks() {
    check_sync(
        2,
        &["barrier", "pairwise", "ring ±1", "random ±1", "grid3d"],
    );
}

#[test]
fn sync_on_4_ranks() {
    check_sync(
        4,
        &[
            "barrier",
            "pairwise",
            "ring ±1",
            "ring ±2",
            "random ±1",
            "random ±2",
            "grid3d",
        ],
    );
}

fn check_halo3d(ranks: u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (stdout, rows, t) = run_bench("halo3d", ranks, dir.path(), &["--sizes", "4,6"]);
    let edges: Vec<u64> = rows.iter().filter_map(|r| r["edge"].as_u64()).collect();
    assert_eq!(edges, [4, 6]);
    assert_eq!(rows[1]["bytes_per_rank"], 6 * 6 * 6 * 8);
    assert!(stdout.contains("4^3") && stdout.contains("6^3"), "{stdout}");
    let (mut swaps, mut batches) = (0, 0);
    for row in &rows {
        let k = taken(&row["swap"]);
        swaps += k.reps;
        batches += k.batches;
    }
    // Per swap: six Irecv, six Isend (one per face), one Waitall, packing and unpacking.
    for rank in 0..ranks {
        assert_eq!(count(&t, rank, Op::Isend), 6 * swaps, "rank {rank} Isend");
        assert_eq!(count(&t, rank, Op::Irecv), 6 * swaps, "rank {rank} Irecv");
        assert_eq!(count(&t, rank, Op::Waitall), swaps, "rank {rank} Waitall");
        assert_eq!(count(&t, rank, Op::Barrier), batches, "rank {rank} Barrier");
        assert_eq!(computes(&t, rank, "pack"), swaps, "rank {rank} pack");
        assert_eq!(computes(&t, rank, "unpack"), swaps, "rank {rank} unpack");
    }
    assert_eq!(t.info.messages as usize, ranks as usize * 6 * swaps);
    crate::buffers::check_halo3d(&t, ranks);
}

#[test]
fn halo3d_on_2_ranks() {
    check_halo3d(2);
}

#[test]
fn halo3d_on_4_ranks() {
    check_halo3d(4);
}

#[test]
fn options_that_cannot_run_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("x.json");
    let r = run_kernel("pingpong", 2, &out, &["--patterns", "multiple"]);
    assert!(!r.success(), "{}", r.describe());
    r.assert_stderr_has("--patterns multiple: needs an even number of ranks, at least 4");
    let r = run_kernel("sync", 1, &out, &[]);
    assert!(!r.success(), "{}", r.describe());
    r.assert_stderr_has("sync needs at least 2 ranks (--ranks), got 1");
    // A results file that cannot be written stops the command before mpiexec starts.
    let out = dir.path().join("y.json");
    let r = run_kernel("halo3d", 2, &out, &["--json", "/nonexistent/dir/r.json"]);
    assert!(!r.success(), "{}", r.describe());
    r.assert_stderr_has(
        "'/nonexistent/dir/r.json' for '--json <FILE>': the directory /nonexistent/dir does \
         not exist",
    );
    assert!(!dir.path().join("y.ranks").exists(), "nothing was launched");
}

#[test]
fn run_help_lists_every_kernel_with_what_it_shows() {
    let run = crate::util::overlap(&["run", "--help"]);
    assert!(run.success(), "{}", run.describe());
    for line in [
        "toeplitz       MIDAPACK's Toeplitz halo exchange",
        "pingpong       Ping-pong latency and bandwidth per message size",
        "sync           Synchronisation overhead",
        "halo3d         Halo swaps of a 3-D array",
    ] {
        assert!(run.stdout().contains(line), "{line}\n{}", run.describe());
    }
}
