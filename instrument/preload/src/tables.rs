//! Which request table a call uses: one per thread, so that recording a post or a
//! completion takes no lock in the common case.
//!
//! The rule: a request is tracked in the table of the thread that posted it (or created
//! it, for a persistent request). A completing call (and a Start, a Request_free) looks
//! in its own thread's table first; only when the handle is not there does it search
//! the other threads' tables, so a request posted on one thread and completed on another
//! is still named. Within one table a handle's requests complete first in, first out
//! (see [`crate::requests`]); across threads, each thread's own requests under a shared
//! handle come first.
//!
//! Locks: when MPI runs calls of several threads at once (`MPI_THREAD_MULTIPLE`), each
//! table has a spin lock, which only its owner takes unless another thread searches it,
//! so it is never waited on in a program whose threads complete their own requests. At
//! any lower thread level MPI calls never overlap, so no table is locked at all: the
//! program's own ordering of its MPI calls orders every access. The registry of tables
//! is a mutex taken only when a thread makes its table, on a search (never in a program
//! where one thread posts requests), and when a thread exits.

use std::cell::UnsafeCell;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use overlap_instrument::schema::RequestKind;

use crate::handles::CommInfo;
use crate::requests::{Done, RequestTable};
use crate::thread::{self, ThreadState};

/// Whether tables are locked: set from MPI's thread level before tracing starts (locked
/// until then, to be safe).
static CONCURRENT: AtomicBool = AtomicBool::new(true);

/// Every thread's table (threads that exited keep theirs here while it tracks requests).
static REGISTRY: Mutex<Vec<Arc<LocalTable>>> = Mutex::new(Vec::new());

/// Tables in the registry: with one, a miss in it needs no search.
static TABLES: AtomicUsize = AtomicUsize::new(0);

/// Sets whether MPI may run several threads' calls at once (`MPI_THREAD_MULTIPLE`).
pub(crate) fn set_concurrent(concurrent: bool) {
    CONCURRENT.store(concurrent, Ordering::Relaxed);
}

/// One thread's table.
#[derive(Default)]
pub(crate) struct LocalTable {
    locked: AtomicBool,
    table: UnsafeCell<RequestTable>,
}

// SAFETY: the table is reached through `with`, which locks it whenever MPI calls may run
// at once; otherwise the program's serialised MPI calls order every access.
unsafe impl Sync for LocalTable {}
unsafe impl Send for LocalTable {}

/// Unlocks a table when dropped (a panic in the closure leaves no table locked).
struct Unlock<'a>(Option<&'a AtomicBool>);

impl Drop for Unlock<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some(flag) = self.0 {
            flag.store(false, Ordering::Release);
        }
    }
}

impl LocalTable {
    /// Runs `f` on the table, locked when calls may run at once.
    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut RequestTable) -> R) -> R {
        self.with_locking(CONCURRENT.load(Ordering::Relaxed), f)
    }

    #[inline]
    fn with_locking<R>(&self, lock: bool, f: impl FnOnce(&mut RequestTable) -> R) -> R {
        let _unlock = if lock {
            self.lock();
            Unlock(Some(&self.locked))
        } else {
            Unlock(None)
        };
        // SAFETY: see the `Sync` impl: locked, or no other MPI call runs now.
        f(unsafe { &mut *self.table.get() })
    }

    #[inline]
    fn lock(&self) {
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.wait_unlocked();
        }
    }

    #[cold]
    fn wait_unlocked(&self) {
        let mut spins = 0u32;
        while self.locked.load(Ordering::Relaxed) {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

fn registry() -> MutexGuard<'static, Vec<Arc<LocalTable>>> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A new table for the calling thread, registered.
#[cold]
pub(crate) fn register() -> Arc<LocalTable> {
    let table = Arc::new(LocalTable::default());
    let mut all = registry();
    // Forget the tables of threads that exited once they track nothing.
    all.retain(|t| Arc::strong_count(t) > 1 || !t.with(|t| t.is_empty()));
    all.push(Arc::clone(&table));
    TABLES.store(all.len(), Ordering::Relaxed);
    table
}

/// The table of a thread that is exiting: dropped from the registry unless it still
/// tracks requests (which another thread may complete).
#[cold]
pub(crate) fn retire(table: Arc<LocalTable>) {
    let mut all = registry();
    if table.with(|t| t.is_empty()) {
        all.retain(|t| !ptr::eq(&**t, &*table));
        TABLES.store(all.len(), Ordering::Relaxed);
    }
}

/// The calling thread's table, made on its first post.
#[inline]
fn mine(state: &ThreadState) -> &LocalTable {
    state.requests.get_or_init(register)
}

/// Runs `f` on the calling thread's table, then, when it finds nothing there, on the
/// other threads' tables until one does.
#[inline]
fn find<R>(mut f: impl FnMut(&mut RequestTable) -> Option<R>) -> Option<R> {
    let state = thread::current();
    let own = state.requests.get();
    if let Some(found) = own.and_then(|t| t.with(&mut f)) {
        return Some(found);
    }
    if TABLES.load(Ordering::Relaxed) <= usize::from(own.is_some()) {
        return None;
    }
    search(own.map(Arc::as_ptr), f)
}

#[cold]
fn search<R>(
    own: Option<*const LocalTable>,
    mut f: impl FnMut(&mut RequestTable) -> Option<R>,
) -> Option<R> {
    registry()
        .iter()
        .filter(|t| own.is_none_or(|own| !ptr::eq(&***t, own)))
        .find_map(|t| t.with(&mut f))
}

/// A post created request `id` under `handle`; `proc_null`: a receive from
/// `MPI_PROC_NULL`.
#[inline]
pub(crate) fn posted(handle: u64, id: u64, kind: RequestKind, comm: CommInfo, proc_null: bool) {
    mine(thread::current()).with(|t| t.posted(handle, id, kind, comm, proc_null));
}

/// A persistent init created `persistent` under `handle`.
pub(crate) fn persistent(
    handle: u64,
    persistent: u64,
    kind: RequestKind,
    comm: CommInfo,
    proc_null: bool,
) {
    mine(thread::current()).with(|t| t.persistent(handle, persistent, kind, comm, proc_null));
}

/// A Start made the persistent request under `handle` active as `id`: its persistent id.
pub(crate) fn started(handle: u64, id: u64) -> Option<u64> {
    find(|t| t.started(handle, id))
}

/// The persistent request a Start of `handle` would start, left as it is.
pub(crate) fn next_start(handle: u64) -> Option<u64> {
    find(|t| t.next_start(handle))
}

/// A request under `handle` completed: which (see [`RequestTable::completed`]).
#[inline]
pub(crate) fn completed(handle: u64) -> Option<Done> {
    find(|t| t.completed(handle))
}

/// True when no table holds a request under `handle`: a completion of it completed a
/// request no recorded call posted (an inactive persistent request is held).
#[cold]
pub(crate) fn unseen(handle: u64) -> bool {
    find(|t| t.holds(handle).then_some(())).is_none()
}

/// `MPI_Request_free` let go of `handle`: the id to record.
pub(crate) fn freed(handle: u64) -> Option<u64> {
    find(|t| t.freed(handle))
}

/// False only when no request a completing call on this thread can reach is a receive:
/// then its statuses need not be redirected or read.
#[inline]
pub(crate) fn may_complete_receive() -> bool {
    let own = thread::current().requests.get();
    match (own, TABLES.load(Ordering::Relaxed)) {
        (_, 0) => false,
        (Some(t), 1) => t.with(|t| t.has_receives()),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_locked_only_when_calls_may_overlap() {
        let t = LocalTable::default();
        t.with_locking(false, |_| assert!(!t.locked.load(Ordering::Relaxed)));
        t.with_locking(true, |_| assert!(t.locked.load(Ordering::Relaxed)));
        assert!(!t.locked.load(Ordering::Relaxed), "unlocked after");
    }

    /// One test runs the cross-thread cases, since the registry is process-wide.
    #[test]
    fn a_request_posted_on_one_thread_is_completed_on_another() {
        let send = RequestKind::Send;
        posted(0x10, 1, send, CommInfo::WORLD, false);
        posted(0x11, 2, RequestKind::Recv, CommInfo::WORLD, false);
        std::thread::spawn(move || {
            assert!(may_complete_receive(), "another thread's receive");
            let done = completed(0x11).expect("found in the poster's table");
            assert_eq!((done.id, done.kind), (2, RequestKind::Recv));
            assert_eq!(completed(0x11), None, "completed once");
            // A request this thread posts under the same handle as the other thread's
            // comes first here.
            posted(0x10, 3, send, CommInfo::WORLD, false);
            assert_eq!(completed(0x10).map(|d| d.id), Some(3));
            assert_eq!(completed(0x10).map(|d| d.id), Some(1), "then the other's");
            // Posted here, left for the main thread after this one exits.
            posted(0x12, 4, send, CommInfo::WORLD, false);
        })
        .join()
        .expect("thread");
        assert_eq!(completed(0x12).map(|d| d.id), Some(4), "an exited thread's");
        assert_eq!(completed(0x10), None);
        assert_eq!(freed(0x13), None, "unknown handles are no one's");
        // Many threads posting and completing their own requests at once.
        let workers: Vec<_> = (0..4u64)
            .map(|w| {
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        posted(0x100 + w, i, send, CommInfo::WORLD, false);
                        assert_eq!(completed(0x100 + w).map(|d| d.id), Some(i));
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("worker");
        }
    }
}
