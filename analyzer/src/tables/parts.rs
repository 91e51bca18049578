//! What a run's tables are: their names and order, and a run held whole with what is
//! behind its report, whose rows [`super::write_tables`] hands to the one writer of
//! tables ([`super::TableStream`]), as the analysis in parts hands its own.

use crate::analysis::{Details, Report};
use crate::model::Trace;

/// A run held whole, its report and the instances behind it: what its tables are made
/// of ([`super::write_tables`]).
pub struct Tables<'a> {
    pub(super) trace: &'a Trace,
    pub(super) report: &'a Report,
    pub(super) details: &'a Details,
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

/// The tables written as their rows come, a part at a time ([`super::TableStream`]).
pub(super) const STREAMED: [Part; 4] = [
    Part::Calls,
    Part::Requests,
    Part::WaitStates,
    Part::Messages,
];

impl Part {
    /// Where it is among [`STREAMED`], a streamed table.
    pub(super) fn streamed(self) -> u8 {
        let at = STREAMED.iter().position(|t| *t == self);
        at.unwrap_or_else(|| unreachable!("{self:?} is streamed")) as u8
    }

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

/// The label of the site `id` of `sites`.
pub(super) fn label(sites: &crate::sites::SiteTable, id: u32) -> Option<&str> {
    sites.sites().get(id as usize).map(|s| s.label.as_str())
}
