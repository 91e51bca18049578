//! The in-flight dump on SIGUSR1, and the hang timeout from the environment, for both
//! recording layers: `overlap trace` (or a user with `kill -USR1`) asks a running or hung
//! rank to write the calls its threads are inside. The handler only sets the recorder's
//! flag ([`request_dump`], one atomic store, async-signal-safe); the writer thread does
//! the work at its next wake-up.
//!
//! The preload installs the handler at `MPI_Init` only when the program left SIGUSR1 at
//! its default disposition (read before `PMPI_Init`), so it never takes the signal from
//! a program that uses it. The MPI library may install its own while initialising (MPICH
//! 4 does, to learn of failed processes): then ours is installed in front of it and
//! passes every SIGUSR1 on to it, so the library sees each signal as before.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::inflight::request_dump;

/// Environment variable: the hang timeout, ms (set by `overlap trace --hang-timeout`).
pub const HANG_TIMEOUT_ENV: &str = "OVERLAP_HANG_TIMEOUT_MS";

/// The handler ours passes the signal on to (0: none), and its `sa_flags`.
static NEXT_HANDLER: AtomicUsize = AtomicUsize::new(0);
static NEXT_FLAGS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_sigusr1(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    request_dump();
    let next = NEXT_HANDLER.load(Ordering::Relaxed);
    if next == 0 {
        return;
    }
    let flags = NEXT_FLAGS.load(Ordering::Relaxed) as c_int;
    // SAFETY: `next` was the library's handler for this signal, of the kind its flags
    // say, called as the kernel would have called it.
    unsafe {
        if flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                std::mem::transmute(next);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(c_int) = std::mem::transmute(next);
            f(sig);
        }
    }
}

/// SIGUSR1's disposition now.
fn disposition() -> Option<libc::sigaction> {
    // SAFETY: a zeroed struct as the out-pointer; nothing is changed.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        (libc::sigaction(libc::SIGUSR1, std::ptr::null(), &mut old) == 0).then_some(old)
    }
}

/// True when SIGUSR1 is at its default disposition (for the preload, before `PMPI_Init`).
pub fn sigusr1_is_default() -> bool {
    disposition().is_some_and(|d| d.sa_sigaction == libc::SIG_DFL)
}

/// Installs the SIGUSR1 handler (after MPI's init) when the program left SIGUSR1 at its
/// default, in front of any handler the MPI library installed meanwhile; true when
/// installed.
pub fn install_dump_handler(program_left_default: bool) -> bool {
    let Some(now) = disposition().filter(|_| program_left_default) else {
        return false;
    };
    if now.sa_sigaction == libc::SIG_IGN {
        return false;
    }
    if now.sa_sigaction != libc::SIG_DFL {
        NEXT_FLAGS.store(now.sa_flags as usize, Ordering::Relaxed);
        NEXT_HANDLER.store(now.sa_sigaction, Ordering::Relaxed);
    }
    // SAFETY: installs an extern "C" SA_SIGINFO handler that stores to an atomic and
    // calls the handler it replaced; the mask is the library's, or empty.
    unsafe {
        let mut new: libc::sigaction = std::mem::zeroed();
        new.sa_sigaction =
            on_sigusr1 as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize;
        new.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        new.sa_mask = now.sa_mask;
        libc::sigaction(libc::SIGUSR1, &new, std::ptr::null_mut()) == 0
    }
}

/// The hang timeout from the environment (unset, unparsable or 0: none).
pub fn hang_timeout_from_env() -> Option<std::time::Duration> {
    let ms = std::env::var(HANG_TIMEOUT_ENV)
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()?;
    (ms > 0).then(|| std::time::Duration::from_millis(ms))
}
