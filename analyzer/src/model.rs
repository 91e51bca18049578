//! The typed form of what a trace holds, as the importer hands it to the rest of the
//! analyzer: per-rank traces in the rank's own clock, and merged traces on one timeline.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use overlap_format::clock::ClockModel;

mod access;
mod by_id;
mod by_post;
mod by_slot;
mod clock_errors;
pub(crate) mod compact;
pub mod compute;
pub mod copies;
mod messages_by_rank;
pub(crate) mod near;
mod rank_work;
mod region_mark;
mod span;
mod timeline;

use compute::{ComputeSource, RankCompute};

pub use access::{Access, Buffer, NamedBuffer};
pub(crate) use by_id::ById;
pub use by_post::RequestsByPost;
pub(crate) use by_slot::BySlot;
pub use clock_errors::ClockErrors;
pub(crate) use compact::CallExtra;
pub use compact::MAX_RECORDS;
pub use compact::{CallInfo, Done, RecvHalf, RequestLife};
pub use messages_by_rank::{MessagesByRank, PartMessages};
use overlap_format::schema::{
    CallCounts, CallPath, ClockSync, Event, Footer, Header, InFlightDump, LearnedUse, MergedInfo,
    Nanos, SourceSite, SyncPhase, Unwatched,
};
pub use rank_work::RankWork;
pub use region_mark::RegionMark;
pub use span::{Span, What};
pub use timeline::{align_gpu, Timeline};

/// Why a file's events stop before its end: what was read before still counts.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReadProblem {
    /// Index of the first event that could not be used (in a JSON file, counting every
    /// value of the array from 0; in a binary stream, the events read before it).
    pub event_index: u64,
    /// Where in the file it starts.
    pub place: Place,
    /// What is wrong.
    pub reason: String,
}

/// A place in a trace file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Place {
    /// A line of a JSON file, from 1.
    Line(u64),
    /// A byte offset in a binary stream, from 0.
    Offset(u64),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Line(l) => write!(f, "line {l}"),
            Place::Offset(o) => write!(f, "byte offset {o}"),
        }
    }
}

impl fmt::Display for ReadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "event {} ({}): {}",
            self.event_index, self.place, self.reason
        )
    }
}

/// One rank's file, read; its events go into `E` (all of them as [`Event`]s by default,
/// or a compact [`Timeline`] for analysis).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RankTrace<E = Vec<Event>> {
    /// The file.
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// Thread names by tid.
    pub threads: BTreeMap<u32, String>,
    /// Clock synchronisations, in file order.
    pub syncs: Vec<ClockSync>,
    /// Source locations the calls name by id in their `site` (Rust layer only).
    pub sites: Vec<SourceSite>,
    /// Calls and compute spans, in file order (per thread: recording order).
    pub events: E,
    /// The footer, when the file was closed properly.
    pub footer: Option<Footer>,
    /// Events that could not be used (corrupt, unknown call, bad args), and a cut-off
    /// end, in file order. Everything else was read.
    pub problems: Vec<ReadProblem>,
    /// In-flight dumps (SIGUSR1 or a stall), in file order, times since the epoch.
    pub in_flight: Vec<InFlightDump>,
    /// What was read whole but could not be used in full (a compute span naming a
    /// buffer the program never bound: its buffers are unknown). Not a sign that the
    /// file is incomplete.
    pub notes: Vec<ReadProblem>,
    /// True when part of the file is corrupt (a frame failing its checksum), not cut
    /// short: its footer may be there but unreadable, so no death is to be read into
    /// its absence.
    pub damaged: bool,
    /// What the recorder counted besides the calls it recorded (the preload, format
    /// version 9 on); `None` when it did not count.
    pub call_counts: Option<CallCounts>,
    /// The call paths the calls name by their `site` (`overlap trace --callpath`).
    pub call_paths: Vec<CallPath>,
}

impl<E> RankTrace<E> {
    /// The rank.
    pub fn rank(&self) -> u32 {
        self.header.rank
    }

    /// Its notes, each a line naming the file.
    pub fn note_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.notes
            .iter()
            .map(|n| format!("{}: {n}", self.path.display()))
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
        if self.footer.is_none() && !self.damaged {
            parts.push(
                "the file ends without its footer: the rank died, was killed or found its \
                 disk full before finishing its trace (what it recorded after its last \
                 flush is not in the file)"
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
    /// What each rank learned of its requests' buffers (`overlap trace --buffers`), by
    /// rank, in file order.
    pub learned: BTreeMap<u32, Vec<LearnedUse>>,
    /// The completions each rank did not watch, and why, by rank, in file order.
    pub unwatched: BTreeMap<u32, Vec<Unwatched>>,
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

// ---------------------------------------------------------------------------------------
// The analysis model: every rank on the run's timeline, compact enough for traces of
// tens of millions of events, with messages matched and request lifetimes resolved.
// ---------------------------------------------------------------------------------------

/// An event of a rank: `ranks[rank].spans[index]` of a [`Trace`] (the same index as in
/// the rank's events of a [`crate::merge::Merged`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct EventRef {
    /// Rank.
    pub rank: u32,
    /// Index in that rank's events.
    pub index: usize,
}

/// A message matched from its send to its receive, in 48 bytes (a trace holds one per
/// message, millions of them): its three calls are kept as `u32` indices (its receive
/// and completion are on the same rank) and read through methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Message {
    /// Id, from 1, in order of matching.
    pub id: u64,
    /// Bytes sent.
    pub bytes: u64,
    send_rank: u32,
    send: u32,
    recv_rank: u32,
    recv_post: u32,
    completion: u32,
    /// Tag.
    pub tag: i32,
    /// True when the receive completed before the send was posted.
    pub clock_suspect: bool,
}

const _: () = assert!(std::mem::size_of::<Message>() == 48);

impl Message {
    /// Message `id` sent by the call `send`, received by the call `recv_post` and
    /// completed by its rank's call at `completion`, when one did.
    pub fn new(
        id: u64,
        send: EventRef,
        recv_post: EventRef,
        completion: Option<usize>,
        tag: i32,
        bytes: u64,
        clock_suspect: bool,
    ) -> Message {
        Message {
            id,
            bytes,
            send_rank: send.rank,
            send: compact::index_u32(send.index),
            recv_rank: recv_post.rank,
            recv_post: compact::index_u32(recv_post.index),
            completion: completion.map_or(compact::NO_INDEX, compact::index_u32),
            tag,
            clock_suspect,
        }
    }

    /// The call that sent it.
    pub fn send(&self) -> EventRef {
        EventRef {
            rank: self.send_rank,
            index: self.send as usize,
        }
    }

    /// The call that posted the receive.
    pub fn recv_post(&self) -> EventRef {
        EventRef {
            rank: self.recv_rank,
            index: self.recv_post as usize,
        }
    }

    /// The call that completed the receive (on the receiver), when one did.
    pub fn completion(&self) -> Option<EventRef> {
        compact::some_index(self.completion).map(|index| EventRef {
            rank: self.recv_rank,
            index,
        })
    }

    /// The message with each of its calls' indices mapped by `new_index` (given the
    /// call's rank and index): the calls' new places once a rank's events are reordered.
    pub fn renumbered(&self, new_index: impl Fn(EventRef) -> usize) -> Message {
        let at = |e: EventRef| compact::index_u32(new_index(e));
        Message {
            send: at(self.send()),
            recv_post: at(self.recv_post()),
            completion: self.completion().map_or(compact::NO_INDEX, at),
            ..*self
        }
    }
}

/// A whole run ready for analysis: every rank on one timeline, messages matched,
/// request lifetimes resolved. Built by [`crate::load::load`] from a merged trace or a
/// directory of per-rank files, or from a [`crate::merge::Merged`].
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// Where it was read from.
    pub source: PathBuf,
    /// Run description, clock bounds, what was missing or cut short.
    pub info: MergedInfo,
    /// Ranks, sorted by rank.
    pub ranks: Vec<Timeline>,
    /// Matched messages.
    pub messages: Vec<Message>,
    /// Request lifetimes, in rank order ([`Trace::new`] puts them so, keeping each
    /// rank's order): analysis takes them a rank at a time.
    pub requests: Vec<RequestLife>,
    /// The compute of each rank (same order as `ranks`): the one notion of compute every
    /// figure uses ([`crate::model::compute`]).
    pub compute: Vec<RankCompute>,
}

impl Trace {
    /// A trace of `ranks` (sorted by rank), with each rank's compute worked out once and
    /// its requests put in rank order (a stable sort, when they are not).
    pub fn new(
        source: PathBuf,
        info: MergedInfo,
        ranks: Vec<Timeline>,
        messages: Vec<Message>,
        requests: Vec<RequestLife>,
    ) -> Trace {
        // Every loader gives them in rank order; a trace built by hand may not.
        let mut requests = requests;
        if !requests.is_sorted_by_key(|r| r.rank) {
            requests.sort_by_key(|r| r.rank);
        }
        let compute = ranks.iter().map(RankCompute::of).collect();
        Trace {
            source,
            info,
            ranks,
            messages,
            requests,
            compute,
        }
    }

    /// The compute of a rank.
    pub fn compute(&self, rank: u32) -> Option<&RankCompute> {
        self.slot(rank).and_then(|i| self.compute.get(i))
    }

    /// Where rank `rank` is in [`Self::ranks`] (and [`Self::compute`]).
    pub fn slot(&self, rank: u32) -> Option<usize> {
        slot_of_rank(&self.ranks, rank, |t| t.rank)
    }

    /// Where the run's compute comes from, over every rank.
    pub fn compute_source(&self) -> ComputeSource {
        ComputeSource::combine(self.compute.iter().map(RankCompute::source))
    }

    /// The timeline of a rank.
    pub fn rank(&self, rank: u32) -> Option<&Timeline> {
        self.slot(rank).map(|i| &self.ranks[i])
    }

    /// The span behind a reference.
    pub fn span(&self, r: EventRef) -> Option<&Span> {
        self.rank(r.rank)?.spans.get(r.index)
    }

    /// The part of the run of the ranks in `slots`: a *part trace*, whose `ranks` and
    /// `compute` hold those whole ranks, in rank order, while its `info`, `messages`
    /// and `requests` stay the whole run's. The second pass of the analysis makes each
    /// figure of such parts, one after another in rank order, and reduces them; each
    /// figure's test cuts the kept runs with this and checks the reduction is the
    /// figure of the whole.
    #[cfg(test)]
    pub(crate) fn part(&self, slots: std::ops::Range<usize>) -> Trace {
        Trace {
            ranks: self.ranks[slots.clone()].to_vec(),
            compute: self.compute[slots].to_vec(),
            ..self.clone()
        }
    }

    /// The parts of `size` ranks (the last one fewer) that [`Self::part`] cuts the
    /// whole run into, in rank order.
    #[cfg(test)]
    pub(crate) fn parts(&self, size: usize) -> Vec<Trace> {
        let n = self.ranks.len();
        (0..n)
            .step_by(size.max(1))
            .map(|from| self.part(from..(from + size.max(1)).min(n)))
            .collect()
    }

    /// The clock error bound of a rank, ns (0 when it reads rank 0's clock; the run's
    /// largest for a rank its description does not name). It scans the description:
    /// [`ClockErrors`] looks many up.
    pub fn clock_error(&self, rank: u32) -> Nanos {
        (self.info.ranks.iter().find(|r| r.rank == rank)).map_or(
            Nanos(self.info.max_clock_error_ns),
            clock_errors::of_rank_clock,
        )
    }
}

/// Where rank `rank` is among `items`, which are sorted by rank, each rank once: at
/// its own index when the ranks are 0, 1, 2, ... (every run whose files are all there),
/// found at once; by binary search otherwise. A trace or program looks a rank up for
/// every message and request, and at 1 024 ranks each probe of a search over their
/// records was another cache line.
pub(crate) fn slot_of_rank<T>(items: &[T], rank: u32, key: impl Fn(&T) -> u32) -> Option<usize> {
    let at = rank as usize;
    if items.get(at).is_some_and(|t| key(t) == rank) {
        return Some(at);
    }
    items.binary_search_by_key(&rank, key).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_is_found_at_its_index_or_by_search() {
        let dense = [0u32, 1, 2, 3];
        let sparse = [1u32, 4, 5, 9];
        let at = |items: &[u32], r| slot_of_rank(items, r, |&x| x);
        assert_eq!(
            (0..5).map(|r| at(&dense, r)).collect::<Vec<_>>(),
            [Some(0), Some(1), Some(2), Some(3), None]
        );
        // Rank 1 is at index 0, and index 1 holds rank 4: the search finds each.
        let found: Vec<Option<usize>> = [0, 1, 2, 4, 5, 9, 10]
            .iter()
            .map(|&r| at(&sparse, r))
            .collect();
        assert_eq!(
            found,
            [None, Some(0), None, Some(1), Some(2), Some(3), None]
        );
        assert_eq!(at(&[], 0), None);
    }

    /// A message's three calls read back as given (its completion on the receiver), and
    /// renumbering moves each of them, and nothing else.
    #[test]
    fn a_message_reads_back_and_renumbers() {
        let at = |rank, index| EventRef { rank, index };
        let m = Message::new(7, at(0, 4), at(2, 9), Some(11), 5, 64, true);
        assert_eq!(
            (m.send(), m.recv_post(), m.completion()),
            (at(0, 4), at(2, 9), Some(at(2, 11)))
        );
        let moved = m.renumbered(|e| e.index * 10 + e.rank as usize);
        assert_eq!(
            (moved.send(), moved.recv_post(), moved.completion()),
            (at(0, 40), at(2, 92), Some(at(2, 112)))
        );
        assert_eq!(
            (moved.id, moved.tag, moved.bytes, moved.clock_suspect),
            (7, 5, 64, true)
        );
        let open = Message::new(8, at(1, 0), at(0, 3), None, 0, 0, false);
        assert_eq!(open.completion(), None);
        assert_eq!(open.renumbered(|e| e.index + 1).completion(), None);
    }
}
