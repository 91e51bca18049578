//! Running the binaries. MPI runs are serialised: the machine has few cores, and runs
//! that share them would only slow each other down.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

static MPI_RUNS: Mutex<()> = Mutex::new(());

/// Held while an MPI job runs.
pub fn mpi_lock() -> MutexGuard<'static, ()> {
    MPI_RUNS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `cmd` to its end, for `limit` at most: past it the command gets SIGTERM (`overlap
/// trace` then stops the run and merges), and SIGKILL 10 s later, so that a launch that
/// hangs fails its test instead of holding the whole suite.
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?} runs: {e}"));
    let pid = i32::try_from(child.id()).expect("a pid");
    let done = Arc::new(AtomicBool::new(false));
    let watch = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut signal = libc::SIGTERM;
            let mut deadline = limit;
            while !done.load(Ordering::Acquire) {
                if start.elapsed() > deadline {
                    // SAFETY: a signal to the child this function started, still running.
                    unsafe { libc::kill(pid, signal) };
                    if signal == libc::SIGKILL {
                        return;
                    }
                    signal = libc::SIGKILL;
                    deadline = limit + Duration::from_secs(10);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let out = child.wait_with_output().expect("the command's output");
    done.store(true, Ordering::Release);
    let _ = watch.join();
    out
}

/// How long one MPI launch of the tests may take (they take seconds).
pub const LAUNCH_LIMIT: Duration = Duration::from_secs(300);

pub fn overlap_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_overlap"))
}

/// The kernels binary built next to `overlap` (by `make test`, or by `cargo test
/// --workspace`, which builds it for the kernels package's own tests).
pub fn kernels_bin() -> PathBuf {
    let p = overlap_bin().with_file_name("overlap-kernels");
    assert!(
        p.is_file(),
        "{} is not built: run `make test` (or `cargo build --workspace --bins` first)",
        p.display()
    );
    p
}

pub struct Run {
    pub output: Output,
}

impl Run {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
    pub fn success(&self) -> bool {
        self.output.status.success()
    }
    /// Panics, showing the whole run, unless stdout contains `needle`.
    pub fn assert_stdout_has(&self, needle: &str) {
        assert!(
            self.stdout().contains(needle),
            "stdout lacks {needle:?}:\n{}",
            self.describe()
        );
    }
    /// Panics, showing the whole run, unless stderr contains `needle`.
    pub fn assert_stderr_has(&self, needle: &str) {
        assert!(
            self.stderr().contains(needle),
            "stderr lacks {needle:?}:\n{}",
            self.describe()
        );
    }

    /// Panics, showing the whole run, when `overlap trace` said the program calls MPI
    /// functions it does not record (every call of the program must be recorded, or
    /// negligible: through every binding, C or Fortran).
    pub fn assert_records_every_call(&self) {
        assert!(
            !self.stderr().contains("does not record"),
            "a call of the program is not recorded:\n{}",
            self.describe()
        );
    }

    pub fn describe(&self) -> String {
        format!(
            "status {}\n--- stdout\n{}\n--- stderr\n{}",
            self.output.status,
            self.stdout(),
            self.stderr()
        )
    }
}

/// Runs `overlap ARGS`.
pub fn overlap(args: &[&str]) -> Run {
    let output = Command::new(overlap_bin())
        .args(args)
        .env("OVERLAP_KERNELS", kernels_bin())
        .output()
        .expect("overlap runs");
    Run { output }
}

/// `overlap run false-overlap` with small, fast sizes and the given extra options.
pub fn run_false_overlap(ranks: u32, variant: &str, iters: u32, out: &Path, extra: &[&str]) -> Run {
    let _guard = mpi_lock();
    let ranks = ranks.to_string();
    let iters = iters.to_string();
    let out = out.to_str().expect("utf-8 temp path");
    let mut args = vec![
        "run",
        "false-overlap",
        "--ranks",
        &ranks,
        "--variant",
        variant,
        "--iters",
        &iters,
        "--out",
        out,
    ];
    // Small, fast defaults unless the test sets them.
    for (flag, value) in [("--size", "512"), ("--ratio", "4"), ("--compute", "20")] {
        if !extra.contains(&flag) {
            args.extend([flag, value]);
        }
    }
    args.extend_from_slice(extra);
    overlap(&args)
}

/// `overlap run KERNEL --ranks RANKS --out OUT` with `extra` options.
pub fn run_kernel(kernel: &str, ranks: u32, out: &Path, extra: &[&str]) -> Run {
    let _guard = mpi_lock();
    let ranks = ranks.to_string();
    let out = out.to_str().expect("utf-8 temp path");
    let mut args = vec!["run", kernel, "--ranks", &ranks, "--out", out];
    args.extend_from_slice(extra);
    overlap(&args)
}

/// The network a test's suggestion is replayed on when its run fitted none: a short run
/// on a loaded machine may have no clean transfer (both ends ready), and the truths the
/// suggest tests check are about the order and its gains, not the fit (tests/cli/
/// network.rs tests the fit, and its absence).
const FALLBACK_NETWORK: [&str; 4] = ["--latency", "1us", "--bandwidth", "4GB/s"];

/// `overlap suggest PATH ARGS... --json` on the trace's own network, or on
/// [`FALLBACK_NETWORK`] when it fits none: the JSON, and the arguments that gave it (for
/// a text run alike).
pub fn suggest_on_a_network(path: &str, args: &[&str]) -> (serde_json::Value, Vec<String>) {
    let json = |with: &[String]| -> serde_json::Value {
        let mut json: Vec<&str> = with.iter().map(String::as_str).collect();
        json.push("--json");
        let run = overlap(&json);
        assert!(run.success(), "{}", run.describe());
        serde_json::from_str(&run.stdout()).expect("suggest --json prints JSON")
    };
    let mut with: Vec<String> = (["suggest", path].iter().chain(args))
        .map(|a| a.to_string())
        .collect();
    let s = json(&with);
    if s["network"].get("unknown").is_none() {
        return (s, with);
    }
    with.extend(FALLBACK_NETWORK.iter().map(|a| a.to_string()));
    (json(&with), with)
}
