//! The run replayed on an ideal network (zero latency, infinite bandwidth), for POP's
//! `T_ideal`.
//!
//! Each rank replays its events in order. Time outside MPI (compute spans and the gaps
//! between events) keeps its measured length; an MPI call takes no time at all, except
//! that it cannot finish before what it depends on has happened in the replay:
//!
//! - a call that completes a receive (Recv, Sendrecv, Wait*, Test) waits for the
//!   matching send to have been posted;
//! - a collective waits for every member of its instance
//!   ([`crate::metrics::collectives`]) to have entered it.
//!
//! Sends are posted when the call is entered and complete at once (an ideal network
//! buffers everything), so a Sendrecv exchange never waits on itself. Waits that an ideal
//! network would remove (transfers, and the delays they pass on to partners) vanish;
//! waits caused by other ranks' work remain. So `T_ideal` separates serialization from
//! transfer without the trace's transfer delays leaking into either.
//!
//! ```text
//!  measured  r0 |c 4|Isend|Wait 3|c 4|        replayed  r0 |c 4|Isend|c 4|      T_ideal 9
//!            r1 |c 5|Irecv|Wait 2|c 4|                  r1 |c 5|Irecv|c 4|
//! ```

use super::{measured_makespan, ReplayConfig};
use crate::ops::MeasuredProgram;

/// The replayed runtime, ns, or `None` when the replay cannot finish (a dependence on
/// an event the trace lacks, e.g. a rank cut short).
///
/// It is the replay engine ([`crate::replay`]) in its [`ReplayConfig::ideal`]
/// configuration, on the trace's program ([`crate::ops::extract_measured`]) in
/// measured order.
pub fn replay(program: &MeasuredProgram) -> Option<u64> {
    measured_makespan(program, &ReplayConfig::ideal()).ok()
}
