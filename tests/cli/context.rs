//! Issue 42, items 4 and 5: what `overlap` says about the run's context (ranks sharing
//! cores, GPU runtimes, what "events" counts) and how it takes what it is given (units,
//! `--`, a missing program, a program run without a launcher, `diff` of unlike runs).
//! Real programs run the real way, under `mpiexec`, where a run is needed.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use crate::trace::program;
use crate::util::{mpi_lock, output_within, overlap, overlap_bin, Run, LAUNCH_LIMIT};

/// `overlap ARGS` run in `dir`, MPI runs serialised.
fn overlap_in(dir: &Path, args: &[&str]) -> Run {
    let _mpi = mpi_lock();
    let mut cmd = Command::new(overlap_bin());
    cmd.args(args).current_dir(dir);
    Run {
        output: output_within(&mut cmd, LAUNCH_LIMIT),
    }
}

#[test]
fn r42_a_launch_command_without_dashes_is_told_to_add_them() {
    let run = overlap(&["trace", "mpiexec", "-n", "4", "./app"]);
    assert_eq!(run.output.status.code(), Some(2), "{}", run.describe());
    run.assert_stderr_has("unexpected argument 'mpiexec'");
    run.assert_stderr_has("the launch command goes after `--`: `overlap trace [OPTIONS] --");
    // Other subcommands' mistakes get clap's words alone.
    let run = overlap(&["analyze", "a.json", "b.json"]);
    assert_eq!(run.output.status.code(), Some(2));
    assert!(
        !run.stderr().contains("goes after `--`"),
        "{}",
        run.describe()
    );
}

#[test]
fn r42_a_missing_program_is_named_as_missing() {
    let dir = tempfile::tempdir().unwrap();
    let run = overlap_in(
        dir.path(),
        &["trace", "--", "mpiexec", "-n", "2", "./does-not-exist"],
    );
    assert!(!run.success(), "{}", run.describe());
    run.assert_stderr_has("the program ./does-not-exist does not exist (no such file here)");
    assert!(
        !run.stderr().contains("was it an MPI program"),
        "{}",
        run.describe()
    );
}

#[test]
fn r42_an_mpi_program_run_without_a_launcher_is_told_to_use_one() {
    let dir = tempfile::tempdir().unwrap();
    let halo = program("halo");
    let halo = halo.to_str().unwrap();
    let run = overlap_in(
        dir.path(),
        &["trace", "--out", "t.json", "--", halo, "early"],
    );
    // MPICH starts it as a single rank, traced; the user hears why there is one.
    assert!(run.success(), "{}", run.describe());
    run.assert_stderr_has(&format!(
        "{halo} links MPICH (libmpich.so.12) and is run without a launcher: it runs as a \
         single rank"
    ));
    run.assert_stderr_has(&format!("`overlap trace -- mpiexec -n 4 {halo} early`"));
    run.assert_stderr_has("merged 1 rank(s)");
    assert!(
        !run.stderr().contains("no program of the command links"),
        "{}",
        run.describe()
    );
}

/// A kept merged trace of analyzer/tests/data/reports.
fn kept(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("analyzer/tests/data/reports")
        .join(name)
        .join("merged.json")
        .display()
        .to_string()
}

#[test]
fn r42_diff_of_unlike_runs_warns_as_check_does() {
    let (ring, fo) = (kept("c-ring"), kept("false-overlap"));
    let run = overlap(&["diff", &ring, &fo]);
    // Compared all the same (that may be the point), with each difference said.
    assert!(run.success(), "{}", run.describe());
    run.assert_stdout_has("run.wall");
    run.assert_stderr_has(&format!(
        "warning: {ring} ran 3 rank(s) in MPI_COMM_WORLD, {fo} 4"
    ));
    run.assert_stderr_has(&format!(
        "warning: {ring} and {fo} are of other programs or parameters: {ring} is "
    ));
    let like = overlap(&["diff", &ring, &ring]);
    assert!(like.success(), "{}", like.describe());
    assert!(!like.stderr().contains("warning"), "{}", like.describe());
}
