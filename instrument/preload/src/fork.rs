//! A process forked from a traced rank is not that rank: its copy of the recording
//! belongs to the parent (the parent's file, a writer thread the child does not have).
//! At the fork the child detaches from it (a `pthread_atfork` child handler): it records
//! nothing, not even if it initialises MPI itself, and its exit finishes nothing, so it
//! ends exactly as it would untraced. `vfork`, `posix_spawn` and `system` run no fork
//! handler, but their child execs at once: the new program starts with no recording
//! (the preload records only after `MPI_Init`).

use std::sync::atomic::{AtomicBool, Ordering};

/// Set in a process forked from a traced rank.
static FORKED_CHILD: AtomicBool = AtomicBool::new(false);

/// True in a process forked from a traced rank: it never touches the parent's recording.
pub(crate) fn in_forked_child() -> bool {
    FORKED_CHILD.load(Ordering::Relaxed)
}

/// Detaches every child forked from now on; called once the rank's recording started.
pub(crate) fn detach_children() {
    // SAFETY: registers a plain extern "C" function.
    unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
}

/// In the forked child (async-signal-safe: two atomic stores): every wrapper then only
/// forwards, and ending the recording does nothing: no record reaches the parent's
/// file, and no writer thread is joined.
extern "C" fn in_child() {
    FORKED_CHILD.store(true, Ordering::Relaxed);
    crate::tracer::forget();
}
