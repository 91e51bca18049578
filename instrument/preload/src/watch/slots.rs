//! The watches themselves: a fixed table of slots, each the protected pages of one
//! buffer, whose state changes only by atomic operations, so that a watch can end from
//! the SIGSEGV handler, a wrapped system call or `free` on any thread without a lock,
//! memory allocation or anything else a signal handler must not do.
//!
//! ```text
//!  FREE --arm (locked)--> ARMING --protected--> ARMED --first to end it--> ENDING
//!    ^                                                                       |
//!    +------------------- collected (locked): its record written <-- ENDED <-+
//! ```
//!
//! Whoever moves a slot from ARMED to ENDING (one compare-and-swap: a fault, a system
//! call, a release, a check at an MPI call) restores the pages' protection, compares the
//! edge bytes (the buffer's bytes on pages it shares with other data, never protected)
//! with their copy taken when it was armed, notes how it ended, and marks it ENDED. A
//! fault on pages of a slot that is being armed or ended is retried: the instruction
//! runs again once the other side is done.

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

use overlap_instrument::schema::{Touch, UnwatchedReason};

pub(super) use super::ending::Ending;
use super::memory::overlap;

/// Watches at once, at most.
pub(super) const SLOTS: usize = 256;

const FREE: u8 = 0;
const ARMING: u8 = 1;
const ARMED: u8 = 2;
const ENDING: u8 = 3;
const ENDED: u8 = 4;

/// One watch.
pub(super) struct Slot {
    state: AtomicU8,
    /// The protected pages, `[lo, hi)`.
    lo: AtomicU64,
    hi: AtomicU64,
    /// The whole buffer, `[buf_lo, buf_hi)` (its edges are compared, not protected).
    buf_lo: AtomicU64,
    buf_hi: AtomicU64,
    /// The protection the pages had, restored when the watch ends.
    prot: AtomicU64,
    /// Where the copy of its edge bytes is (head, then tail).
    copy: AtomicU64,
    /// Set when it ended: when, how, where and by which instruction.
    at: AtomicU64,
    how: AtomicU8,
    addr: AtomicU64,
    ip: AtomicU64,
    /// The first edge byte found changed when it ended (0: none).
    edge: AtomicU64,
    /// When its edges were last found unchanged (a write to them happened after).
    checked: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    state: AtomicU8::new(FREE),
    lo: AtomicU64::new(0),
    hi: AtomicU64::new(0),
    buf_lo: AtomicU64::new(0),
    buf_hi: AtomicU64::new(0),
    prot: AtomicU64::new(0),
    copy: AtomicU64::new(0),
    at: AtomicU64::new(0),
    how: AtomicU8::new(0),
    addr: AtomicU64::new(0),
    ip: AtomicU64::new(0),
    edge: AtomicU64::new(0),
    checked: AtomicU64::new(0),
};

static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];

/// Slots not free: while 0, nothing is watched and the wrappers' checks stop at once.
static BUSY: AtomicUsize = AtomicUsize::new(0);
/// Slots ended and not collected yet.
static ENDED_COUNT: AtomicUsize = AtomicUsize::new(0);
/// The lowest and highest byte of any buffer watched since nothing was (a quick
/// "not here" for `free` and the system calls).
static SPAN_LO: AtomicU64 = AtomicU64::new(u64::MAX);
static SPAN_HI: AtomicU64 = AtomicU64::new(0);
/// Set while the copies of the edges are mapped.
static COPIES: AtomicU64 = AtomicU64::new(0);
static PAGE: AtomicU64 = AtomicU64::new(0);

/// Restores `[lo, hi)` to `prot` with the raw system call (the preload's own `mprotect`
/// wrapper would take the watch for the program's).
fn protect(lo: u64, hi: u64, prot: i32) -> bool {
    // SAFETY: changes the protection of whole pages the watch owns (or the caller is
    // arming it); no memory is read or written.
    unsafe { libc::syscall(libc::SYS_mprotect, lo, hi - lo, prot) == 0 }
}

/// Maps the copies of the edges: two pages per slot. Once per process.
pub(super) fn prepare(page: u64) -> bool {
    if COPIES.load(Ordering::Acquire) != 0 {
        return true;
    }
    let len = SLOTS as u64 * 2 * page;
    // SAFETY: a fresh private anonymous mapping, through the raw system call (the
    // wrapper would mark the maps stale for nothing).
    let at = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            0u64,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1i64,
            0u64,
        )
    };
    if at < 0 || at as u64 > u64::MAX - 4096 {
        return false;
    }
    PAGE.store(page, Ordering::Relaxed);
    COPIES.store(at as u64, Ordering::Release);
    true
}

/// Watched buffers overlap `[lo, hi)` maybe (false: surely not).
#[inline]
pub(super) fn maybe_watched(lo: u64, hi: u64) -> bool {
    BUSY.load(Ordering::SeqCst) != 0
        && overlap(
            lo,
            hi,
            SPAN_LO.load(Ordering::SeqCst),
            SPAN_HI.load(Ordering::SeqCst),
        )
}

/// Slots ended and waiting to be collected.
#[inline]
pub(super) fn ended() -> usize {
    ENDED_COUNT.load(Ordering::Acquire)
}

/// Slots in use.
#[inline]
pub(super) fn busy() -> usize {
    BUSY.load(Ordering::Acquire)
}

/// What [`arm`] needs of a buffer.
pub(super) struct Arm {
    /// The whole buffer.
    pub(super) buf: (u64, u64),
    /// Its whole pages.
    pub(super) pages: (u64, u64),
    /// Their protection now, restored at the end.
    pub(super) prot: i32,
    /// What to protect them with.
    pub(super) watch_prot: i32,
    /// Now (its edges are copied now).
    pub(super) at: u64,
}

/// Arms a watch (the caller holds the watch's lock, so arms one at a time): the index of
/// its slot. `clear` is asked once the slot is visible to the other threads, before the
/// pages are protected (a system call that starts later finds the slot and waits for
/// it), and once they are: an error undoes it.
pub(super) fn arm(
    a: &Arm,
    clear: impl Fn() -> Result<(), UnwatchedReason>,
) -> Result<usize, UnwatchedReason> {
    let i = TABLE
        .iter()
        .position(|s| s.state.load(Ordering::Acquire) == FREE)
        .ok_or(UnwatchedReason::Limit)?;
    let s = &TABLE[i];
    let page = PAGE.load(Ordering::Relaxed);
    let copy = COPIES.load(Ordering::Acquire);
    if page == 0 || copy == 0 {
        return Err(UnwatchedReason::Disabled);
    }
    let copy = copy + i as u64 * 2 * page;
    let (head, tail) = edges(a.buf, a.pages);
    // SAFETY: the edges are the program's readable bytes (they share pages with the
    // buffer, which MPI just read or wrote) and each is below a page; the copies are the
    // slot's two pages of the preload's own mapping.
    unsafe {
        std::ptr::copy_nonoverlapping(head.0 as *const u8, copy as *mut u8, head.1 as usize);
        std::ptr::copy_nonoverlapping(
            tail.0 as *const u8,
            (copy + page) as *mut u8,
            tail.1 as usize,
        );
    }
    s.lo.store(a.pages.0, Ordering::Relaxed);
    s.hi.store(a.pages.1, Ordering::Relaxed);
    s.buf_lo.store(a.buf.0, Ordering::Relaxed);
    s.buf_hi.store(a.buf.1, Ordering::Relaxed);
    s.prot.store(a.prot as u64, Ordering::Relaxed);
    s.copy.store(copy, Ordering::Relaxed);
    s.edge.store(0, Ordering::Relaxed);
    s.checked.store(a.at, Ordering::Relaxed);
    BUSY.fetch_add(1, Ordering::SeqCst);
    SPAN_LO.fetch_min(a.buf.0, Ordering::SeqCst);
    SPAN_HI.fetch_max(a.buf.1, Ordering::SeqCst);
    s.state.store(ARMING, Ordering::SeqCst);
    if let Err(why) = clear() {
        release(s);
        return Err(why);
    }
    if !protect(a.pages.0, a.pages.1, a.watch_prot) {
        release(s);
        return Err(UnwatchedReason::NotPrivateMemory);
    }
    if let Err(why) = clear() {
        protect(a.pages.0, a.pages.1, a.prot);
        release(s);
        return Err(why);
    }
    s.state.store(ARMED, Ordering::SeqCst);
    Ok(i)
}

/// Frees a slot that never became ARMED or was collected.
fn release(s: &Slot) {
    s.state.store(FREE, Ordering::Release);
    if BUSY.fetch_sub(1, Ordering::AcqRel) == 1 {
        SPAN_LO.store(u64::MAX, Ordering::Relaxed);
        SPAN_HI.store(0, Ordering::Relaxed);
    }
}

/// The head and tail edges of `buf` around its whole `pages`: (start, length) each.
fn edges(buf: (u64, u64), pages: (u64, u64)) -> ((u64, u64), (u64, u64)) {
    ((buf.0, pages.0 - buf.0), (pages.1, buf.1 - pages.1))
}

/// The first edge byte of slot `s` that differs from its copy (0: none).
fn changed_edge(s: &Slot) -> u64 {
    let page = PAGE.load(Ordering::Relaxed);
    let copy = s.copy.load(Ordering::Relaxed);
    let buf = (
        s.buf_lo.load(Ordering::Relaxed),
        s.buf_hi.load(Ordering::Relaxed),
    );
    let pages = (s.lo.load(Ordering::Relaxed), s.hi.load(Ordering::Relaxed));
    let (head, tail) = edges(buf, pages);
    for ((at, len), copy) in [(head, copy), (tail, copy + page)] {
        // SAFETY: as in `arm`: the program's edge bytes (still mapped: a watch ends
        // before its memory is released) and the slot's copy of them, `len` < a page.
        let (now, then) = unsafe {
            (
                std::slice::from_raw_parts(at as *const u8, len as usize),
                std::slice::from_raw_parts(copy as *const u8, len as usize),
            )
        };
        if let Some(k) = now.iter().zip(then).position(|(a, b)| a != b) {
            return at + k as u64;
        }
    }
    0
}

/// Ends slot `i` if it is armed (false: someone else is ending it, or it is not armed):
/// restores its pages, compares its edges, and notes `how` at `at`. Async-signal-safe.
fn end_slot(s: &Slot, at: u64, how: Ending) -> bool {
    if s.state
        .compare_exchange(ARMED, ENDING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return false;
    }
    let (lo, hi) = (s.lo.load(Ordering::Relaxed), s.hi.load(Ordering::Relaxed));
    protect(lo, hi, s.prot.load(Ordering::Relaxed) as i32);
    s.edge.store(changed_edge(s), Ordering::Relaxed);
    s.at.store(at, Ordering::Relaxed);
    s.how.store(how.code(), Ordering::Relaxed);
    if let Ending::Touched { addr, ip, .. } = how {
        s.addr.store(addr, Ordering::Relaxed);
        s.ip.store(ip, Ordering::Relaxed);
    }
    s.state.store(ENDED, Ordering::Release);
    ENDED_COUNT.fetch_add(1, Ordering::AcqRel);
    true
}

/// What a fault at `addr` was to the watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fault {
    /// A first touch of a watched page: the watch ended, the instruction may run again.
    Ours,
    /// A page of a watch being armed or ended by another thread: run it again.
    Busy,
    /// No watch's page.
    NotOurs,
}

/// The SIGSEGV handler's question: is the fault at `addr` a watch's? Ends that watch
/// (`touch` by instruction `ip` at `now()`). Async-signal-safe.
pub(super) fn fault(addr: u64, touch: Touch, ip: u64, now: impl Fn() -> u64) -> Fault {
    if BUSY.load(Ordering::Acquire) == 0 {
        return Fault::NotOurs;
    }
    for s in &TABLE {
        let state = s.state.load(Ordering::Acquire);
        // An ended watch gave its pages back: a fault there now is not its (a stale one,
        // from before, is retried by the handler).
        if state == FREE
            || state == ENDED
            || !(s.lo.load(Ordering::Relaxed)..s.hi.load(Ordering::Relaxed)).contains(&addr)
        {
            continue;
        }
        let how = Ending::Touched { touch, addr, ip };
        if state == ARMED {
            let at = now();
            if end_slot(s, at, how) {
                // A checkpoint for the other watches' edges.
                checkpoint(at);
                return Fault::Ours;
            }
        }
        return Fault::Busy;
    }
    Fault::NotOurs
}

/// Compares the edges of every armed watch at `at`: one changed ends (a write since it
/// was last checked), the others are known unchanged until `at`. Async-signal-safe.
pub(super) fn checkpoint(at: u64) {
    if BUSY.load(Ordering::Acquire) == 0 {
        return;
    }
    for s in &TABLE {
        if s.state.load(Ordering::Acquire) != ARMED {
            continue;
        }
        if changed_edge(s) == 0 {
            s.checked.fetch_max(at, Ordering::AcqRel);
        } else {
            end_slot(s, at, Ending::Checked);
        }
    }
}

/// Ends every watch whose buffer overlaps `[lo, hi)`, each with `how(slot's buffer)` at
/// `at`; true when one did. Async-signal-safe.
pub(super) fn end_overlapping(lo: u64, hi: u64, at: u64, how: impl Fn(u64, u64) -> Ending) -> bool {
    if !maybe_watched(lo, hi) {
        return false;
    }
    let mut any = false;
    for s in &TABLE {
        let state = s.state.load(Ordering::SeqCst);
        let (a, b) = (
            s.buf_lo.load(Ordering::Relaxed),
            s.buf_hi.load(Ordering::Relaxed),
        );
        if state == FREE || !overlap(lo, hi, a, b) {
            continue;
        }
        // One being armed by another thread becomes armed in a moment; one being
        // ended is done with in a moment: wait for either (not for ever: a signal
        // handler may have interrupted the very thread arming it).
        let mut state = state;
        let mut spins = 0u32;
        while (state == ARMING || state == ENDING) && spins < 1 << 22 {
            std::hint::spin_loop();
            spins += 1;
            state = s.state.load(Ordering::Acquire);
        }
        any |= end_slot(s, at, how(a, b));
    }
    any
}

/// Ends every watch with `how`. Async-signal-safe.
pub(super) fn end_all(at: u64, how: Ending) {
    end_overlapping(0, u64::MAX, at, |_, _| how);
}

/// A slot's ending, for its record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ended {
    pub(super) at: u64,
    pub(super) how: Ending,
    /// The first edge byte found changed (0: none).
    pub(super) edge: u64,
    /// When the edges were last found unchanged.
    pub(super) checked: u64,
}

/// Takes slot `i` if it ended: how, and frees it. For the collector (locked).
pub(super) fn collect(i: usize) -> Option<Ended> {
    let s = &TABLE[i];
    if s.state.load(Ordering::Acquire) != ENDED {
        return None;
    }
    let how = Ending::of_code(
        s.how.load(Ordering::Relaxed),
        s.addr.load(Ordering::Relaxed),
        s.ip.load(Ordering::Relaxed),
    );
    let ended = Ended {
        at: s.at.load(Ordering::Relaxed),
        how,
        edge: s.edge.load(Ordering::Relaxed),
        checked: s.checked.load(Ordering::Relaxed),
    };
    ENDED_COUNT.fetch_sub(1, Ordering::AcqRel);
    release(s);
    Some(ended)
}

/// True when the pages `[lo, hi)` of a new watch would share a page with slot `i`'s.
pub(super) fn shares_pages(i: usize, lo: u64, hi: u64) -> bool {
    let s = &TABLE[i];
    s.state.load(Ordering::Acquire) != FREE
        && overlap(
            lo,
            hi,
            s.lo.load(Ordering::Relaxed),
            s.hi.load(Ordering::Relaxed),
        )
}

/// Ends slot `i` with no record (the request it was armed for is not watched after
/// all): its pages get their protection back, its slot is free.
pub(super) fn discard(i: usize) {
    let s = &TABLE[i];
    if s.state
        .compare_exchange(ARMED, ENDING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        let (lo, hi) = (s.lo.load(Ordering::Relaxed), s.hi.load(Ordering::Relaxed));
        protect(lo, hi, s.prot.load(Ordering::Relaxed) as i32);
        release(s);
        return;
    }
    // Touched meanwhile by another thread: ended, or about to be.
    while s.state.load(Ordering::Acquire) == ENDING {
        std::hint::spin_loop();
    }
    collect(i);
}

/// The pages the watches protect now, with the protection each had.
pub(super) fn protected() -> Vec<(u64, u64, i32)> {
    TABLE
        .iter()
        .filter(|s| s.state.load(Ordering::Acquire) != FREE)
        .map(|s| {
            (
                s.lo.load(Ordering::Relaxed),
                s.hi.load(Ordering::Relaxed),
                s.prot.load(Ordering::Relaxed) as i32,
            )
        })
        .collect()
}

/// Restores every watched page at once and forgets the watches (a forked child, which
/// keeps its parent's protections but none of its watches). Async-signal-safe.
pub(super) fn abandon_all() {
    for s in &TABLE {
        if s.state.load(Ordering::Acquire) != FREE {
            let (lo, hi) = (s.lo.load(Ordering::Relaxed), s.hi.load(Ordering::Relaxed));
            if lo < hi {
                protect(lo, hi, s.prot.load(Ordering::Relaxed) as i32);
            }
            s.state.store(FREE, Ordering::Release);
        }
    }
    BUSY.store(0, Ordering::Release);
    ENDED_COUNT.store(0, Ordering::Release);
}

#[cfg(test)]
#[path = "slots_tests.rs"]
mod tests;
