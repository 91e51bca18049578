//! The first look a merged run gets (`overlap merge`): where each rank's time went,
//! computing, inside MPI and waiting, over the run's wall time, as a table. The figures
//! are [`crate::metrics::budget`]'s; this module only lays them out.

use overlap_format::schema::{MergedInfo, Nanos};

use crate::metrics::budget::{budgets, RankBudget, RunBudget};
use crate::model::Trace;
use crate::units::{duration, share};

/// The run's time budget.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    /// Per rank.
    pub ranks: Vec<RankBudget>,
    /// Earliest start to latest end over all ranks.
    pub wall: Nanos,
    /// Largest clock error bound of any rank.
    pub clock_error: Nanos,
    /// True when every rank read rank 0's own clock (one host).
    pub shared_clock: bool,
    /// When the run was stopped with ranks inside calls that never completed (the
    /// latest dump, ns since the run's start), and how many ranks: see
    /// [`crate::hang::stopped_in_calls`].
    pub stopped_in_calls: Option<(Nanos, usize)>,
}

/// Summarises a run.
pub fn summarize(trace: &Trace) -> RunSummary {
    let (ranks, run) = budgets(trace);
    RunSummary::of(
        ranks,
        &run,
        &trace.info,
        crate::hang::stopped_in_calls(trace),
    )
}

impl RunSummary {
    /// The summary of a run from its ranks' budgets and what
    /// [`crate::hang::stopped_in_calls`] found (figures a merge makes one rank at a time).
    pub fn of(
        ranks: Vec<RankBudget>,
        run: &RunBudget,
        info: &MergedInfo,
        stopped_in_calls: Option<(u64, usize)>,
    ) -> RunSummary {
        RunSummary {
            ranks,
            wall: Nanos(run.wall_ns),
            clock_error: Nanos(info.max_clock_error_ns),
            shared_clock: info.ranks.iter().all(|r| r.shared_clock),
            stopped_in_calls: stopped_in_calls.map(|(at, n)| (Nanos(at), n)),
        }
    }
}

/// What a rank's row says when none of its time reached its file: its figures are
/// unknown, not 0.
pub const NOTHING_RECORDED: &str =
    "unknown: nothing it recorded reached its file (it ended before its first flush)";

impl RunSummary {
    /// The summary as a table for a terminal (under 100 columns).
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "{:>4}  {:<14} {:>10}  {:>17}  {:>17}  {:>17}\n",
            "rank", "host", "wall", "compute", "in MPI", "waiting"
        ));
        for r in &self.ranks {
            let host: String = r.host.chars().take(14).collect();
            if !r.complete && r.wall_ns == 0 {
                out.push_str(&format!("{:>4}  {host:<14} {NOTHING_RECORDED}\n", r.rank));
                continue;
            }
            out.push_str(&format!(
                "{:>4}  {:<14} {:>10}  {:>10} {}  {:>10} {}  {:>10} {}{}\n",
                r.rank,
                host,
                duration(r.wall_ns),
                duration(r.compute_ns),
                share(r.compute_ns, r.wall_ns),
                duration(r.in_mpi_ns),
                share(r.in_mpi_ns, r.wall_ns),
                duration(r.waiting_ns),
                share(r.waiting_ns, r.wall_ns),
                if r.complete { "" } else { "  (cut short)" }
            ));
        }
        if self.ranks.iter().any(|r| r.compute_source.is_inferred()) {
            out.push_str(
                "compute: inferred from the gaps between MPI calls where no compute span was \
                 recorded\n",
            );
        }
        let clock = if self.shared_clock {
            "all ranks read one clock (no alignment error)".to_string()
        } else {
            format!(
                "clock alignment error bound {}",
                duration(self.clock_error.0)
            )
        };
        out.push_str(&format!(
            "run wall time {}; {clock}\n",
            duration(self.wall.0)
        ));
        if let Some((at, ranks)) = self.stopped_in_calls {
            out.push_str(&format!(
                "the run was stopped at {} with {ranks} rank(s) inside calls that never \
                 completed: the time they spent there is in no figure above\n",
                duration(at.0)
            ));
        }
        out
    }
}
