//! How reports name an MPI call of a rank ([`CallRef`]): the wait states, the requests
//! and the false-overlap findings all point at calls this way.

use serde::Serialize;

use crate::model::Trace;

/// An MPI call of a rank, as reports name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CallRef {
    /// Rank.
    pub rank: u32,
    /// Index of the call among the rank's events.
    pub index: usize,
    /// MPI function.
    #[serde(deserialize_with = "crate::static_names::read")]
    pub call: crate::static_names::StaticName,
    /// Start, ns since the run's start.
    pub start_ns: u64,
    /// Duration, ns.
    pub duration_ns: u64,
    /// Where the program made the call (a [`crate::sites::Site`] label such as
    /// `calls.c:57 (main)`); `None` when no site was recorded. Filled in by [`crate::analysis::analyze`].
    pub site: Option<String>,
}

impl CallRef {
    /// The call of `rank` at `index`, if that event is a call.
    pub fn of(trace: &Trace, rank: u32, index: usize) -> Option<CallRef> {
        let s = trace.rank(rank)?.spans.get(index)?;
        Some(CallRef {
            rank,
            index,
            call: s.op()?.mpi_name(),
            start_ns: s.start.0,
            duration_ns: s.duration().0,
            site: None,
        })
    }
}
