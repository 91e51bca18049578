//! Arming the watches of a completed request, before its Wait or Test returns: each of
//! its buffers (one for a send or a receive, a collective's send and receive buffers)
//! gets a watch, or the request gets none and is recorded as unwatched with the reason
//! (all or nothing: a request with learned uses has every buffer watched, one use each).
//! A buffer identical to one already watched (the same bytes sent to several peers at
//! once) joins that watch.

use smallvec::SmallVec;

use overlap_instrument::clock::Stamp;
use overlap_instrument::recorder::push_unwatched;
use overlap_instrument::schema::{Nanos, Unwatched, UnwatchedReason};

use super::flights::{Flight, Role};
use super::memory::{self, whole_pages};
use super::{io, on, slots, with_book, Book, Buffers, Watch, REQUESTS_PER_WATCH};

/// What arming one buffer did.
#[derive(Clone, Copy, Debug)]
enum Armed {
    /// A watch of its own, in this slot.
    New(usize),
    /// It joined the watch of this slot.
    Joined(usize),
}

/// After a Wait or Test completed `requests`, before it returns: arms the watches of
/// each one's buffers (or records why not). `at` is when MPI returned. Arming is part of
/// the call (the program's next instruction comes after it): when a watch was armed,
/// the call ends once all are, and each begins then; that end is returned (none: the
/// call ends at `at`). So the time the arming takes (tens of µs: the maps read, the
/// protection) is the call's, not the compute's after it, where it would look like work
/// a wait could be moved past. The watches' edges are checked again then: a write found
/// later dates from the call's end, not from before the arming.
#[inline]
pub(crate) fn completed(requests: impl Iterator<Item = u64>, at: u64) -> Option<Stamp> {
    if !super::asked() {
        return None;
    }
    completed_watched(requests, at)
}

/// [`completed`] in a run that asked for the watch (apart, so that the common case
/// inlines to one load and a branch).
#[inline(never)]
fn completed_watched(requests: impl Iterator<Item = u64>, at: u64) -> Option<Stamp> {
    slots::checkpoint(at);
    let end = with_book(|b| {
        // Every completed request lets go of its buffers before any is watched: two
        // completed together may share pages.
        let done: SmallVec<[(u64, Option<Buffers>); 8]> =
            requests.map(|id| (id, b.flights.completed(id))).collect();
        let mut armed: SmallVec<[usize; 8]> = SmallVec::new();
        for (id, buffers) in done {
            match arm_request(b, id, buffers, at) {
                Ok(new) => armed.extend(new),
                Err(why) => {
                    let u = Unwatched {
                        request: id,
                        at: Nanos(at),
                        why,
                    };
                    push_unwatched(&mut b.records, &u);
                }
            }
        }
        let end = (crate::tracer::tracer().map(|t| t.stamp()))
            .filter(|end| end.raw() > at && !armed.is_empty())?;
        for i in armed {
            if let Some(w) = b.watches[i].as_mut() {
                w.from = end.raw();
            }
        }
        Some(end)
    })?;
    slots::checkpoint(end.raw());
    Some(end)
}

/// True for an address that can be a buffer's: not in the first or last page (MPI's
/// sentinels: `MPI_BOTTOM`, `MPI_IN_PLACE`).
pub(super) fn is_buffer(addr: u64) -> bool {
    (4096..u64::MAX - 4096).contains(&addr)
}

/// Arms a watch on every buffer of request `id`, or none; the slots of the watches it
/// armed anew.
fn arm_request(
    b: &mut Book,
    id: u64,
    buffers: Option<Buffers>,
    at: u64,
) -> Result<SmallVec<[usize; 2]>, UnwatchedReason> {
    if !on() {
        return Err(UnwatchedReason::Disabled);
    }
    let buffers: SmallVec<[Flight; 2]> = buffers
        .ok_or(UnwatchedReason::NoBuffer)?
        .into_iter()
        .flatten()
        .collect();
    // A buffer of unknown extent (a `v` collective's) or none at all.
    if buffers.is_empty() || buffers.iter().any(|f| f.role == Role::Held) {
        return Err(UnwatchedReason::NoBuffer);
    }
    let mut armed: SmallVec<[Armed; 2]> = SmallVec::new();
    for f in buffers {
        match arm_one(b, id, f, at) {
            Ok(a) => armed.push(a),
            Err(why) => {
                armed.into_iter().for_each(|a| undo(b, id, a));
                return Err(why);
            }
        }
    }
    Ok(armed
        .into_iter()
        .filter_map(|a| match a {
            Armed::New(i) => Some(i),
            Armed::Joined(_) => None,
        })
        .collect())
}

/// Takes back what arming one of request `id`'s buffers did (another could not be).
fn undo(b: &mut Book, id: u64, a: Armed) {
    match a {
        Armed::New(i) => {
            slots::discard(i);
            b.watches[i] = None;
            b.armed.retain(|&k| k != i);
        }
        Armed::Joined(i) => {
            if let Some(w) = b.watches[i].as_mut() {
                w.requests.retain(|r| *r != id);
            }
        }
    }
}

/// Arms a watch on request `id`'s buffer `f`, completed at `at`; or why not.
fn arm_one(b: &mut Book, id: u64, f: Flight, at: u64) -> Result<Armed, UnwatchedReason> {
    if !is_buffer(f.addr) || f.len == 0 {
        return Err(UnwatchedReason::NoBuffer);
    }
    let end = f.addr.checked_add(f.len).ok_or(UnwatchedReason::NoBuffer)?;
    let (lo, hi) = whole_pages(f.addr, f.len).ok_or(UnwatchedReason::SmallerThanPage)?;
    if memory::on_a_stack(f.addr, end) {
        return Err(UnwatchedReason::OnStack);
    }
    if b.windows.touch(f.addr, end) {
        return Err(UnwatchedReason::NotPrivateMemory);
    }
    if b.flights.touch(lo, hi) {
        return Err(UnwatchedReason::SharedWithActive);
    }
    for &i in &b.armed {
        if !slots::shares_pages(i, lo, hi) {
            continue;
        }
        return match b.watches[i].as_mut() {
            Some(w) if w.buf == (f.addr, end) && w.role == f.role => {
                if w.requests.len() >= REQUESTS_PER_WATCH {
                    return Err(UnwatchedReason::Limit);
                }
                w.requests.push(id);
                Ok(Armed::Joined(i))
            }
            _ => Err(UnwatchedReason::SharedWithWatched),
        };
    }
    let prot = b.maps.eligible(lo, hi, slots::protected)?;
    let watch_prot = match f.role {
        Role::Send => prot & !libc::PROT_WRITE,
        _ => libc::PROT_NONE,
    };
    let arm = slots::Arm {
        buf: (f.addr, end),
        pages: (lo, hi),
        prot,
        watch_prot,
        at,
    };
    let i = slots::arm(&arm, || {
        if !on() {
            Err(UnwatchedReason::Disabled)
        } else if io::in_system_call(lo, hi) {
            Err(UnwatchedReason::SharedWithActive)
        } else {
            Ok(())
        }
    })?;
    b.watches[i] = Some(Watch {
        requests: std::iter::once(id).collect(),
        role: f.role,
        from: at,
        buf: (f.addr, end),
        pages: (lo, hi),
    });
    b.armed.push(i);
    Ok(Armed::New(i))
}
