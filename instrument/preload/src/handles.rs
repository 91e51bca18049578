//! What the preload remembers about communicators between calls: which id and world
//! ranks each has (requests are in [`crate::requests`], windows in [`crate::windows`]).
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

#[cfg(test)]
mod tests {
    use super::*;

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
