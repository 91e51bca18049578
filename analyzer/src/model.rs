//! The typed form of what a trace holds, as the importer hands it to the rest of the
//! analyzer: per-rank traces in the rank's own clock, and merged traces on one timeline.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use overlap_instrument::clock::ClockModel;
use overlap_instrument::schema::{ClockSync, Event, Footer, Header, MergedInfo, SyncPhase};

/// Why a file's events stop before its end: what was read before still counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadProblem {
    /// Index of the first event (counting every JSON value of the array from 0) that
    /// could not be used; events before it were read.
    pub event_index: u64,
    /// Line of the file where it starts.
    pub line: u64,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for ReadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "event {} (line {}): {}",
            self.event_index, self.line, self.reason
        )
    }
}

/// One rank's file, read.
#[derive(Clone, Debug, PartialEq)]
pub struct RankTrace {
    /// The file.
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// Thread names by tid.
    pub threads: BTreeMap<u32, String>,
    /// Clock synchronisations, in file order.
    pub syncs: Vec<ClockSync>,
    /// Calls and compute spans, in file order (per thread: recording order).
    pub events: Vec<Event>,
    /// The footer, when the file was closed properly.
    pub footer: Option<Footer>,
    /// Events that could not be used (corrupt, unknown call, bad args), and a cut-off
    /// end, in file order. Everything else was read.
    pub problems: Vec<ReadProblem>,
}

impl RankTrace {
    /// The rank.
    pub fn rank(&self) -> u32 {
        self.header.rank
    }

    /// True when the file was read to a proper end with nothing skipped.
    pub fn is_complete(&self) -> bool {
        self.problems.is_empty() && self.footer.is_some()
    }

    /// Why the file is incomplete, if it is.
    pub fn incompleteness(&self) -> Option<String> {
        let mut parts: Vec<String> = Vec::new();
        match self.problems.as_slice() {
            [] => {}
            [one] => parts.push(one.to_string()),
            [first, rest @ ..] => parts.push(format!(
                "{first}; and {} more unusable event(s), skipped",
                rest.len()
            )),
        }
        if self.footer.is_none() {
            parts.push(
                "the file ends without its footer: the rank died or was killed before \
                 finishing its trace"
                    .to_string(),
            );
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// The model mapping this rank's times onto rank 0's clock.
    pub fn clock_model(&self) -> ClockModel {
        let init = self.syncs.iter().find(|s| s.phase == SyncPhase::Init);
        let last = self
            .syncs
            .iter()
            .rev()
            .find(|s| s.phase == SyncPhase::Final);
        match init {
            Some(init) => ClockModel::new(*init, last.copied()),
            None => ClockModel::identity(),
        }
    }
}

/// A merged trace, read back: events of every rank on the run's timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct MergedTrace {
    /// The file.
    pub path: PathBuf,
    /// Its `otherData`.
    pub info: MergedInfo,
    /// Calls and compute spans by rank.
    pub events: BTreeMap<u32, Vec<Event>>,
    /// Process names by rank.
    pub process_names: BTreeMap<u32, String>,
    /// Message flows.
    pub flows: Vec<Flow>,
    /// Request lifetimes.
    pub requests: Vec<RequestSpan>,
}

/// One end of a flow arrow or of a slice: which rank and thread, at what time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    /// Rank.
    pub rank: u32,
    /// Thread.
    pub tid: u32,
    /// Time, ns since the run's start.
    pub ns: u64,
}

/// A message arrow from the send to the call that completed the receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    /// Flow id.
    pub id: u64,
    /// Where it starts (inside the send call).
    pub from: Point,
    /// Where it ends (inside the completing call).
    pub to: Option<Point>,
}

/// A request's lifetime on its async track.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestSpan {
    /// Slice id.
    pub id: u64,
    /// Slice name.
    pub name: String,
    /// Rank.
    pub rank: u32,
    /// Post time, ns.
    pub begin_ns: u64,
    /// Completion time, ns.
    pub end_ns: Option<u64>,
}
