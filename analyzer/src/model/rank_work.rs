//! The work of one traced rank: how many events it recorded, how many MPI calls, and
//! how many of those only asked whether something happened. A baseline records it per
//! rank, and a check reads it to tell like runs apart and to judge whether a run is
//! complete; it is made of each rank's timeline as the rank is read, whether the run is
//! then held whole or read a part of its ranks at a time.

use overlap_format::schema::Op;
use serde::{Deserialize, Serialize};

use super::Timeline;

/// The work of one traced rank, as a baseline records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankWork {
    /// The rank.
    pub rank: u32,
    /// Events traced (MPI calls and compute spans).
    pub events: u64,
    /// MPI calls traced.
    pub mpi_calls: u64,
    /// Of those, polls (`MPI_Test*`, `MPI_Iprobe`, `MPI_Win_test`): how many a program
    /// makes depends on timing, so they do not count as work.
    pub polls: u64,
}

impl RankWork {
    /// The work of the rank whose timeline is `t`.
    pub fn of(t: &Timeline) -> RankWork {
        let ops = t.spans.iter().filter_map(|s| s.op());
        let (calls, polls) = ops.fold((0, 0), |(c, p), op| (c + 1, p + u64::from(is_poll(op))));
        RankWork {
            rank: t.rank,
            events: t.spans.len() as u64,
            mpi_calls: calls,
            polls,
        }
    }

    /// MPI calls that are not polls: the same for every run of a deterministic program.
    pub fn work_calls(&self) -> u64 {
        self.mpi_calls.saturating_sub(self.polls)
    }
}

/// True for calls that only ask whether something happened.
fn is_poll(op: Op) -> bool {
    op.is_test() || matches!(op, Op::Iprobe | Op::WinTest)
}
