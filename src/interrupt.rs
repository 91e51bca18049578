//! What SIGINT, SIGTERM and SIGHUP do to `overlap` outside a supervised run (which
//! catches them itself to stop the run: `crate::supervise`): end it at once, leaving
//! no temporary file behind and saying what was interrupted and what is intact.
//!
//! The handler removes the named temporary files still being written
//! (`overlap_analyzer::output::remove_live_temporaries`: unnamed ones vanish with the
//! process), writes one line to stderr and exits 128 + the signal. It takes no lock and
//! allocates nothing: the line's text was made beforehand ([`Doing`]), e.g. "while
//! merging X: nothing was written to it; the rank files in D are intact: merge them
//! with `overlap merge D --out X`".

use std::ffi::CString;
use std::sync::atomic::{AtomicPtr, Ordering};

use anyhow::{Context, Result};

/// The signals that end `overlap`.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// What is being done, for the line the handler writes (a leaked C string; null: no
/// more to say than the signal).
static DOING: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// Writes `bytes` to stderr from a signal handler.
fn say(bytes: &[u8]) {
    // SAFETY: write(2) of a live buffer; async-signal-safe.
    unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
}

extern "C" fn on_signal(signal: libc::c_int) {
    overlap_analyzer::output::remove_live_temporaries();
    let name: &[u8] = match signal {
        libc::SIGINT => b"SIGINT",
        libc::SIGTERM => b"SIGTERM",
        _ => b"SIGHUP",
    };
    say(b"\noverlap: interrupted by ");
    say(name);
    let doing = DOING.load(Ordering::Acquire);
    if !doing.is_null() {
        say(b" ");
        // SAFETY: a NUL-terminated string leaked by `Doing::start`, never freed.
        say(unsafe { std::ffi::CStr::from_ptr(doing) }.to_bytes());
    }
    say(b"\n");
    // SAFETY: _exit(2) is async-signal-safe; nothing else is to be done.
    unsafe { libc::_exit(128 + signal) };
}

/// From now on the stop signals end `overlap` as this module says. Called at start-up,
/// and again when a supervised run is over.
pub fn install() -> Result<()> {
    for signal in SIGNALS {
        // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("setting how signal {signal} is handled"));
        }
    }
    Ok(())
}

/// What is being done, said by the handler should a signal end it; until dropped.
pub struct Doing(());

impl Doing {
    /// `what` is told after "interrupted by SIGNAL ", e.g. "while merging X: ...".
    pub fn start(what: &str) -> Doing {
        let text = CString::new(what.replace('\0', " ")).unwrap_or_default();
        // Leaked: the handler may be reading the previous text; a few hundred bytes.
        DOING.store(text.into_raw(), Ordering::Release);
        Doing(())
    }
}

impl Drop for Doing {
    fn drop(&mut self) {
        DOING.store(std::ptr::null_mut(), Ordering::Release);
    }
}

/// What to say when a merge of `dir` into `out` is interrupted.
pub fn merging(dir: &std::path::Path, out: &std::path::Path) -> String {
    format!(
        "while merging into {out}: nothing was written to it; the rank files in {dir} are \
         intact: merge them with `overlap merge {dir} --out {out}`",
        out = out.display(),
        dir = dir.display()
    )
}
