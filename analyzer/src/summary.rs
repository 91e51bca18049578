//! The first look a merged run gets (`overlap merge`): where each rank's time went,
//! computing, inside MPI and waiting, over the run's wall time, as a table. The figures
//! are [`crate::metrics::budget`]'s; this module only lays them out, and gives the merge
//! the per-rank digest that makes them while it holds each rank ([`Summarize`]).

use std::path::Path;

use overlap_format::schema::{InFlightDump, MergedInfo, Nanos};

use crate::hang::{latest_stopped, stopped_in};
use crate::merge::{RankDigest, SizeEstimate, Unreadable, Written};
use crate::metrics::budget::{budgets, rank_budget, run_budget, RankBudget, RunBudget};
use crate::model::compute::RankCompute;
use crate::model::{Timeline, Trace};
use crate::units::{duration, share};
use crate::Result;

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

/// The merge's per-rank digest that makes the run's summary: each rank's budget and
/// extent, and whether its last dump caught it in calls that never completed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Summarize;

/// What [`Summarize`] keeps of a rank.
pub struct RankPart {
    budget: RankBudget,
    extent: Option<(Nanos, Nanos)>,
    /// Its last dump's time, and whether a call it was in never completed.
    dump: Option<(u64, bool)>,
}

impl RankDigest for Summarize {
    type Rank = RankPart;
    type Run = RunSummary;

    fn of_rank(&self, t: &Timeline, last_dump: Option<&InFlightDump>) -> RankPart {
        RankPart {
            budget: rank_budget(t, &RankCompute::of(t)),
            extent: t.extent(),
            dump: last_dump.map(|d| (d.at_ns, stopped_in(Some(t), d))),
        }
    }

    fn of_run(&self, ranks: Vec<RankPart>, info: &MergedInfo) -> RunSummary {
        let extents: Vec<(Nanos, Nanos)> = ranks.iter().filter_map(|r| r.extent).collect();
        let dumps: Vec<(u64, bool)> = ranks.iter().filter_map(|r| r.dump).collect();
        let budgets: Vec<RankBudget> = ranks.into_iter().map(|r| r.budget).collect();
        let run = run_budget(&budgets, &extents);
        RunSummary::of(budgets, &run, info, latest_stopped(dumps))
    }
}

/// [`crate::merge::merge_to_file`], summarized ([`Summarize`]).
pub fn merge_to_file(dir: &Path, out: &Path) -> Result<Written<RunSummary>> {
    crate::merge::merge_to_file(dir, out, &Summarize)
}

/// [`crate::merge::merge_to_file_if`], summarized ([`Summarize`]).
pub fn merge_to_file_if(
    dir: &Path,
    out: &Path,
    output: &crate::merge::Output,
    accept: impl FnOnce(&MergedInfo, &[Unreadable], &SizeEstimate) -> std::result::Result<(), String>,
) -> Result<Written<RunSummary>> {
    crate::merge::merge_to_file_if(dir, out, output, accept, &Summarize)
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
