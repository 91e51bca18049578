//! The rank side of a hung run explaining itself, under real `mpiexec` with the preload
//! set up by hand (as `overlap trace` sets it up; its `--hang-timeout` and signal
//! handling are tested with the launcher): a deadlocked program dumps the calls its
//! ranks are stuck in once no call completed for `OVERLAP_HANG_TIMEOUT_MS`, marks each
//! rank `stalled`, and the analysis of what it left names the ranks, the calls, their
//! peers and tags, and the wait-for cycle. SIGUSR1 to a program that is not hung dumps
//! too, without breaking its trace.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use overlap_analyzer::import::read_merged;
use serde_json::Value;

use crate::trace::program;
use crate::util::{mpi_lock, overlap, overlap_bin};

/// `mpiexec -n 2 deadlock ARGS` with the preload, tracing to `dir`, in its own process
/// group.
fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Child {
    let preload = overlap_bin().with_file_name("liboverlap_preload.so");
    assert!(preload.is_file(), "{} is built", preload.display());
    Command::new("mpiexec")
        .args(["-n", "2"])
        .arg(program("deadlock"))
        .args(args)
        .env("LD_PRELOAD", &preload)
        .env("OVERLAP_TRACE_DIR", dir)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("mpiexec starts")
}

/// Ends the run: SIGKILL to its whole process group.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let pgid = self.0.id() as i32;
        // SAFETY: signals the process group this test started, and only it.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// The marker of each rank once both exist (generous limit: a loaded CI machine).
fn markers(dir: &Path) -> [String; 2] {
    let path = |r: u32| dir.join(format!("rank-{r}.dump"));
    let start = Instant::now();
    while !(path(0).is_file() && path(1).is_file()) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no rank-N.dump markers in {} after 60 s",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    [0, 1].map(|r| std::fs::read_to_string(path(r)).expect("a marker reads"))
}

/// `overlap merge DIR --out OUT`, then the JSON report of `overlap analyze --json OUT`.
fn merge_and_analyze(ranks: &Path, out: &Path) -> (Value, String) {
    let merged = overlap(&[
        "merge",
        ranks.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(merged.success(), "{}", merged.describe());
    let text = overlap(&["analyze", out.to_str().expect("utf-8")]);
    assert!(text.success(), "{}", text.describe());
    let json = overlap(&["analyze", "--json", out.to_str().expect("utf-8")]);
    assert!(json.success(), "{}", json.describe());
    let v: Value = serde_json::from_str(&json.stdout()).expect("the report is JSON");
    (v, text.stdout())
}

#[test]
fn a_deadlocked_run_dumps_its_blocked_receives_and_the_analysis_names_the_cycle() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let ranks: PathBuf = tmp.path().join("deadlock.ranks");
    {
        let _guard = mpi_lock();
        let _run = Group(start(&ranks, &[], &[("OVERLAP_HANG_TIMEOUT_MS", "500")]));
        for m in markers(&ranks) {
            let rest = m
                .strip_prefix("stalled ")
                .unwrap_or_else(|| panic!("{m:?}"));
            let unix_ns: u64 = rest.trim_end().parse().expect("unix ns");
            assert!(unix_ns > 1_600_000_000_000_000_000, "{m:?}");
        }
    }
    let out = tmp.path().join("deadlock.json");
    let (report, text) = merge_and_analyze(&ranks, &out);

    // The text: a "Hung run" section first (after the title and its indented lines,
    // where the recording's provenance is), one line per rank, and the cycle.
    let first = text
        .lines()
        .skip(1)
        .find(|l| !l.is_empty() && !l.starts_with(' '))
        .unwrap_or_default();
    assert!(first.starts_with("Hung run: 2 of 2 ranks"), "{text}");
    for (rank, peer, tag) in [(0, 1, 7), (1, 0, 8)] {
        let line =
            format!("rank {rank} blocked in MPI_Recv from rank {peer} tag {tag} (deadlock.c:");
        assert!(text.contains(&line), "{line:?} in\n{text}");
    }
    assert!(
        text.contains("wait-for cycle: rank 0 -> rank 1 -> rank 0"),
        "{text}"
    );

    // The JSON.
    let hang = &report["hang"];
    assert_eq!(hang["verdict"], "hung", "{hang:#}");
    assert_eq!(hang["cycle"], serde_json::json!([0, 1, 0]), "{hang:#}");
    for (rank, peer, tag) in [(0u64, 1u64, 7i64), (1, 0, 8)] {
        let r = &hang["ranks"][rank as usize];
        assert_eq!(r["state"], "stalled", "{r:#}");
        let call = &r["calls"][0];
        assert_eq!(call["call"], "MPI_Recv");
        assert_eq!(call["waits_for"][0]["rank"], peer);
        assert_eq!(call["waits_for"][0]["tag"], tag);
        assert!(
            call["blocked_ns"]
                .as_u64()
                .is_some_and(|ns| ns >= 400_000_000),
            "{call:#}"
        );
    }

    // The merged trace keeps each rank's dump and draws the blocked call.
    let t = read_merged(&out).expect("the merged trace reads back");
    for r in &t.info.ranks {
        let dump = r.in_flight.as_ref().expect("each rank's dump");
        assert_eq!(dump.calls.len(), 1);
    }
    let raw = std::fs::read_to_string(&out).expect("merged file");
    assert!(raw.contains("\"MPI_Recv (blocked, in flight at dump)\""));
}

#[test]
fn sigusr1_to_a_running_program_dumps_and_its_trace_stays_whole() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let ranks = tmp.path().join("running.ranks");
    {
        let _guard = mpi_lock();
        // Exchanges for 4 s, then finalizes.
        let mut run = Group(start(&ranks, &["run", "4000"], &[]));
        // MPICH's mpiexec passes SIGUSR1 on to the ranks. A rank installs its handler at
        // the end of its MPI_Init: signal until both have dumped.
        let marker = |r: u32| ranks.join(format!("rank-{r}.dump"));
        let begun = Instant::now();
        while !(marker(0).is_file() && marker(1).is_file()) {
            assert!(
                begun.elapsed() < Duration::from_secs(60),
                "no dump after 60 s"
            );
            // Its 4 s of exchanges over before both ranks dumped: no use waiting on.
            if let Some(status) = run.0.try_wait().expect("waiting for mpiexec") {
                assert!(
                    marker(0).is_file() && marker(1).is_file(),
                    "the program ended ({status}) before both ranks dumped"
                );
            }
            std::thread::sleep(Duration::from_millis(250));
            if (0..2).all(|r| ranks.join(format!("rank-{r}.ovlp")).is_file()) {
                // SAFETY: signals the mpiexec this test started.
                unsafe { libc::kill(run.0.id() as i32, libc::SIGUSR1) };
            }
        }
        for m in markers(&ranks) {
            assert!(m.starts_with("signal "), "{m:?}");
        }
        let status = run.0.wait().expect("mpiexec ends");
        assert!(status.success(), "the program ran to its end: {status:?}");
    }
    let out = tmp.path().join("running.json");
    let (report, _) = merge_and_analyze(&ranks, &out);
    assert_eq!(
        report["run"]["incomplete_ranks"],
        serde_json::json!([]),
        "{:#}",
        report["run"]
    );
    let hang = &report["hang"];
    assert_ne!(hang["verdict"], "hung", "{hang:#}");
    let t = read_merged(&out).expect("the merged trace reads back");
    assert!(t.info.incomplete.is_empty(), "{:?}", t.info.incomplete);
    for r in &t.info.ranks {
        let dump = r.in_flight.as_ref().expect("each rank dumped");
        assert_eq!(dump.reason, overlap_instrument::schema::DumpReason::Signal);
    }
    for rank in 0..2 {
        let finalize = t.events[&rank]
            .iter()
            .filter(|e| matches!(e, overlap_instrument::schema::Event::Call(c) if c.op == overlap_instrument::schema::Op::Finalize))
            .count();
        assert_eq!(finalize, 1, "rank {rank} recorded to its end");
    }
}
