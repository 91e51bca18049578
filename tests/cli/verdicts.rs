//! Verdicts on unmodified C programs traced by the preload alone (no compute spans):
//! compute comes from the gaps between MPI calls, so a program that waits right after
//! posting (false overlap) and its twin that computes between post and wait get
//! different verdicts, and a large message waited for after a compute without MPI
//! calls is reported as overlap written, not achieved (tests/programs/twins.c).

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::Value;

use crate::trace::{program, program_line, trace_with};
use crate::util::overlap;

/// `overlap trace --out OUT -- mpiexec -n 2 twins MODE COUNT`, with `env` set, then
/// `overlap analyze OUT --json`.
fn traced(out: &Path, mode: &str, count: u32, env: &[(&str, &str)]) -> Value {
    let count = count.to_string();
    let run = trace_with(2, &program("twins"), &[mode, &count], env, out);
    assert!(run.success(), "{}", run.describe());
    run.assert_stdout_has("twins: checksum");
    let report = overlap(&["analyze", out.to_str().unwrap(), "--json"]);
    assert!(report.success(), "{}", report.describe());
    serde_json::from_str(&report.stdout()).expect("analyze --json prints JSON")
}

fn text(out: &Path) -> String {
    let run = overlap(&["analyze", out.to_str().unwrap(), "--full"]);
    assert!(run.success(), "{}", run.describe());
    run.stdout()
}

/// 1 MiB: a rendezvous message, whose transfer a wait right after posting loses.
const MIB_DOUBLES: u32 = 131_072;

#[test]
fn false_overlap_and_its_twin_get_different_verdicts_from_the_preload_trace() {
    let dir = tempfile::tempdir().unwrap();
    // Asynchronous progress, so that the twin's transfer can progress while it computes
    // (without it MPICH moves a rendezvous message only inside MPI calls).
    let env = [("MPICH_ASYNC_PROGRESS", "1")];
    let early_path = dir.path().join("early.json");
    let early = traced(&early_path, "early", MIB_DOUBLES, &env);
    let late_path = dir.path().join("late.json");
    let late = traced(&late_path, "late", MIB_DOUBLES, &env);

    for r in [&early, &late] {
        assert_eq!(r["run"]["compute_source"], "gaps", "{r:#}");
        assert_eq!(
            r["requests"]["count"], 20,
            "5 rounds x 2 requests x 2 ranks"
        );
        assert_eq!(r["requests"]["never_completed"], 0);
    }
    let findings = early["false_overlap"]["worst"].as_array().unwrap();
    assert!(!findings.is_empty(), "the early wait is false overlap");
    let early_wait = format!(
        "twins.c:{} (main)",
        program_line("twins.c", "/* the early wait */")
    );
    for f in findings {
        assert_eq!(f["wait"]["call"], "MPI_Waitall", "{f:#}");
        assert_eq!(f["wait"]["site"], early_wait.as_str(), "{f:#}");
        let possible = &f["possible"];
        assert!(
            possible["move_after"]["site"]
                .as_str()
                .is_some_and(|s| s.starts_with("twins.c:")),
            "{f:#}"
        );
        assert!(
            possible["independent_work_ns"].as_u64().unwrap() >= 1_000_000,
            "{f:#}"
        );
        // It may move to the next round's Isend of the same buffer, after its Irecv
        // (or, in the last round, to the end, after the Barrier), if the compute after
        // the wait, whose effect the trace cannot tell, does not write the send buffer:
        // nothing is proven.
        let after = possible["move_after"]["call"].as_str().unwrap();
        assert!(["MPI_Irecv", "MPI_Barrier"].contains(&after), "{f:#}");
        assert!(f["proven"].is_null(), "{f:#}");
        assert_eq!(f["needs"]["buffer"], "the send buffer", "{f:#}");
    }
    assert_eq!(late["false_overlap"]["count"], 0, "{late:#}");
    // Computing between post and wait overlaps more. With asynchronous progress, two
    // ranks and their two progress threads share this machine's CPUs with the other
    // tests, and a descheduled gap reads as compute: so the twins are compared in up to
    // three alternated pairs, and the late one must overlap more in two of them.
    let mean = |r: &Value| r["requests"]["mean_overlap"].as_f64().unwrap();
    // Each pair into files of its own: the text below is of the early run checked above.
    let mut pairs = vec![(mean(&late), mean(&early))];
    while pairs.len() < 3 && pairs.iter().filter(|(l, e)| l > e).count() < 2 {
        let n = pairs.len() + 1;
        let e = traced(
            &dir.path().join(format!("early-{n}.json")),
            "early",
            MIB_DOUBLES,
            &env,
        );
        let l = traced(
            &dir.path().join(format!("late-{n}.json")),
            "late",
            MIB_DOUBLES,
            &env,
        );
        pairs.push((mean(&l), mean(&e)));
    }
    assert!(
        pairs.iter().filter(|(l, e)| l > e).count() >= 2,
        "computing between post and wait overlaps more (late, early): {pairs:?}"
    );
    let t = text(&early_path);
    assert!(t.contains("compute inferred from the gaps"), "{t}");
    assert!(t.contains("possible if the compute between"), "{t}");
    assert!(
        t.contains(&early_wait),
        "findings name their source line\n{t}"
    );
}

#[test]
fn a_large_message_waited_for_after_compute_is_overlap_written_not_achieved() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("late.json");
    // 4 MiB, no MPI call during the compute, no asynchronous progress.
    let r = traced(
        &path,
        "late",
        4 * MIB_DOUBLES,
        &[("MPICH_ASYNC_PROGRESS", "0")],
    );
    // In each round the rank that reaches its Waitall first waits there for the whole
    // transfer: its two requests are written, not achieved. The other, arriving later,
    // finds the transfer mostly moved by its partner's waiting (its wait is short
    // against t_pure): achieved. So about half of the 20 requests, fewer when the
    // machine's load lets a round's transfer move during the compute.
    let na = &r["requests"]["written_not_achieved"];
    assert!(na["count"].as_u64().unwrap() >= 6, "{na:#}");
    let worst = &na["worst"][0];
    assert_eq!(worst["completion"]["call"], "MPI_Waitall", "{worst:#}");
    let late_wait = format!(
        "twins.c:{} (main)",
        program_line("twins.c", "/* the late wait */")
    );
    assert_eq!(worst["completion"]["site"], late_wait.as_str(), "{worst:#}");
    assert!(worst["cpu_ns"].as_u64().unwrap() >= 10_000_000, "{worst:#}");
    let t = text(&path);
    assert!(t.contains("overlap written, not achieved"), "{t}");
    assert!(t.contains("MPICH_ASYNC_PROGRESS=1"), "{t}");
    assert!(
        t.contains(&late_wait),
        "the requests name their source line\n{t}"
    );
}
