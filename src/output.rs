//! Everything `overlap` prints goes through here, so that printing never panics and
//! never lets a trace's contents drive the terminal.
//!
//! - stdout: a closed pipe (`overlap analyze --json | head`) ends the output quietly and
//!   the command still exits with its own verdict, as ripgrep does; any other write
//!   error (a full disk) is remembered, and `main` reports it and exits 2.
//! - stderr: write errors are ignored (there is nowhere left to say anything).
//! - Names in traces (hosts, compute spans, programs, symbols) are written by whoever
//!   ran the program: control characters and escape sequences in them are shown as
//!   `\x1b`-style escapes, never sent raw. The colour this program itself adds to a
//!   report (SGR sequences, `ESC [ ... m`) is kept when colour is on.
//!
//! Output copied from the MPI program (its own stdout and stderr) is passed through as
//! it is, with [`raw_stdout`] and [`raw_stderr`].

use std::fmt::{self, Write as _};
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;

/// Set once stdout cannot take more: nothing else is written to it.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// The first stdout error that was not a closed pipe.
static STDOUT_ERROR: Mutex<Option<io::Error>> = Mutex::new(None);
/// Whether the SGR colour sequences of our reports pass through to stdout.
static STDOUT_COLOR: AtomicBool = AtomicBool::new(false);
/// What stdout and stderr are, when another process knows better than `isatty` (a
/// worker whose output a launcher passes on, through a pipe or a terminal of its own):
/// 0 unknown, 1 not a terminal, 2 a terminal.
static STDOUT_TERMINAL: AtomicU8 = AtomicU8::new(0);
static STDERR_TERMINAL: AtomicU8 = AtomicU8::new(0);

/// Says whether stdout and stderr are, in the end, terminals: a worker of `analyze
/// --parallel` is told so by the command that launched it.
pub fn set_terminals(stdout: bool, stderr: bool) {
    let told = |is: bool| if is { 2 } else { 1 };
    STDOUT_TERMINAL.store(told(stdout), Ordering::Relaxed);
    STDERR_TERMINAL.store(told(stderr), Ordering::Relaxed);
}

/// Whether stdout is a terminal: as [`set_terminals`] said, else as `isatty` says.
pub fn stdout_is_terminal() -> bool {
    use std::io::IsTerminal;
    is_terminal(&STDOUT_TERMINAL, || io::stdout().is_terminal())
}

/// Whether stderr is a terminal: as [`set_terminals`] said, else as `isatty` says.
pub fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    is_terminal(&STDERR_TERMINAL, || io::stderr().is_terminal())
}

fn is_terminal(told: &AtomicU8, isatty: impl Fn() -> bool) -> bool {
    match told.load(Ordering::Relaxed) {
        0 => isatty(),
        told => told == 2,
    }
}

/// True when a terminal may be sent escape sequences (colour, a redrawn progress line):
/// `is_terminal` says it is one, and `TERM` does not say it is a dumb one, which shows
/// them as garbage.
pub fn escapes_allowed(is_terminal: bool) -> bool {
    escapes_allowed_on(is_terminal, std::env::var_os("TERM").as_deref())
}

/// [`escapes_allowed`] for a terminal whose `TERM` is `term`.
fn escapes_allowed_on(is_terminal: bool, term: Option<&std::ffi::OsStr>) -> bool {
    is_terminal && term.is_none_or(|t| t != "dumb")
}

/// True when colour is wanted on a stream that `is_terminal` or not: escapes allowed
/// ([`escapes_allowed`]), and `NO_COLOR` not set (<https://no-color.org>).
pub fn color_allowed(is_terminal: bool) -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    !no_color && escapes_allowed(is_terminal)
}

/// Lets the report's own colour sequences through to stdout (see `cli::style`).
pub fn allow_color(on: bool) {
    STDOUT_COLOR.store(on, Ordering::Relaxed);
}

fn record_stdout_error(e: io::Error) {
    STDOUT_CLOSED.store(true, Ordering::Relaxed);
    if e.kind() != io::ErrorKind::BrokenPipe {
        let mut slot = STDOUT_ERROR
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.get_or_insert(e);
    }
}

fn write_stdout(bytes: &[u8]) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = io::stdout().lock().write_all(bytes) {
        record_stdout_error(e);
    }
}

/// Writes formatted text to stdout, escaping what a terminal would act on.
pub fn stdout_fmt(args: fmt::Arguments<'_>) {
    let text = fmt::format(args);
    write_stdout(terminal_safe(&text, STDOUT_COLOR.load(Ordering::Relaxed)).as_bytes());
}

/// Writes formatted text to stderr, escaped; errors are ignored.
pub fn stderr_fmt(args: fmt::Arguments<'_>) {
    let text = fmt::format(args);
    let _ = io::stderr()
        .lock()
        .write_all(terminal_safe(&text, false).as_bytes());
}

/// Passes what another process wrote on its stdout through, untouched (already made
/// safe by that process: the report of `analyze --parallel`'s worker 0).
pub fn pass_stdout(bytes: &[u8]) {
    write_stdout(bytes);
}

/// Passes a line of the program's own stdout through, untouched.
pub fn raw_stdout(line: &str) {
    write_stdout(line.as_bytes());
    write_stdout(b"\n");
}

/// Passes a line of the program's own stderr through, untouched.
pub fn raw_stderr(line: &str) {
    let mut err = io::stderr().lock();
    let _ = err.write_all(line.as_bytes());
    let _ = err.write_all(b"\n");
}

/// Flushes stdout; the error that made its output incomplete, if one did (a closed pipe
/// is not one).
pub fn finish_stdout() -> Option<io::Error> {
    if !STDOUT_CLOSED.load(Ordering::Relaxed) {
        if let Err(e) = io::stdout().lock().flush() {
            record_stdout_error(e);
        }
    }
    STDOUT_ERROR
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
}

/// The length of an SGR sequence (`ESC [ digits;... m`) at the start of `s`, if one is.
fn sgr_len(s: &str) -> Option<usize> {
    let rest = s.strip_prefix("\x1b[")?;
    let body = rest.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
    (rest.as_bytes()[body] == b'm').then_some(2 + body + 1)
}

/// `text` with every control character but newline and tab shown as an escape
/// (`\x1b`, `\u{9b}`); with `keep_sgr`, colour sequences are kept.
pub fn terminal_safe(text: &str, keep_sgr: bool) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if keep_sgr {
            if let Some(n) = sgr_len(rest) {
                out.push_str(&rest[..n]);
                i += n;
                continue;
            }
        }
        let Some(c) = rest.chars().next() else { break };
        if unsafe_char(c) {
            if (c as u32) < 0x80 {
                let _ = write!(out, "\\x{:02x}", c as u32);
            } else {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        } else {
            out.push(c);
        }
        i += c.len_utf8();
    }
    std::borrow::Cow::Owned(out)
}

/// `print!` that never panics and escapes control characters.
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::stdout_fmt(format_args!($($arg)*)) };
}

/// `println!` that never panics and escapes control characters.
macro_rules! outln {
    () => { $crate::output::stdout_fmt(format_args!("\n")) };
    ($($arg:tt)*) => {{
        $crate::output::stdout_fmt(format_args!($($arg)*));
        $crate::output::stdout_fmt(format_args!("\n"));
    }};
}

/// `eprintln!` that never panics and escapes control characters.
macro_rules! sayln {
    () => { $crate::output::stderr_fmt(format_args!("\n")) };
    ($($arg:tt)*) => {{
        $crate::output::stderr_fmt(format_args!($($arg)*));
        $crate::output::stderr_fmt(format_args!("\n"));
    }};
}

pub(crate) use {out, outln, sayln};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_sent() {
        assert_eq!(terminal_safe("rank 0 (node1)", false), "rank 0 (node1)");
        assert_eq!(
            terminal_safe("evil\x1b]0;pwned\x07host", false),
            "evil\\x1b]0;pwned\\x07host"
        );
        assert_eq!(terminal_safe("a\rb\u{9b}2Jc", false), "a\\x0db\\u{9b}2Jc");
        assert_eq!(terminal_safe("keep\tthis\n", false), "keep\tthis\n");
        assert_eq!(terminal_safe("\x7f", false), "\\x7f");
    }

    #[test]
    fn our_colour_passes_only_when_colour_is_on() {
        let red = "\x1b[31mREGRESSED\x1b[0m";
        assert_eq!(terminal_safe(red, true), red);
        assert_eq!(terminal_safe(red, false), "\\x1b[31mREGRESSED\\x1b[0m");
        // Not SGR: a cursor move is escaped even with colour on.
        assert_eq!(terminal_safe("\x1b[2J\x1b[1m", true), "\\x1b[2J\x1b[1m");
    }

    #[test]
    fn a_dumb_terminal_gets_no_escapes() {
        use std::ffi::OsStr;
        assert!(escapes_allowed_on(true, Some(OsStr::new("xterm-256color"))));
        assert!(escapes_allowed_on(true, None));
        assert!(!escapes_allowed_on(true, Some(OsStr::new("dumb"))));
        assert!(!escapes_allowed_on(false, Some(OsStr::new("xterm"))));
    }
}
