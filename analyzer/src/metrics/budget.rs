//! Where each rank's time goes: its wall time split into useful time (outside MPI),
//! traced compute, time inside MPI and, of that, time in calls that wait.
//!
//! ```text
//!  rank 0  |compute 6|Isend 1|Waitall 3|compute 4|      wall 14, in MPI 4, useful 10,
//!                                                        compute 10, waiting 3
//! ```
//!
//! The figures are per rank, as the time covered by any of its threads: when two
//! threads are inside MPI at once, that time counts once, so that in MPI (and waiting)
//! never exceed the wall time, and useful time is the time in which no thread of the
//! rank was inside MPI. Compute is counted in that same time only (the rank computed
//! while none of its threads was in MPI), so that compute never exceeds useful time and
//! compute and in MPI together never exceed the wall time.
//!
//! ```text
//!  thread 1  |Waitall 0-6|compute 6-10|   in MPI 8 (0-8), not 6 + 4
//!  thread 2      |Recv 4-8|compute 8-10|  waiting 8, useful 2 of wall 10,
//!                                         compute 2 (8-10), not 4 + 2
//! ```

use std::collections::BTreeMap;

use overlap_format::schema::{Nanos, Op};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::model::compute::ComputeSource;
use crate::model::compute::RankCompute;
use crate::model::{Timeline, Trace, What};

/// Call counts keyed by MPI function name in JSON.
fn calls_by_name<S: Serializer>(calls: &BTreeMap<Op, u64>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(calls.iter().map(|(op, n)| (op.mpi_name(), n)))
}

/// Call counts read back by MPI function name ([`calls_by_name`]'s inverse).
fn calls_of_names<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<Op, u64>, D::Error> {
    let named = BTreeMap::<String, u64>::deserialize(d)?;
    (named.into_iter())
        .map(|(name, n)| match Op::from_mpi_name(&name) {
            Some(op) => Ok((op, n)),
            None => Err(serde::de::Error::custom(format!(
                "no MPI call is named {name}"
            ))),
        })
        .collect()
}

/// One rank's time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankBudget {
    /// Rank.
    pub rank: u32,
    /// Host.
    pub host: String,
    /// False when the rank's trace was cut short.
    pub complete: bool,
    /// First event's start, ns since the run's start.
    pub start_ns: u64,
    /// Last event's end to first event's start, ns.
    pub wall_ns: u64,
    /// Wall time outside MPI calls (POP's useful time), ns.
    pub useful_ns: u64,
    /// Compute time, ns: covered by the rank's compute spans, or inferred from the gaps
    /// between its MPI calls ([`crate::model::compute`]), while no thread of the rank was
    /// inside MPI (at most `useful_ns`).
    pub compute_ns: u64,
    /// Where `compute_ns` comes from.
    pub compute_source: ComputeSource,
    /// Time in which some thread of the rank was inside an MPI call, ns.
    pub in_mpi_ns: u64,
    /// Time in which some thread of the rank was inside a call that waits (Wait*, Test,
    /// Barrier, blocking point-to-point), ns.
    pub waiting_ns: u64,
    /// Calls by MPI function.
    #[serde(serialize_with = "calls_by_name", deserialize_with = "calls_of_names")]
    pub calls: BTreeMap<Op, u64>,
}

/// The run's time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunBudget {
    /// Earliest start to latest end over all ranks, ns.
    pub wall_ns: u64,
    /// Sum over ranks of useful time, ns.
    pub useful_ns: u64,
    /// Sum over ranks of time in MPI, ns.
    pub in_mpi_ns: u64,
    /// Sum over ranks of waiting time, ns.
    pub waiting_ns: u64,
    /// Waiting time over the ranks' summed wall time (0..1); `None` (null) when the
    /// ranks have no wall time to divide by.
    pub waiting_fraction: Option<f64>,
}

/// Budgets of every rank and of the run.
pub fn budgets(trace: &Trace) -> (Vec<RankBudget>, RunBudget) {
    let ranks: Vec<RankBudget> = trace
        .ranks
        .iter()
        .zip(&trace.compute)
        .map(|(t, compute)| rank_budget(t, compute))
        .collect();
    let extents: Vec<(Nanos, Nanos)> = trace.ranks.iter().filter_map(|t| t.extent()).collect();
    let run = run_budget(&ranks, &extents);
    (ranks, run)
}

/// One rank's budget: what [`budgets`] computes per rank, from that rank alone.
pub fn rank_budget(t: &Timeline, compute: &RankCompute) -> RankBudget {
    let (start, end) = t.extent().unwrap_or((Nanos::ZERO, Nanos::ZERO));
    let mut b = RankBudget {
        rank: t.rank,
        host: t.host.clone(),
        complete: t.complete,
        start_ns: start.0,
        wall_ns: end.saturating_sub(start).0,
        useful_ns: 0,
        compute_ns: 0,
        compute_source: compute.source(),
        in_mpi_ns: 0,
        waiting_ns: 0,
        calls: BTreeMap::new(),
    };
    // Time inside MPI and inside waiting calls, clipped to the analysed part; Init
    // and Finalize lie outside it (see `extent`).
    let (mut in_mpi, mut waiting) = (Covered::default(), Covered::default());
    for s in &t.spans {
        let What::Call(op, _) = s.what else { continue };
        *b.calls.entry(op).or_default() += 1;
        let span = (s.start.max(start).0, s.end.min(end).0);
        if span.1 <= span.0 || matches!(op, Op::Init | Op::InitThread | Op::Finalize) {
            continue;
        }
        in_mpi.add(span);
        if op.is_waiting() {
            waiting.add(span);
        }
    }
    b.in_mpi_ns = in_mpi.total;
    b.waiting_ns = waiting.total;
    b.useful_ns = b.wall_ns.saturating_sub(b.in_mpi_ns);
    b.compute_ns = compute_outside(compute, (start.0, end.0), &in_mpi.intervals);
    b
}

/// The compute within `extent` that lies outside the intervals in MPI (disjoint, sorted).
fn compute_outside(compute: &RankCompute, extent: (u64, u64), in_mpi: &[(u64, u64)]) -> u64 {
    let inside = compute.within_each(in_mpi).0;
    let all = compute.within(Nanos(extent.0), Nanos(extent.1)).0 .0;
    all.saturating_sub(inside)
}

/// The run's budget from its ranks' and their extents (see `Timeline::extent`).
pub fn run_budget(ranks: &[RankBudget], extents: &[(Nanos, Nanos)]) -> RunBudget {
    let wall = match (
        extents.iter().map(|e| e.0).min(),
        extents.iter().map(|e| e.1).max(),
    ) {
        (Some(a), Some(b)) => b.saturating_sub(a).0,
        _ => 0,
    };
    let sum_wall: u64 = ranks.iter().map(|r| r.wall_ns).sum();
    let waiting: u64 = ranks.iter().map(|r| r.waiting_ns).sum();
    RunBudget {
        wall_ns: wall,
        useful_ns: ranks.iter().map(|r| r.useful_ns).sum(),
        in_mpi_ns: ranks.iter().map(|r| r.in_mpi_ns).sum(),
        waiting_ns: waiting,
        waiting_fraction: share_of(waiting, sum_wall),
    }
}

/// `part / whole`, none when `whole` is 0: no share to state, not a share of 0.
pub(crate) fn share_of(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// Time covered by intervals `[start, end)` added in order of start (a timeline's
/// spans are sorted by start): overlapping ones count once.
#[derive(Default)]
struct Covered {
    total: u64,
    /// The latest end so far.
    reach: u64,
    /// The covered time as disjoint intervals, by start.
    intervals: Vec<(u64, u64)>,
}

impl Covered {
    fn add(&mut self, (start, end): (u64, u64)) {
        let start = start.max(self.reach);
        if end <= start {
            return;
        }
        self.total += end - start;
        self.reach = end;
        match self.intervals.last_mut() {
            Some(last) if last.1 == start => last.1 = end,
            _ => self.intervals.push((start, end)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_calls_are_the_blocking_and_completing_ones() {
        let waiting: Vec<Op> = Op::ALL.iter().copied().filter(|o| o.is_waiting()).collect();
        assert_eq!(
            waiting,
            vec![
                Op::Send,
                Op::Ssend,
                Op::Bsend,
                Op::Rsend,
                Op::Recv,
                Op::Sendrecv,
                Op::SendrecvReplace,
                Op::Probe,
                Op::Wait,
                Op::Waitall,
                Op::Waitany,
                Op::Waitsome,
                Op::Test,
                Op::Testall,
                Op::Testany,
                Op::Testsome,
                Op::Barrier,
                Op::WinFree,
                Op::WinFence,
                Op::WinStart,
                Op::WinComplete,
                Op::WinWait,
                Op::WinTest,
                Op::WinLock,
                Op::WinUnlock,
                Op::WinLockAll,
                Op::WinUnlockAll,
                Op::WinFlush,
                Op::WinFlushAll,
                Op::WinFlushLocal,
                Op::WinFlushLocalAll,
                Op::Mprobe,
                Op::Mrecv,
            ]
        );
    }
}
