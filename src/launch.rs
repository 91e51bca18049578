//! Launching a bundled kernel under `mpiexec`: finding the binaries, passing stdout
//! through, echoing and keeping the ranks' error lines, and telling apart a clean run
//! from a failed one.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use anyhow::{bail, Context, Result};

/// What to launch.
pub struct KernelLaunch {
    pub mpiexec: String,
    pub kernels: Option<PathBuf>,
    pub ranks: u32,
    pub kernel: String,
    pub kernel_args: Vec<String>,
    pub trace_dir: PathBuf,
}

/// How it ended.
pub struct LaunchOutcome {
    status: ExitStatus,
    rank_errors: Vec<String>,
    command: String,
}

impl LaunchOutcome {
    /// `None` when the run succeeded, else a message with the ranks' errors.
    pub fn failure(&self) -> Option<String> {
        if self.status.success() {
            return None;
        }
        let mut msg = format!("the kernel run failed ({})\n  command: {}", self.status, self.command);
        if self.rank_errors.is_empty() {
            msg.push_str("\n  no rank reported an error: a rank was probably killed");
        }
        for line in &self.rank_errors {
            msg.push_str("\n  ");
            msg.push_str(line);
        }
        Some(msg)
    }
}

fn kernels_binary(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let name = "overlap-kernels";
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            for candidate in [dir.join(name), dir.join("..").join(name)] {
                if candidate.is_file() {
                    return Ok(candidate);
                }
            }
        }
    }
    Ok(PathBuf::from(name))
}

/// Removes the per-rank files of an earlier run, so they cannot be merged by mistake.
fn clear_trace_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
            let path = entry?.path();
            if path.extension().is_some_and(|x| x == "json") {
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing the old {}", path.display()))?;
            }
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// Runs `mpiexec -n RANKS overlap-kernels KERNEL ARGS --trace-dir DIR`.
pub fn launch_kernel(l: &KernelLaunch) -> Result<LaunchOutcome> {
    clear_trace_dir(&l.trace_dir)?;
    let kernels = kernels_binary(l.kernels.as_deref())?;
    let mut cmd = Command::new(&l.mpiexec);
    cmd.arg("-n")
        .arg(l.ranks.to_string())
        .arg(&kernels)
        .arg(&l.kernel)
        .args(&l.kernel_args)
        .arg("--trace-dir")
        .arg(&l.trace_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped());
    let command = format!("{cmd:?}").replace('"', "");
    let mut child = cmd.spawn().with_context(|| {
        format!(
            "starting {} (is MPI installed? run `make setup`, or set OVERLAP_MPIEXEC)",
            l.mpiexec
        )
    })?;
    let stderr = child.stderr.take().context("capturing the ranks' stderr")?;
    let mut rank_errors = Vec::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.context("reading the ranks' stderr")?;
        eprintln!("{line}");
        if line.contains("error") || line.contains("overlap-kernels:") {
            rank_errors.push(line);
        }
    }
    let status = child.wait().context("waiting for mpiexec")?;
    if !status.success() && rank_errors.is_empty() && !kernels.exists() && kernels.components().count() > 1 {
        bail!("{} does not exist", kernels.display());
    }
    Ok(LaunchOutcome {
        status,
        rank_errors,
        command,
    })
}
