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
const FALLBACK_IDS: u32 = 0x8000_0000;

/// The communicators seen so far.
pub(crate) struct CommTable {
    k: Constants,
    world_size: u64,
    map: RwLock<FxMap<CommInfo>>,
    next_round: Mutex<u64>,
}

impl CommTable {
    pub(crate) fn new(k: Constants, world_size: c_int) -> CommTable {
        CommTable {
            k,
            world_size: u64::try_from(world_size).unwrap_or(1).max(1),
            map: RwLock::new(FxMap::default()),
            next_round: Mutex::new(1),
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
        let mut inter: c_int = 0;
        // SAFETY: out-pointer to a local.
        unsafe { PMPI_Comm_test_inter(parent, &mut inter) };
        let round = if inter == 0 {
            let mine = *self
                .next_round
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
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
            (rc == 0).then_some(agreed)
        } else {
            None
        };
        if let Some(round) = round {
            *self
                .next_round
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = round + 1;
        }
        if pmpi::same(new, self.k.comm_null) {
            return;
        }
        let members = pmpi::world_ranks(new, self.k.comm_world).unwrap_or_default();
        let lowest = members.iter().copied().min().unwrap_or(0);
        let id = round
            .and_then(|r| r.checked_mul(self.world_size))
            .and_then(|r| r.checked_add(u64::try_from(lowest).unwrap_or(0)))
            .and_then(|id| u32::try_from(id).ok())
            .filter(|id| *id < FALLBACK_IDS)
            .unwrap_or_else(|| fallback_id(&members));
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
fn fallback_id(members: &[c_int]) -> u32 {
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
    },
    /// A persistent request, started (`active`) or not.
    Persistent {
        persistent: u64,
        kind: RequestKind,
        comm: CommInfo,
        active: Option<u64>,
    },
}

/// A request that completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Done {
    pub(crate) id: u64,
    pub(crate) kind: RequestKind,
    pub(crate) comm: CommInfo,
}

/// The requests the program holds, by handle.
#[derive(Default)]
pub(crate) struct RequestTable {
    map: Mutex<FxMap<Tracked>>,
}

impl RequestTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, FxMap<Tracked>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A post created request `id` under `handle`.
    pub(crate) fn posted(&self, handle: u64, id: u64, kind: RequestKind, comm: CommInfo) {
        self.lock()
            .insert(handle, Tracked::Active { id, kind, comm });
    }

    /// A persistent init created `persistent` under `handle`.
    pub(crate) fn persistent(
        &self,
        handle: u64,
        persistent: u64,
        kind: RequestKind,
        comm: CommInfo,
    ) {
        self.lock().insert(
            handle,
            Tracked::Persistent {
                persistent,
                kind,
                comm,
                active: None,
            },
        );
    }

    /// A Start made the persistent request under `handle` active as `id`; returns the
    /// persistent id.
    pub(crate) fn started(&self, handle: u64, id: u64) -> Option<u64> {
        match self.lock().get_mut(&handle) {
            Some(Tracked::Persistent {
                persistent, active, ..
            }) => {
                *active = Some(id);
                Some(*persistent)
            }
            _ => None,
        }
    }

    /// The request under `handle` completed: forgets it (a persistent request becomes
    /// inactive and stays).
    pub(crate) fn completed(&self, handle: u64) -> Option<Done> {
        let mut map = self.lock();
        match map.get_mut(&handle)? {
            Tracked::Persistent {
                kind, comm, active, ..
            } => Some(Done {
                id: active.take()?,
                kind: *kind,
                comm: comm.clone(),
            }),
            Tracked::Active { .. } => match map.remove(&handle)? {
                Tracked::Active { id, kind, comm } => Some(Done { id, kind, comm }),
                Tracked::Persistent { .. } => None,
            },
        }
    }

    /// `MPI_Request_free` let go of `handle`: the id to record (the active operation's,
    /// else the persistent request's).
    pub(crate) fn freed(&self, handle: u64) -> Option<u64> {
        match self.lock().remove(&handle)? {
            Tracked::Active { id, .. } => Some(id),
            Tracked::Persistent {
                persistent, active, ..
            } => Some(active.unwrap_or(persistent)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_handle_names_the_new_request() {
        let t = RequestTable::default();
        t.posted(7, 1, RequestKind::Send, CommInfo::WORLD);
        assert_eq!(t.completed(7).map(|d| d.id), Some(1));
        assert_eq!(t.completed(7), None);
        t.posted(7, 2, RequestKind::Recv, CommInfo::WORLD);
        let done = t.completed(7).expect("tracked");
        assert_eq!((done.id, done.kind), (2, RequestKind::Recv));
    }

    #[test]
    fn persistent_requests_complete_once_per_start() {
        let t = RequestTable::default();
        t.persistent(9, 100, RequestKind::Send, CommInfo::WORLD);
        assert_eq!(t.completed(9), None, "inactive");
        assert_eq!(t.started(9, 101), Some(100));
        assert_eq!(t.completed(9).map(|d| d.id), Some(101));
        assert_eq!(t.completed(9), None, "inactive again");
        assert_eq!(t.started(9, 102), Some(100));
        assert_eq!(t.freed(9), Some(102));
        assert_eq!(t.started(9, 103), None, "gone");
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
