//! The preload's per-thread state, reached without `__tls_get_addr`: two words in
//! initial-exec TLS declared by the C shim `thread.c` (a Rust `thread_local!` in a
//! shared library calls `__tls_get_addr` on every access). The entry trampolines store
//! the caller's return address in the first word; the second points to the thread's
//! [`ThreadState`], made on the thread's first traced call and dropped when the thread
//! exits (through an ordinary `thread_local!`, touched only then; the main thread's is
//! kept to the end of the process, see [`Owner`]).

use std::arch::asm;
use std::cell::{Cell, OnceCell};
use std::sync::Arc;

use mpi_sys::MPI_Status;
use overlap_instrument::recorder::ThreadRecorder;
use overlap_instrument::schema::Completion;

use crate::handles::CommCache;
use crate::tables::{self, LocalTable};
use crate::types::TypeCache;

/// The layout of `struct overlap_preload_thread` in `thread.c`.
#[repr(C)]
struct Words {
    site: u64,
    state: *const ThreadState,
    libc_site: u64,
    fault_retry: u64,
    outer_site: u64,
    outer_sp: u64,
}

/// Offset of `libc_site` in the words, for the libc trampolines ([`crate::watch`]).
pub(crate) const LIBC_SITE_OFFSET: usize = std::mem::offset_of!(Words, libc_site);

/// Offsets of `outer_site` and `outer_sp`, for the Fortran bindings' trampolines
/// ([`crate::fortran_sites`]).
pub(crate) const OUTER_SITE_OFFSET: usize = std::mem::offset_of!(Words, outer_site);
pub(crate) const OUTER_SP_OFFSET: usize = std::mem::offset_of!(Words, outer_sp);

/// This thread's words: the thread pointer plus the variable's offset in the static
/// TLS block, which the dynamic linker wrote into the GOT at load time.
#[inline(always)]
fn words() -> *mut Words {
    let words: *mut Words;
    // SAFETY: reads the thread pointer (%fs:0 holds its own address on x86-64 Linux) and
    // the GOT entry the linker made for the initial-exec symbol; writes only `words`.
    unsafe {
        asm!(
            "mov {w}, qword ptr fs:[0]",
            "add {w}, qword ptr [rip + overlap_preload_thread@GOTTPOFF]",
            w = out(reg) words,
            options(pure, nomem, nostack),
        );
    }
    words
}

/// The address the program called the current MPI function from (its return address,
/// stored by the entry trampoline; 0 before any), or, when the caller was a Fortran
/// binding of the MPI's, the program's call of that binding ([`crate::fortran_sites`]:
/// only after the program entered one, which a C program never does).
#[inline]
pub(crate) fn site() -> u64 {
    let w = words();
    // SAFETY: this thread's words, written only by this thread.
    let (site, outer) = unsafe { ((*w).site, (*w).outer_site) };
    if outer == 0 {
        site
    } else {
        crate::fortran_sites::program_site(site)
    }
}

/// Takes the last Fortran binding call's return address and stack pointer (0, 0 when
/// taken already), leaving zeros.
#[inline]
pub(crate) fn take_outer() -> (u64, u64) {
    // SAFETY: this thread's words, written only by this thread.
    unsafe {
        let w = words();
        let taken = ((*w).outer_site, (*w).outer_sp);
        (*w).outer_site = 0;
        (*w).outer_sp = 0;
        taken
    }
}

/// The return address of the interposed libc function this thread last entered (stored
/// by its trampoline; 0 before any).
#[inline]
pub(crate) fn libc_site() -> u64 {
    // SAFETY: this thread's words, written only by this thread.
    unsafe { (*words()).libc_site }
}

/// Swaps the address of the fault this thread let through to be retried (async-signal
/// safe: a plain access to initial-exec TLS).
#[inline]
pub(crate) fn swap_fault_retry(addr: u64) -> u64 {
    // SAFETY: this thread's words, touched only by this thread (its signal handler
    // included, which runs on it).
    unsafe { std::mem::replace(&mut (*words()).fault_retry, addr) }
}

/// What one thread keeps between its MPI calls.
pub(crate) struct ThreadState {
    /// The requests this thread posted (see [`crate::tables`]), made on its first post.
    pub(crate) requests: OnceCell<Arc<LocalTable>>,
    /// The thread's handle on the recorder, made on its first record.
    pub(crate) recorder: OnceCell<ThreadRecorder>,
    /// Communicators met lately.
    pub(crate) comms: CommCache,
    /// Datatype sizes.
    pub(crate) types: TypeCache,
    /// Room for a list call's handles, lent to one call at a time.
    keys: Cell<Vec<u64>>,
    /// Room for statuses the program ignores but the preload reads.
    statuses: Cell<Vec<MPI_Status>>,
    /// Room for what a completing call completed.
    completions: Cell<Vec<Completion>>,
}

impl Default for ThreadState {
    fn default() -> ThreadState {
        ThreadState {
            requests: OnceCell::new(),
            recorder: OnceCell::new(),
            comms: crate::handles::cache(),
            types: crate::types::cache(),
            keys: Cell::default(),
            statuses: Cell::default(),
            completions: Cell::default(),
        }
    }
}

impl ThreadState {
    /// Borrows the handle buffer (empty; a nested call gets a fresh one).
    pub(crate) fn take_keys(&self) -> Vec<u64> {
        let mut v = self.keys.take();
        v.clear();
        v
    }

    /// Gives the handle buffer back.
    pub(crate) fn give_keys(&self, v: Vec<u64>) {
        self.keys.set(v);
    }

    /// Borrows the status buffer, `n` statuses long.
    pub(crate) fn take_statuses(&self, n: usize) -> Vec<MPI_Status> {
        let mut v = self.statuses.take();
        if v.len() < n {
            v.resize(n, crate::pmpi::blank_status());
        }
        v
    }

    /// Gives the status buffer back.
    pub(crate) fn give_statuses(&self, v: Vec<MPI_Status>) {
        self.statuses.set(v);
    }

    /// Borrows the completion buffer (empty).
    pub(crate) fn take_completions(&self) -> Vec<Completion> {
        let mut v = self.completions.take();
        v.clear();
        v
    }

    /// Gives the completion buffer back.
    pub(crate) fn give_completions(&self, v: Vec<Completion>) {
        self.completions.set(v);
    }
}

/// The calling thread's state.
#[inline]
pub(crate) fn current() -> &'static ThreadState {
    // SAFETY: this thread's words; `state` is null or points to this thread's live
    // state, which is dropped only when the thread exits (after clearing the word).
    unsafe {
        match (*words()).state.as_ref() {
            Some(state) => state,
            None => adopt(),
        }
    }
}

/// Owns the thread's state; dropped when the thread exits.
struct Owner(Cell<Option<Box<ThreadState>>>);

impl Drop for Owner {
    fn drop(&mut self) {
        // `exit` destroys the main thread's thread-locals before it runs the program's
        // atexit handlers and C++ static destructors, which may still call MPI (an
        // `MPI_Finalize` there is common). The process is ending: the main thread keeps
        // its state, so those calls are recorded like its others (a fresh state would
        // need a new ring, whose registration needs the thread-locals just destroyed).
        // SAFETY: plain system calls.
        if unsafe { libc::gettid() == libc::getpid() } {
            if let Some(state) = self.0.take() {
                Box::leak(state);
            }
            return;
        }
        // SAFETY: this thread's words.
        unsafe { (*words()).state = std::ptr::null() };
        if let Some(state) = self.0.take() {
            if let Some(table) = state.requests.into_inner() {
                tables::retire(table);
            }
        }
    }
}

thread_local! {
    static OWNER: Owner = const { Owner(Cell::new(None)) };
}

/// Makes the calling thread's state.
#[cold]
fn adopt() -> &'static ThreadState {
    let state = Box::new(ThreadState::default());
    let mut at: *const ThreadState = &*state;
    if OWNER.try_with(move |o| o.0.set(Some(state))).is_err() {
        // The thread is exiting and its thread-locals are gone: the state of this late
        // call lives on.
        at = Box::leak(Box::default());
    }
    // SAFETY: this thread's words; `at` lives until the thread exits.
    unsafe {
        (*words()).state = at;
        &*at
    }
}

/// Sets the site word, as an entry trampoline does.
#[cfg(test)]
pub(crate) fn set_site(site: u64) {
    // SAFETY: this thread's words, written only by this thread.
    unsafe { (*words()).site = site };
}

/// Sets the Fortran binding words, as a site-only trampoline does.
#[cfg(test)]
pub(crate) fn set_outer(site: u64, sp: u64) {
    // SAFETY: this thread's words, written only by this thread.
    unsafe {
        (*words()).outer_site = site;
        (*words()).outer_sp = sp;
    }
}
