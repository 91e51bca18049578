//! The benchmark's Rust-layer loops (the `osu` example) under real `mpiexec -n 2`: they
//! print their figures, and the traced run records every call the OSU loops make, so the
//! plain and traced variants `make bench` compares do the same work.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use overlap_analyzer::merge::merge_dir;
use overlap_instrument::schema::Op;

fn example() -> PathBuf {
    // Examples are built next to the test binaries' directory by `cargo test`.
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let p = dir.join("examples").join("osu");
    assert!(
        p.is_file(),
        "{} not built (cargo test builds examples)",
        p.display()
    );
    p
}

/// Runs the example on 2 ranks with `args`; rank 0's figures by line.
fn run(args: &[&str]) -> Vec<(String, u64, f64)> {
    let out = Command::new("mpiexec")
        .args(["-n", "2"])
        .arg(example())
        .args(args)
        .output()
        .expect("mpiexec runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 3, "{l}");
            let bytes = f[1].parse().expect("bytes");
            let value = f[2].parse().expect("figure");
            (f[0].to_string(), bytes, value)
        })
        .collect()
}

/// The message size the test runs: just above the example's `LARGE` (8 KiB), where the
/// OSU loops run a tenth of their small-message rounds. The code is the bench's (8 B);
/// only the counts differ, and the test takes a few seconds rather than a minute.
const BYTES: &str = "8193";

fn assert_figures(figures: &[(String, u64, f64)]) {
    let names: Vec<(&str, u64)> = figures.iter().map(|(n, b, _)| (n.as_str(), *b)).collect();
    assert_eq!(names, [("lat_ns", 8193), ("bw_mbs", 8193)]);
    assert!(
        figures.iter().all(|(_, _, v)| v.is_finite() && *v > 0.0),
        "{figures:?}"
    );
}

#[test]
fn plain_and_traced_loops_report_and_the_traced_one_records_every_call() {
    assert_figures(&run(&["plain", BYTES]));
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_str().expect("utf-8 path");
    assert_figures(&run(&["traced", path, BYTES]));

    let outcome = merge_dir(dir.path()).expect("merges");
    assert!(outcome.unreadable.is_empty());
    let m = &outcome.merged;
    assert!(m.info.incomplete.is_empty(), "{:?}", m.info.incomplete);
    // Above 8 KiB: 100 + 2 000 round trips, then 10 + 100 windows of 64 messages and
    // an ack; one barrier before each loop.
    let (round_trips, windows) = (2_100, 110);
    for a in &m.timelines {
        let mut ops: BTreeMap<Op, usize> = BTreeMap::new();
        for op in a.spans.iter().filter_map(|s| s.op()) {
            *ops.entry(op).or_default() += 1;
        }
        let get = |op| ops.get(&op).copied().unwrap_or(0);
        let (sends, recvs, posts) = if a.rank == 0 {
            (round_trips, round_trips + windows, get(Op::Isend))
        } else {
            (round_trips + windows, round_trips, get(Op::Irecv))
        };
        let r = a.rank;
        assert_eq!(get(Op::Send), sends, "rank {r}");
        assert_eq!(get(Op::Recv), recvs, "rank {r}");
        assert_eq!(posts, 64 * windows, "rank {r}");
        assert_eq!(get(Op::Waitall), windows, "rank {r}");
        assert_eq!(get(Op::Barrier), 2, "rank {r}");
    }
    assert_eq!(m.messages.len(), 2 * round_trips + 65 * windows);
    assert_eq!(m.info.unmatched_sends, 0);
    assert_eq!(m.info.unmatched_receives, 0);
}
