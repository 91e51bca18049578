//! The launcher owns its run: `overlap trace` stopped by SIGTERM or SIGINT stops the
//! whole run (mpiexec and the ranks), merges what the ranks recorded and exits 128 +
//! the signal; a SIGKILLed `overlap` takes the run down with it (parent-death signal);
//! `--hang-timeout` stops a run whose ranks all say they stalled (exit 124); and the
//! markers and rank files of an earlier run in a reused directory are removed first.
//!
//! Every wait polls with a generous limit: nothing here depends on how fast the machine
//! is, only on what eventually happens.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use overlap_analyzer::import::read_merged;
use overlap_instrument::schema::Op;

use crate::traces::counts;
use crate::util::{mpi_lock, overlap_bin};

/// Polls `done` every 50 ms for up to `limit`; true when it became true.
pub(crate) fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

/// True while some process's command line contains `needle`.
pub(crate) fn running(needle: &str) -> bool {
    Command::new("pgrep")
        .arg("-f")
        .arg(needle)
        .stdout(Stdio::null())
        .status()
        .expect("pgrep runs")
        .success()
}

/// `program` copied under a name no other test uses, so its processes can be told apart.
pub(crate) fn unique_copy(program: &Path, dir: &Path, name: &str) -> PathBuf {
    let copy = dir.join(name);
    std::fs::copy(program, &copy).expect("copying the test program");
    copy
}

/// `overlap trace --out OUT [extra] -- LAUNCH...`, started; its output goes to files in
/// `dir` (read them with `output`).
pub(crate) fn start_trace(dir: &Path, out: &Path, extra: &[&str], launch: &[&str]) -> Child {
    let file = |name: &str| std::fs::File::create(dir.join(name)).expect("output file");
    Command::new(overlap_bin())
        .arg("trace")
        .arg("--out")
        .arg(out)
        .args(extra)
        .arg("--")
        .args(launch)
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("overlap starts")
}

pub(crate) fn output(dir: &Path) -> String {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        read("stdout"),
        read("stderr")
    )
}

/// Waits for `child` to end, killing it (and failing) after `limit`.
pub(crate) fn wait_for(child: &mut Child, limit: Duration, dir: &Path) -> ExitStatus {
    let mut status = None;
    let ended = eventually(limit, || {
        status = child.try_wait().expect("waiting for overlap");
        status.is_some()
    });
    if !ended {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "overlap did not end within {} s:\n{}",
            limit.as_secs(),
            output(dir)
        );
    }
    status.expect("ended")
}

pub(crate) fn send(child: &Child, signal: i32) {
    // SAFETY: plain kill(2) on a child of this test.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    assert_eq!(rc, 0, "signal {signal} sent to overlap");
}

/// Waits (60 s at most) until both ranks' files in `ranks_dir` hold more than their
/// header (calls were flushed); on failure kills `overlap` (`child`, output in `dir`)
/// and its run, and fails.
pub(crate) fn wait_until_recorded(child: &Child, ranks_dir: &Path, dir: &Path) {
    let recorded = eventually(Duration::from_secs(60), || {
        (0..2).all(|r| {
            std::fs::metadata(ranks_dir.join(format!("rank-{r}.ovlp")))
                .is_ok_and(|m| m.len() > 8192)
        })
    });
    if !recorded {
        send(child, libc::SIGKILL);
        panic!("the ranks recorded nothing in 60 s:\n{}", output(dir));
    }
}

/// Runs the endless program under `overlap trace`, stops `overlap` with `signal`, and
/// checks the exit status, that no process of the run is left, and the merged trace.
fn stopped_by(signal: i32, name: &str) {
    let _guard = mpi_lock();
    let dir = tempfile::tempdir().expect("temp dir");
    let spin = unique_copy(&crate::trace::program("spin"), dir.path(), name);
    let out = dir.path().join("run.json");
    let spin_arg = spin.to_str().expect("utf-8 temp path");
    let mut child = start_trace(dir.path(), &out, &[], &["mpiexec", "-n", "2", spin_arg]);
    let ranks_dir = out.with_extension("ranks");
    wait_until_recorded(&child, &ranks_dir, dir.path());
    send(&child, signal);
    let status = wait_for(&mut child, Duration::from_secs(60), dir.path());
    let text = output(dir.path());
    assert_eq!(status.code(), Some(128 + signal), "{text}");
    // overlap waited for the run: nothing of it is left.
    assert!(
        eventually(Duration::from_secs(10), || !running(spin_arg)),
        "ranks of the run are left:\n{text}"
    );
    let signal_name = if signal == libc::SIGINT {
        "SIGINT"
    } else {
        "SIGTERM"
    };
    assert!(
        text.contains(&format!(
            "interrupted by {signal_name}: the run was stopped"
        )) && text.contains(&format!(
            "what the ranks recorded is merged in {}",
            out.display()
        )),
        "{text}"
    );
    let trace = read_merged(&out).expect("the merged trace reads back");
    let calls = counts(&trace);
    assert_eq!(calls.len(), 2, "both ranks merged:\n{text}");
    for (rank, per) in &calls {
        let allreduces = per.get(&Op::Allreduce).copied().unwrap_or(0);
        assert!(
            allreduces > 0,
            "rank {rank} kept its Allreduce calls:\n{text}"
        );
    }
}

#[test]
fn sigterm_stops_the_whole_run_and_merges_what_was_recorded() {
    stopped_by(libc::SIGTERM, "spin-sigterm");
}

#[test]
fn sigint_stops_the_whole_run_and_merges_what_was_recorded() {
    stopped_by(libc::SIGINT, "spin-sigint");
}

#[test]
fn a_killed_overlap_takes_its_run_down() {
    let _guard = mpi_lock();
    let dir = tempfile::tempdir().expect("temp dir");
    let spin = unique_copy(&crate::trace::program("spin"), dir.path(), "spin-sigkill");
    let spin_arg = spin.to_str().expect("utf-8 temp path");
    let out = dir.path().join("run.json");
    let mut child = start_trace(dir.path(), &out, &[], &["mpiexec", "-n", "2", spin_arg]);
    let ranks_dir = out.with_extension("ranks");
    wait_until_recorded(&child, &ranks_dir, dir.path());
    assert!(running(spin_arg), "the ranks run");
    send(&child, libc::SIGKILL);
    let status = wait_for(&mut child, Duration::from_secs(10), dir.path());
    assert_eq!(status.code(), None, "killed");
    // The launcher got SIGTERM when overlap died, and took its ranks down.
    assert!(
        eventually(Duration::from_secs(30), || !running(spin_arg)),
        "the run outlived overlap:\n{}",
        output(dir.path())
    );
}

/// A launcher that plays the ranks' side of the hang contract: it writes rank 0's file
/// and its `stalled` marker, then waits forever, as a hung run does.
#[test]
fn a_run_whose_ranks_all_stalled_is_stopped_as_hung() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("hung.json");
    let script = dir.path().join("hung-launcher.sh");
    std::fs::write(
        &script,
        "printf 'not a trace' > \"$OVERLAP_TRACE_DIR/rank-0.ovlp\"\n\
         test \"$OVERLAP_HANG_TIMEOUT_MS\" = 300 || exit 9\n\
         printf 'stalled 1\\n' > \"$OVERLAP_TRACE_DIR/rank-0.dump.tmp\"\n\
         mv \"$OVERLAP_TRACE_DIR/rank-0.dump.tmp\" \"$OVERLAP_TRACE_DIR/rank-0.dump\"\n\
         while :; do sleep 1; done\n",
    )
    .expect("script");
    let script_arg = script.to_str().expect("utf-8 temp path");
    let mut child = start_trace(
        dir.path(),
        &out,
        &["--hang-timeout", "0.3s"],
        &["sh", script_arg],
    );
    let status = wait_for(&mut child, Duration::from_secs(60), dir.path());
    let text = output(dir.path());
    assert_eq!(status.code(), Some(124), "{text}");
    assert!(
        text.contains("no MPI call completed on any rank for 0.3 s: the run is hung; stopping it"),
        "{text}"
    );
    assert!(text.contains("the run was hung: it was stopped"), "{text}");
    assert!(
        eventually(Duration::from_secs(10), || !running(script_arg)),
        "the launcher is left:\n{text}"
    );
}

#[test]
fn a_reused_trace_directory_loses_only_the_old_rank_files_and_markers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("again.json");
    let ranks_dir = out.with_extension("ranks");
    std::fs::create_dir(&ranks_dir).expect("ranks dir");
    for stale in [
        "rank-0.ovlp",
        "rank-1.json",
        "rank-0.dump",
        "rank-1.dump.tmp",
    ] {
        std::fs::write(ranks_dir.join(stale), "stalled 1\n").expect("stale file");
    }
    std::fs::write(ranks_dir.join("notes.txt"), "mine").expect("user file");
    // The stale markers must not make this run look hung: it ends by itself, recording
    // nothing, and is reported as such.
    let mut child = start_trace(
        dir.path(),
        &out,
        &["--hang-timeout", "100ms"],
        &["sh", "-c", "sleep 1"],
    );
    let status = wait_for(&mut child, Duration::from_secs(60), dir.path());
    let text = output(dir.path());
    assert_eq!(status.code(), Some(1), "{text}");
    assert!(text.contains("left no readable trace"), "{text}");
    assert!(!text.contains("hung"), "{text}");
    let mut left: Vec<String> = std::fs::read_dir(&ranks_dir)
        .expect("ranks dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    // The lock file the run held its directory by stays (empty of meaning once free).
    assert_eq!(left, [".overlap.lock", "notes.txt"]);
}

/// A real deadlock under `--hang-timeout`: each rank's preload notices that no call
/// completed, dumps what it is inside and says so with its `stalled` marker; `overlap
/// trace` stops the run, merges it and says where each rank hung.
#[test]
fn a_deadlocked_run_is_stopped_as_hung() {
    let _guard = mpi_lock();
    let dir = tempfile::tempdir().expect("temp dir");
    let deadlock = unique_copy(&crate::trace::program("deadlock"), dir.path(), "deadlock-x");
    let arg = deadlock.to_str().expect("utf-8 temp path");
    let out = dir.path().join("deadlock.json");
    let mut child = start_trace(
        dir.path(),
        &out,
        &["--hang-timeout", "1s"],
        &["mpiexec", "-n", "2", arg],
    );
    let status = wait_for(&mut child, Duration::from_secs(120), dir.path());
    let text = output(dir.path());
    assert_eq!(status.code(), Some(124), "{text}");
    assert!(text.contains("the run is hung; stopping it"), "{text}");
    for line in [
        "Hung run: 2 of 2 ranks stuck in MPI",
        "rank 0 blocked in MPI_Recv from rank 1 tag 7 (deadlock.c:",
        "rank 1 blocked in MPI_Recv from rank 0 tag 8 (deadlock.c:",
        "wait-for cycle: rank 0 -> rank 1 -> rank 0",
        // The summary does not pass the blocked time off as the run's.
        "with 2 rank(s) inside calls that never completed: the time they spent there is in \
         no figure above",
    ] {
        assert!(text.contains(line), "{line:?} in:\n{text}");
    }
    assert!(
        eventually(Duration::from_secs(10), || !running(arg)),
        "{text}"
    );
    let trace = read_merged(&out).expect("the merged trace reads back");
    for (rank, per) in counts(&trace) {
        assert_eq!(per.get(&Op::Barrier), Some(&10), "rank {rank}:\n{text}");
    }
}

/// `overlap run` owns its run as `overlap trace` does: SIGTERM stops the kernels binary
/// on every rank (told apart by the trace directory on its command line), and what they
/// recorded is merged.
#[test]
fn sigterm_stops_a_kernel_run_and_merges_it() {
    let _guard = mpi_lock();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("endless.json");
    let ranks_dir = out.with_extension("ranks");
    let file = |name: &str| std::fs::File::create(dir.path().join(name)).expect("output file");
    let mut child = Command::new(overlap_bin())
        .args([
            "run",
            "false-overlap",
            "-n",
            "2",
            "--size",
            "512",
            "--ratio",
            "4",
        ])
        .args(["--compute", "200", "--iters", "100000000", "--out"])
        .arg(&out)
        .env("OVERLAP_KERNELS", crate::util::kernels_bin())
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("overlap starts");
    wait_until_recorded(&child, &ranks_dir, dir.path());
    send(&child, libc::SIGTERM);
    let status = wait_for(&mut child, Duration::from_secs(60), dir.path());
    let text = output(dir.path());
    assert_eq!(status.code(), Some(143), "{text}");
    let ranks_arg = ranks_dir.to_str().expect("utf-8 temp path");
    assert!(
        eventually(Duration::from_secs(10), || !running(ranks_arg)),
        "ranks of the run are left:\n{text}"
    );
    assert!(
        text.contains("interrupted by SIGTERM: the run was stopped"),
        "{text}"
    );
    let trace = read_merged(&out).expect("the merged trace reads back");
    for (rank, per) in counts(&trace) {
        assert!(
            per.get(&Op::Isend).copied().unwrap_or(0) > 0,
            "rank {rank}:\n{text}"
        );
    }
}
