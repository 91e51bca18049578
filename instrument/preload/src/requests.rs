//! Which of the preload's request ids an `MPI_Request` handle stands for. MPI reuses a
//! handle as soon as its request completes (ids are never reused), and may give several
//! live requests one handle at once (MPICH's shared handle for requests complete at post
//! time), so the table keeps, per handle, the requests posted under it in post order and
//! completes them first in, first out.
//!
//! One table belongs to one thread and takes no lock: [`crate::tables`] says which
//! thread's table a call uses, and when a table is searched from another thread.

use std::collections::hash_map::Entry;
use std::collections::VecDeque;

use overlap_instrument::fxhash::FxHashMap;
use overlap_instrument::schema::RequestKind;

use crate::handles::CommInfo;

type FxMap<V> = FxHashMap<u64, V>;

/// A request the program holds: a non-blocking operation in flight, or a persistent
/// request, started or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tracked {
    /// The operation in flight, by id; `None` for a persistent request not started.
    active: Option<u64>,
    /// The persistent request's id; `None` for a one-off operation.
    persistent: Option<u64>,
    kind: RequestKind,
    comm: CommInfo,
    proc_null: bool,
}

impl Tracked {
    /// True when a completing call can complete it now.
    fn completable(&self) -> bool {
        self.active.is_some()
    }

    /// What completing its active operation gives.
    fn done(&self, id: u64) -> Done {
        Done {
            id,
            kind: self.kind,
            comm: self.comm,
            proc_null: self.proc_null,
        }
    }
}

/// A request that completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Done {
    pub(crate) id: u64,
    pub(crate) kind: RequestKind,
    pub(crate) comm: CommInfo,
    /// A receive posted from `MPI_PROC_NULL` (MPICH does not always fill in the status
    /// of one that completed at post time).
    pub(crate) proc_null: bool,
}

/// The requests one handle stands for, oldest first. Nearly always one: MPI hands out a
/// fresh handle per live request, but an implementation may give every request that
/// was complete at post time one shared handle (MPICH: sends that went out eagerly,
/// receives from `MPI_PROC_NULL`), so a handle can stand for many; only those handles
/// pay for a queue.
#[derive(Debug)]
enum Slot {
    One(Tracked),
    Many(VecDeque<Tracked>),
}

impl Slot {
    /// Adds a request behind the others.
    fn push(&mut self, t: Tracked) {
        if let Slot::Many(q) = self {
            q.push_back(t);
            return;
        }
        let mut q = VecDeque::with_capacity(4);
        if let Slot::One(first) = std::mem::replace(self, Slot::Many(VecDeque::new())) {
            q.push_back(first);
        }
        q.push_back(t);
        *self = Slot::Many(q);
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Tracked> {
        let (one, many) = match self {
            Slot::One(t) => (Some(t), None),
            Slot::Many(q) => (None, Some(q.iter_mut())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

/// The requests the program holds, by handle. A handle's requests complete in the order
/// they were posted (the first that can complete: an active operation, or a persistent
/// request that was started).
#[derive(Default)]
pub(crate) struct RequestTable {
    map: FxMap<Slot>,
    /// Receives among the requests (active or persistent): while there are none, no
    /// completing call can complete one, so statuses need not be looked at.
    receives: usize,
    /// Requests tracked (a handle that stood for several keeps its emptied queue, so
    /// that MPICH's shared handle does not allocate one per burst of posts).
    tracked: usize,
}

impl RequestTable {
    /// True when no request is tracked.
    pub(crate) fn is_empty(&self) -> bool {
        self.tracked == 0
    }

    /// True when a receive is among the requests.
    #[inline]
    pub(crate) fn has_receives(&self) -> bool {
        self.receives > 0
    }

    #[inline]
    fn add(&mut self, handle: u64, t: Tracked) {
        self.tracked += 1;
        if t.kind == RequestKind::Recv {
            self.receives += 1;
        }
        match self.map.entry(handle) {
            Entry::Occupied(mut slot) => slot.get_mut().push(t),
            Entry::Vacant(slot) => {
                slot.insert(Slot::One(t));
            }
        }
    }

    /// A post created request `id` under `handle`; `proc_null`: a receive from
    /// `MPI_PROC_NULL`.
    #[inline]
    pub(crate) fn posted(
        &mut self,
        handle: u64,
        id: u64,
        kind: RequestKind,
        comm: CommInfo,
        proc_null: bool,
    ) {
        let t = Tracked {
            active: Some(id),
            persistent: None,
            kind,
            comm,
            proc_null,
        };
        self.add(handle, t);
    }

    /// A persistent init created `persistent` under `handle`.
    pub(crate) fn persistent(
        &mut self,
        handle: u64,
        persistent: u64,
        kind: RequestKind,
        comm: CommInfo,
        proc_null: bool,
    ) {
        let t = Tracked {
            active: None,
            persistent: Some(persistent),
            kind,
            comm,
            proc_null,
        };
        self.add(handle, t);
    }

    /// A Start made a persistent request under `handle` active as `id` (the oldest
    /// inactive one); returns the persistent id.
    pub(crate) fn started(&mut self, handle: u64, id: u64) -> Option<u64> {
        let slot = self.map.get_mut(&handle)?;
        let t = slot
            .iter_mut()
            .find(|t| t.persistent.is_some() && t.active.is_none())?;
        t.active = Some(id);
        t.persistent
    }

    /// The persistent request a Start of `handle` would start (the oldest inactive one),
    /// leaving it as it is.
    pub(crate) fn next_start(&mut self, handle: u64) -> Option<u64> {
        self.map
            .get_mut(&handle)?
            .iter_mut()
            .find(|t| t.persistent.is_some() && t.active.is_none())?
            .persistent
    }

    /// A request under `handle` completed: the oldest that could. Forgets it (a
    /// persistent request becomes inactive and stays).
    #[inline]
    pub(crate) fn completed(&mut self, handle: u64) -> Option<Done> {
        let Entry::Occupied(mut entry) = self.map.entry(handle) else {
            return None;
        };
        // The common case: one operation under the handle, taken out with its entry.
        if let Slot::One(t) = entry.get() {
            let id = t.active?;
            if t.persistent.is_some() {
                let Slot::One(t) = entry.get_mut() else {
                    return None;
                };
                t.active = None;
                return Some(t.done(id));
            }
            let Slot::One(t) = entry.remove() else {
                return None;
            };
            self.forget(&t);
            return Some(t.done(id));
        }
        let Slot::Many(q) = entry.into_mut() else {
            return None;
        };
        let i = q.iter().position(Tracked::completable)?;
        let t = q.get_mut(i)?;
        let id = t.active.take()?;
        if t.persistent.is_some() {
            return Some(t.done(id));
        }
        let t = q.remove(i)?;
        self.forget(&t);
        Some(t.done(id))
    }

    /// True when a request (active or a persistent one) is held under `handle`.
    pub(crate) fn holds(&self, handle: u64) -> bool {
        match self.map.get(&handle) {
            Some(Slot::One(_)) => true,
            Some(Slot::Many(q)) => !q.is_empty(),
            None => false,
        }
    }

    /// `MPI_Request_free` let go of `handle`: the id to record (the active operation's,
    /// else the persistent request's). Frees the oldest request under the handle.
    pub(crate) fn freed(&mut self, handle: u64) -> Option<u64> {
        let Entry::Occupied(mut entry) = self.map.entry(handle) else {
            return None;
        };
        let t = match entry.get_mut() {
            Slot::Many(q) => q.pop_front()?,
            Slot::One(_) => match entry.remove() {
                Slot::One(t) => t,
                Slot::Many(_) => return None,
            },
        };
        self.forget(&t);
        t.active.or(t.persistent)
    }

    /// Counts a request gone.
    #[inline]
    fn forget(&mut self, t: &Tracked) {
        self.tracked -= 1;
        if t.kind == RequestKind::Recv {
            self.receives -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_handle_names_the_new_request() {
        let mut t = RequestTable::default();
        t.posted(7, 1, RequestKind::Send, CommInfo::WORLD, false);
        assert_eq!(t.completed(7).map(|d| d.id), Some(1));
        assert_eq!(t.completed(7), None);
        t.posted(7, 2, RequestKind::Recv, CommInfo::WORLD, false);
        let done = t.completed(7).expect("tracked");
        assert_eq!((done.id, done.kind), (2, RequestKind::Recv));
    }

    #[test]
    fn persistent_requests_complete_once_per_start() {
        let mut t = RequestTable::default();
        t.persistent(9, 100, RequestKind::Send, CommInfo::WORLD, false);
        assert_eq!(t.completed(9), None, "inactive");
        assert_eq!(t.started(9, 101), Some(100));
        assert_eq!(t.completed(9).map(|d| d.id), Some(101));
        assert_eq!(t.completed(9), None, "inactive again");
        assert_eq!(t.started(9, 102), Some(100));
        assert_eq!(t.freed(9), Some(102));
        assert_eq!(t.started(9, 103), None, "gone");
    }

    #[test]
    fn a_shared_handle_completes_its_requests_in_post_order() {
        let mut t = RequestTable::default();
        for id in 1..=3 {
            t.posted(0x6c00_0001, id, RequestKind::Send, CommInfo::WORLD, false);
        }
        t.posted(0x6c00_0002, 9, RequestKind::Recv, CommInfo::WORLD, false);
        assert_eq!(t.completed(0x6c00_0001).map(|d| d.id), Some(1));
        assert_eq!(t.freed(0x6c00_0001), Some(2));
        t.posted(
            0x6c00_0001,
            4,
            RequestKind::Collective,
            CommInfo::WORLD,
            false,
        );
        assert_eq!(t.completed(0x6c00_0001).map(|d| d.id), Some(3));
        let last = t.completed(0x6c00_0001).expect("the fourth");
        assert_eq!((last.id, last.kind), (4, RequestKind::Collective));
        assert_eq!(t.completed(0x6c00_0001), None, "all done");
        assert_eq!(t.completed(0x6c00_0002).map(|d| d.id), Some(9));
        assert!(
            t.is_empty(),
            "nothing is tracked (the emptied queue stays, for reuse)"
        );
        t.posted(0x6c00_0001, 5, RequestKind::Send, CommInfo::WORLD, false);
        assert_eq!(t.completed(0x6c00_0001).map(|d| d.id), Some(5), "reused");
    }

    #[test]
    fn an_inactive_persistent_request_lets_later_ones_complete_first() {
        let mut t = RequestTable::default();
        t.persistent(5, 100, RequestKind::Collective, CommInfo::WORLD, false);
        t.posted(5, 1, RequestKind::Send, CommInfo::WORLD, false);
        assert_eq!(
            t.completed(5).map(|d| d.id),
            Some(1),
            "the persistent one is idle"
        );
        assert_eq!(t.started(5, 101), Some(100));
        assert_eq!(t.completed(5).map(|d| d.id), Some(101));
        assert_eq!(t.freed(5), Some(100));
        assert_eq!(t.completed(5), None);
    }

    #[test]
    fn receives_are_counted_while_tracked() {
        let mut t = RequestTable::default();
        t.posted(1, 1, RequestKind::Send, CommInfo::WORLD, false);
        assert!(!t.has_receives());
        t.posted(2, 2, RequestKind::Recv, CommInfo::WORLD, false);
        t.persistent(3, 3, RequestKind::Recv, CommInfo::WORLD, false);
        assert!(t.has_receives());
        assert_eq!(t.completed(2).map(|d| d.id), Some(2));
        assert!(t.has_receives(), "the persistent receive stays");
        assert_eq!(t.started(3, 4), Some(3));
        assert_eq!(t.completed(3).map(|d| d.id), Some(4));
        assert!(t.has_receives(), "inactive, not freed");
        assert_eq!(t.freed(3), Some(3));
        assert!(!t.has_receives());
        assert!(!t.is_empty(), "the send is still tracked");
        assert_eq!(t.completed(1).map(|d| d.id), Some(1));
        assert!(t.is_empty());
    }
}
