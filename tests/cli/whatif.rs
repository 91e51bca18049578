//! `overlap whatif`: a real run predicted on other networks, and its errors.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use serde_json::Value;

use crate::util::{overlap, run_false_overlap};

fn whatif_json(args: &[&str]) -> Value {
    let run = overlap(args);
    assert!(run.success(), "{}", run.describe());
    serde_json::from_str(&run.stdout()).expect("whatif --json prints JSON")
}

#[test]
fn predictions_on_other_networks_in_the_report_shape() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fo.json");
    let run = run_false_overlap(2, "naive", 6, &out, &[]);
    assert!(run.success(), "{}", run.describe());
    let path = out.to_str().unwrap();

    // An ideal network with asynchronous progress: only compute and the dependences
    // between ranks remain, so nothing can beat it; a slow one is slower.
    let fast = whatif_json(&[
        "whatif",
        path,
        "--latency",
        "0ns",
        "--bandwidth",
        "1000000GB/s",
        "--progress",
        "async",
        "--json",
    ]);
    let slow = whatif_json(&[
        "whatif",
        path,
        "--latency",
        "1ms",
        "--bandwidth",
        "1MB/s",
        "--json",
    ]);
    let w = &slow["whatif"];
    assert_eq!(w["network"]["latency_given"], true, "{w:#}");
    assert_eq!(w["network"]["mid"]["latency_ns"], 1e6);
    assert_eq!(w["network"]["mid"]["ns_per_byte"], 1000.0);
    assert_eq!(w["progress"], "in-mpi");
    let predicted = |v: &Value| v["whatif"]["predicted_ns"].as_u64().unwrap();
    assert!(predicted(&fast) < predicted(&slow), "{fast:#} {slow:#}");
    // Given latency and bandwidth are exact: no range.
    assert_eq!(
        w["predicted_range_ns"],
        serde_json::json!([predicted(&slow), predicted(&slow)])
    );
    // The report is the analysis of the predicted run: its run time is the prediction.
    assert_eq!(slow["report"]["report"], "overlap-report");
    assert_eq!(
        slow["report"]["pop"]["runtime_ns"].as_u64().unwrap(),
        predicted(&slow)
    );
    // The self check on the trace's own network; a run too noisy for a network (no
    // clean transfer, sizes off a line) says why instead.
    assert!(
        w["replay"]["self_error"].is_number() || w["replay"]["network_unknown"].is_string(),
        "{w:#}"
    );
    assert!(slow["measured"]["pop"]["runtime_ns"].as_u64().unwrap() > 0);

    // The text report says where the network came from, the self-check, and the
    // measured figures beside the predicted ones.
    // Without a network of its own (a run too noisy for a fit), the text needs one given.
    let own = w["replay"]["network_unknown"].is_null();
    let mut args = vec!["whatif", path, "--eager-limit", "1KiB"];
    if !own {
        args.extend(["--latency", "1us", "--bandwidth", "1GB/s"]);
    }
    // The trace's own network is fitted to a line through its size classes, or, when
    // the classes' times lie off any line (a loaded machine), measured per class.
    let source = if own {
        let mut json_args = args.clone();
        json_args.push("--json");
        let network = &whatif_json(&json_args)["whatif"]["network"];
        match network["source"]["from"].as_str() {
            Some("fitted" | "one_class") => "fitted to ",
            Some("classes") => "measured by ",
            other => panic!("a network of the trace's own from {other:?}: {network:#}"),
        }
    } else {
        "(given)"
    };
    let run = overlap(&args);
    assert!(run.success(), "{}", run.describe());
    run.assert_stdout_has(source);
    run.assert_stdout_has("eager limit 1024 B, given");
    run.assert_stdout_has("replay.self_error ");
    run.assert_stdout_has("measured    predicted");
    run.assert_stdout_has("POP efficiencies");
}

#[test]
fn bad_units_and_model_files_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let run = overlap(&["whatif", "t.json", "--latency", "2 parsecs"]);
    assert!(!run.success());
    run.assert_stderr_has("unknown unit \"parsecs\"");
    let run = overlap(&["whatif", "t.json", "--bandwidth", "0GB/s"]);
    assert!(!run.success());
    run.assert_stderr_has("must be more than 0");
    // A bare number is no duration: refused, naming the units (it was taken as ns),
    // as a bare bandwidth is; the exit code is clap's for a bad argument.
    let run = overlap(&["whatif", "t.json", "--latency", "2"]);
    assert_eq!(run.output.status.code(), Some(2), "{}", run.describe());
    run.assert_stderr_has("a duration needs its unit, one of ns, us, µs, ms, s (e.g. 2us)");
    let run = overlap(&["suggest", "t.json", "--bandwidth", "12.5"]);
    assert_eq!(run.output.status.code(), Some(2), "{}", run.describe());
    run.assert_stderr_has("a bandwidth needs its unit, one of B/s");
    let run = overlap(&[
        "trace",
        "--hang-timeout",
        "30",
        "--",
        "mpiexec",
        "-n",
        "1",
        "true",
    ]);
    assert_eq!(run.output.status.code(), Some(2), "{}", run.describe());
    run.assert_stderr_has("(e.g. 30s)");

    let out = dir.path().join("fo.json");
    let run = run_false_overlap(2, "fixed", 2, &out, &[]);
    assert!(run.success(), "{}", run.describe());
    let model = dir.path().join("net.json");
    std::fs::write(
        &model,
        r#"{"format": "overlap-network-model", "version": 9, "points": []}"#,
    )
    .unwrap();
    let run = overlap(&[
        "whatif",
        out.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
    ]);
    assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
    run.assert_stderr_has(&format!(
        "{}: format \"overlap-network-model\" version 9, expected",
        model.display()
    ));
    std::fs::write(&model, "[1, 2]").unwrap();
    let run = overlap(&[
        "whatif",
        out.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
    ]);
    assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
    run.assert_stderr_has("not a network model");
}
