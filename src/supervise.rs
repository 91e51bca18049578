//! The launcher owns its run: `overlap trace` and `overlap run` start the MPI launcher
//! (`mpiexec`, `srun`...) in a process group of its own, so that a terminal's Ctrl-C
//! reaches only `overlap`, and with a parent-death signal, so that even a SIGKILLed
//! `overlap` leaves no orphaned run behind. While the run goes on, `overlap` watches for
//! SIGINT, SIGTERM and SIGHUP, and (with `--hang-timeout`) for the ranks' marker files
//! saying no MPI call completed; either way it stops the whole run itself, so that what
//! the ranks recorded can be merged afterwards and the user is told how the run ended.
//!
//! The marker files are the hang contract with the preload: after writing its in-flight
//! dump, a rank creates `rank-N.dump` in its trace directory holding one line,
//! `signal <unix_ns>` (dumped on SIGUSR1) or `stalled <unix_ns>` (no call completed for
//! the hang timeout); a stalled rank that makes progress again removes it.

use std::io::ErrorKind;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use overlap_analyzer::import::is_rank_file_name;

use crate::output::sayln;

pub use overlap_instrument::recorder::HANG_TIMEOUT_ENV;
pub use overlap_instrument::schema::marker::is_marker_file_name;
use overlap_instrument::schema::marker::{marker_path, parse_marker};
use overlap_instrument::schema::DumpReason;

/// The exit status of `overlap` when it stopped a hung run (as timeout(1) does).
pub const HUNG_EXIT_CODE: u8 = 124;

/// How often the run, the signals and the markers are looked at.
const POLL: Duration = Duration::from_millis(100);

/// How long the ranks get to write their dumps after SIGUSR1.
const DUMP_WAIT: Duration = Duration::from_secs(2);

/// How long the run gets to end after it is told to, before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// The last of SIGINT, SIGTERM, SIGHUP received, and how many were.
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);
static SIGNALS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    // Only atomics: this runs in a signal handler.
    LAST_SIGNAL.store(signal, Ordering::SeqCst);
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// A signal that stops the run, by name.
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGKILL => "SIGKILL".into(),
        other => format!("signal {other}"),
    }
}

/// The signals that stop a run.
const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// From now on SIGINT, SIGTERM and SIGHUP are noted instead of ending `overlap`.
fn catch_stop_signals() -> Result<()> {
    set_stop_signals(on_signal as extern "C" fn(libc::c_int) as usize)
}

/// Once the run is over, SIGINT, SIGTERM and SIGHUP end `overlap` again (a second
/// Ctrl-C during the merge of a stopped run ends it at once, as `crate::interrupt`
/// says).
fn release_stop_signals() -> Result<()> {
    crate::interrupt::install()
}

fn set_stop_signals(handler: libc::sighandler_t) -> Result<()> {
    for signal in STOP_SIGNALS {
        // SAFETY: a zeroed sigaction is valid; the handler only touches atomics.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("setting how {} is handled", signal_name(signal)));
        }
    }
    Ok(())
}

/// Starts `cmd` as the launcher of a supervised run: in a process group of its own, and
/// sent SIGTERM should `overlap` die first; its ranks get the hang timeout, when there
/// is one (and never one `overlap`'s own environment holds). Stop signals are caught
/// from here on.
pub fn spawn(cmd: &mut Command, what: &str, hang_timeout: Option<Duration>) -> Result<Child> {
    match hang_timeout {
        Some(t) => cmd.env(HANG_TIMEOUT_ENV, hang_timeout_ms(t)),
        None => cmd.env_remove(HANG_TIMEOUT_ENV),
    };
    catch_stop_signals()?;
    // Launchers such as MPICH's put their proxies and ranks in sessions of their own:
    // should the launcher die first, they become this process's children (not init's),
    // so they can still be found, stopped and reaped.
    // SAFETY: plain prctl(2).
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) } != 0 {
        return Err(std::io::Error::last_os_error())
            .context("becoming the subreaper of the run's processes");
    }
    let parent = std::process::id();
    cmd.process_group(0);
    // SAFETY: prctl, getppid and raise are async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // `overlap` died before the parent-death signal was set: end now.
            if libc::getppid() as u32 != parent {
                libc::raise(libc::SIGTERM);
            }
            Ok(())
        });
    }
    cmd.spawn().with_context(|| format!("starting {what}"))
}

/// How a supervised run ended.
#[derive(Debug)]
pub enum Ending {
    /// The launcher ended by itself.
    Finished(ExitStatus),
    /// `overlap` received `signal` and stopped the run.
    Interrupted { signal: i32, status: ExitStatus },
    /// No MPI call completed on any rank for the hang timeout; `overlap` stopped the run.
    Hung { status: ExitStatus },
}

impl Ending {
    /// How the launcher ended.
    pub fn status(&self) -> ExitStatus {
        match self {
            Ending::Finished(status)
            | Ending::Interrupted { status, .. }
            | Ending::Hung { status } => *status,
        }
    }

    /// `overlap`'s exit status for a run that did not end by itself.
    pub fn stopped_exit_code(&self) -> Option<u8> {
        match self {
            Ending::Finished(_) => None,
            Ending::Interrupted { signal, .. } => u8::try_from(128 + signal).ok(),
            Ending::Hung { .. } => Some(HUNG_EXIT_CODE),
        }
    }
}

/// The rank numbers of the per-rank files in `dir` (none when it cannot be listed).
fn ranks_with_files(dir: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut ranks: Vec<u32> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            if !is_rank_file_name(&name) {
                return None;
            }
            name.strip_prefix("rank-")?.split('.').next()?.parse().ok()
        })
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    ranks
}

/// What the marker of `rank` in `dir` says, if it has one.
fn marker(dir: &Path, rank: u32) -> Option<DumpReason> {
    let rank_file = dir.join(format!("rank-{rank}.ovlp"));
    // A marker is one short line: anything else (a fifo planted there) is not read.
    let bytes =
        overlap_analyzer::input::read_input(&marker_path(&rank_file), 4096, "marker").ok()?;
    let (reason, _) = parse_marker(std::str::from_utf8(&bytes).ok()?)?;
    Some(reason)
}

/// True when every rank with a file in `dir` has a marker `accepted`.
fn every_rank_marked(dir: &Path, accepted: impl Fn(DumpReason) -> bool) -> bool {
    let ranks = ranks_with_files(dir);
    !ranks.is_empty() && ranks.iter().all(|&r| marker(dir, r).is_some_and(&accepted))
}

/// What to watch while the run goes on.
pub struct Watch<'a> {
    /// Where the ranks write their files and markers.
    pub trace_dir: &'a Path,
    /// With `--hang-timeout`: the run is hung when every rank says it stalled.
    pub hang_timeout: Option<Duration>,
}

fn signals_received() -> u32 {
    SIGNALS.load(Ordering::SeqCst)
}

/// Sends `signal` to the launcher's whole process group.
fn signal_group(child: &Child, signal: i32) {
    // The group id is the launcher's pid (process_group(0)). An error means the group is
    // gone already.
    // SAFETY: plain kill(2).
    unsafe { libc::kill(-(child.id() as libc::pid_t), signal) };
}

/// The processes descended from this one that have not ended (the launcher, and
/// whatever it started, wherever its process group or session), reaping those that
/// ended as this process's adopted children.
fn run_processes(child: &Child) -> Vec<libc::pid_t> {
    let me = std::process::id() as libc::pid_t;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // (pid, parent, ended) of every process.
    let table: Vec<(libc::pid_t, libc::pid_t, bool)> = entries
        .filter_map(|e| {
            let pid: libc::pid_t = e.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
            let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
            let state = rest.next()?;
            let parent = rest.next()?.parse().ok()?;
            Some((pid, parent, matches!(state, "Z" | "X")))
        })
        .collect();
    let mut found = Vec::new();
    let mut frontier = vec![me];
    while let Some(parent) = frontier.pop() {
        for &(pid, _, ended) in table.iter().filter(|(_, pp, _)| *pp == parent) {
            frontier.push(pid);
            if !ended {
                found.push(pid);
            } else if parent == me && pid as u32 != child.id() {
                // An adopted process that ended: reap it (the launcher is reaped by
                // `Child`, which keeps its status).
                // SAFETY: waitpid(2) on our own child, without blocking.
                unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
            }
        }
    }
    found
}

/// Sends `signal` to every process of the run.
fn signal_run(child: &Child, signal: i32) {
    signal_group(child, signal);
    for pid in run_processes(child) {
        // SAFETY: plain kill(2); an error means it ended meanwhile.
        unsafe { libc::kill(pid, signal) };
    }
}

/// Waits for the run until it ends by itself, `overlap` is told to stop, or it hangs;
/// then stops it (what is left of it) and says how it ended.
pub fn supervise(child: &mut Child, watch: &Watch) -> Result<Ending> {
    let ending = watch_run(child, watch);
    release_stop_signals()?;
    ending
}

fn watch_run(child: &mut Child, watch: &Watch) -> Result<Ending> {
    loop {
        if let Some(status) = child.try_wait().context("waiting for the launcher")? {
            // Processes of the run that outlived the launcher are stopped too.
            if !run_processes(child).is_empty() {
                sayln!("overlap: processes of the run outlived the launcher: stopping them");
                stop(child, libc::SIGTERM, signals_received())?;
            }
            return Ok(Ending::Finished(status));
        }
        let seen = signals_received();
        if seen > 0 {
            let signal = LAST_SIGNAL.load(Ordering::SeqCst);
            sayln!(
                "overlap: {}: asking the ranks for what they are inside, then stopping the run",
                signal_name(signal)
            );
            request_dumps(child, watch.trace_dir, seen)?;
            let status = stop(child, signal, seen)?;
            return Ok(Ending::Interrupted { signal, status });
        }
        if let Some(timeout) = watch.hang_timeout {
            if every_rank_marked(watch.trace_dir, |m| m == DumpReason::Stalled) {
                sayln!(
                    "overlap: no MPI call completed on any rank for {} s: the run is hung; \
                     stopping it",
                    timeout.as_secs_f64()
                );
                let status = stop(child, libc::SIGTERM, seen)?;
                return Ok(Ending::Hung { status });
            }
        }
        std::thread::sleep(POLL);
    }
}

/// Sends SIGUSR1 to the launcher (MPICH's mpiexec passes it on to the ranks, whose
/// preload then dumps what they are inside) and waits a little for every rank's marker.
/// Another stop signal than the `seen` first ones cuts the wait short.
fn request_dumps(child: &mut Child, dir: &Path, seen: u32) -> Result<()> {
    // SAFETY: plain kill(2); an error means the launcher is gone already.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGUSR1) };
    let deadline = Instant::now() + DUMP_WAIT;
    while Instant::now() < deadline && signals_received() == seen {
        if every_rank_marked(dir, |_| true) || child.try_wait()?.is_some() {
            break;
        }
        std::thread::sleep(POLL / 2);
    }
    Ok(())
}

/// Sends `signal` to the run's process group (to every process of the run once the
/// launcher has ended) and waits for the run to end; after the grace period, or at once
/// on a stop signal beyond the `seen` first ones, kills every process of it.
fn stop(child: &mut Child, signal: i32, seen: u32) -> Result<ExitStatus> {
    match child.try_wait().context("waiting for the launcher")? {
        Some(_) => signal_run(child, signal),
        None => signal_group(child, signal),
    }
    let deadline = Instant::now() + GRACE;
    let mut status = None;
    loop {
        if status.is_none() {
            status = child.try_wait().context("waiting for the launcher")?;
        }
        if status.is_some() && run_processes(child).is_empty() {
            break;
        }
        if signals_received() != seen {
            sayln!("overlap: stopping the run at once (SIGKILL)");
            break;
        }
        if Instant::now() >= deadline {
            sayln!(
                "overlap: the run did not end within {} s: killing it (SIGKILL)",
                GRACE.as_secs()
            );
            break;
        }
        std::thread::sleep(POLL / 2);
    }
    signal_run(child, libc::SIGKILL);
    let status = match status {
        Some(s) => s,
        None => child.wait().context("waiting for the launcher")?,
    };
    // What was killed is gone once the kernel has ended it; give it a moment.
    let ended = Instant::now() + Duration::from_secs(2);
    while !run_processes(child).is_empty() && Instant::now() < ended {
        signal_run(child, libc::SIGKILL);
        std::thread::sleep(POLL / 10);
    }
    Ok(status)
}

/// The hang timeout for the ranks' environment, in milliseconds (at least 1).
fn hang_timeout_ms(timeout: Duration) -> String {
    timeout.as_millis().max(1).to_string()
}

/// Removes `path` when it is there.
pub fn remove_if_present(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing the old {}", path.display()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_run_is_hung_only_when_every_rank_with_a_file_stalled() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let stalled = |m: DumpReason| m == DumpReason::Stalled;
        let marker_of = |rank: u32| marker_path(&d.join(format!("rank-{rank}.ovlp")));
        assert!(!every_rank_marked(d, stalled), "no rank file: not hung");
        std::fs::write(d.join("rank-0.ovlp"), b"").unwrap();
        std::fs::write(d.join("rank-1.ovlp"), b"").unwrap();
        std::fs::write(d.join("overlap-trace.json"), b"").unwrap();
        std::fs::write(marker_of(0), "stalled 5\n").unwrap();
        assert!(!every_rank_marked(d, stalled), "rank 1 still progresses");
        std::fs::write(marker_of(1), "signal 5\n").unwrap();
        assert!(!every_rank_marked(d, stalled), "rank 1 was only asked");
        assert!(every_rank_marked(d, |_| true), "but both dumped");
        std::fs::write(marker_of(1), "stalled 6\n").unwrap();
        assert!(every_rank_marked(d, stalled));
    }

    #[test]
    fn hang_timeouts_reach_the_ranks_in_whole_milliseconds() {
        assert_eq!(hang_timeout_ms(Duration::from_millis(250)), "250");
        assert_eq!(hang_timeout_ms(Duration::from_micros(10)), "1");
    }

    #[test]
    fn exit_codes_of_a_stopped_run() {
        use std::os::unix::process::ExitStatusExt;
        let status = ExitStatus::from_raw(0);
        let int = Ending::Interrupted {
            signal: libc::SIGINT,
            status,
        };
        assert_eq!(int.stopped_exit_code(), Some(130));
        let term = Ending::Interrupted {
            signal: libc::SIGTERM,
            status,
        };
        assert_eq!(term.stopped_exit_code(), Some(143));
        assert_eq!(Ending::Hung { status }.stopped_exit_code(), Some(124));
        assert_eq!(Ending::Finished(status).stopped_exit_code(), None);
    }
}
