//! Regions marked with `MPI_Pcontrol` (tests/programs/pcontrol.c: IPM's named `setup`
//! and 3 x `step`, then mpiP's unnamed on/off; pcontrol_f.f90: IPM's convention through
//! `mpif.h`), under MPICH and Open MPI: every Pcontrol is recorded with its level and
//! name, the program runs as it does untraced, `overlap analyze --json` sums the
//! regions up, `overlap merge --region` writes one region's part, and an unknown region
//! is an error naming the run's.

use std::path::Path;

use crate::mpis::{open_mpi, untraced_then_traced, Launch, Mpi};
use crate::util::{overlap, Run};

/// Each rank's Pcontrol calls as (level, region), in time order.
fn marks(out: &Path, rank: u32) -> Vec<(i32, Option<String>)> {
    let text = std::fs::read_to_string(out).expect("merged JSON");
    let mut calls: Vec<(f64, i32, Option<String>)> = Vec::new();
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    for e in v["traceEvents"].as_array().expect("events") {
        if e["name"] == "MPI_Pcontrol" && e["pid"] == rank {
            calls.push((
                e["ts"].as_f64().expect("ts"),
                e["args"]["level"].as_i64().expect("a level") as i32,
                e["args"]["region"].as_str().map(str::to_string),
            ));
        }
    }
    calls.sort_by(|a, b| a.0.total_cmp(&b.0));
    calls.into_iter().map(|(_, l, r)| (l, r)).collect()
}

fn named(level: i32, name: &str) -> (i32, Option<String>) {
    (level, Some(name.to_string()))
}

fn check_c(mpi: Mpi) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("pcontrol.json");
    let (_, run) = untraced_then_traced(&Launch::of(mpi), 3, "pcontrol", &out);
    run.assert_records_every_call();
    let mut want = vec![(0, None), named(1, "setup"), named(-1, "setup")];
    for _ in 0..3 {
        want.extend([named(1, "step"), named(-1, "step")]);
    }
    want.extend([(1, None), (0, None)]);
    for rank in 0..3 {
        assert_eq!(marks(&out, rank), want, "rank {rank}\n{}", run.describe());
    }
    // Recorded as an op of its own, not counted among the unrecorded calls.
    assert!(!run.stderr().contains("MPI_Pcontrol"), "{}", run.describe());

    // The analysis: three regions, in the order entered, on every rank.
    let json = overlap(&["analyze", out.to_str().expect("utf-8"), "--json"]);
    assert!(json.success(), "{}", json.describe());
    let v: serde_json::Value = serde_json::from_str(&json.stdout()).expect("JSON report");
    let regions = v["regions"].as_array().expect("regions");
    let summary: Vec<(&str, u64, usize)> = regions
        .iter()
        .map(|r| {
            (
                r["name"].as_str().expect("name"),
                r["instances"].as_u64().expect("instances"),
                r["per_rank"].as_array().expect("per rank").len(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [("setup", 1, 3), ("step", 3, 3), ("pcontrol", 1, 3)],
        "{}",
        json.stdout()
    );
    for r in regions {
        assert_eq!(r["never_entered"], serde_json::json!([]));
        let (min, max) = (r["time"]["min_ns"].as_u64(), r["time"]["max_ns"].as_u64());
        assert!(min > Some(0) && min <= max, "{r}");
    }
    let full = overlap(&["analyze", out.to_str().expect("utf-8"), "--full"]);
    full.assert_stdout_has("Regions (MPI_Pcontrol): 3");

    // The part of the run `setup` covers: its Allreduce, neither Init nor Finalize,
    // nor the Bcast of the unnamed region, which comes after every rank left it.
    let ranks = dir.path().join("pcontrol.ranks");
    let ranks = ranks.to_str().expect("utf-8");
    let part = dir.path().join("setup.pftrace");
    let r = overlap(&[
        "merge",
        ranks,
        "--out",
        part.to_str().expect("utf-8"),
        "--region",
        "setup",
    ]);
    assert!(r.success(), "{}", r.describe());
    r.assert_stderr_has("region setup: ");
    let bytes = std::fs::read(&part).expect("written");
    let has = |name: &str| bytes.windows(name.len()).any(|w| w == name.as_bytes());
    assert!(has("MPI_Allreduce") && has("MPI_Pcontrol"));
    // The region drawn on each rank's track of regions.
    assert!(
        has("regions") && has("setup"),
        "the region's slice and track"
    );
    for outside in ["MPI_Init", "MPI_Finalize", "MPI_Bcast"] {
        assert!(!has(outside), "{outside} is outside the region");
    }
    let r = overlap(&[
        "merge",
        ranks,
        "--out",
        part.to_str().expect("utf-8"),
        "--region",
        "step#3",
    ]);
    assert!(r.success(), "{}", r.describe());

    // An unknown region, or instance: the run's regions are listed; exit 1.
    let unknown = |arg: &str| -> Run {
        let r = overlap(&[
            "merge",
            ranks,
            "--out",
            part.to_str().expect("utf-8"),
            "--region",
            arg,
        ]);
        assert_eq!(r.output.status.code(), Some(1), "{}", r.describe());
        r
    };
    unknown("solve").assert_stderr_has(
        "no region `solve` in the run; its regions: setup (1 instance), step (3 instances), \
         pcontrol (1 instance)",
    );
    unknown("step#4").assert_stderr_has("region `step` has 3 instance(s) on its ranks, not 4");
}

#[test]
fn pcontrol_regions_under_mpich() {
    check_c(Mpi::Default);
}

#[test]
fn pcontrol_regions_under_open_mpi() {
    let Some(mpi) = open_mpi() else { return };
    check_c(mpi);
}

fn check_fortran(mpi: Mpi) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("pcontrol_f.json");
    let (_, run) = untraced_then_traced(&Launch::of(mpi), 2, "pcontrol_f", &out);
    for rank in 0..2 {
        assert_eq!(
            marks(&out, rank),
            [named(1, "solve"), named(-1, "solve")],
            "rank {rank}\n{}",
            run.describe()
        );
    }
}

#[test]
fn fortran_pcontrol_names_under_mpich() {
    check_fortran(Mpi::Default);
}

#[test]
fn fortran_pcontrol_names_under_open_mpi() {
    let Some(mpi) = open_mpi() else { return };
    check_fortran(mpi);
}
