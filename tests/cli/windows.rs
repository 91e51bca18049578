//! Windows of a real run (`--from/--to`, `--region`, `--ranks`) on `analyze`, `check`,
//! `baseline` and `diff`: tests/programs/pcontrol.c traced under `mpiexec` on 3 ranks
//! (Barrier | setup: Allreduce | 3 x step: Sendrecv ring | on: Bcast, off | Barrier).

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::Value;

use crate::trace::{program, trace};
use crate::util::{overlap, Run};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// `overlap analyze TRACE ARGS --json`, read.
fn json(trace: &Path, args: &[&str]) -> (Value, Run) {
    let mut all = vec!["analyze", s(trace), "--json"];
    all.extend_from_slice(args);
    let r = overlap(&all);
    assert!(r.success(), "{}", r.describe());
    let v = serde_json::from_str(&r.stdout()).expect("a JSON report");
    (v, r)
}

/// The MPI functions a report's profile counts.
fn functions(v: &Value) -> Vec<String> {
    let mut f: Vec<String> = v["profile"]["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .map(|r| r["call"].as_str().expect("call").to_string())
        .collect();
    f.sort();
    f
}

#[test]
fn windows_of_a_traced_program() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("pcontrol.json");
    let traced = trace(3, &program("pcontrol"), &out);
    assert!(traced.success(), "{}", traced.describe());

    // The whole run has no window key; every function is there.
    let (whole, _) = json(&out, &[]);
    assert!(whole.get("window").is_none());
    let all = functions(&whole);
    for f in ["MPI_Init", "MPI_Allreduce", "MPI_Sendrecv", "MPI_Bcast"] {
        assert!(all.iter().any(|x| x == f), "{f} in {all:?}");
    }

    // The second `step`, from the first rank's enter to the last one's leave: its
    // Sendrecv ring, and whatever else the ranks did meanwhile (on an oversubscribed
    // host one may be in the Bcast while another is still in step 2), but never MPI_Init
    // or MPI_Finalize, which come before the first barrier and after the last.
    let (step, r) = json(&out, &["--region", "step#2"]);
    let w = &step["window"];
    assert_eq!(w["asked"]["region"], "step#2", "{}", r.describe());
    assert_eq!(w["ranks"], 3);
    let (from, to) = (w["from_ns"].as_u64().unwrap(), w["to_ns"].as_u64().unwrap());
    assert!(from < to, "{w}");
    let f = functions(&step);
    assert!(f.iter().any(|x| x == "MPI_Sendrecv"), "{f:?}");
    for outside in ["MPI_Init", "MPI_Finalize"] {
        assert!(!f.iter().any(|x| x == outside), "{outside} in {f:?}");
    }
    // Of the 9 ring messages, those of step 2 at least are there, whole or crossing.
    let kept = step["run"]["messages"].as_u64().unwrap();
    let crossing = w["messages"]["count"].as_u64().unwrap();
    assert!(kept + crossing >= 3 && kept < 9, "{w}");
    let walls: Vec<u64> = (step["ranks"].as_array().unwrap().iter())
        .map(|r| r["wall_ns"].as_u64().unwrap())
        .collect();
    assert!(walls.iter().all(|&w| w > 0 && w <= to - from), "{walls:?}");

    // The same times given as --from/--to: the same part of the run.
    let (by_times, _) = json(
        &out,
        &["--from", &format!("{from}ns"), "--to", &format!("{to}ns")],
    );
    assert_eq!(by_times["profile"], step["profile"]);
    assert_eq!(by_times["window"]["asked"]["from_ns"], from);

    // Ranks 0 and 2 of the ring 0 -> 1 -> 2 -> 0: of each step's three messages, only
    // 2 -> 0 is whole; the other two cross to rank 1, left out.
    let (ranks, _) = json(&out, &["--ranks", "0,2", "--region", "step"]);
    let w = &ranks["window"];
    assert_eq!(
        (w["ranks"].as_u64(), w["ranks_left_out"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(w["messages"]["count"], 6, "{w}");
    assert_eq!(w["messages"]["rank_left_out"], 6, "{w}");
    assert_eq!(ranks["run"]["messages"], 3, "{w}");
    assert!(w["unknown_waits"]["calls"].as_u64() > Some(0), "{w}");
    let listed: Vec<u64> = (ranks["ranks"].as_array().unwrap().iter())
        .map(|r| r["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(listed, [0, 2]);

    // The text says its window first.
    let text = overlap(&["analyze", s(&out), "--region", "step", "--ranks", "0,2"]);
    assert!(text.success(), "{}", text.describe());
    let first = text.stdout().lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with("Window: ") && first.contains("(region step), 2 rank(s) of 3"),
        "{}",
        text.describe()
    );
    text.assert_stdout_has("crossing its edges, not analysed: 6 message(s) (6 on a rank left out)");
    // The run's head counts the ranks in the window, not those traced.
    text.assert_stdout_has(": 2 of 3 ranks in the window, ");
    assert_eq!(ranks["run"]["windowed"], true, "{}", ranks["run"]);

    // Windows that cannot be: exit 1 with the reason.
    let refused = |args: &[&str], says: &str| {
        let mut all = vec!["analyze", s(&out)];
        all.extend_from_slice(args);
        let r = overlap(&all);
        assert_eq!(r.output.status.code(), Some(1), "{}", r.describe());
        r.assert_stderr_has(says);
    };
    refused(
        &["--ranks", "7-9"],
        "no rank of 7-9 is in the trace (it has ranks 0-2)",
    );
    refused(
        &["--region", "solve"],
        "no region `solve` in the run; its regions: setup",
    );
    refused(
        &["--from", "10ms", "--to", "5ms"],
        "before or where it starts",
    );
    refused(&["--from", "1000s"], "after the run's last event");
}

#[test]
fn gates_of_a_window() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("pcontrol.json");
    let traced = trace(3, &program("pcontrol"), &out);
    assert!(traced.success(), "{}", traced.describe());
    let base = dir.path().join("step.baseline.json");
    let made = overlap(&["baseline", s(&out), "--out", s(&base), "--region", "step"]);
    assert!(made.success(), "{}", made.describe());
    made.assert_stdout_has("Window: ");
    let kept: Value =
        serde_json::from_str(&std::fs::read_to_string(&base).expect("written")).expect("JSON");
    assert_eq!(kept["window"]["region"], "step");

    // The same window passes; the whole run against it cannot be judged (exit 2).
    let same = overlap(&["check", s(&out), "--baseline", s(&base), "--region", "step"]);
    assert_eq!(same.output.status.code(), Some(0), "{}", same.describe());
    let whole = overlap(&["check", s(&out), "--baseline", s(&base)]);
    assert_eq!(whole.output.status.code(), Some(2), "{}", whole.describe());
    whole.assert_stderr_has(
        "the baseline was made of region step, this check analyses the whole run",
    );
    // A window of fewer ranks than the run is no incomplete trace.
    let part = dir.path().join("ranks.baseline.json");
    let made = overlap(&["baseline", s(&out), "--out", s(&part), "--ranks", "0-1"]);
    assert!(made.success(), "{}", made.describe());
    let kept: Value =
        serde_json::from_str(&std::fs::read_to_string(&part).expect("written")).expect("JSON");
    assert_eq!(kept["ranks"].as_array().map(Vec::len), Some(2));

    // diff of one window of two runs (here the same run twice): each says its window.
    let d = overlap(&["diff", s(&out), s(&out), "--region", "step#1"]);
    assert!(d.success(), "{}", d.describe());
    d.assert_stderr_has("Window: ");
    d.assert_stderr_has("(region step#1)");
}
