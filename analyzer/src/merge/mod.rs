//! Per-rank files into one timeline: clock alignment, message matching, and the merged
//! Perfetto trace.
//!
//! Alignment: each rank's times are mapped onto rank 0's clock with the rank's
//! [`ClockModel`] (offsets measured at init and finalize, interpolated linearly), then
//! made relative to the run's start (the earliest aligned epoch).
//!
//! Matching follows MPI's non-overtaking rule: between one sender and one receiver, on
//! one communicator and tag, messages are received in the order they were sent, by
//! receives in the order they were posted. So the i-th send from `s` to `d` with tag `t`
//! matches the i-th receive posted on `d` whose message came from `s` with tag `t`
//! (its status says so; a receive without a status is matched on what it asked for).
//!
//! ```text
//!  rank 0  |Isend(to 1, t=5)|...............................
//!              \__________ message 1 __________
//!  rank 1  |Irecv(from 0, t=5)|....compute....|Waitall|     the flow ends in the call
//!                                                          that completed the receive
//! ```
//!
//! A message whose receive completed before its send was posted (after alignment) can
//! only come from clock error: it is flagged as clock-suspect and drawn as an instant on
//! the receiver, not as an arrow going back in time.

mod matching;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use overlap_instrument::clock::ClockModel;
use overlap_instrument::schema::{
    CallEvent, Event, IncompleteRank, MergedInfo, Nanos, RankClock, FORMAT_NAME, FORMAT_VERSION,
};

pub use write::write_merged;

use crate::import::{rank_files, read_rank_file};
use crate::model::RankTrace;
use crate::{Error, Result};

/// One rank's events on the run's timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct AlignedRank {
    /// The rank.
    pub rank: u32,
    /// Its host.
    pub host: String,
    /// Its operating-system process id.
    pub os_pid: u32,
    /// Thread names by tid.
    pub threads: BTreeMap<u32, String>,
    /// Calls and compute spans, ns since the run's start, sorted by start.
    pub events: Vec<Event>,
    /// False when the rank's file was cut short.
    pub complete: bool,
}

/// An event of a rank: `ranks[rank].events[index]` of a [`Merged`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventRef {
    /// Rank.
    pub rank: u32,
    /// Index in that rank's events.
    pub index: usize,
}

/// A message matched from its send to its receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// Id, from 1, in order of matching.
    pub id: u64,
    /// The call that sent it.
    pub send: EventRef,
    /// The call that posted the receive.
    pub recv_post: EventRef,
    /// The call that completed the receive, when one did.
    pub completion: Option<EventRef>,
    /// Tag.
    pub tag: i32,
    /// Bytes sent.
    pub bytes: u64,
    /// True when the receive completed before the send was posted.
    pub clock_suspect: bool,
}

/// A non-blocking request from its post to its completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLife {
    /// Rank.
    pub rank: u32,
    /// Request id on that rank.
    pub request: u64,
    /// The post (Isend, Irecv).
    pub post: usize,
    /// The completing call, when there was one.
    pub completion: Option<usize>,
}

/// The merged run.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    /// What goes into `otherData`.
    pub info: MergedInfo,
    /// Ranks, sorted by rank (lookups by [`EventRef`] rely on it).
    pub ranks: Vec<AlignedRank>,
    /// Matched messages.
    pub messages: Vec<Message>,
    /// Request lifetimes.
    pub requests: Vec<RequestLife>,
}

impl Merged {
    /// The event behind a reference.
    pub fn event(&self, r: EventRef) -> Option<&Event> {
        event_at(&self.ranks, r)
    }
}

/// The event behind a reference, in ranks sorted by rank.
pub(crate) fn event_at(ranks: &[AlignedRank], r: EventRef) -> Option<&Event> {
    let i = ranks.binary_search_by_key(&r.rank, |a| a.rank).ok()?;
    ranks[i].events.get(r.index)
}

/// The call behind a reference (`None` for a compute span).
pub(crate) fn call_at(ranks: &[AlignedRank], r: EventRef) -> Option<&CallEvent> {
    match event_at(ranks, r)? {
        Event::Call(c) => Some(c),
        Event::Compute(_) => None,
    }
}

/// A file of the directory that could not be used at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// What merging a directory produced.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeOutcome {
    /// The merged run.
    pub merged: Merged,
    /// Files that could not be used.
    pub unreadable: Vec<Unreadable>,
}

/// Reads every per-rank file (`rank-<N>.json`) of `dir` and merges what can be read.
/// Fails only when no file at all could be used.
pub fn merge_dir(dir: &Path) -> Result<MergeOutcome> {
    let mut traces: Vec<RankTrace> = Vec::new();
    let mut unreadable = Vec::new();
    for path in rank_files(dir)? {
        match read_rank_file(&path) {
            Ok(t) => {
                if let Some(first) = traces.iter().find(|o| o.rank() == t.rank()) {
                    unreadable.push(Unreadable {
                        reason: format!(
                            "rank {} already comes from {}",
                            t.rank(),
                            first.path.display()
                        ),
                        path,
                    });
                } else {
                    traces.push(t);
                }
            }
            Err(e) => unreadable.push(Unreadable {
                path,
                reason: e.to_string(),
            }),
        }
    }
    if traces.is_empty() {
        return Err(Error::NoRanks {
            dir: dir.to_path_buf(),
            problems: unreadable
                .iter()
                .map(|u| format!("{}: {}", u.path.display(), u.reason))
                .collect(),
        });
    }
    Ok(MergeOutcome {
        merged: merge(traces),
        unreadable,
    })
}

/// Aligns and matches the given per-rank traces.
pub fn merge(mut traces: Vec<RankTrace>) -> Merged {
    traces.sort_by_key(RankTrace::rank);
    // Offsets were measured against rank 0; ranks that read rank 0's very clock need no
    // correction at all. Without rank 0's file, its clock domain is unknown and every
    // rank keeps its measured offset (still consistent: all refer to rank 0's clock).
    let reference_domain = traces
        .iter()
        .find(|t| t.rank() == 0)
        .map(|t| t.header.clock_domain.clone())
        .unwrap_or_default();
    let shares_clock =
        |t: &RankTrace| !reference_domain.is_empty() && t.header.clock_domain == reference_domain;
    let measured: Vec<ClockModel> = traces.iter().map(RankTrace::clock_model).collect();
    let models: Vec<ClockModel> = traces
        .iter()
        .zip(&measured)
        .map(|(t, m)| {
            if shares_clock(t) {
                ClockModel::identity()
            } else {
                *m
            }
        })
        .collect();
    let run_start = traces
        .iter()
        .zip(&models)
        .map(|(t, m)| m.to_reference(t.header.epoch_ns, 0))
        .min()
        .unwrap_or(0);
    let ranks: Vec<AlignedRank> = traces
        .iter()
        .zip(&models)
        .map(|(t, m)| align_rank(t, m, run_start))
        .collect();

    let (requests, receives) = matching::requests_and_receives(&ranks);
    let matched = matching::match_messages(&ranks, &receives);
    let world_size = traces.iter().map(|t| t.header.size).max().unwrap_or(0);
    let present: Vec<u32> = traces.iter().map(RankTrace::rank).collect();
    let info = MergedInfo {
        format: FORMAT_NAME.to_string(),
        format_version: FORMAT_VERSION,
        program: traces
            .first()
            .map(|t| t.header.program.clone())
            .unwrap_or_default(),
        params: traces
            .first()
            .map(|t| t.header.params.clone())
            .unwrap_or_default(),
        world_size,
        ranks: traces
            .iter()
            .zip(&measured)
            .map(|(t, m)| RankClock {
                rank: t.rank(),
                host: t.header.host.clone(),
                shared_clock: shares_clock(t),
                init_offset_ns: m.init().offset_ns,
                init_error_ns: m.init().error_ns,
                final_offset_ns: m.last().map(|l| l.offset_ns),
                final_error_ns: m.last().map(|l| l.error_ns),
                drift_ppb: m.drift_ppb(),
            })
            .collect(),
        max_clock_error_ns: models.iter().map(ClockModel::max_error).max().unwrap_or(0),
        messages: matched.messages.len() as u64,
        unmatched_sends: matched.unmatched_sends,
        unmatched_receives: matched.unmatched_receives,
        clock_suspect: matched
            .messages
            .iter()
            .filter(|m| m.clock_suspect)
            .filter_map(|m| matching::suspect_record(&ranks, m))
            .collect(),
        incomplete: traces
            .iter()
            .filter_map(|t| {
                Some(IncompleteRank {
                    rank: t.rank(),
                    file: t.path.display().to_string(),
                    reason: t.incompleteness()?,
                    events_read: t.events.len() as u64,
                })
            })
            .collect(),
        missing_ranks: (0..world_size).filter(|r| !present.contains(r)).collect(),
    };
    Merged {
        info,
        ranks,
        messages: matched.messages,
        requests,
    }
}

fn align_rank(t: &RankTrace, model: &ClockModel, run_start: i128) -> AlignedRank {
    let epoch = t.header.epoch_ns;
    let align = |n: Nanos| Nanos((model.to_reference(epoch, n.0) - run_start).max(0) as u64);
    let mut events: Vec<Event> = t
        .events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            match &mut e {
                Event::Call(c) => {
                    c.start = align(c.start);
                    c.end = align(c.end).max(c.start);
                }
                Event::Compute(c) => {
                    c.start = align(c.start);
                    c.end = align(c.end).max(c.start);
                }
            }
            e
        })
        .collect();
    events.sort_by_key(|e| (e.start(), e.tid()));
    AlignedRank {
        rank: t.rank(),
        host: t.header.host.clone(),
        os_pid: t.header.os_pid,
        threads: t.threads.clone(),
        events,
        complete: t.is_complete(),
    }
}
