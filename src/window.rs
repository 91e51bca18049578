//! `--from/--to`, `--region` and `--ranks` of `analyze`, `tui`, `diff`, `check` and
//! `baseline`: the part of the run analysed, cut from the loaded trace by
//! [`overlap_analyzer::window`] (the options read as `overlap merge`'s do).

use anyhow::{Context, Result};
use clap::Args;
use overlap_analyzer::model::Trace;
use overlap_analyzer::window::{Choice, Cut, WindowReport};
use overlap_instrument::schema::Nanos;

use crate::format::{parse_ranks, parse_time, RankList};

/// The window options.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct WindowArgs {
    /// Analyse the run from T on: a time from the run's start, with its unit (1.5s,
    /// 200ms, 30us). Calls across the edge are cut to it; messages and requests with an
    /// end outside are counted as crossing it, their figures unknown.
    #[arg(long, value_name = "T", value_parser = parse_time, help_heading = "Window")]
    from: Option<Nanos>,
    /// Analyse the run up to T, as --from.
    #[arg(long, value_name = "T", value_parser = parse_time, help_heading = "Window")]
    to: Option<Nanos>,
    /// Analyse the part of the run a region covers, a region the program marked with
    /// MPI_Pcontrol (as `overlap merge --region`): NAME spans every instance, NAME#K
    /// the K-th. Instead of --from/--to.
    #[arg(long, value_name = "NAME[#K]", conflicts_with_all = ["from", "to"], help_heading = "Window")]
    region: Option<String>,
    /// Analyse only these ranks: a list of ranks and ranges, 0-15,64. Messages with an
    /// end on a rank left out are counted as crossing the window's edge.
    #[arg(long, value_name = "LIST", value_parser = parse_ranks, help_heading = "Window")]
    ranks: Option<RankList>,
}

impl WindowArgs {
    /// The part of the run asked for.
    pub(crate) fn choice(&self) -> Choice {
        let ranks = self.ranks.as_ref().map(|r| {
            let mut list = r.0.clone();
            list.sort_unstable();
            list.dedup();
            list
        });
        Choice {
            from_ns: self.from.map(|t| t.0),
            to_ns: self.to.map(|t| t.0),
            region: self.region.clone(),
            ranks,
        }
    }

    /// `trace` cut to the window (the whole trace when none was asked for); an error
    /// names the trace and why.
    pub(crate) fn cut(&self, trace: Trace) -> Result<Cut> {
        let choice = self.choice();
        if choice.is_all() {
            return Ok(overlap_analyzer::window::whole(trace));
        }
        let source = trace.source.display().to_string();
        overlap_analyzer::window::cut(trace, &choice)
            .with_context(|| format!("{source}: cannot analyse {}", choice.describe()))
    }

    /// [`Self::cut`], as the trace and its window's report.
    pub(crate) fn apply(&self, trace: Trace) -> Result<(Trace, WindowReport)> {
        let cut = self.cut(trace)?;
        Ok((cut.trace, cut.report))
    }
}
