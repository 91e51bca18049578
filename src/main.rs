//! `overlap`: the command line. Thin glue over the library crates: argument parsing,
//! launching `mpiexec`, and printing.
//!
//! Exit codes: 0 success; 1 a failed command (a failed MPI run, unusable input to
//! `analyze`, `merge`, `diff`, `baseline`), or a regression for `check`; 2 `check`'s
//! unusable input and any output that could not be written in full (stdout, or a file,
//! on a full disk); `trace` passes the program's own non-zero exit code on; `trace` and `run`
//! exit 128 + the signal when stopped by one, 124 when stopped as hung. A closed stdout
//! pipe (`overlap analyze | head`) is not an error.

mod otf2;
mod output;

mod cli;
mod disk;
mod finish;
mod format;
mod gate;
mod hold;
mod interrupt;
mod launch;
mod parallel;
mod program;
mod progress;
mod replay_args;
mod run;
mod rundir;
mod selftrace;
mod suggest;
mod supervise;
mod tables;
mod trace;
mod tui;
mod units;
mod whatif;
mod which_mpi;
mod window;

use std::process::ExitCode;

use crate::output::sayln;

/// The exit code of a command whose output could not be written.
const OUTPUT_FAILED: u8 = 2;

fn main() -> ExitCode {
    ignore_file_size_signal();
    let cli = cli::Cli::parse_args();
    // The terminal UI catches the stop signals itself, to give the terminal back.
    if !cli.is_tui() {
        if let Err(e) = interrupt::install() {
            sayln!("overlap: error: {}", error_chain(&e));
            return ExitCode::FAILURE;
        }
    }
    let code = match cli::run(cli) {
        Ok(code) => code,
        Err(e) => say_error(&e),
    };
    match output::finish_stdout() {
        None => code,
        Some(e) => {
            sayln!("overlap: error: writing to standard output: {e}");
            ExitCode::from(OUTPUT_FAILED)
        }
    }
}

/// `e` said on stderr, with its causes; the exit code it ends the command with.
pub fn say_error(e: &anyhow::Error) -> ExitCode {
    sayln!("overlap: error: {}", error_chain(e));
    if is_output_failure(e) {
        ExitCode::from(OUTPUT_FAILED)
    } else {
        ExitCode::FAILURE
    }
}

/// True when `e` is an output that could not be written (in full): an output's own
/// error, or a write refused for room (a full disk, a quota, a file-size limit), such
/// as the merge's temporary file's.
fn is_output_failure(e: &anyhow::Error) -> bool {
    use overlap_analyzer::output::OutputError;
    let no_room = |io: &std::io::Error| {
        matches!(
            io.raw_os_error(),
            Some(libc::ENOSPC | libc::EDQUOT | libc::EFBIG)
        )
    };
    // A path that cannot be an output (no such directory, a device) is a mistake of
    // the command line, not an output that failed: exit 1.
    let failed_writing = |o: &OutputError| matches!(o, OutputError::Io { .. });
    e.chain().any(|c| {
        c.downcast_ref::<OutputError>().is_some_and(failed_writing)
            || c.downcast_ref::<std::io::Error>().is_some_and(no_room)
            || match c.downcast_ref::<overlap_analyzer::Error>() {
                Some(overlap_analyzer::Error::Output(o)) => failed_writing(o),
                Some(overlap_analyzer::Error::Io { cause, .. }) => no_room(cause),
                _ => false,
            }
    })
}

/// An error with its causes, each said once: a cause whose text its context already
/// quotes (`reading x: No such file (os error 2)`) is not repeated.
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if text.contains(&s) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&s);
    }
    text
}

/// A file-size limit (`ulimit -f`) makes the kernel send SIGXFSZ, which would kill this
/// process in the middle of a write: ignored, the write fails with "File too large" and
/// is reported like any other write error, with nothing partial left.
fn ignore_file_size_signal() {
    // SAFETY: setting a signal's disposition to SIG_IGN at start-up, before any thread.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_cause_is_said_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let shown = io.to_string();
        let e = anyhow::Error::new(io).context(format!("reading x.json: {shown}"));
        assert_eq!(error_chain(&e), format!("reading x.json: {shown}"));
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_chain(&e), "outer: inner");
    }
}
