//! How the text names a call and its time: `MPI_Waitall at 1.203 ms (calls.c:57)`, and
//! whether it fell in the ranks' setup. A leaf the sections share.

use crate::analysis::Report;
use crate::metrics::CallRef;
use crate::units::{at, duration};

/// What of the wait states happened while the ranks set up (from MPI_Init to each
/// rank's first call after it that communicates): start-up skew, said apart from the
/// body's waits.
pub(super) fn setup_waits(r: &Report) -> Option<String> {
    let ns = r.profile.phases.setup_wait_state_ns;
    (ns > 0).then(|| {
        format!(
            "{} of them during setup (MPI_Init to each rank's first call that communicates): \
             start-up skew, not the body's communication",
            duration(ns)
        )
    })
}

/// True when the call of `rank` that started at `start_ns` was made during its setup.
pub(super) fn in_setup(r: &Report, rank: u32, start_ns: u64) -> bool {
    r.profile
        .phases
        .ranks
        .iter()
        .find(|p| p.rank == rank)
        .and_then(|p| p.setup_end_ns)
        .is_some_and(|end| start_ns < end)
}

/// A call as the text names it: `MPI_Waitall at 1.203 ms`, and its source line when known.
pub(super) fn place(c: &CallRef) -> String {
    match &c.site {
        Some(site) => format!("{} at {} ({site})", c.call, at(c.start_ns)),
        None => format!("{} at {}", c.call, at(c.start_ns)),
    }
}
