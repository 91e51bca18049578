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

use std::collections::VecDeque;

use overlap_instrument::schema::RequestKind;

use crate::handles::CommInfo;

/// Requests the lane holds at most. Large enough for a window of posts each way (the
/// OSU bandwidth loop keeps 64 in flight) or a halo exchange's (26 neighbours, two
/// requests each), small enough that a completion out of order costs a short scan.
pub(crate) const CAP: usize = 128;

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

/// The lane: live requests and holes, oldest first; neither end is a hole.
#[derive(Default)]
pub(crate) struct Recent {
    entries: VecDeque<Posted>,
    /// Live requests (the entries that are not holes).
    live: usize,
}

impl Recent {
    /// Adds a request behind the others; when the lane is full of live requests, the
    /// oldest leaves it and is returned (for the map).
    #[inline]
    pub(crate) fn push(&mut self, p: Posted) -> Option<Posted> {
        let mut spilled = None;
        if self.entries.len() >= CAP {
            spilled = self.make_room();
        }
        if self.entries.capacity() == 0 {
            self.entries.reserve_exact(CAP);
        }
        self.entries.push_back(p);
        self.live += 1;
        spilled
    }

    /// Squeezes the holes out, or, with none, lets the oldest request go.
    #[cold]
    fn make_room(&mut self) -> Option<Posted> {
        if self.live < self.entries.len() {
            self.entries.retain(|p| p.handle != HOLE);
            return None;
        }
        let oldest = self.entries.pop_front()?;
        self.live -= 1;
        self.trim();
        Some(oldest)
    }

    /// Takes the oldest request under `handle` out of the lane.
    #[inline]
    pub(crate) fn take(&mut self, handle: u64) -> Option<Posted> {
        if self.entries.front().is_some_and(|p| p.handle == handle) {
            let p = self.entries.pop_front();
            self.live -= 1;
            self.trim();
            return p;
        }
        self.take_later(handle)
    }

    /// [`Recent::take`] of a request behind the oldest.
    fn take_later(&mut self, handle: u64) -> Option<Posted> {
        let i = self.entries.iter().position(|p| p.handle == handle)?;
        let p = self.entries[i];
        if i + 1 == self.entries.len() {
            self.entries.pop_back();
        } else {
            self.entries[i].handle = HOLE;
        }
        self.live -= 1;
        self.trim();
        Some(p)
    }

    /// Drops the holes at either end.
    #[inline]
    fn trim(&mut self) {
        while self.entries.front().is_some_and(|p| p.handle == HOLE) {
            self.entries.pop_front();
        }
        while self.entries.back().is_some_and(|p| p.handle == HOLE) {
            self.entries.pop_back();
        }
    }

    /// True when a request under `handle` is in the lane.
    pub(crate) fn holds(&self, handle: u64) -> bool {
        handle != HOLE && self.entries.iter().any(|p| p.handle == handle)
    }

    /// Empties the lane: its requests, oldest first.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Posted> + '_ {
        self.live = 0;
        self.entries.drain(..).filter(|p| p.handle != HOLE)
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
        assert_eq!(r.entries.len(), 1);
        assert_eq!(r.take(14).map(|p| p.id), Some(4));
        assert!(r.entries.is_empty() && r.live == 0);
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
        assert_eq!(r.entries.len(), CAP);
        // Full of live requests: the oldest leaves.
        assert_eq!(r.push(posted(1001, 1001)).map(|p| p.id), Some(1));
        let ids: Vec<u64> = r.drain().map(|p| p.id).collect();
        assert_eq!(ids.len(), CAP);
        assert_eq!((ids[0], ids[CAP - 1]), (2, 1001));
        assert!(!r.holds(2));
    }
}
