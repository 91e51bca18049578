//! The requests a thread posted lately, in post order: the fast lane in front of the
//! request table's handle map ([`crate::requests::RequestTable`]).
//!
//! Programs complete their requests mostly in the order they posted them (a window of
//! sends then a Waitall; an Irecv, an Isend, a Wait on each), so a completion nearly
//! always names the oldest request here: one compare finds it, one pop forgets it, and
//! neither hashes. A request completed out of order is found by a scan (at most
//! [`CAP`] compares) and leaves a hole, trimmed as soon as it reaches either end and
//! squeezed out when the lane is full. A lane still full of live requests hands its
//! oldest to the map, so the map's requests are always older than the lane's: looked at
//! first (only while it holds any), the map then the lane still give each handle's
//! requests first in, first out, as MPICH's shared handle needs.

use overlap_instrument::schema::RequestKind;

use crate::handles::CommInfo;

/// Requests the lane holds at most (a power of two: positions wrap with a mask). Large
/// enough for a window of posts each way (the OSU bandwidth loop keeps 64 in flight) or
/// a halo exchange's (26 neighbours, two requests each), small enough that a completion
/// out of order costs a short scan.
pub(crate) const CAP: usize = 128;
const MASK: usize = CAP - 1;

/// The handle a hole has: no request handle (an `int`, or a pointer) is all ones.
const HOLE: u64 = u64::MAX;

/// A one-off request in flight (a persistent one never enters the lane).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Posted {
    pub(crate) handle: u64,
    pub(crate) id: u64,
    pub(crate) kind: RequestKind,
    pub(crate) comm: CommInfo,
    pub(crate) proc_null: bool,
}

impl Posted {
    const HOLE: Posted = Posted {
        handle: HOLE,
        id: 0,
        kind: RequestKind::Send,
        comm: CommInfo::WORLD,
        proc_null: false,
    };
}

/// The lane: a ring of [`CAP`] slots, live requests and holes, oldest first from
/// `head`; neither end is a hole.
#[derive(Default)]
pub(crate) struct Recent {
    /// Empty until the first post, then [`CAP`] slots.
    slots: Vec<Posted>,
    /// Position of the oldest entry.
    head: usize,
    /// Entries, holes included.
    len: usize,
    /// Live requests (the entries that are not holes).
    live: usize,
}

impl Recent {
    /// The `i`-th entry from the oldest (`i` below `len`).
    #[inline(always)]
    fn at(&mut self, i: usize) -> &mut Posted {
        &mut self.slots[(self.head + i) & MASK]
    }

    /// Adds a request behind the others; when the lane is full of live requests, the
    /// oldest leaves it and is returned (for the map).
    #[inline]
    pub(crate) fn push(&mut self, p: Posted) -> Option<Posted> {
        let mut spilled = None;
        if self.len == CAP {
            spilled = self.make_room();
        } else if self.slots.is_empty() {
            self.slots = vec![Posted::HOLE; CAP];
        }
        let len = self.len;
        *self.at(len) = p;
        self.len += 1;
        self.live += 1;
        spilled
    }

    /// Squeezes the holes out, or, with none, lets the oldest request go.
    #[cold]
    fn make_room(&mut self) -> Option<Posted> {
        if self.live < self.len {
            let kept: Vec<Posted> = self.entries().filter(|p| p.handle != HOLE).collect();
            self.slots[..kept.len()].copy_from_slice(&kept);
            self.head = 0;
            self.len = kept.len();
            return None;
        }
        let oldest = self.pop_front();
        self.live -= 1;
        self.trim();
        Some(oldest)
    }

    /// The entries, holes included, oldest first.
    fn entries(&self) -> impl Iterator<Item = Posted> + '_ {
        (0..self.len).map(|i| self.slots[(self.head + i) & MASK])
    }

    /// Takes the oldest entry out (the lane is not empty).
    #[inline(always)]
    fn pop_front(&mut self) -> Posted {
        let p = self.slots[self.head];
        self.head = (self.head + 1) & MASK;
        self.len -= 1;
        p
    }

    /// Takes the oldest request under `handle` out of the lane.
    #[inline]
    pub(crate) fn take(&mut self, handle: u64) -> Option<Posted> {
        if self.len > 0 && self.slots[self.head].handle == handle {
            let p = self.pop_front();
            self.live -= 1;
            // Only the front can have become a hole.
            while self.len > 0 && self.slots[self.head].handle == HOLE {
                self.pop_front();
            }
            return Some(p);
        }
        self.take_later(handle)
    }

    /// [`Recent::take`] of a request behind the oldest.
    fn take_later(&mut self, handle: u64) -> Option<Posted> {
        let i = (1..self.len).find(|&i| self.slots[(self.head + i) & MASK].handle == handle)?;
        let p = *self.at(i);
        self.at(i).handle = HOLE;
        self.live -= 1;
        self.trim();
        Some(p)
    }

    /// Drops the holes at either end.
    #[inline]
    fn trim(&mut self) {
        while self.len > 0 && self.slots[self.head].handle == HOLE {
            self.pop_front();
        }
        while self.len > 0 && self.at(self.len - 1).handle == HOLE {
            self.len -= 1;
        }
    }

    /// True when a request under `handle` is in the lane.
    pub(crate) fn holds(&self, handle: u64) -> bool {
        handle != HOLE && self.entries().any(|p| p.handle == handle)
    }

    /// Empties the lane: its requests, oldest first.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Posted> + '_ {
        let all: Vec<Posted> = self.entries().filter(|p| p.handle != HOLE).collect();
        self.head = 0;
        self.len = 0;
        self.live = 0;
        all.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn posted(handle: u64, id: u64) -> Posted {
        Posted {
            handle,
            id,
            kind: RequestKind::Send,
            comm: CommInfo::WORLD,
            proc_null: false,
        }
    }

    #[test]
    fn in_order_and_out_of_order_completions_find_their_requests() {
        let mut r = Recent::default();
        for id in 1..=5 {
            assert_eq!(r.push(posted(10 + id, id)), None);
        }
        assert_eq!(r.take(11).map(|p| p.id), Some(1), "the oldest");
        assert_eq!(r.take(13).map(|p| p.id), Some(3), "from the middle: a hole");
        assert_eq!(r.take(13), None, "taken once");
        assert_eq!(r.take(15).map(|p| p.id), Some(5), "the newest");
        assert_eq!(
            r.take(12).map(|p| p.id),
            Some(2),
            "the hole after it goes too"
        );
        assert_eq!(r.len, 1);
        assert_eq!(r.take(14).map(|p| p.id), Some(4));
        assert!(r.len == 0 && r.live == 0);
    }

    #[test]
    fn a_shared_handle_gives_its_requests_oldest_first() {
        let mut r = Recent::default();
        r.push(posted(7, 1));
        r.push(posted(8, 2));
        r.push(posted(7, 3));
        assert!(r.holds(7) && r.holds(8) && !r.holds(9));
        assert_eq!(r.take(7).map(|p| p.id), Some(1));
        assert_eq!(r.take(7).map(|p| p.id), Some(3));
        assert_eq!(r.take(7), None);
    }

    #[test]
    fn a_full_lane_squeezes_its_holes_then_spills_its_oldest() {
        let mut r = Recent::default();
        for id in 1..=CAP as u64 {
            assert_eq!(r.push(posted(id, id)), None);
        }
        // A hole in the middle: the next push squeezes it out and spills nothing.
        assert_eq!(r.take(5).map(|p| p.id), Some(5));
        assert_eq!(r.push(posted(1000, 1000)), None);
        assert_eq!(r.len, CAP);
        // Full of live requests: the oldest leaves.
        assert_eq!(r.push(posted(1001, 1001)).map(|p| p.id), Some(1));
        let ids: Vec<u64> = r.drain().map(|p| p.id).collect();
        assert_eq!(ids.len(), CAP);
        assert_eq!((ids[0], ids[CAP - 1]), (2, 1001));
        assert!(!r.holds(2));
    }

    #[test]
    fn the_ring_wraps_and_agrees_with_a_plain_list() {
        // A naive model: live requests in post order, the oldest under a handle first.
        let mut model: Vec<Posted> = Vec::new();
        let mut r = Recent::default();
        let mut spilled: Vec<Posted> = Vec::new();
        let mut seed = 12345u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for id in 1..20_000u64 {
            // Few handles, so that some are shared; mostly in-order completions.
            if next() % 3 != 0 {
                let p = posted(next() % 40, id);
                if let Some(old) = r.push(p) {
                    spilled.push(old);
                    let at = model
                        .iter()
                        .position(|m| m.id == old.id)
                        .expect("a spilled request is in the model");
                    assert_eq!(at, 0, "only the oldest spills");
                    model.remove(at);
                }
                model.push(p);
            } else {
                let handle = if next() % 4 == 0 {
                    next() % 40
                } else {
                    model.first().map_or(0, |m| m.handle)
                };
                let want = model.iter().position(|m| m.handle == handle);
                let got = r.take(handle);
                assert_eq!(
                    got.map(|p| p.id),
                    want.map(|i| model[i].id),
                    "take {handle}"
                );
                if let Some(i) = want {
                    model.remove(i);
                }
            }
            assert_eq!(r.live, model.len());
            assert!(r.len <= CAP);
        }
        let rest: Vec<u64> = r.drain().map(|p| p.id).collect();
        assert_eq!(rest, model.iter().map(|m| m.id).collect::<Vec<_>>());
        assert!(!spilled.is_empty(), "the lane filled at least once");
    }
}
