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
    run.assert_stdout_has("(run.waiting: whole calls that only wait; wait_states: ");
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

/// The merged trace of `overlap trace --out OUT -- [taskset -c 0] mpiexec -n RANKS
/// PROGRAM ARGS`, and the run.
fn traced(dir: &Path, one_cpu: bool, ranks: u32, prog: &str, args: &[&str]) -> Run {
    let prog = program(prog);
    let n = ranks.to_string();
    let mut cmd = vec!["trace", "--out", "t.json", "--"];
    if one_cpu {
        cmd.extend(["taskset", "-c", "0"]);
    }
    cmd.extend(["mpiexec", "-n", &n, prog.to_str().unwrap()]);
    cmd.extend(args);
    overlap_in(dir, &cmd)
}

/// Two ranks held to one CPU (taskset; MPICH's hydra binds nothing by default, so the
/// ranks keep the affinity): `trace`, `merge` and `analyze` (text and JSON) say that
/// they time-shared it, and by how much (the terminal UI's Summary shows the same line:
/// tui/tests/views.rs).
#[test]
fn r42_ranks_sharing_cpus_are_said_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let run = traced(dir.path(), true, 2, "halo", &["early"]);
    assert!(run.success(), "{}", run.describe());
    let said = "oversubscribed: 2 ranks ran on 1 CPU(s) of host ";
    run.assert_stderr_has(said);
    run.assert_stderr_has("(2×): waits include time-sharing");
    let t = dir.path().join("t.json");
    let text = overlap(&["analyze", t.to_str().unwrap()]);
    assert!(text.success(), "{}", text.describe());
    text.assert_stdout_has(said);
    let json = overlap(&["analyze", t.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout()).unwrap();
    let o = &v["run"]["oversubscription"];
    assert_eq!(o["oversubscribed"], true, "{o:#}");
    assert_eq!(o["hosts"][0]["cpus"], 1, "{o:#}");
    assert_eq!(o["hosts"][0]["ranks_per_cpu"], 2.0, "{o:#}");
    // Merged again by hand, the same line.
    let ranks = dir.path().join("t.ranks");
    let m = dir.path().join("m.json");
    let merged = overlap(&[
        "merge",
        ranks.to_str().unwrap(),
        "--out",
        m.to_str().unwrap(),
    ]);
    assert!(merged.success(), "{}", merged.describe());
    merged.assert_stdout_has(said);
}

/// MPICH's hwloc maps libOpenCL.so into every MPI program inside MPI_Init: no note for
/// a plain program, which does not list it among its own files; a program that opens
/// it itself gets the note, naming it as the program's.
#[test]
fn r42_the_gpu_note_is_for_the_programs_own_runtime_only() {
    let opencl = Path::new("/usr/lib/x86_64-linux-gnu/libOpenCL.so.1");
    let dir = tempfile::tempdir().unwrap();
    let run = traced(dir.path(), false, 2, "gpu_open", &[]);
    assert!(run.success(), "{}", run.describe());
    let t = dir.path().join("t.json");
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&t).unwrap()).unwrap();
    for r in merged["otherData"]["ranks"].as_array().unwrap() {
        let own = r["program_objects"]
            .as_str()
            .expect("the program's files listed");
        assert!(own.lines().next().unwrap().ends_with("/gpu_open"), "{own}");
        assert!(!own.contains("libmpich"), "MPI's own: {own}");
        assert!(!own.contains("libhwloc"), "only MPI needs it: {own}");
        assert!(!own.contains("libOpenCL"), "MPI's hwloc opened it: {own}");
    }
    let report = overlap(&["analyze", t.to_str().unwrap()]);
    assert!(report.success(), "{}", report.describe());
    assert!(
        !report.stdout().contains("GPU work not recorded"),
        "{}",
        report.describe()
    );
    if !opencl.exists() {
        return; // an MPI without hwloc's OpenCL plugin and no OpenCL here: nothing to open
    }
    let dir = tempfile::tempdir().unwrap();
    let run = traced(dir.path(), false, 2, "gpu_open", &["opencl"]);
    assert!(run.success(), "{}", run.describe());
    let t = dir.path().join("t.json");
    let report = overlap(&["analyze", t.to_str().unwrap()]);
    report.assert_stdout_has("GPU work not recorded: rank 0's program loads libOpenCL.so.1");
    let json = overlap(&["analyze", t.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout()).unwrap();
    assert_eq!(v["run"]["gpu_unrecorded"]["by"], "program", "{v:#}");
}

/// "events" counts one thing everywhere: what the ranks recorded. `trace`'s line says
/// the same count as `analyze` and names the file's entries apart.
#[test]
fn r42_events_mean_the_same_in_trace_and_analyze() {
    let dir = tempfile::tempdir().unwrap();
    let run = traced(dir.path(), false, 2, "halo", &["early"]);
    assert!(run.success(), "{}", run.describe());
    let line = run
        .stderr()
        .lines()
        .find(|l| l.starts_with("merged 2 rank(s): "))
        .unwrap_or_else(|| panic!("{}", run.describe()))
        .to_string();
    let events: u64 = line["merged 2 rank(s): ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(line.contains(" trace-file entries, "), "{line}");
    let t = dir.path().join("t.json");
    let json = overlap(&["analyze", t.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout()).unwrap();
    assert_eq!(v["run"]["events"], events, "{line}");
    let text = overlap(&["analyze", t.to_str().unwrap()]);
    text.assert_stdout_has(&format!(" ranks traced, {events} events, "));
    // Both waiting measures in one table, and what tells them apart under it.
    text.assert_stdout_has("wait st.");
    text.assert_stdout_has("waiting: whole calls of the kinds that only wait");
}
