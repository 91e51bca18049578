//! Launching a bundled kernel under `mpiexec`: finding the binaries, passing stdout
//! through, echoing and keeping the ranks' error lines, and telling apart a clean run
//! from a failed one (or from one `overlap` stopped: the launcher runs supervised, see
//! `crate::supervise`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::supervise::{self, Ending, Watch};

/// What to launch.
pub struct KernelLaunch {
    pub mpiexec: String,
    pub kernels: Option<PathBuf>,
    pub ranks: u32,
    pub kernel: String,
    pub kernel_args: Vec<std::ffi::OsString>,
    pub trace_dir: PathBuf,
    pub hang_timeout: Option<Duration>,
}

/// A process the launcher reported as ended badly. MPICH's hydra prints
/// `PID <pid> RUNNING AT <host>`, `EXIT CODE: <code>`, and for a signal
/// `... EXIT STRING: Killed (signal <n>)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadExit {
    pub os_pid: u32,
    pub host: String,
    pub code: i32,
    pub signal: Option<i32>,
}

/// How it ended.
pub struct LaunchOutcome {
    pub ending: Ending,
    rank_errors: Vec<String>,
    bad_exits: Vec<BadExit>,
    command: String,
}

impl LaunchOutcome {
    /// `None` when the run succeeded, else a message with the ranks' errors. `rank_of`
    /// maps an OS process id to its rank (from the trace headers).
    pub fn failure(&self, rank_of: impl Fn(u32) -> Option<u32>) -> Option<String> {
        let mut msg = match &self.ending {
            Ending::Finished(status) if status.success() => return None,
            Ending::Finished(status) => format!("the kernel run failed ({status})"),
            stopped => crate::finish::stopped(stopped),
        };
        msg.push_str(&format!("\n  command: {}", self.command));
        for b in &self.bad_exits {
            let who =
                rank_of(b.os_pid).map_or_else(|| "a process".to_string(), |r| format!("rank {r}"));
            let how = match b.signal {
                Some(sig) => format!("killed by signal {sig}"),
                None => format!("exited with code {}", b.code),
            };
            // When one rank dies, mpiexec kills the others: the rank it names is the
            // first it saw end, not necessarily the one that died first.
            msg.push_str(&format!(
                "\n  mpiexec reported {who} (pid {} on {}) {how}",
                b.os_pid, b.host
            ));
        }
        // A run `overlap` stopped was not killed by someone else.
        let finished = matches!(self.ending, Ending::Finished(_));
        if finished && self.rank_errors.is_empty() && self.bad_exits.is_empty() {
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
                found.push(BadExit {
                    os_pid,
                    host,
                    code,
                    signal: None,
                });
            }
        } else if let Some(pos) = text.find("(signal ") {
            let sig = text[pos + "(signal ".len()..]
                .trim_end_matches(')')
                .trim()
                .parse()
                .ok();
            if let Some(last) = found.last_mut() {
                last.signal = last.signal.or(sig);
            }
        }
    }
    found
}

/// The kernels binary: the one given, else the one next to this binary, else the name
/// alone for `mpiexec` to find on PATH.
fn kernels_binary(given: Option<&Path>) -> Result<PathBuf> {
    let name = "overlap-kernels";
    let Some(p) = given else {
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.join(name)))
            .filter(|p| p.is_file());
        return Ok(beside.unwrap_or_else(|| PathBuf::from(name)));
    };
    if !p.is_file() {
        bail!(
            "the kernels binary {} does not exist (build it with `cargo build --release \
             --workspace`, or set OVERLAP_KERNELS)",
            p.display()
        );
    }
    Ok(p.to_path_buf())
}

/// Passes each line of `stream` on with `echo`, in a thread of its own, which returns
/// the lines.
fn pass_through(
    stream: impl std::io::Read + Send + 'static,
    echo: fn(&str),
) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stream)
            .lines()
            .map_while(std::result::Result::ok)
        {
            echo(&line);
            lines.push(line);
        }
        lines
    })
}

/// Runs `mpiexec -n RANKS overlap-kernels KERNEL ARGS --trace-dir DIR`.
pub fn launch_kernel(l: &KernelLaunch) -> Result<LaunchOutcome> {
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
    let mut child = supervise::spawn(
        &mut cmd,
        &format!(
            "{} (is MPI installed? run `make setup`, or set OVERLAP_MPIEXEC)",
            l.mpiexec
        ),
        l.hang_timeout,
    )?;
    let stdout = child.stdout.take().context("capturing the ranks' stdout")?;
    let stderr = child.stderr.take().context("capturing the ranks' stderr")?;
    // Pass both streams through as they come, keeping what tells how the run ended.
    let out_thread = pass_through(stdout, crate::output::raw_stdout);
    let err_thread = pass_through(stderr, crate::output::raw_stderr);
    let ending = supervise::supervise(
        &mut child,
        &Watch {
            trace_dir: &l.trace_dir,
            hang_timeout: l.hang_timeout,
        },
    )?;
    let err_lines = err_thread.join().unwrap_or_default();
    let rank_errors = err_lines
        .iter()
        .filter(|line| line.contains("error") || line.contains("overlap-kernels:"))
        .cloned()
        .collect();
    let mut all_lines = out_thread.join().unwrap_or_default();
    all_lines.extend(err_lines);
    Ok(LaunchOutcome {
        ending,
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
            "=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES",
            "===================================================================================",
            "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            parse_bad_exits(&lines),
            vec![BadExit {
                os_pid: 10840,
                host: "vm".into(),
                code: 9,
                signal: Some(9),
            }]
        );
        // An exit code alone is an exit code, not a signal.
        let lines: Vec<String> = ["=   PID 7 RUNNING AT n1", "=   EXIT CODE: 9"]
            .map(String::from)
            .to_vec();
        assert_eq!(parse_bad_exits(&lines)[0].signal, None);
        assert!(parse_bad_exits(&["EXIT CODE: 3".to_string()]).is_empty());
    }
}
