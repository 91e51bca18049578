//! What the preload remembers about MPI handles between calls: which of our request ids
//! an `MPI_Request` handle stands for (handles are reused by MPI as soon as a request
//! completes, ids never are), and which id and world ranks a communicator has.
//!
//! Communicator ids must be the same on every member, so that the analyzer can group
//! the k-th collective of a communicator across ranks. The preload wraps the calls that
//! create communicators and agrees on an id with one extra `MPI_Allreduce` over the
//! parent: round `k` (the maximum over the parent's members of their next round) and the
//! lowest world rank of the new communicator give id `k * world_size + lowest`. Two
//! communicators that share a member were created in order on that member, so their
//! rounds differ; two that share none have different lowest members.

use std::collections::hash_map::Entry;
use std::collections::VecDeque;
use std::ffi::c_int;
use std::hash::Hasher;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use mpi_sys::*;
use overlap_instrument::fxhash::{FxHashMap, FxHasher};
use overlap_instrument::schema::RequestKind;

use crate::pmpi::{self, key, Constants};

type FxMap<V> = FxHashMap<u64, V>;

/// A communicator as the recorder names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CommInfo {
    /// The id recorded as `comm`.
    pub(crate) id: u32,
    /// World rank of each rank of the communicator; `None` for `MPI_COMM_WORLD`.
    pub(crate) to_world: Option<Arc<[c_int]>>,
}

impl CommInfo {
    /// `MPI_COMM_WORLD`.
    pub(crate) const WORLD: CommInfo = CommInfo {
        id: 0,
        to_world: None,
    };

    /// A rank of this communicator as a world rank; negative values (wildcards,
    /// `MPI_PROC_NULL`) stay as they are.
    #[inline]
    pub(crate) fn world(&self, rank: c_int) -> c_int {
        match (&self.to_world, usize::try_from(rank)) {
            (Some(map), Ok(r)) => map.get(r).copied().unwrap_or(rank),
            _ => rank,
        }
    }
}

/// Ids at or above this are local fallbacks, for communicators created by calls the
/// preload does not wrap: derived from the members, so equal on every member, but not
/// told apart from another communicator with the same members.
pub(crate) const FALLBACK_IDS: u32 = 0x8000_0000;

/// Ids agreed across the members of a communicator: round `k` (the maximum over the
/// members of their next round) and the lowest world rank give `k * world_size +
/// lowest`. Communicators and windows each have their own rounds.
pub(crate) struct Rounds {
    k: Constants,
    world_size: u64,
    next: Mutex<u64>,
}

impl Rounds {
    pub(crate) fn new(k: Constants, world_size: c_int) -> Rounds {
        Rounds {
            k,
            world_size: u64::try_from(world_size).unwrap_or(1).max(1),
            next: Mutex::new(1),
        }
    }

    /// Agrees on the round with the other members of `parent` (an intracommunicator):
    /// one `MPI_Allreduce` over it. `None` for an intercommunicator or when MPI fails.
    pub(crate) fn agree(&self, parent: MPI_Comm) -> Option<u64> {
        let mut inter: c_int = 0;
        // SAFETY: out-pointer to a local.
        unsafe { PMPI_Comm_test_inter(parent, &mut inter) };
        if inter != 0 {
            return None;
        }
        let mine = *self.next.lock().unwrap_or_else(PoisonError::into_inner);
        let mut agreed = mine;
        // SAFETY: one u64 each way; every member of `parent` is in this call.
        let rc = unsafe {
            PMPI_Allreduce(
                (&raw const mine).cast(),
                (&raw mut agreed).cast(),
                1,
                self.k.u64_type,
                self.k.op_max,
                parent,
            )
        };
        if rc != 0 {
            return None;
        }
        *self.next.lock().unwrap_or_else(PoisonError::into_inner) = agreed + 1;
        Some(agreed)
    }

    /// The id of something created in `round` whose members are these world ranks (a
    /// member-derived fallback without a round).
    pub(crate) fn id(&self, round: Option<u64>, members: &[c_int]) -> u32 {
        let lowest = members.iter().copied().min().unwrap_or(0);
        round
            .and_then(|r| r.checked_mul(self.world_size))
            .and_then(|r| r.checked_add(u64::try_from(lowest).unwrap_or(0)))
            .and_then(|id| u32::try_from(id).ok())
            .filter(|id| *id < FALLBACK_IDS)
            .unwrap_or_else(|| fallback_id(members))
    }
}

/// The communicators seen so far.
pub(crate) struct CommTable {
    k: Constants,
    map: RwLock<FxMap<CommInfo>>,
    rounds: Rounds,
}

impl CommTable {
    pub(crate) fn new(k: Constants, world_size: c_int) -> CommTable {
        CommTable {
            k,
            map: RwLock::new(FxMap::default()),
            rounds: Rounds::new(k, world_size),
        }
    }

    /// What to record for `comm`.
    #[inline]
    pub(crate) fn info(&self, comm: MPI_Comm) -> CommInfo {
        if pmpi::same(comm, self.k.comm_world) {
            return CommInfo::WORLD;
        }
        let found = self
            .map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key(comm))
            .cloned();
        found.unwrap_or_else(|| self.learn(comm))
    }

    /// A communicator met for the first time outside the wrapped constructors.
    #[cold]
    fn learn(&self, comm: MPI_Comm) -> CommInfo {
        let members = pmpi::world_ranks(comm, self.k.comm_world).unwrap_or_default();
        let info = CommInfo {
            id: fallback_id(&members),
            to_world: Some(members.into()),
        };
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key(comm), info.clone());
        info
    }

    /// After a wrapped constructor returned `new` (maybe `MPI_COMM_NULL` on this rank)
    /// on every member of `parent`: agrees on its id. Collective over `parent`.
    pub(crate) fn created(&self, parent: MPI_Comm, new: MPI_Comm) {
        let round = self.rounds.agree(parent);
        if pmpi::same(new, self.k.comm_null) {
            return;
        }
        let members = pmpi::world_ranks(new, self.k.comm_world).unwrap_or_default();
        let id = self.rounds.id(round, &members);
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                key(new),
                CommInfo {
                    id,
                    to_world: Some(members.into()),
                },
            );
    }

    /// Before `MPI_Comm_free`: the handle may come back for another communicator.
    pub(crate) fn freed(&self, comm: MPI_Comm) {
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key(comm));
    }
}

/// The fallback id of a communicator with these members (world ranks, in order).
pub(crate) fn fallback_id(members: &[c_int]) -> u32 {
    let mut h = FxHasher::default();
    // The length first: FxHash of a leading 0 is 0, which would make [0, 1] hash as [1].
    h.write_u64(members.len() as u64);
    for m in members {
        h.write_u64(u64::from(m.unsigned_abs()));
    }
    FALLBACK_IDS | (h.finish() as u32 & !FALLBACK_IDS) | 1
}

/// A request the program holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tracked {
    /// A non-blocking operation in flight.
    Active {
        id: u64,
        kind: RequestKind,
        comm: CommInfo,
        proc_null: bool,
    },
    /// A persistent request, started (`active`) or not.
    Persistent {
        persistent: u64,
        kind: RequestKind,
        comm: CommInfo,
        proc_null: bool,
        active: Option<u64>,
    },
}

impl Tracked {
    /// True when a completing call can complete it now.
    fn completable(&self) -> bool {
        match self {
            Tracked::Active { .. } => true,
            Tracked::Persistent { active, .. } => active.is_some(),
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

    fn position(&self, pred: impl Fn(&Tracked) -> bool) -> Option<usize> {
        match self {
            Slot::One(t) => pred(t).then_some(0),
            Slot::Many(q) => q.iter().position(pred),
        }
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut Tracked> {
        match self {
            Slot::One(t) => (i == 0).then_some(t),
            Slot::Many(q) => q.get_mut(i),
        }
    }
}

/// The requests the program holds, by handle. A handle's requests complete in the order
/// they were posted (the first that can complete: an active operation, or a persistent
/// request that was started).
#[derive(Default)]
pub(crate) struct RequestTable {
    map: Mutex<FxMap<Slot>>,
}

impl RequestTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, FxMap<Slot>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn add(&self, handle: u64, t: Tracked) {
        match self.lock().entry(handle) {
            Entry::Occupied(mut slot) => slot.get_mut().push(t),
            Entry::Vacant(slot) => {
                slot.insert(Slot::One(t));
            }
        }
    }

    /// A post created request `id` under `handle`; `proc_null`: a receive from
    /// `MPI_PROC_NULL`.
    pub(crate) fn posted(
        &self,
        handle: u64,
        id: u64,
        kind: RequestKind,
        comm: CommInfo,
        proc_null: bool,
    ) {
        let t = Tracked::Active {
            id,
            kind,
            comm,
            proc_null,
        };
        self.add(handle, t);
    }

    /// A persistent init created `persistent` under `handle`.
    pub(crate) fn persistent(
        &self,
        handle: u64,
        persistent: u64,
        kind: RequestKind,
        comm: CommInfo,
        proc_null: bool,
    ) {
        self.add(
            handle,
            Tracked::Persistent {
                persistent,
                kind,
                comm,
                proc_null,
                active: None,
            },
        );
    }

    /// A Start made a persistent request under `handle` active as `id` (the oldest
    /// inactive one); returns the persistent id.
    pub(crate) fn started(&self, handle: u64, id: u64) -> Option<u64> {
        let mut map = self.lock();
        let slot = map.get_mut(&handle)?;
        let persistent = slot.iter_mut().find_map(|t| match t {
            Tracked::Persistent {
                persistent,
                active: active @ None,
                ..
            } => {
                *active = Some(id);
                Some(*persistent)
            }
            _ => None,
        });
        persistent
    }

    /// A request under `handle` completed: the oldest that could. Forgets it (a
    /// persistent request becomes inactive and stays).
    pub(crate) fn completed(&self, handle: u64) -> Option<Done> {
        let mut map = self.lock();
        let slot = map.get_mut(&handle)?;
        let i = slot.position(Tracked::completable)?;
        if let Some(Tracked::Persistent {
            kind,
            comm,
            active,
            proc_null,
            ..
        }) = slot.get_mut(i)
        {
            return Some(Done {
                id: active.take()?,
                kind: *kind,
                comm: comm.clone(),
                proc_null: *proc_null,
            });
        }
        match take(&mut map, handle, i)? {
            Tracked::Active {
                id,
                kind,
                comm,
                proc_null,
            } => Some(Done {
                id,
                kind,
                comm,
                proc_null,
            }),
            Tracked::Persistent { .. } => None,
        }
    }

    /// `MPI_Request_free` let go of `handle`: the id to record (the active operation's,
    /// else the persistent request's). Frees the oldest request under the handle.
    pub(crate) fn freed(&self, handle: u64) -> Option<u64> {
        match take(&mut self.lock(), handle, 0)? {
            Tracked::Active { id, .. } => Some(id),
            Tracked::Persistent {
                persistent, active, ..
            } => Some(active.unwrap_or(persistent)),
        }
    }
}

/// Takes the `i`-th request under `handle` out of `map`, and the handle with its last.
fn take(map: &mut FxMap<Slot>, handle: u64, i: usize) -> Option<Tracked> {
    if let Slot::Many(q) = map.get_mut(&handle)? {
        let t = q.remove(i);
        if q.is_empty() {
            map.remove(&handle);
        }
        return t;
    }
    match map.remove(&handle)? {
        Slot::One(t) => Some(t),
        Slot::Many(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_handle_names_the_new_request() {
        let t = RequestTable::default();
        t.posted(7, 1, RequestKind::Send, CommInfo::WORLD, false);
        assert_eq!(t.completed(7).map(|d| d.id), Some(1));
        assert_eq!(t.completed(7), None);
        t.posted(7, 2, RequestKind::Recv, CommInfo::WORLD, false);
        let done = t.completed(7).expect("tracked");
        assert_eq!((done.id, done.kind), (2, RequestKind::Recv));
    }

    #[test]
    fn persistent_requests_complete_once_per_start() {
        let t = RequestTable::default();
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
        let t = RequestTable::default();
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
        assert!(!t.lock().contains_key(&0x6c00_0001), "the queue is gone");
        assert_eq!(t.completed(0x6c00_0002).map(|d| d.id), Some(9));
    }

    #[test]
    fn an_inactive_persistent_request_lets_later_ones_complete_first() {
        let t = RequestTable::default();
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
    fn world_ranks_of_a_communicator() {
        let c = CommInfo {
            id: 5,
            to_world: Some(vec![3, 1].into()),
        };
        assert_eq!(c.world(0), 3);
        assert_eq!(c.world(1), 1);
        assert_eq!(c.world(-2), -2, "wildcards stay");
        assert_eq!(CommInfo::WORLD.world(4), 4);
    }

    #[test]
    fn fallback_ids_are_flagged_and_member_derived() {
        let a = fallback_id(&[0, 1]);
        assert!(a >= FALLBACK_IDS);
        assert_eq!(a, fallback_id(&[0, 1]));
        assert_ne!(a, fallback_id(&[1]));
    }
}
