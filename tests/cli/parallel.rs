//! `overlap analyze --parallel W`: the analysis of a directory of rank files as an MPI
//! job of W workers (each reads and digests its share of the files, worker 0 makes the
//! report), started by MPICH's `mpiexec`, Open MPI's `mpirun` and Slurm's `srun`, set
//! against the analysis of one process: the same report, the same warnings, the same
//! errors, and no report at all when a worker dies.

use std::path::{Path, PathBuf};
use std::process::Command;

use polars::prelude::{ParquetReader, SerReader};

use crate::mpis::{open_mpi, Launch, Mpi};
use crate::slurm::cluster;
use crate::util::{mpi_lock, output_within, overlap, overlap_bin, Run, LAUNCH_LIMIT};

/// The kept runs' directories of rank files (recorded under MPICH: C, threads,
/// one-sided, GPU, a window...).
fn kept_runs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("analyzer/tests/data/reports");
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("the kept runs")
        .map(|e| e.expect("an entry").path().join("ranks"))
        .filter(|p| p.is_dir())
        .collect();
    runs.sort();
    assert!(runs.len() >= 10, "kept runs: {runs:?}");
    runs
}

/// `overlap analyze DIR --parallel WORKERS --launcher LAUNCH ARGS`, in `launch`'s
/// environment.
fn analyze_in(launch: &Launch, workers: u32, dir: &Path, args: &[&str]) -> Run {
    let _guard = mpi_lock();
    let mut cmd = Command::new(overlap_bin());
    cmd.arg("analyze")
        .arg(dir)
        .args(["--parallel", &workers.to_string()])
        .args(["--launcher", &launch.command_line()])
        .args(args);
    launch.environment(&mut cmd);
    Run {
        output: output_within(&mut cmd, LAUNCH_LIMIT),
    }
}

/// The analysis of one process, in parts (as each worker reads its share).
fn alone(dir: &Path, args: &[&str]) -> Run {
    let dir = dir.to_str().expect("a UTF-8 path");
    let mut all = vec!["analyze", dir, "--hold", "parts"];
    all.extend_from_slice(args);
    let run = overlap(&all);
    assert!(run.success(), "{}", run.describe());
    run
}

/// Every kept run analysed by `launch`'s workers, as many as each of `workers`, prints
/// what one process prints, on stdout and stderr.
fn check_kept_runs(launch: &Launch, workers: &[u32], args: &[&str]) {
    for dir in kept_runs() {
        let one = alone(&dir, args);
        for &w in workers {
            let run = analyze_in(launch, w, &dir, args);
            let at = format!("{} on {w} workers of {}", dir.display(), launch.described);
            assert!(run.success(), "{at}: {}", run.describe());
            assert_eq!(run.stdout(), one.stdout(), "{at}: the report");
            assert_eq!(run.stderr(), one.stderr(), "{at}: the warnings");
        }
    }
}

#[test]
fn workers_under_mpiexec_report_what_one_process_reports() {
    let launch = Launch::of(Mpi::Default);
    check_kept_runs(&launch, &[1, 2, 4], &["--json"]);
    // The text report too, with its profile, on one run.
    let dir = &kept_runs()[0];
    let args = ["--full", "--profile"];
    let run = analyze_in(&launch, 3, dir, &args);
    assert!(run.success(), "{}", run.describe());
    assert_eq!(run.stdout(), alone(dir, &args).stdout());
}

#[test]
fn workers_under_open_mpi_report_what_one_process_reports() {
    let Some(mpi) = open_mpi() else { return };
    check_kept_runs(&Launch::of(mpi), &[2, 4], &["--json"]);
}

#[test]
fn workers_under_srun_report_what_one_process_reports() {
    let Some(slurm) = cluster() else { return };
    // The cluster has this machine's cores (2 here): four workers overcommit them.
    let launch = Launch::srun(Mpi::Default, &slurm.conf()).overcommitted();
    check_kept_runs(&launch, &[2, 4], &["--json"]);
    if let Some(mpi) = open_mpi() {
        // srun does not say which MPI it starts: told with --mpi.
        let launch = Launch::srun(mpi, &slurm.conf()).overcommitted();
        check_kept_runs(&launch, &[2, 4], &["--json", "--mpi", "openmpi"]);
    }
}

/// `mpiexec -n 3 overlap analyze DIR`: overlap started by an MPI launcher is a worker of
/// that job without being told, and the job prints the report once.
#[test]
fn overlap_started_by_mpiexec_is_a_worker() {
    let dir = &kept_runs()[1];
    let one = alone(dir, &["--json"]);
    let _guard = mpi_lock();
    let mut cmd = Command::new("mpiexec");
    cmd.args(["-n", "3"])
        .arg(overlap_bin())
        .arg("analyze")
        .arg(dir)
        .arg("--json");
    let run = Run {
        output: output_within(&mut cmd, LAUNCH_LIMIT),
    };
    assert!(run.success(), "{}", run.describe());
    assert_eq!(run.stdout(), one.stdout());
}

/// A worker killed (here before it starts MPI, by a launcher that wraps `mpiexec`) ends
/// the job: no report, exit status 1, and the launcher's words on stderr.
#[test]
fn a_worker_that_dies_ends_the_job_with_no_report() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let die = tmp.path().join("die.sh");
    let launcher = tmp.path().join("launch.sh");
    std::fs::write(
        &die,
        "#!/bin/sh\nif [ \"$PMI_RANK\" = 1 ]; then kill -9 $$; fi\nexec \"$@\"\n",
    )
    .expect("written");
    // Called as `launch.sh -n W PROGRAM ARGS...`.
    let script = format!(
        "#!/bin/sh\nn=\"$2\"; shift 2\nexec mpiexec -n \"$n\" {} \"$@\"\n",
        die.display()
    );
    std::fs::write(&launcher, script).expect("written");
    for f in [&die, &launcher] {
        let status = Command::new("chmod").arg("+x").arg(f).status();
        assert!(status.is_ok_and(|s| s.success()));
    }
    let dir = &kept_runs()[0];
    let launch = launcher.to_str().expect("a UTF-8 path");
    let _guard = mpi_lock();
    let mut cmd = Command::new(overlap_bin());
    cmd.arg("analyze")
        .arg(dir)
        .args(["--parallel", "2", "--launcher", launch, "--json"]);
    let run = Run {
        output: output_within(&mut cmd, LAUNCH_LIMIT),
    };
    assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
    assert_eq!(run.stdout(), "", "no report");
    // What Hydra says of the worker varies with when it saw it die (its exit string,
    // or its PMI connection closed): only that the job failed is ours to say.
    run.assert_stderr_has("the 2 analysis workers failed");
}

/// A copy of the kept run `name`'s rank files in a new directory.
fn copy_of(name: &str) -> tempfile::TempDir {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("analyzer/tests/data/reports")
        .join(name)
        .join("ranks");
    let to = tempfile::tempdir().expect("a temporary directory");
    for entry in std::fs::read_dir(&from).expect("the kept run") {
        let path = entry.expect("an entry").path();
        let copied = to.path().join(path.file_name().expect("a file name"));
        std::fs::copy(&path, copied).expect("copied");
    }
    to
}

/// A rank file that only the last worker reads, and cannot use, is said as one process
/// says it, and the report of the others' ranks is the same; a directory of none that
/// can be used fails as one process fails.
#[test]
fn a_rank_file_a_worker_cannot_read_is_reported_as_one_process_reports_it() {
    let launch = Launch::of(Mpi::Default);
    let run = copy_of("c-ring");
    std::fs::write(run.path().join("rank-2.ovlp"), b"not a rank file").expect("written");
    let one = alone(run.path(), &["--json"]);
    one.assert_stderr_has("rank-2.ovlp");
    let workers = analyze_in(&launch, 3, run.path(), &["--json"]);
    assert!(workers.success(), "{}", workers.describe());
    assert_eq!(workers.stdout(), one.stdout());
    assert_eq!(workers.stderr(), one.stderr());

    for rank in 0..2 {
        let file = run.path().join(format!("rank-{rank}.ovlp"));
        std::fs::write(file, b"no rank file either").expect("written");
    }
    let dir = run.path().to_str().expect("a UTF-8 path");
    let one = overlap(&["analyze", dir, "--hold", "parts", "--json"]);
    assert_eq!(one.output.status.code(), Some(1), "{}", one.describe());
    one.assert_stderr_has("no usable per-rank trace file");
    let workers = analyze_in(&launch, 2, run.path(), &["--json"]);
    assert_eq!(
        workers.output.status.code(),
        Some(1),
        "{}",
        workers.describe()
    );
    assert_eq!(workers.stdout(), "");
    let said = one.stderr();
    let error = said.lines().find(|l| l.starts_with("overlap: error:"));
    let error = error.expect("one process's error");
    workers.assert_stderr_has(error);
}

/// `--csv` and `--parquet` of a job (MPICH's, and Open MPI's where it is installed):
/// each worker encodes its block's rows, worker 0 writes them all, and the tables are
/// those of one process holding the run whole (the CSV files byte for byte, the Parquet
/// files the same rows, their row groups cut at each worker's block too), said once;
/// the other workers write nothing.
#[test]
fn the_workers_write_the_tables_of_one_process() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let at = |name: &str| tmp.path().join(name).to_str().expect("UTF-8").to_string();
    let launches: Vec<Launch> = [Some(Mpi::Default), open_mpi()]
        .into_iter()
        .flatten()
        .map(Launch::of)
        .collect();
    // Calls of every kind, and a run with GPU work (its staging chains' table).
    let runs = kept_runs();
    let named = |name: &str| {
        runs.iter()
            .find(|d| d.parent().is_some_and(|p| p.ends_with(name)))
    };
    let files = |name: &str| {
        let mut files: Vec<_> = std::fs::read_dir(at(name))
            .expect("the tables")
            .map(|e| e.expect("an entry").file_name())
            .collect();
        files.sort();
        files
    };
    for dir in ["c-calls", "gpu-bulk"].map(|name| named(name).expect("a kept run")) {
        let path = dir.to_str().expect("a UTF-8 path");
        let (csv, pq) = (at("whole.csv"), at("whole.pq"));
        let args = [
            "analyze",
            path,
            "--hold",
            "whole",
            "--csv",
            &csv,
            "--parquet",
            &pq,
        ];
        let whole = overlap(&args);
        assert!(whole.success(), "{}", whole.describe());
        let csv = files("whole.csv");
        assert!(csv.len() >= 8, "{csv:?}");
        for launch in &launches {
            let at_run = format!("{} under {}", dir.display(), launch.described);
            let args = ["--csv", &at("job.csv"), "--parquet", &at("job.pq")];
            let run = analyze_in(launch, 3, dir, &args);
            assert!(run.success(), "{at_run}: {}", run.describe());
            assert_eq!(run.stdout(), whole.stdout(), "{at_run}: the report");
            let said = whole.stderr().replace("whole.", "job.");
            assert_eq!(run.stderr(), said, "{at_run}: said once");
            assert_eq!(files("job.pq"), files("whole.pq"), "{at_run}: Parquet");
            assert_eq!(files("job.csv"), csv, "{at_run}: CSV");
            let read = |d: &str, name: &std::ffi::OsStr| {
                std::fs::read(Path::new(&at(d)).join(name)).expect("read")
            };
            for name in files("whole.csv") {
                let same = read("job.csv", &name) == read("whole.csv", &name);
                assert!(same, "{at_run}: job.csv/{name:?}");
            }
            let frame = |d: &str, name: &std::ffi::OsStr| {
                let file = std::fs::File::open(Path::new(&at(d)).join(name)).expect("open");
                ParquetReader::new(file).finish().expect("a Parquet file")
            };
            for name in files("whole.pq") {
                let (job, whole) = (frame("job.pq", &name), frame("whole.pq", &name));
                assert!(job.equals_missing(&whole), "{at_run}: job.pq/{name:?}");
            }
            for d in ["job.csv", "job.pq"] {
                std::fs::remove_dir_all(at(d)).expect("removed");
            }
        }
        for d in ["whole.csv", "whole.pq"] {
            std::fs::remove_dir_all(at(d)).expect("removed");
        }
    }
}

/// Tables asked for in a directory worker 0 cannot make: the job ends with the error one
/// process gives, said once, and no worker waits for worker 0 (under `mpiexec`, Open
/// MPI's `mpirun` and `srun`).
#[test]
fn tables_worker_0_cannot_write_end_the_job_with_its_error() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let missing = tmp.path().join("no").join("tables");
    let missing = missing.to_str().expect("UTF-8");
    let dir = &kept_runs()[0];
    let path = dir.to_str().expect("a UTF-8 path");
    let one = overlap(&["analyze", path, "--hold", "parts", "--csv", missing]);
    assert_eq!(one.output.status.code(), Some(1), "{}", one.describe());
    let said = one.stderr();
    let error = said.lines().find(|l| l.starts_with("overlap: error:"));
    let error = error.expect("one process's error");
    let mut launches: Vec<Launch> = [Some(Mpi::Default), open_mpi()]
        .into_iter()
        .flatten()
        .map(Launch::of)
        .collect();
    // The cluster runs while its guard lives.
    let slurm = cluster();
    if let Some(slurm) = &slurm {
        launches.push(Launch::srun(Mpi::Default, &slurm.conf()));
    }
    for launch in &launches {
        let run = analyze_in(launch, 2, dir, &["--csv", missing]);
        assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
        let times = run.stderr().matches(error).count();
        assert_eq!(
            times,
            1,
            "{}: said once: {}",
            launch.described,
            run.describe()
        );
        assert!(run.stdout().is_empty(), "no report: {}", run.describe());
    }
    assert!(!tmp.path().join("no").exists(), "nothing made");
}

#[test]
fn what_the_workers_cannot_take_is_refused_before_any_is_started() {
    let dir = kept_runs()[0].to_str().expect("a UTF-8 path").to_string();
    for (extra, said) in [
        (&["--hold", "whole"][..], "--hold whole"),
        (&["--from", "1ms"][..], "a window of the run"),
    ] {
        let mut args = vec!["analyze", &dir, "--parallel", "2"];
        args.extend_from_slice(extra);
        let run = overlap(&args);
        assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
        run.assert_stderr_has(said);
    }
    // One rank's file, or a merged trace: not a directory of rank files.
    let file = format!("{dir}/rank-0.ovlp");
    let run = overlap(&["analyze", &file, "--parallel", "2"]);
    assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
    run.assert_stderr_has("--parallel analyses a directory of rank files");
    assert_eq!(
        run.stderr().lines().count(),
        1,
        "said once: {}",
        run.stderr()
    );
}
