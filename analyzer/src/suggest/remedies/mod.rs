//! Other fixes than an order: what would shorten the run where moving calls does not,
//! or beside the moves.
//!
//! - **Progress.** Under MPICH's default, a large (rendezvous) message moves only while
//!   its sender or its receiver is inside an MPI call: a transfer posted before a long
//!   compute waits for the Wait after it, however well the program overlapped on paper
//!   ("overlap written, not achieved"). The cure is not an order: call `MPI_Test` on the
//!   request from inside that compute, or turn on asynchronous progress. The prediction
//!   is the replay of the same order with [`ProgressMode::Async`] against
//!   [`ProgressMode::InMpi`]: the most that progress during compute can gain. The remedy
//!   names the completions whose waits the replay shortens most, and the compute inside
//!   their requests' windows to call `MPI_Test` from.
//! - **A late partner.** A Late Sender (or Late Receiver) wait is the partner's
//!   lateness: no order of the waiting rank's calls removes it. The remedy names the
//!   waiting call, the partner's late call and the partner's compute before it, with
//!   the time lost (measured, `metrics::wait_states`).
//! - **Imbalance at a collective.** Waits at barriers and all-to-all collectives are
//!   the slowest member's lateness: the remedy names the collective, the time lost and
//!   the rank that arrived last most often.
//!
//! ```text
//!  rank 0 |Isend 4 MiB|====== compute 30 ms ======|Wait 2 ms|   in-mpi: the data moves
//!  rank 1 |Irecv 4 MiB|====== compute 30 ms ======|Wait 2 ms|   in the Waits only;
//!  async: it moves during the compute, both Waits end at once -> gain 2 ms
//! ```

use serde::Serialize;

mod progress;
mod waits;

pub use progress::progress;
pub use waits::waits;

use crate::units::duration;

use super::Predicted;

/// Late-partner and imbalance remedies listed (the largest first; the JSON has as many).
pub const LISTED: usize = 3;

/// The other fixes of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Remedies {
    /// Progress during compute, when it gains more than the model's uncertainty; why
    /// not, otherwise.
    pub progress: ProgressRemedy,
    /// Waits that are a partner's lateness, the largest first.
    pub late_partners: Vec<LatePartner>,
    /// Waits at collectives for their slowest member, the largest first.
    pub imbalance: Vec<Imbalance>,
}

/// Progress during compute: its predicted gain, or why there is none.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum ProgressRemedy {
    /// It gains more than the model's uncertainty.
    Gains(ProgressGain),
    /// It gains no more than the uncertainty (or nothing).
    NothingToGain {
        /// The predicted gain, ns (may be 0).
        gain_ns: i64,
    },
    /// The replay already assumed asynchronous progress.
    AlreadyAsync,
    /// The order could not be replayed under one of the two progress modes.
    NotReplayable {
        /// Why.
        reason: String,
    },
    /// Not evaluated: no network is known, nothing is predicted.
    NoNetwork,
    /// Not evaluated (no suggestion was made).
    #[default]
    NotEvaluated,
}

/// What progress during compute gains, and where to give it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProgressGain {
    /// The order replayed with progress only inside MPI calls.
    pub in_mpi: Predicted,
    /// The same order with asynchronous progress.
    pub with_progress: Predicted,
    /// `in_mpi - with_progress` at the model's best estimate, ns.
    pub gain_ns: i64,
    /// The completions whose waits shrink most, by call site.
    pub sites: Vec<ProgressSite>,
}

/// A completion call site whose waits progress during compute shortens.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProgressSite {
    /// The completing call and where (`MPI_Waitall at halo.c:60`).
    pub wait: String,
    /// The compute inside the requests' windows to call `MPI_Test` from, in words.
    pub compute: String,
    /// Summed over ranks and iterations: how much shorter its waits get, ns.
    pub shortened_ns: u64,
    /// Requests of this site whose waits shrink.
    pub requests: u64,
    /// About how often to call `MPI_Test` in that compute, ns: a quarter of the
    /// requests' pure transfer time (so that a transfer sees several calls while it
    /// runs), no less than 20 times the cost of a Test that completed nothing on the
    /// rank (so that the calls cost under 5 %).
    pub test_every_ns: u64,
}

/// A wait that is a partner's lateness.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatePartner {
    /// Late Sender or Late Receiver.
    pub kind: &'static str,
    /// The waiting call and where (`MPI_Wait at halo.c:60`).
    pub wait: String,
    /// The partner's late call and where.
    pub late_call: String,
    /// The late partner, most often.
    pub late_rank: u32,
    /// The partner's compute just before its late call, in words.
    pub late_compute: String,
    /// Waits of this pair of sites.
    pub count: u64,
    /// Their summed time, ns.
    pub lost_ns: u64,
}

/// Waits at a collective for its slowest member.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Imbalance {
    /// The collective and where.
    pub call: String,
    /// The member that arrived last most often.
    pub last_rank: u32,
    /// Waits at it.
    pub count: u64,
    /// Their summed time, ns.
    pub lost_ns: u64,
}

/// The remedies in words, for the text report: the progress remedy when it gains, and
/// the largest late partners and imbalances.
pub fn lines(r: &Remedies) -> Vec<String> {
    let mut out = Vec::new();
    if let ProgressRemedy::Gains(g) = &r.progress {
        out.push(format!(
            "progress during compute: {} predicted ({} -> {}, replayed with --progress async)",
            signed(g.gain_ns),
            duration(g.in_mpi.ns),
            duration(g.with_progress.ns)
        ));
        for s in &g.sites {
            out.push(format!(
                "  {}: waits {} shorter ({} request(s)): call MPI_Test on the requests from {} about every {}, or enable asynchronous progress (MPICH_ASYNC_PROGRESS=1)",
                s.wait,
                duration(s.shortened_ns),
                s.requests,
                s.compute,
                duration(s.test_every_ns)
            ));
        }
    }
    for l in r.late_partners.iter().take(LISTED) {
        out.push(format!(
            "{} lost {} in {} wait(s) ({}) for rank {}'s {} in the measured order: shorten or rebalance {} on rank {}, which made it late",
            l.wait,
            duration(l.lost_ns),
            l.count,
            l.kind,
            l.late_rank,
            l.late_call,
            l.late_compute,
            l.late_rank
        ));
    }
    for i in r.imbalance.iter().take(LISTED) {
        out.push(format!(
            "{} lost {} in {} wait(s) for the slowest member (rank {} most often): balance the work before it",
            i.call,
            duration(i.lost_ns),
            i.count,
            i.last_rank
        ));
    }
    out
}

fn signed(ns: i64) -> String {
    if ns < 0 {
        format!("+{}", duration(ns.unsigned_abs()))
    } else {
        format!("-{}", duration(ns as u64))
    }
}
