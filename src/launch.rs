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

/// A process the launcher reported as ended badly (MPICH's hydra prints
/// `PID <pid> RUNNING AT <host>` then `EXIT CODE: <code>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadExit {
    pub os_pid: u32,
    pub host: String,
    pub code: i32,
}

/// How it ended.
pub struct LaunchOutcome {
    status: ExitStatus,
    rank_errors: Vec<String>,
    bad_exits: Vec<BadExit>,
    command: String,
}

impl LaunchOutcome {
    /// `None` when the run succeeded, else a message with the ranks' errors. `rank_of`
    /// maps an OS process id to its rank (from the trace headers).
    pub fn failure(&self, rank_of: impl Fn(u32) -> Option<u32>) -> Option<String> {
        if self.status.success() {
            return None;
        }
        let mut msg = format!(
            "the kernel run failed ({})\n  command: {}",
            self.status, self.command
        );
        for b in &self.bad_exits {
            let who =
                rank_of(b.os_pid).map_or_else(|| "a process".to_string(), |r| format!("rank {r}"));
            // Hydra reports a signal as the exit code (9) or as 128 + signal.
            let how = match b.code {
                c if c > 128 => format!("killed by signal {}", c - 128),
                9 => "killed by signal 9".to_string(),
                c => format!("exited with code {c}"),
            };
            // When one rank dies, mpiexec kills the others: the rank it names is the
            // first it saw end, not necessarily the one that died first.
            msg.push_str(&format!(
                "\n  mpiexec reported {who} (pid {} on {}) {how}",
                b.os_pid, b.host
            ));
        }
        if self.rank_errors.is_empty() && self.bad_exits.is_empty() {
            msg.push_str("\n  no rank reported an error: a rank was probably killed");
        }
        for line in &self.rank_errors {
            msg.push_str("\n  ");
            msg.push_str(line);
        }
        Some(msg)
    }
}

/// Reads hydra's report of a bad termination from the launcher's output lines.
fn parse_bad_exits(lines: &[String]) -> Vec<BadExit> {
    let mut found = Vec::new();
    let mut current: Option<(u32, String)> = None;
    for line in lines {
        let text = line.trim_start_matches(['=', ' ']).trim();
        if let Some(rest) = text.strip_prefix("PID ") {
            let mut words = rest.split_whitespace();
            let pid = words.next().and_then(|w| w.parse().ok());
            let host = rest.split(" RUNNING AT ").nth(1).map(str::trim);
            if let (Some(pid), Some(host)) = (pid, host) {
                current = Some((pid, host.to_string()));
            }
        } else if let Some(code) = text.strip_prefix("EXIT CODE:") {
            if let (Some((os_pid, host)), Ok(code)) = (current.take(), code.trim().parse()) {
                found.push(BadExit { os_pid, host, code });
            }
        }
    }
    found
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
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let command = format!("{cmd:?}").replace('"', "");
    let mut child = cmd.spawn().with_context(|| {
        format!(
            "starting {} (is MPI installed? run `make setup`, or set OVERLAP_MPIEXEC)",
            l.mpiexec
        )
    })?;
    let stdout = child.stdout.take().context("capturing the ranks' stdout")?;
    let stderr = child.stderr.take().context("capturing the ranks' stderr")?;
    // Pass both streams through as they come, keeping what tells how the run ended.
    let out_thread = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout)
            .lines()
            .map_while(std::result::Result::ok)
        {
            println!("{line}");
            lines.push(line);
        }
        lines
    });
    let mut rank_errors = Vec::new();
    let mut err_lines = Vec::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.context("reading the ranks' stderr")?;
        eprintln!("{line}");
        if line.contains("error") || line.contains("overlap-kernels:") {
            rank_errors.push(line.clone());
        }
        err_lines.push(line);
    }
    let mut all_lines = out_thread.join().unwrap_or_default();
    all_lines.extend(err_lines);
    let status = child.wait().context("waiting for mpiexec")?;
    if !status.success()
        && rank_errors.is_empty()
        && !kernels.exists()
        && kernels.components().count() > 1
    {
        bail!("{} does not exist", kernels.display());
    }
    Ok(LaunchOutcome {
        status,
        rank_errors,
        bad_exits: parse_bad_exits(&all_lines),
        command,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_hydras_bad_termination_report() {
        let lines: Vec<String> = [
            "===================================================================================",
            "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
            "=   PID 10840 RUNNING AT vm",
            "=   EXIT CODE: 9",
            "=   CLEANING UP REMAINING PROCESSES",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            parse_bad_exits(&lines),
            vec![BadExit {
                os_pid: 10840,
                host: "vm".into(),
                code: 9
            }]
        );
        assert!(parse_bad_exits(&["EXIT CODE: 3".to_string()]).is_empty());
    }
}
