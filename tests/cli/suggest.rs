//! `overlap suggest` on an unmodified C program traced by the preload
//! (tests/programs/reorder.c: Irecv, Isend, one Waitall for both, then compute that
//! touches neither buffer, which without `--buffers` nothing proves; tests/programs/
//! torus.c: Sendrecvs to the calling rank), and its errors.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use serde_json::Value;

use crate::trace::{program, program_line, trace};
use crate::util::{overlap, suggest_on_a_network};

fn suggest_json(args: &[&str]) -> Value {
    let run = overlap(args);
    assert!(run.success(), "{}", run.describe());
    serde_json::from_str(&run.stdout()).expect("suggest --json prints JSON")
}

/// Traced without `--buffers`, nothing says what the gaps between the calls do to the
/// buffers: no move is proven, so none is suggested; the Waitall's move after the
/// compute is only possible, with what it needs named by the lines around the compute.
#[test]
fn unproven_moves_are_only_possible_and_name_source_lines() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reorder.json");
    let run = trace(2, &program("reorder"), &out);
    assert!(run.success(), "{}", run.describe());
    let path = out.to_str().unwrap();
    // A run that fitted no network is replayed on a given one (the possible order's
    // gain needs one).
    let (s, args) = suggest_on_a_network(path, &[]);
    assert_eq!(s["version"], 3);
    assert_eq!(s["mode"], "proven");
    assert!(s["replay"]["self_error"].is_number(), "{s:#}");
    let wait = program_line("reorder.c", "MPI_Waitall(2, req");
    let irecv = program_line("reorder.c", "MPI_Irecv(in, count");
    let groups = s["groups"].as_array().unwrap();
    assert!(!groups.is_empty());
    assert_eq!(groups[0]["moves"].as_array().unwrap().len(), 0, "{s:#}");
    // The Waitall (both requests) could go after the compute, before the next
    // iteration's Irecv, if that compute leaves the buffers alone.
    let possible = groups[0]["possible"].as_array().unwrap();
    let waitall = possible
        .iter()
        .find(|m| {
            m["what"]
                .as_str()
                .unwrap()
                .starts_with(&format!("MPI_Waitall at reorder.c:{wait}"))
        })
        .unwrap_or_else(|| panic!("no Waitall move: {s:#}"));
    assert!(
        waitall["to_before"]
            .as_str()
            .unwrap()
            .starts_with("MPI_Irecv[recv from "),
        "{waitall:#}"
    );
    assert_eq!(waitall["next_iteration"], true, "{waitall:#}");
    let assumptions: Vec<String> = waitall["assumptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            format!(
                "{} does not {} {}",
                a["compute"].as_str().unwrap(),
                a["must_not"].as_str().unwrap(),
                a["buffer"].as_str().unwrap()
            )
        })
        .collect();
    let between =
        format!("the compute between reorder.c:{wait} (main) and reorder.c:{irecv} (main)");
    assert!(
        assumptions.contains(&format!("{between} does not write the send buffer")),
        "{assumptions:#?}"
    );
    assert!(
        assumptions.contains(&format!(
            "{between} does not read or write the receive buffer"
        )),
        "{assumptions:#?}"
    );
    // The text is short: the possible moves one line each when together they gain
    // more than the uncertainty, else counted in one line; --verbose names each.
    let text = overlap(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(text.success(), "{}", text.describe());
    text.assert_stdout_has("possible, not proven");
    assert!(text.stdout().lines().count() <= 20, "{}", text.stdout());
    let verbose: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .chain(["--verbose"])
        .collect();
    let text = overlap(&verbose);
    assert!(text.success(), "{}", text.describe());
    text.assert_stdout_has(&format!(
        "move MPI_Waitall at reorder.c:{wait} (main) (2 requests)"
    ));
    text.assert_stdout_has(&format!("possible if {between} does not read or write"));
    // Conservative: only what is proven, nothing possible looked for.
    let s = suggest_json(&["suggest", path, "--json", "--conservative"]);
    for g in s["groups"].as_array().unwrap() {
        assert_eq!(g["possible"].as_array().unwrap().len(), 0, "{g:#}");
    }
    assert!(s["possible"].is_null(), "{s:#}");
}

/// tests/programs/torus.c: blocking Sendrecvs on an n x 1 torus, half of them to the
/// calling rank itself, rendezvous-sized every other iteration. Each such call is both
/// ends of its message: the measured order replays (it once deadlocked, the receive
/// half taken for a second send), in `suggest` and in the report's self check.
#[test]
fn a_sendrecv_to_itself_replays() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("torus.json");
    let run = trace(2, &program("torus"), &out);
    assert!(run.success(), "{}", run.describe());
    // 8 iterations x 2 dimensions x 2 Sendrecvs x 2 ranks, every one matched.
    run.assert_stderr_has("64 messages (0 unmatched sends, 0 unmatched receives)");
    let path = out.to_str().unwrap();
    // A given network: the replay runs whatever the run's own transfers allow a fit of.
    let given = ["--latency", "1us", "--bandwidth", "4GB/s"];
    let s = suggest_json(&[&["suggest", path, "--json"][..], &given].concat());
    assert!(s["replay"]["self_error"].is_number(), "{s:#}");
    let report = overlap(&["analyze", path, "--json"]);
    assert!(report.success(), "{}", report.describe());
    let r: Value = serde_json::from_str(&report.stdout()).unwrap();
    assert!(
        r["replay"]["replayed_ns"].is_u64() || r["replay_unknown"]["reason"] == "network_unknown",
        "{:#}",
        r["replay"]
    );
}

#[test]
fn bad_arguments_are_told() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let run = overlap(&["suggest", missing.to_str().unwrap()]);
    assert!(!run.success());
    run.assert_stderr_has("missing.json");
    let run = overlap(&[
        "suggest",
        missing.to_str().unwrap(),
        "--policy",
        "fastest-first",
    ]);
    assert!(!run.success());
    run.assert_stderr_has("unknown policy \"fastest-first\"");
    run.assert_stderr_has("posts-early, lower-tag-first");
}
