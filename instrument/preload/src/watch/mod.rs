//! The buffer watch (`overlap trace --buffers`, `OVERLAP_BUFFERS=1`): for each completed
//! request's buffer, when the program itself next reads or writes it, until it hands it
//! to MPI again. That tells the analysis which compute may move across the wait.
//!
//! When a request completes (before its Wait or Test returns), the whole pages inside
//! its buffer are protected: read-only for a send buffer (its writes matter), no access
//! for a receive buffer (its reads and writes). The first fault on them is the first
//! touch: the SIGSEGV handler ([`signals`]) notes the time, the address and the
//! instruction, restores the protection and lets the instruction run again. The bytes on
//! pages shared with other data (the edges) are never protected: they are copied when
//! the watch is armed and compared at each MPI call, which dates a write to them to the
//! interval since the last comparison. Only what is provably safe is watched; every
//! other completion is recorded as unwatched with the reason:
//!
//! - pages of private writable memory only ([`memory`]), on no thread's stack, in no MPI
//!   window, holding no buffer MPI still holds ([`flights`]: requests in flight, and a
//!   blocking call's buffers while it runs) and no range a wrapped system call is using;
//! - a watch ends before MPI is handed an overlapping buffer (`HandedToMpi`), before the
//!   program frees, unmaps or re-protects its memory ([`release`]: `Released`), and
//!   before a system call touches it ([`io`]: the kernel would fail with `EFAULT` where
//!   the program faults), which is its first touch;
//! - a program that blocks SIGSEGV, or whose own SIGSEGV handler must run, gets its
//!   handler back and the watch stops for the rest of the run (`Signals`).
//!
//! The watches live in a fixed table of slots ([`slots`]) that the handler changes
//! with atomic operations only; their records are written by the next traced call (or
//! at the end of the run), under the watch's lock, into the rank's learned-uses frame.

mod arm;
mod ending;
mod flights;
mod io;
mod memory;
mod real;
mod release;
mod signals;
mod slots;

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use overlap_instrument::recorder::{push_watch, BUFFERS_ENV};
use overlap_instrument::schema::{ByteRange, LearnedUse, Nanos, Outcome, Touch, WatchEnd};
use smallvec::SmallVec;

pub(crate) use arm::completed;
pub(crate) use flights::{Flight, Role};

use arm::is_buffer;
use flights::Flights;
use memory::{Maps, Windows};
use slots::{Ended, Ending, SLOTS};

const OFF: u8 = 0;
const ON: u8 = 1;
const STOPPED: u8 = 2;

/// Off (not asked for), on, or stopped (asked for; completions are then recorded as
/// unwatched).
static STATE: AtomicU8 = AtomicU8::new(OFF);

/// True when the run asked for the watch (on, or stopped since): one relaxed load, all
/// a wrapper pays without it.
#[inline(always)]
pub(crate) fn asked() -> bool {
    STATE.load(Ordering::Relaxed) != OFF
}

/// True while watches may be armed.
#[inline]
fn on() -> bool {
    STATE.load(Ordering::Relaxed) == ON
}

/// Now, on the recorder's clock (0 once the recording has ended). Async-signal-safe.
fn now() -> u64 {
    crate::tracer::tracer().map_or(0, |t| t.stamp().raw())
}

/// One armed watch, as the lock keeps it.
struct Watch {
    /// The requests whose buffer it is (a buffer sent to several peers at once is one
    /// watch).
    requests: SmallVec<[u64; 2]>,
    role: Role,
    /// When it was armed (the end of the completing call).
    from: u64,
    buf: (u64, u64),
    pages: (u64, u64),
}

/// A request's buffers as the watch holds them (a collective's may be two).
pub(crate) type Buffers = [Option<Flight>; 2];

/// Most requests one watch serves.
const REQUESTS_PER_WATCH: usize = 16;

/// What the watch keeps under its lock.
struct Book {
    watches: Vec<Option<Watch>>,
    /// Slots with a watch.
    armed: Vec<usize>,
    flights: Flights,
    maps: Maps,
    windows: Windows,
    /// Records not handed to the recorder yet.
    records: Vec<u8>,
}

static BOOK: Mutex<Option<Book>> = Mutex::new(None);

fn book() -> MutexGuard<'static, Option<Book>> {
    BOOK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on the book (made on first use), then hands the records it made to the
/// recorder.
fn with_book<R>(f: impl FnOnce(&mut Book) -> R) -> R {
    let mut guard = book();
    let b = guard.get_or_insert_with(|| Book {
        watches: (0..SLOTS).map(|_| None).collect(),
        armed: Vec::new(),
        flights: Flights::default(),
        maps: Maps::default(),
        windows: Windows::default(),
        records: Vec::new(),
    });
    let r = f(b);
    if !b.records.is_empty() {
        if let Some(t) = crate::tracer::tracer() {
            t.recorder
                .record_learned(|out| out.extend_from_slice(&b.records));
        }
        b.records.clear();
    }
    r
}

/// At `MPI_Init`, once the recording works: starts watching when the run asked for it
/// (says on stderr why not, when it cannot).
pub(crate) fn start(rank: i32) {
    if std::env::var_os(BUFFERS_ENV).is_none_or(|v| v != "1") {
        return;
    }
    STATE.store(STOPPED, Ordering::Relaxed);
    let ready = if slots::prepare(memory::page()) {
        signals::install()
    } else {
        Err("no memory for the copies of the buffers' edges".to_string())
    };
    match ready {
        Ok(()) => {
            // SAFETY: registers a plain extern "C" function for forked children.
            unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
            release::follow_ucx();
            STATE.store(ON, Ordering::Relaxed);
        }
        Err(why) => overlap_instrument::stderr_line!(
            "overlap-preload: rank {rank}: --buffers: buffers are not watched: {why}"
        ),
    }
}

/// In a forked child: it keeps its parent's protections but none of its watches (nor
/// its recording): every page is given back, and the program's SIGSEGV disposition.
extern "C" fn in_child() {
    slots::abandon_all();
    signals::uninstall();
    STATE.store(OFF, Ordering::Relaxed);
}

/// Stops watching for the rest of the run: every watch ends with `why` (their records
/// are written by the next traced call). Async-signal-safe.
fn stop(why: WatchEnd) {
    if STATE.swap(STOPPED, Ordering::AcqRel) == ON {
        slots::end_all(now(), Ending::Ended(why));
    }
}

/// At the end of the run (`MPI_Finalize`, `MPI_Abort`, exit), before the recording
/// ends: every watch ends (`RunEnded`) and every record is written.
pub(crate) fn finish() {
    if STATE.load(Ordering::Relaxed) == OFF {
        return;
    }
    stop(WatchEnd::RunEnded);
    with_book(collect);
    // Whatever SIGSEGV does from now on, the program set it.
    signals::uninstall();
}

/// Before a traced MPI call: compares the edges of the watches still armed (a changed
/// byte is a write since the last comparison: a fault, a system call or a call like
/// this one) and writes the records of those that ended.
#[inline]
pub(crate) fn before_call() {
    if slots::busy() == 0 {
        return;
    }
    slots::checkpoint(now());
    if slots::ended() != 0 {
        with_book(collect);
    }
}

/// Writes the record of every slot that ended.
fn collect(b: &mut Book) {
    if slots::ended() == 0 {
        return;
    }
    let mut k = 0;
    while k < b.armed.len() {
        let i = b.armed[k];
        let Some(ended) = slots::collect(i) else {
            k += 1;
            continue;
        };
        b.armed.swap_remove(k);
        if let Some(w) = b.watches[i].take() {
            let outcome = outcome(ended);
            for &request in &w.requests {
                push_watch(&mut b.records, &learned(&w, request, outcome.clone()));
            }
        }
    }
}

/// What a watch's end says.
fn outcome(e: Ended) -> Outcome {
    // A changed edge byte: a write somewhere since the last comparison, maybe before
    // the touch that ended it.
    let earliest = Nanos(e.checked.min(e.at));
    let at = Nanos(e.at);
    match (e.how, e.edge) {
        (Ending::Touched { touch, addr, ip }, 0) => Outcome::Used {
            earliest: at,
            latest: at,
            touch,
            addr,
            ip: NonZeroU64::new(ip),
        },
        (Ending::Touched { addr, ip, .. }, _) => Outcome::Used {
            earliest,
            latest: at,
            touch: Touch::Write,
            addr,
            ip: NonZeroU64::new(ip),
        },
        (_, edge) if edge != 0 => Outcome::Used {
            earliest,
            latest: at,
            touch: Touch::Write,
            addr: edge,
            ip: None,
        },
        (Ending::Ended(why), _) => Outcome::Untouched { until: at, why },
        (Ending::Checked, _) => Outcome::Untouched {
            until: at,
            why: WatchEnd::Stopped,
        },
    }
}

/// The record of `w` for `request`.
fn learned(w: &Watch, request: u64, outcome: Outcome) -> LearnedUse {
    let range = |(lo, hi): (u64, u64)| ByteRange {
        addr: lo,
        len: hi - lo,
    };
    LearnedUse {
        request,
        from: Nanos(w.from),
        reads: (w.role == Role::Receive).then(|| range(w.pages)),
        writes: Some(range(w.buf)),
        outcome,
    }
}

/// Buffers a call hands to MPI, held until [`release`] (a blocking call, once it
/// returned) or [`keep`] (a post, as its request).
pub(crate) struct Held {
    key: u64,
}

/// Keys of holds not yet a request's: above every request id.
static NEXT_HOLD: AtomicU64 = AtomicU64::new(1 << 63);

/// Before forwarding a call that hands `buffers` to MPI: ends the watches over them
/// (`HandedToMpi`) and holds them, so that no watch is armed over their pages while MPI
/// may touch them. `None` when the run did not ask for the watch.
#[inline]
pub(crate) fn hold(buffers: Buffers) -> Option<Held> {
    if !asked() {
        return None;
    }
    hold_watched(buffers)
}

/// [`hold`] in a run that asked for the watch (apart, so that the common case inlines
/// to one load and a branch).
#[inline(never)]
fn hold_watched(buffers: Buffers) -> Option<Held> {
    let buffers = buffers.map(|b| b.filter(|f| is_buffer(f.addr) && f.len > 0));
    let key = NEXT_HOLD.fetch_add(1, Ordering::Relaxed);
    with_book(|b| {
        let at = now();
        for f in buffers.iter().flatten() {
            let end = f.addr.saturating_add(f.len);
            slots::end_overlapping(f.addr, end, at, |_, _| Ending::Ended(WatchEnd::HandedToMpi));
        }
        collect(b);
        b.flights.posted(key, buffers);
    });
    Some(Held { key })
}

/// After a blocking call: the buffers it held are the program's again.
#[inline]
pub(crate) fn release(held: Option<&Held>) {
    if let Some(h) = held {
        release_held(h);
    }
}

#[inline(never)]
fn release_held(h: &Held) {
    with_book(|b| {
        b.flights.completed(h.key);
    });
}

/// After a post that succeeded: what it held stays held by request `id` until it
/// completes.
#[inline]
pub(crate) fn keep(held: Option<&Held>, id: u64) {
    if let Some(h) = held {
        keep_held(h, id);
    }
}

#[inline(never)]
fn keep_held(h: &Held, id: u64) {
    with_book(|b| {
        if let Some(buffers) = b.flights.completed(h.key) {
            b.flights.posted(id, buffers);
        }
    });
}

/// A persistent init created request `id` over `buffers` (held by each start).
pub(crate) fn persistent(id: u64, buffers: Buffers) {
    if asked() {
        with_book(|b| b.flights.persistent(id, buffers));
    }
}

/// Before a Start of persistent requests `ids`: ends the watches over their buffers and
/// holds them, one hold each (none for a request the watch does not know).
pub(crate) fn hold_persistent(ids: &[u64]) -> Vec<(u64, Held)> {
    if !asked() {
        return Vec::new();
    }
    let buffers: Vec<_> = with_book(|b| {
        ids.iter()
            .filter_map(|&id| Some((id, b.flights.of_persistent(id)?)))
            .collect()
    });
    buffers
        .into_iter()
        .filter_map(|(id, bufs)| Some((id, hold(bufs)?)))
        .collect()
}

/// `MPI_Request_free` let go of request `id`: a persistent request's buffers are
/// forgotten; an active request's stay held for ever (the program never learns when
/// MPI is done with them).
pub(crate) fn freed(id: u64) {
    if asked() {
        with_book(|b| b.flights.forget_persistent(id));
    }
}

/// Window `win` exposes `[base, base + size)` to other processes: never watched.
pub(crate) fn window(win: u64, base: u64, size: u64) {
    if asked() {
        let at = now();
        slots::end_overlapping(base, base.saturating_add(size), at, |_, _| {
            Ending::Ended(WatchEnd::HandedToMpi)
        });
        with_book(|b| {
            b.windows.add(win, base, size);
            collect(b);
        });
    }
}

/// `MPI_Win_detach(win, base)`.
pub(crate) fn window_detached(win: u64, base: u64) {
    if asked() {
        with_book(|b| b.windows.detach(win, base));
    }
}

/// `MPI_Win_free(win)`.
pub(crate) fn window_freed(win: u64) {
    if asked() {
        with_book(|b| b.windows.free(win));
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
