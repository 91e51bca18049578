//! What a performance engineer looks at first, in the form mpiP and Vampir taught them:
//! the time in each MPI function and at each call site (count, total, mean, min, max,
//! the time lost there in wait states, and the bytes moved), who sent how much to whom
//! (the communication matrix, per pair and per communicator), how large the messages
//! were (log2 classes, per sending function), and how each rank's run splits into
//! setting up, its body and finalizing.
//!
//! Every figure is summed from the trace as recorded: a call's time is its span, a
//! message's bytes those the receive reported (or the send's count when the receive
//! reported none), wait states those of [`crate::metrics::wait_states`] beyond the
//! clock error bound. What the trace cannot say (a phase whose bounding call was not
//! recorded) is unknown, with the reason, never 0.
//!
//! - [`calls`]: the tables by function and by call site.
//! - [`traffic`]: the communication matrix and the message sizes.
//! - [`phases`]: setup, body and finalize per rank.

pub mod calls;
pub mod phases;
pub mod traffic;

use serde::Serialize;

use crate::metrics::WaitInstance;
use crate::model::Trace;
use crate::sites::SiteTable;

pub use calls::{CallStats, SiteStats};
pub use phases::{Phases, RankPhases};
pub use traffic::{CommMatrix, CommTraffic, PairTraffic, SizeClass, SizeClasses};

/// The run's profile.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Profile {
    /// Time per MPI function, largest total first.
    pub functions: Vec<CallStats>,
    /// Time per (call site, MPI function), largest total first.
    pub sites: Vec<SiteStats>,
    /// Point-to-point traffic: per pair of world ranks and per communicator.
    pub matrix: CommMatrix,
    /// Message sizes in log2 classes, per sending MPI function.
    pub sizes: Vec<SizeClasses>,
    /// Setup, body and finalize, per rank.
    pub phases: Phases,
}

/// The profile of `trace`, its calls' sites named by `sites`, with the wait-state
/// instances `waits` charged to the calls they happened in.
pub fn of(trace: &Trace, sites: &SiteTable, waits: &[WaitInstance]) -> Profile {
    let _span = tracing::info_span!("profile").entered();
    let (functions, by_site) = calls::tables(trace, sites, waits);
    Profile {
        functions,
        sites: by_site,
        matrix: traffic::matrix(trace),
        sizes: traffic::sizes(trace),
        phases: phases::of(trace, waits),
    }
}
