//! The parts of the report read from the trace itself rather than from the measured
//! figures: the run (what is in the trace and what is missing), the clock, the hang and the
//! GPU work. [`super::analyze`] takes them beside the measured figures; the analysis
//! that never holds the run makes them a part of whole ranks at a time ([`Fold`]).

use crate::metrics::message_ends::MessageEnds;
use crate::metrics::oversubscription;
use crate::model::compute::ComputeSource;
use crate::model::{ClockErrors, Trace};
use crate::sites::SiteTable;

use super::pass_order::Measured;
use super::report::{ClockReport, RankClockReport, RunInfo};

/// The parts of the report read from the trace beside the measured figures.
pub(super) struct OfTrace {
    pub run: RunInfo,
    pub clock: ClockReport,
    pub hang: Option<crate::hang::HangReport>,
    pub gpu: Option<crate::gpu::GpuReport>,
    pub chains: Vec<crate::gpu::ChainRow>,
}

/// What the run's description reads of each rank's timeline.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct RankFacts {
    rank: u32,
    events: u64,
    windowed: bool,
    complete: bool,
    compute: ComputeSource,
}

impl RankFacts {
    /// The facts of each rank of `trace` (the whole run, or a part of it).
    pub(super) fn of(trace: &Trace) -> impl Iterator<Item = RankFacts> + '_ {
        (trace.ranks.iter().zip(&trace.compute)).map(|(t, c)| RankFacts {
            rank: t.rank,
            events: t.event_count() as u64,
            windowed: t.window.is_some(),
            complete: t.complete,
            compute: c.source(),
        })
    }
}

/// The parts of the report read from a trace, made a part of whole ranks at a time: each
/// part's ranks' facts, hang and GPU work, finished once every part is in.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Fold {
    ranks: Vec<RankFacts>,
    hang: crate::hang::HangFold,
    gpu: crate::gpu::GpuFold,
    unrecorded: crate::gpu::UnrecordedFold,
}

impl Fold {
    /// Adds the part trace `part`, its sites in `sites`, the run's message ends `ends`.
    pub(super) fn add(&mut self, part: &Trace, sites: &SiteTable, ends: &MessageEnds) {
        self.ranks.extend(RankFacts::of(part));
        self.hang.add(part, sites);
        self.gpu.add(part, ends);
        self.unrecorded.add(part);
    }

    /// The message indices it keeps read as `global[index]` (see
    /// [`crate::gpu::GpuFold::renumber`]).
    pub(super) fn renumber(&mut self, global: &[u32]) {
        self.gpu.renumber(global);
    }

    /// Adds the fold of the parts after this one's: what adding them here gives.
    pub(super) fn merge(&mut self, later: Fold) {
        self.ranks.extend(later.ranks);
        self.hang.merge(later.hang);
        self.gpu.merge(later.gpu);
        self.unrecorded.merge(later.unrecorded);
    }

    /// The parts of the report, `run` holding the run's description and messages.
    pub(super) fn finish(self, run: &Trace, m: &Measured, ends: &MessageEnds) -> OfTrace {
        let info = &run.info;
        let (gpu, chains) = self.gpu.finish(info, &run.messages, ends).unzip();
        let parts = Parts {
            hang: self.hang.finish(info, &m.sites),
            gpu,
            chains: chains.unwrap_or_default(),
            gpu_unrecorded: self.unrecorded.finish(info),
        };
        OfTrace::assemble(run, &self.ranks, m, parts)
    }
}

/// What the report reads of the ranks' dumps and GPU work.
struct Parts {
    hang: Option<crate::hang::HangReport>,
    gpu: Option<crate::gpu::GpuReport>,
    chains: Vec<crate::gpu::ChainRow>,
    gpu_unrecorded: Option<crate::gpu::UnrecordedRuntime>,
}

impl OfTrace {
    pub(super) fn of(trace: &Trace, m: &Measured) -> OfTrace {
        let (gpu, chains) = {
            let _s = tracing::info_span!("gpu").entered();
            crate::gpu::analyze(trace).unzip()
        };
        let parts = Parts {
            hang: crate::hang::analyze(trace, &m.sites),
            gpu,
            chains: chains.unwrap_or_default(),
            gpu_unrecorded: crate::gpu::unrecorded_runtime(trace),
        };
        let ranks: Vec<RankFacts> = RankFacts::of(trace).collect();
        OfTrace::assemble(trace, &ranks, m, parts)
    }

    /// The parts of the report of the run `trace` describes (its ranks are not read),
    /// whose ranks' facts are `ranks`.
    fn assemble(trace: &Trace, ranks: &[RankFacts], m: &Measured, parts: Parts) -> OfTrace {
        // Every instance is of one kind, counted in its kind's totals.
        let (indeterminate_waits, indeterminate_wait_ns) = (m.wait_states.kinds.iter())
            .fold((0, 0), |(n, t), k| {
                (n + k.indeterminate_count, t + k.indeterminate_ns)
            });
        let errors = ClockErrors::of(&trace.info);
        let clock = ClockReport {
            shared_clock: trace.info.ranks.iter().all(|r| r.shared_clock),
            max_error_ns: ranks
                .iter()
                .map(|t| errors.of_rank(t.rank).0)
                .max()
                .unwrap_or(0),
            ranks: trace
                .info
                .ranks
                .iter()
                .map(|r| RankClockReport {
                    rank: r.rank,
                    error_ns: errors.of_rank(r.rank).0,
                    init_offset_ns: r.init_offset_ns,
                    drift_ppb: r.drift_ppb,
                })
                .collect(),
            suspect_messages: trace.messages.iter().filter(|m| m.clock_suspect).count() as u64,
            indeterminate_waits,
            indeterminate_wait_ns,
        };
        let info = &trace.info;
        let run = RunInfo {
            source: trace.source.display().to_string(),
            program: info.program.clone(),
            params: info.params.clone(),
            world_size: info.world_size,
            ranks_traced: ranks.len() as u32,
            windowed: ranks.iter().any(|t| t.windowed),
            missing_ranks: info.missing_ranks.clone(),
            incomplete_ranks: ranks
                .iter()
                .filter(|t| !t.complete)
                .map(|t| t.rank)
                .collect(),
            incomplete: info.incomplete.clone(),
            completeness_known: info.completeness_known(),
            run_id: info.run_id.clone(),
            start_unix_ns: info.start_unix_ns,
            clock_implausible: info.clock_implausible.clone(),
            peers_out_of_range: info.peers_out_of_range.clone(),
            events: ranks.iter().map(|t| t.events).sum(),
            messages: trace.messages.len() as u64,
            unmatched_sends: info.unmatched_sends,
            unmatched_receives: info.unmatched_receives,
            compute_source: ComputeSource::combine(ranks.iter().map(|t| t.compute)),
            gpu_unrecorded: parts.gpu_unrecorded,
            unseen_requests: crate::unrecorded::unseen_requests(&trace.info),
            oversubscription: oversubscription::Oversubscription::of(&trace.info),
        };
        OfTrace {
            run,
            clock,
            hang: parts.hang,
            gpu: parts.gpu,
            chains: parts.chains,
        }
    }
}
