//! What the preload remembers about one-sided communication windows: the id recorded as
//! `win`, the communicator the window was created over, and the world ranks of its
//! group (one-sided calls name their target by its rank in that group).
//!
//! Window ids must be the same on every rank of the window's group, so that the analyzer
//! can pair the k-th fence, or an origin's Win_start with its targets' Win_post, across
//! ranks. They are agreed like communicator ids (see [`crate::handles`]): one extra
//! `MPI_Allreduce` over the window's communicator at creation, with rounds of their own.

use std::ffi::c_int;
use std::mem::MaybeUninit;
use std::sync::{PoisonError, RwLock};

use mpi_sys::*;
use overlap_instrument::fxhash::FxHashMap;

use crate::handles::{fallback_id, CommInfo, Rounds};
use crate::pmpi::{self, key, Constants};

/// A window as the recorder names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WinInfo {
    /// The id recorded as `win`.
    pub(crate) id: u32,
    /// The communicator it was created over: its id, and the world rank of each rank
    /// of the window's group.
    pub(crate) comm: CommInfo,
}

/// The windows alive.
pub(crate) struct WinTable {
    k: Constants,
    map: RwLock<FxHashMap<u64, WinInfo>>,
    rounds: Rounds,
}

impl WinTable {
    pub(crate) fn new(k: Constants, world_size: c_int) -> WinTable {
        WinTable {
            k,
            map: RwLock::new(FxHashMap::default()),
            rounds: Rounds::new(k, world_size),
        }
    }

    /// After a window constructor returned `win` over `comm` (recorded as `info`) on
    /// every member: agrees on its id. Collective over `comm`.
    pub(crate) fn created(&self, comm: MPI_Comm, info: CommInfo, win: MPI_Win) -> WinInfo {
        let round = self.rounds.agree(comm);
        let members = pmpi::world_ranks(comm, self.k.comm_world).unwrap_or_default();
        let w = WinInfo {
            id: self.rounds.id(round, &members),
            comm: info,
        };
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key(win), w.clone());
        w
    }

    /// What to record for `win`.
    #[inline]
    pub(crate) fn info(&self, win: MPI_Win) -> WinInfo {
        let found = self
            .map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key(win))
            .cloned();
        found.unwrap_or_else(|| self.learn(win))
    }

    /// A window met outside the wrapped constructors: named after its members, so
    /// equal on every member but not told apart from another window of the same group.
    #[cold]
    fn learn(&self, win: MPI_Win) -> WinInfo {
        let members = group_of(win)
            .and_then(|g| self.world_ranks(*g))
            .unwrap_or_default();
        let w = WinInfo {
            id: fallback_id(&members),
            comm: CommInfo {
                id: fallback_id(&members),
                to_world: Some(crate::handles::intern(members)),
            },
        };
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key(win), w.clone());
        w
    }

    /// Before `MPI_Win_free`: the handle may come back for another window.
    pub(crate) fn freed(&self, win: MPI_Win) -> Option<WinInfo> {
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key(win))
    }

    /// The world ranks of the members of `group`, in group order.
    pub(crate) fn world_ranks(&self, group: MPI_Group) -> Option<Vec<c_int>> {
        pmpi::group_world_ranks(group, self.k.comm_world)
    }
}

/// The group of `win` (freed by the caller's use: see [`WinTable::learn`]).
fn group_of(win: MPI_Win) -> Option<Group> {
    let mut group = MaybeUninit::<MPI_Group>::uninit();
    // SAFETY: out-pointer to a local.
    let rc = unsafe { PMPI_Win_get_group(win, group.as_mut_ptr()) };
    // SAFETY: MPI wrote the group.
    (rc == 0).then(|| Group(unsafe { group.assume_init() }))
}

/// A group the preload obtained, freed when dropped.
struct Group(MPI_Group);

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: a group MPI gave the preload, freed once.
        unsafe { PMPI_Group_free(&mut self.0) };
    }
}

impl std::ops::Deref for Group {
    type Target = MPI_Group;
    fn deref(&self) -> &MPI_Group {
        &self.0
    }
}
