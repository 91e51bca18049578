//! The buffers MPI holds: every request in flight, by id, with the ranges MPI (or a peer
//! through cross-memory attach) may read or write until it completes, and the buffer of
//! every persistent request, which each start puts in flight again. A watch is never
//! armed over a page one of them touches.

use std::collections::BTreeMap;

use overlap_instrument::fxhash::FxHashMap;

use super::memory::overlap;

/// What a request's buffer is to the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// MPI reads it (a send): the program's writes matter.
    Send,
    /// MPI writes it (a receive): the program's reads and writes matter.
    Receive,
    /// MPI may read and write it, and the preload does not watch it (a collective's or a
    /// one-sided access's buffers).
    Held,
}

/// A buffer MPI holds: `[addr, addr + len)` (`len` may reach to the end of memory when
/// the extent is not known).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flight {
    pub(crate) addr: u64,
    pub(crate) len: u64,
    pub(crate) role: Role,
}

impl Flight {
    fn end(self) -> u64 {
        self.addr.saturating_add(self.len)
    }
}

/// The buffers in flight and the persistent requests' buffers.
#[derive(Default)]
pub(super) struct Flights {
    /// By request id: its buffers (a collective's may be two).
    active: FxHashMap<u64, [Option<Flight>; 2]>,
    /// Every active buffer by (start, request id): its end.
    by_start: BTreeMap<(u64, u64), u64>,
    /// The longest buffer ever in flight: no buffer starting further below an address
    /// than this reaches it.
    longest: u64,
    persistent: FxHashMap<u64, [Option<Flight>; 2]>,
}

impl Flights {
    /// Request `id` holds `buffers` until it completes.
    pub(super) fn posted(&mut self, id: u64, buffers: [Option<Flight>; 2]) {
        for f in buffers.iter().flatten().filter(|f| f.len > 0) {
            self.by_start.insert((f.addr, id), f.end());
            self.longest = self.longest.max(f.len);
        }
        self.active.insert(id, buffers);
    }

    /// Request `id` completed: its buffers, no longer held.
    pub(super) fn completed(&mut self, id: u64) -> Option<[Option<Flight>; 2]> {
        let buffers = self.active.remove(&id)?;
        for f in buffers.iter().flatten() {
            self.by_start.remove(&(f.addr, id));
        }
        Some(buffers)
    }

    /// Persistent request `id` has `buffers`, put in flight by each start.
    pub(super) fn persistent(&mut self, id: u64, buffers: [Option<Flight>; 2]) {
        self.persistent.insert(id, buffers);
    }

    /// The buffers of persistent request `id`.
    pub(super) fn of_persistent(&self, id: u64) -> Option<[Option<Flight>; 2]> {
        self.persistent.get(&id).copied()
    }

    /// Persistent request `id` was freed.
    pub(super) fn forget_persistent(&mut self, id: u64) {
        self.persistent.remove(&id);
    }

    /// True when a buffer in flight touches `[lo, hi)`.
    pub(super) fn touch(&self, lo: u64, hi: u64) -> bool {
        let from = lo.saturating_sub(self.longest);
        self.by_start
            .range((from, 0)..(hi, 0))
            .any(|(&(start, _), &end)| overlap(lo, hi, start, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(addr: u64, len: u64, role: Role) -> Option<Flight> {
        Some(Flight { addr, len, role })
    }

    #[test]
    fn buffers_are_held_from_post_to_completion() {
        let mut fl = Flights::default();
        fl.posted(1, [f(0x1000, 0x3000, Role::Send), None]);
        fl.posted(2, [f(0x1000, 0x3000, Role::Send), None]);
        fl.posted(
            3,
            [
                f(0x9000, 8, Role::Receive),
                f(0x20000, u64::MAX, Role::Held),
            ],
        );
        assert!(fl.touch(0x3fff, 0x5000) && !fl.touch(0x4000, 0x5000));
        assert!(fl.touch(0x9007, 0x9008) && fl.touch(1 << 40, (1 << 40) + 1));
        assert_eq!(
            fl.completed(1).map(|b| b[0]),
            Some(f(0x1000, 0x3000, Role::Send))
        );
        assert!(fl.touch(0x2000, 0x3000), "the second send of the buffer");
        fl.completed(2);
        assert!(!fl.touch(0x2000, 0x3000));
        fl.completed(3);
        assert!(!fl.touch(0, u64::MAX));
        assert_eq!(fl.completed(3), None);
    }

    #[test]
    fn persistent_buffers_are_kept_until_freed() {
        let mut fl = Flights::default();
        fl.persistent(7, [f(0x5000, 64, Role::Receive), None]);
        assert_eq!(
            fl.of_persistent(7).map(|b| b[0]),
            Some(f(0x5000, 64, Role::Receive))
        );
        fl.forget_persistent(7);
        assert_eq!(fl.of_persistent(7), None);
    }
}
