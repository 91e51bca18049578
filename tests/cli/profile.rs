//! `overlap analyze --profile` on a real preloaded run of tests/programs/halo.c (4
//! ranks on a ring, 24 steps, each sending 4 KiB to both neighbours): the counts,
//! the matrix and the sizes follow from the program's loops, the phases from its
//! MPI_Init and MPI_Finalize.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use serde_json::Value;

use crate::trace::{program, trace_with};
use crate::util::overlap;

const RANKS: u64 = 4;
const STEPS: u64 = 24;
const HALO_BYTES: u64 = 512 * 8;

fn function<'a>(p: &'a Value, call: &str) -> &'a Value {
    p["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["call"] == call)
        .unwrap_or_else(|| panic!("{call} in {p:#}"))
}

#[test]
fn a_halo_exchange_profile_counts_its_calls_pairs_and_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("halo.json");
    let run = trace_with(RANKS as u32, &program("halo"), &["early"], &[], &out);
    assert!(run.success(), "{}", run.describe());
    let path = out.to_str().unwrap();

    let json = overlap(&["analyze", path, "--json"]);
    assert!(json.success(), "{}", json.describe());
    let r: Value = serde_json::from_str(&json.stdout()).unwrap();
    let p = &r["profile"];

    // Per step and rank: two Irecv, two Isend, two Waitall (early: receives, sends).
    for (call, per_step) in [("MPI_Irecv", 2), ("MPI_Isend", 2), ("MPI_Waitall", 2)] {
        let f = function(p, call);
        assert_eq!(f["count"], RANKS * STEPS * per_step, "{f:#}");
        assert_eq!(f["ranks"], RANKS, "{f:#}");
        let (min, mean, max) = (
            f["min_ns"].as_u64(),
            f["mean_ns"].as_u64(),
            f["max_ns"].as_u64(),
        );
        assert!(min <= mean && mean <= max, "{f:#}");
    }
    let all_bytes = RANKS * STEPS * 2 * HALO_BYTES;
    assert_eq!(function(p, "MPI_Isend")["sent_bytes"], all_bytes);
    assert_eq!(function(p, "MPI_Waitall")["received_bytes"], all_bytes);
    assert_eq!(function(p, "MPI_Init")["count"], RANKS);
    assert_eq!(function(p, "MPI_Reduce")["count"], RANKS);
    let shares: f64 = p["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["mpi_share"].as_f64().unwrap())
        .sum();
    assert!(
        (shares - 1.0).abs() < 1e-9,
        "shares of the time in MPI sum to 1: {shares}"
    );

    // The sites are halo.c's lines.
    for s in p["sites"].as_array().unwrap() {
        let site = s["site"].as_str().unwrap_or("");
        assert!(site.starts_with("halo.c:"), "{s:#}");
    }

    // The ring: each rank sends to both neighbours, STEPS messages of 4 KiB each way.
    let pairs = p["matrix"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2 * RANKS as usize, "{pairs:#?}");
    for pair in pairs {
        let (from, to) = (pair["from"].as_u64().unwrap(), pair["to"].as_u64().unwrap());
        assert!(
            to == (from + 1) % RANKS || from == (to + 1) % RANKS,
            "neighbours only: {pair}"
        );
        assert_eq!(pair["messages"], STEPS);
        assert_eq!(pair["bytes"], STEPS * HALO_BYTES);
    }
    assert_eq!(p["matrix"]["by_comm"][0]["comm"], 0, "MPI_COMM_WORLD");
    let sizes = p["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 1, "{sizes:#?}");
    assert_eq!(sizes[0]["call"], "MPI_Isend");
    let class = &sizes[0]["classes"][0];
    assert_eq!(
        (&class["min_bytes"], &class["max_bytes"], &class["messages"]),
        (
            &Value::from(4096),
            &Value::from(8191),
            &Value::from(RANKS * STEPS * 2)
        )
    );

    // Every rank made MPI_Init and MPI_Finalize: its phases are known and add up to
    // at most its part of the run.
    let phases = p["phases"]["ranks"].as_array().unwrap();
    assert_eq!(phases.len(), RANKS as usize);
    for ph in phases {
        assert!(ph.get("unknown").is_none(), "{ph:#}");
        let body = ph["body_ns"].as_u64().unwrap();
        assert!(body > 0 && ph["setup_ns"].as_u64().is_some(), "{ph:#}");
        assert!(ph["finalize_ns"].as_u64().is_some(), "{ph:#}");
    }

    let text = overlap(&["analyze", path, "--profile", "3"]);
    assert!(text.success(), "{}", text.describe());
    let t = text.stdout();
    for want in [
        "Time per MPI function",
        "Time per call site",
        "halo.c:",
        "Communication matrix",
        "MPI_COMM_WORLD: 192 message(s)",
        "4.0 KiB to 8.0 KiB",
        "Phases",
        "more function(s) (see --json)",
    ] {
        assert!(t.contains(want), "{want:?} in\n{t}");
    }
    let plain = overlap(&["analyze", path]);
    assert!(
        !plain.stdout().contains("Time per MPI function"),
        "only with --profile"
    );

    let csv = dir.path().join("tables");
    let tables = overlap(&["analyze", path, "--csv", csv.to_str().unwrap()]);
    assert!(tables.success(), "{}", tables.describe());
    let matrix = std::fs::read_to_string(csv.join("matrix.csv")).unwrap();
    assert_eq!(matrix.lines().next(), Some("from,to,messages,bytes"));
    assert_eq!(matrix.lines().count(), 1 + 2 * RANKS as usize, "{matrix}");
    let phases = std::fs::read_to_string(csv.join("phases.csv")).unwrap();
    assert_eq!(phases.lines().count(), 1 + RANKS as usize, "{phases}");
    for name in ["profile_functions", "profile_sites", "message_sizes"] {
        assert!(csv.join(format!("{name}.csv")).is_file(), "{name}");
    }
}
