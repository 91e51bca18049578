//! What a run's tables are, and how each is made when it is written: one at a time, so
//! that writing holds one table (or a part of its rows) beside the run, never them all.

use std::ops::Range;

use polars::prelude::DataFrame;

use super::findings::{false_overlap, FindingRow};
use super::{
    calls, gpu_chains, messages, profile, ranks, requests, sites, wait_states, MessageTimes,
};
use crate::analysis::{Details, Report};
use crate::model::Trace;
use crate::Result;

/// Every table of a run, each made only when it is written ([`super::write_tables`]):
/// a run's tables together take more memory than its trace, so they are made, written
/// and dropped one at a time.
pub struct Tables<'a> {
    trace: &'a Trace,
    report: &'a Report,
    details: &'a Details,
}

/// The tables of a run, in the order they are written: one each, but the profile's,
/// which are made together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Part {
    Ranks,
    Calls,
    Requests,
    Messages,
    WaitStates,
    FalseOverlap,
    Sites,
    Profile,
    GpuChains,
}

/// Every table, in the order they are written (the GPU chains only for a run with GPU
/// work).
pub(super) const ORDER: [Part; 9] = [
    Part::Ranks,
    Part::Calls,
    Part::Requests,
    Part::Messages,
    Part::WaitStates,
    Part::FalseOverlap,
    Part::Sites,
    Part::Profile,
    Part::GpuChains,
];

impl Part {
    /// Its table's name; `None` for the profile's tables, several, which the profile
    /// names.
    pub(super) fn name(self) -> Option<&'static str> {
        Some(match self {
            Part::Ranks => "ranks",
            Part::Calls => "calls",
            Part::Requests => "requests",
            Part::Messages => "messages",
            Part::WaitStates => "wait_states",
            Part::FalseOverlap => "false_overlap",
            Part::Sites => "sites",
            Part::Profile => return None,
            Part::GpuChains => "gpu_chains",
        })
    }
}

/// Every table of the run of `trace`, whose report and details these are (none made
/// yet).
pub fn tables<'a>(trace: &'a Trace, report: &'a Report, details: &'a Details) -> Tables<'a> {
    Tables {
        trace,
        report,
        details,
    }
}

impl Tables<'_> {
    /// What there is to make, in order (the GPU chains only for a run with GPU work).
    pub(super) fn parts(&self) -> Vec<Part> {
        let gpu = self.report.gpu.is_some();
        (ORDER.into_iter())
            .filter(|&p| p != Part::GpuChains || gpu)
            .collect()
    }

    /// How many rows `part` has when it is made in parts of rows (a table of a row per
    /// call or per request: those large enough to matter), else `None`.
    pub(super) fn rows(&self, part: Part) -> Option<usize> {
        match part {
            Part::Calls => Some(self.trace.ranks.iter().map(|t| t.spans.len()).sum()),
            Part::Requests => Some(self.details.requests.len()),
            _ => None,
        }
    }

    /// The tables of `part`, by name: its rows `rows` when it is made in parts of rows
    /// ([`Tables::rows`]), else all of them.
    pub(super) fn make(&self, part: Part, rows: Range<usize>) -> Result<Vec<(String, DataFrame)>> {
        let _span = tracing::info_span!("tables").entered();
        let (trace, report, d) = (self.trace, self.report, self.details);
        let df = match part {
            Part::Ranks => ranks(report),
            Part::Calls => calls(trace, &d.sites, rows),
            Part::Requests => requests(trace, &d.requests[rows]),
            Part::Messages => messages(&trace.messages, |mi| MessageTimes::of_trace(trace, mi)),
            Part::WaitStates => wait_states(trace, &d.sites, &d.waits),
            Part::FalseOverlap => {
                // The findings are in the report's order already.
                let rows: Vec<FindingRow> = (d.findings.iter())
                    .map(|f| FindingRow::of(trace, &d.sites, f))
                    .collect();
                false_overlap(&rows, |id| label(&d.sites, id))
            }
            Part::Sites => sites(report),
            Part::Profile => return profile::tables(&report.profile),
            Part::GpuChains => gpu_chains(&d.chains),
        };
        Ok(vec![(part.name().unwrap_or_default().to_string(), df?)])
    }
}

/// The label of the site `id` of `sites`.
pub(super) fn label(sites: &crate::sites::SiteTable, id: u32) -> Option<&str> {
    sites.sites().get(id as usize).map(|s| s.label.as_str())
}
