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

mod clocks;
mod ends;
mod identity;
mod learned;
mod links;
mod matching;
mod memory;
pub mod otf2;
mod output;
mod peers;
mod proto;
mod regions;
mod run_files;
mod section;
mod size;
mod spill;
mod spilled;
mod stream;
mod write;

use std::path::{Path, PathBuf};

use overlap_format::schema::{
    Event, GpuEvent, InFlightDump, IncompleteRank, MergedInfo, Nanos, ParamValue, PeersOutOfRange,
    RankClock, CPU_AFFINITY_PARAM, FORMAT_NAME, FORMAT_VERSION, ONLINE_CPUS_PARAM,
    PROGRAM_OBJECTS_PARAM,
};

pub(crate) use clocks::{ClockPlan, RankAlign};
pub(crate) use ends::{join, MatchCounts, RankEnds, NO_CALL};
pub(crate) use identity::check_one_run;
pub(crate) use matching::{match_all, rank_requests_and_ends};
pub use memory::from_events;
pub use output::Output;
pub use overlap_format::pftrace::TraceFormat;
pub use proto::{Cut, Window};
pub use regions::regions_of_dir;
pub use size::{SizeEstimate, UI_LIMIT};

pub(crate) use peers::out_of_range;
pub(crate) use run_files::{file_size, Counted, RunFiles};
pub use stream::{merge_to_file, merge_to_file_if, RankDigest, Written};
pub use write::{write_merged, write_merged_as};

pub use crate::model::{EventRef, Message, RequestLife};

use crate::import::{rank_files, read_rank_file_into, EventSink};
use crate::model::{RankTrace, Timeline};
use crate::{Error, Result};

/// Where the merged file takes a rank's calls and compute spans from: the analysis
/// keeps only the compact [`Timeline`]s, so the events are read again from the rank's
/// file as they are written, a block at a time.
#[derive(Clone, Debug)]
enum RankEvents {
    /// The rank's file, aligned with this as it is read.
    File { path: PathBuf, align: RankAlign },
    /// Held in memory, on the run's timeline already (runs built in memory).
    Memory(Vec<Event>),
}

/// The merged run.
#[derive(Clone, Debug)]
pub struct Merged {
    /// What goes into `otherData`.
    pub info: MergedInfo,
    /// Matched messages.
    pub messages: Vec<Message>,
    /// Request lifetimes.
    pub requests: Vec<RequestLife>,
    /// The ranks in the compact form analysis uses, sorted by rank (lookups by
    /// [`EventRef`] rely on it).
    pub timelines: Vec<Timeline>,
    /// Where each rank's events are written from (same order as `timelines`).
    events: Vec<RankEvents>,
}

impl Merged {
    /// The run in the compact form analysis uses (a copy; see [`Merged::into_trace`]).
    pub fn to_trace(&self, source: &Path) -> crate::model::Trace {
        self.clone().into_trace(source)
    }

    /// The run in the compact form analysis uses.
    pub fn into_trace(self, source: &Path) -> crate::model::Trace {
        crate::model::Trace::new(
            source.to_path_buf(),
            self.info,
            self.timelines,
            self.messages,
            self.requests,
        )
    }
}

/// Why `path` could not be read, without the path its error starts with: every message
/// about an [`Unreadable`] names the file already.
fn reason_without_path(path: &Path, e: &Error) -> String {
    let text = e.to_string();
    match text.strip_prefix(&format!("{}: ", path.display())) {
        Some(reason) => reason.to_string(),
        None => text,
    }
}

/// A file of the directory that could not be used at all.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unreadable {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// What merging a directory produced.
#[derive(Clone, Debug)]
pub struct MergeOutcome {
    /// The merged run.
    pub merged: Merged,
    /// Files that could not be used.
    pub unreadable: Vec<Unreadable>,
    /// What was read but could not be used in full, one line each naming its file
    /// (a compute span naming a buffer never bound).
    pub notes: Vec<String>,
}

/// Reads the per-rank `files` of `dir` (from [`rank_files`]) into `S`, several at once
/// (rayon's threads), skipping files that cannot be used. Fails when no file at all
/// could be used, and when the files are not one run ([`check_one_run`]: another run,
/// program or world size, a rank twice, a rank beyond the world). `each` is told the
/// position of every file once it is read (for progress reports), from any thread.
pub(crate) fn read_files_into<S: EventSink + Send>(
    dir: &Path,
    files: Vec<PathBuf>,
    each: impl Fn(usize) + Sync,
) -> Result<(Vec<RankTrace<S>>, Vec<Unreadable>)> {
    let (traces, unreadable) = read_each_into(files, each);
    checked_run(dir, traces, unreadable)
}

/// The per-rank `files` read into `S`, several at once (rayon's threads), in the order
/// given, and those that could not be used, in that order; `each` is told the position
/// of every file once it is read, from any thread. Nothing is checked across the files
/// ([`checked_run`] does).
pub(crate) fn read_each_into<S: EventSink + Send>(
    files: Vec<PathBuf>,
    each: impl Fn(usize) + Sync,
) -> (Vec<RankTrace<S>>, Vec<Unreadable>) {
    use rayon::prelude::*;
    let read: Vec<(PathBuf, Result<RankTrace<S>>)> = files
        .into_par_iter()
        .enumerate()
        .map(|(i, path)| {
            let _span = tracing::info_span!("import rank file", file = %path.display()).entered();
            let read = read_rank_file_into::<S>(&path);
            each(i);
            (path, read)
        })
        .collect();
    let mut traces: Vec<RankTrace<S>> = Vec::new();
    let mut unreadable = Vec::new();
    for (path, read) in read {
        match read {
            Ok(t) => traces.push(t),
            Err(e) => unreadable.push(Unreadable {
                reason: reason_without_path(&path, &e),
                path,
            }),
        }
    }
    (traces, unreadable)
}

/// The rank files of `dir` read (`traces`, and the `unreadable`), as one run sorted by
/// rank: fails when no file at all could be used, and when the files are not one run
/// ([`check_one_run`]).
pub(crate) fn checked_run<S>(
    dir: &Path,
    mut traces: Vec<RankTrace<S>>,
    unreadable: Vec<Unreadable>,
) -> Result<(Vec<RankTrace<S>>, Vec<Unreadable>)> {
    if traces.is_empty() {
        return Err(Error::NoRanks {
            dir: dir.to_path_buf(),
            problems: unreadable
                .iter()
                .map(|u| format!("{}: {}", u.path.display(), u.reason))
                .collect(),
        });
    }
    check_one_run(dir, &traces)?;
    traces.sort_by_key(RankTrace::rank);
    Ok((traces, unreadable))
}

/// Reads every per-rank file (`rank-<N>.ovlp`, or `.json` of versions 1 to 3) of `dir`
/// and merges what can be read. Fails when no file at all could be used, and when the
/// files are not one run. Only the compact timelines are kept: [`write_merged`] reads
/// the events again from the files.
pub fn merge_dir(dir: &Path) -> Result<MergeOutcome> {
    let (traces, unreadable) = read_files_into::<Timeline>(dir, rank_files(dir)?, |_| {})?;
    let notes = traces.iter().flat_map(RankTrace::note_lines).collect();
    Ok(MergeOutcome {
        merged: merge_timelines(traces),
        unreadable,
        notes,
    })
}

/// Aligns per-rank traces read into timelines (the files of one run, sorted by rank),
/// matches their messages and describes the run; their events are to be read again
/// from their files when the merged file is written.
pub(crate) fn merge_timelines(traces: Vec<RankTrace<Timeline>>) -> Merged {
    use rayon::prelude::*;
    let plan = ClockPlan::new(&traces);
    let placed: Vec<(RankTrace<Timeline>, Timeline, RankEvents)> = {
        let _s = tracing::info_span!("align and sort").entered();
        traces
            .into_par_iter()
            .enumerate()
            .map(|(i, mut t)| {
                let align = plan.rank_align(i, &t);
                let tl = on_run_timeline(&mut t, &align);
                let events = RankEvents::File {
                    path: t.path.clone(),
                    align,
                };
                (t, tl, events)
            })
            .collect()
    };
    let mut metas = Vec::with_capacity(placed.len());
    let mut timelines = Vec::with_capacity(placed.len());
    let mut events = Vec::with_capacity(placed.len());
    for (t, tl, e) in placed {
        metas.push(t);
        timelines.push(tl);
        events.push(e);
    }
    matched(&plan, &metas, timelines, events)
}

/// The rank read into `t` on the run's timeline (its events aligned with `align`, then
/// sorted), with its host, process, threads and whether its file was complete; `t`
/// keeps the rest (header, clocks, notes).
pub(crate) fn on_run_timeline(t: &mut RankTrace<Timeline>, align: &RankAlign) -> Timeline {
    let mut tl = std::mem::take(&mut t.events);
    tl.rank = t.rank();
    tl.host.clone_from(&t.header.host);
    tl.os_pid = t.header.os_pid;
    tl.threads = std::mem::take(&mut t.threads);
    tl.complete = t.is_complete();
    tl.align(|n| align.apply(n));
    tl.sort();
    tl.shrink_to_fit();
    tl
}

/// The run of `traces`, whose events are `timelines` on the run's timeline (sorted) and
/// are to be written from `events`: its messages matched and `otherData` made.
fn matched<S: EventSink>(
    plan: &ClockPlan,
    traces: &[RankTrace<S>],
    timelines: Vec<Timeline>,
    events: Vec<RankEvents>,
) -> Merged {
    let _m = tracing::info_span!("match messages").entered();
    let world_size = world_size_of(traces);
    let (requests, matched) = match_all(&timelines, world_size);
    let counts: Vec<u64> = timelines.iter().map(|t| t.event_count() as u64).collect();
    let peers = out_of_range(&timelines, world_size, |rank| file_of(traces, rank));
    let info = plan.info(traces, &counts, matched.counts, peers);
    Merged {
        info,
        messages: matched.messages,
        requests,
        timelines,
        events,
    }
}

impl ClockPlan {
    /// The `otherData` of the run. The world size is the headers' (one run: they agree).
    /// `events[i]` is the number of events of `traces[i]`; `peers_out_of_range` is
    /// what [`out_of_range`] found in them.
    pub(crate) fn info<S: EventSink>(
        &self,
        traces: &[RankTrace<S>],
        events: &[u64],
        matched: MatchCounts,
        peers_out_of_range: Vec<PeersOutOfRange>,
    ) -> MergedInfo {
        let world_size = world_size_of(traces);
        let present: Vec<u32> = traces.iter().map(RankTrace::rank).collect();
        let events_of = |rank: u32| {
            traces
                .iter()
                .position(|t| t.rank() == rank)
                .and_then(|i| events.get(i).copied())
                .unwrap_or(0)
        };
        MergedInfo {
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
                .enumerate()
                .map(|(i, t)| {
                    let (init_offset_ns, init_error_ns, last, drift_ppb) = self.used_offsets(i, t);
                    RankClock {
                        rank: t.rank(),
                        host: t.header.host.clone(),
                        shared_clock: self.shared_clock(i),
                        init_offset_ns,
                        init_error_ns,
                        final_offset_ns: last.map(|l| l.0),
                        final_error_ns: last.map(|l| l.1),
                        drift_ppb,
                        code_maps: match t.header.params.get("code_maps") {
                            Some(ParamValue::Text(maps)) => Some(maps.clone()),
                            _ => None,
                        },
                        program_objects: match t.header.params.get(PROGRAM_OBJECTS_PARAM) {
                            Some(ParamValue::Text(files)) => Some(files.clone()),
                            _ => None,
                        },
                        cpu_affinity: match t.header.params.get(CPU_AFFINITY_PARAM) {
                            Some(ParamValue::Text(cpus)) => Some(cpus.clone()),
                            _ => None,
                        },
                        online_cpus: match t.header.params.get(ONLINE_CPUS_PARAM) {
                            Some(ParamValue::Int(n)) => u32::try_from(*n).ok(),
                            _ => None,
                        },
                        source_sites: t.sites.clone(),
                        events: events_of(t.rank()),
                        complete: t.is_complete(),
                        in_flight: self.last_dump(i, t),
                        call_counts: t.call_counts.clone(),
                        call_paths: t.call_paths.clone(),
                    }
                })
                .collect(),
            max_clock_error_ns: self.max_error(),
            messages: matched.messages,
            unmatched_sends: matched.unmatched_sends,
            unmatched_receives: matched.unmatched_receives,
            clock_suspect: matched.suspects,
            incomplete: traces
                .iter()
                .filter_map(|t| {
                    Some(IncompleteRank {
                        rank: t.rank(),
                        file: t.path.display().to_string(),
                        reason: t.incompleteness()?,
                        events_read: events_of(t.rank()),
                    })
                })
                .collect(),
            missing_ranks: (0..world_size).filter(|r| !present.contains(r)).collect(),
            run_id: traces
                .first()
                .map(|t| t.header.run_id.clone())
                .unwrap_or_default(),
            start_unix_ns: self.start_unix_ns(traces),
            clock_implausible: self.implausible.clone(),
            peers_out_of_range,
        }
    }
}

impl ClockPlan {
    /// The last in-flight dump of `traces[i]` (`t`), on the run's timeline.
    pub(crate) fn last_dump<S>(&self, i: usize, t: &RankTrace<S>) -> Option<InFlightDump> {
        t.in_flight
            .last()
            .map(|d| aligned_dump(d, self.aligner(i, t)))
    }
}

/// What the user must hear about a merged run beyond missing and cut-short ranks: clock
/// alignments that were replaced, and calls naming peers outside the world. One line
/// each, for `overlap merge`, `trace` and `analyze` to print as warnings.
pub fn warnings(info: &MergedInfo) -> Vec<String> {
    let clocks = info
        .clock_implausible
        .iter()
        .map(|c| format!("rank {}: implausible clock alignment: {}", c.rank, c.reason));
    let peers = info.peers_out_of_range.iter().map(|p| {
        format!(
            "rank {}: {} call(s) in {} name a peer outside the world of {} rank(s), the first \
             {} at {} into the run, naming rank {}: not matched as messages",
            p.rank,
            p.calls,
            p.file,
            info.world_size,
            p.first_call,
            crate::units::duration(p.first_ns),
            p.first_peer
        )
    });
    clocks.chain(peers).collect()
}

/// The file `rank` was read from ("" when none of `traces` is that rank).
pub(crate) fn file_of<S>(traces: &[RankTrace<S>], rank: u32) -> String {
    traces
        .iter()
        .find(|t| t.rank() == rank)
        .map(|t| t.path.display().to_string())
        .unwrap_or_default()
}

/// The world size of `traces` (one run: their headers agree).
pub(crate) fn world_size_of<S>(traces: &[RankTrace<S>]) -> u32 {
    traces.iter().map(|t| t.header.size).max().unwrap_or(0)
}

/// Aligns and matches the given per-rank traces, held in memory, which must be the
/// files of one run ([`merge_dir`] makes sure they are). Their events are moved, not
/// copied, onto the run's timeline; the compact timelines analysis uses are built once,
/// here.
pub fn merge(mut traces: Vec<RankTrace>) -> Merged {
    traces.sort_by_key(RankTrace::rank);
    let plan = ClockPlan::new(&traces);
    let mut timelines = Vec::with_capacity(traces.len());
    let mut events = Vec::with_capacity(traces.len());
    for (i, t) in traces.iter_mut().enumerate() {
        let aligned = align_rank(std::mem::take(&mut t.events), plan.aligner(i, t));
        let mut tl = Timeline::new(t.rank());
        tl.host.clone_from(&t.header.host);
        tl.os_pid = t.header.os_pid;
        tl.threads.clone_from(&t.threads);
        tl.complete = t.is_complete();
        for e in &aligned.0 {
            tl.push(e);
        }
        tl.gpu = aligned.1;
        timelines.push(tl);
        events.push(RankEvents::Memory(aligned.0));
    }
    matched(&plan, &traces, timelines, events)
}

/// A rank's dump with its times on the run's timeline.
fn aligned_dump(d: &InFlightDump, align: impl Fn(Nanos) -> Nanos) -> InFlightDump {
    let at = align(Nanos(d.at_ns)).0;
    let mut out = d.clone();
    out.at_ns = at;
    for c in &mut out.calls {
        c.start_ns = align(Nanos(c.start_ns)).0.min(at);
    }
    out
}

/// A rank's events on the run's timeline, sorted by start: its calls and compute spans,
/// and apart, its GPU work.
fn align_rank(
    mut events: Vec<Event>,
    align: impl Fn(Nanos) -> Nanos,
) -> (Vec<Event>, Vec<GpuEvent>) {
    let mut gpu = Vec::new();
    events.retain_mut(|e| match e {
        Event::Gpu(g) => {
            let mut g = g.clone();
            crate::model::align_gpu(&mut g, &align);
            gpu.push(g);
            false
        }
        other => {
            align_event(other, &align);
            true
        }
    });
    events.sort_by_key(|e| (e.start(), e.tid()));
    gpu.sort_by_key(|g| (g.start, g.stream, g.issued));
    (events, gpu)
}

/// A call's or compute span's times onto the run's timeline (GPU work is aligned apart,
/// [`crate::model::align_gpu`]).
fn align_event(e: &mut Event, align: impl Fn(Nanos) -> Nanos) {
    match e {
        Event::Call(c) => {
            c.start = align(c.start);
            c.end = align(c.end).max(c.start);
        }
        Event::Compute(c) => {
            c.start = align(c.start);
            c.end = align(c.end).max(c.start);
        }
        Event::Gpu(_) => {}
    }
}
