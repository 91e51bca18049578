//! The parts of the report read from the trace itself rather than from the measured
//! figures: the run (what is in the trace and what is missing), the clock, the hang and the
//! GPU work. [`super::analyze`] takes them beside the measured figures.

use crate::metrics::oversubscription;
use crate::model::Trace;

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

impl OfTrace {
    pub(super) fn of(trace: &Trace, m: &Measured) -> OfTrace {
        let (indeterminate_waits, indeterminate_wait_ns) = m
            .waits
            .iter()
            .filter(|w| w.indeterminate)
            .fold((0u64, 0u64), |(n, t), w| (n + 1, t + w.amount_ns));
        let clock = ClockReport {
            shared_clock: trace.info.ranks.iter().all(|r| r.shared_clock),
            max_error_ns: trace
                .ranks
                .iter()
                .map(|t| trace.clock_error(t.rank).0)
                .max()
                .unwrap_or(0),
            ranks: trace
                .info
                .ranks
                .iter()
                .map(|r| RankClockReport {
                    rank: r.rank,
                    error_ns: trace.clock_error(r.rank).0,
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
            ranks_traced: trace.ranks.len() as u32,
            windowed: trace.ranks.iter().any(|t| t.window.is_some()),
            missing_ranks: info.missing_ranks.clone(),
            incomplete_ranks: trace
                .ranks
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
            events: trace.ranks.iter().map(|t| t.event_count() as u64).sum(),
            messages: trace.messages.len() as u64,
            unmatched_sends: info.unmatched_sends,
            unmatched_receives: info.unmatched_receives,
            compute_source: trace.compute_source(),
            gpu_unrecorded: crate::gpu::unrecorded_runtime(trace),
            unseen_requests: crate::unrecorded::unseen_requests(&trace.info),
            oversubscription: oversubscription::Oversubscription::of(&trace.info),
        };
        let (gpu, chains) = {
            let _s = tracing::info_span!("gpu").entered();
            crate::gpu::analyze(trace).unzip()
        };
        OfTrace {
            run,
            clock,
            hang: crate::hang::analyze(trace, &m.sites),
            gpu,
            chains: chains.unwrap_or_default(),
        }
    }
}
