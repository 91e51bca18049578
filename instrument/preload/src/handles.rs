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
//!
//! Every wrapped call over a communicator other than the world looks it up, so each
//! thread keeps the last ones it met in a small cache ([`CommCache`]) emptied whenever
//! the table changes, and a communicator's world ranks are interned: one copy per
//! distinct member list for the whole run, shared by every record without reference
//! counting.

use std::collections::HashSet;
use std::ffi::c_int;
use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use mpi_sys::*;
use overlap_instrument::fxhash::{FxHashMap, FxHasher};

use crate::cache::HandleCache;
use crate::pmpi::{self, key, Constants};

type FxMap<V> = FxHashMap<u64, V>;

/// A communicator as the recorder names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CommInfo {
    /// The id recorded as `comm`.
    pub(crate) id: u32,
    /// World rank of each rank of the communicator ([`intern`]ed); `None` for
    /// `MPI_COMM_WORLD`.
    pub(crate) to_world: Option<&'static [c_int]>,
}

/// The one copy of a list of world ranks. The copies live until the process ends: one
/// per distinct member list, however many communicators and windows have it.
#[cold]
pub(crate) fn intern(members: Vec<c_int>) -> &'static [c_int] {
    static LISTS: Mutex<Option<HashSet<&'static [c_int]>>> = Mutex::new(None);
    let mut lists = LISTS.lock().unwrap_or_else(PoisonError::into_inner);
    let lists = lists.get_or_insert_with(HashSet::new);
    if let Some(found) = lists.get(members.as_slice()) {
        return found;
    }
    let list: &'static [c_int] = Box::leak(members.into_boxed_slice());
    lists.insert(list);
    list
}

/// Bumped whenever a communicator handle is forgotten (freed): caches filled before are
/// stale. Bumped before MPI may reuse the handle, so a thread that later meets the
/// reused handle (which the program must have passed to it) sees the bump.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Slots of a thread's communicator cache.
const CACHED: usize = 16;

/// One thread's recently met communicators.
pub(crate) type CommCache = HandleCache<CommInfo, CACHED>;

/// A thread's empty communicator cache.
pub(crate) fn cache() -> CommCache {
    HandleCache::new(&GENERATION)
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
        match (self.to_world, usize::try_from(rank)) {
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
        crate::thread::current()
            .comms
            .get_with(key(comm), || self.look_up(comm))
    }

    /// `comm` in the table, learnt if it is not there.
    fn look_up(&self, comm: MPI_Comm) -> CommInfo {
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
            to_world: Some(intern(members)),
        };
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key(comm), info);
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
                    to_world: Some(intern(members)),
                },
            );
        // The handle may have been another communicator's, freed by a call the preload
        // does not wrap.
        GENERATION.fetch_add(1, Ordering::Release);
    }

    /// Before `MPI_Comm_free`: the handle may come back for another communicator.
    pub(crate) fn freed(&self, comm: MPI_Comm) {
        GENERATION.fetch_add(1, Ordering::Release);
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
    use std::cell::Cell;

    #[test]
    fn world_ranks_of_a_communicator() {
        let c = CommInfo {
            id: 5,
            to_world: Some(&[3, 1]),
        };
        assert_eq!(c.world(0), 3);
        assert_eq!(c.world(1), 1);
        assert_eq!(c.world(-2), -2, "wildcards stay");
        assert_eq!(CommInfo::WORLD.world(4), 4);
    }

    #[test]
    fn a_cached_communicator_is_looked_up_again_after_one_is_freed() {
        let cache = cache();
        let looked_up = Cell::new(0);
        let info = |id| {
            looked_up.set(looked_up.get() + 1);
            CommInfo {
                id,
                to_world: Some(intern(vec![1, 0])),
            }
        };
        assert_eq!(cache.get_with(0x8400_0001, || info(5)).id, 5);
        assert_eq!(cache.get_with(0x8400_0001, || info(6)).id, 5, "cached");
        assert_eq!(looked_up.get(), 1);
        GENERATION.fetch_add(1, Ordering::Release);
        assert_eq!(
            cache.get_with(0x8400_0001, || info(7)).id,
            7,
            "stale after a free"
        );
        assert!(std::ptr::eq(
            intern(vec![1, 0]),
            cache
                .get_with(0x8400_0001, || info(8))
                .to_world
                .expect("members")
        ));
    }

    #[test]
    fn fallback_ids_are_flagged_and_member_derived() {
        let a = fallback_id(&[0, 1]);
        assert!(a >= FALLBACK_IDS);
        assert_eq!(a, fallback_id(&[0, 1]));
        assert_ne!(a, fallback_id(&[1]));
    }
}
