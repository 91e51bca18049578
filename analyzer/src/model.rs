//! The typed form of what a trace holds, as the importer hands it to the rest of the
//! analyzer: per-rank traces in the rank's own clock, and merged traces on one timeline.

use std::collections::BTreeMap;
use std::fmt;
use std::num::{NonZeroU32, NonZeroU64};
use std::path::PathBuf;

use overlap_format::clock::ClockModel;

use crate::compute::{ComputeSource, RankCompute};

mod access;
mod timeline;

pub use access::{Access, Buffer, NamedBuffer};
use overlap_format::schema::{
    ClockSync, Event, Footer, Header, InFlightDump, MergedInfo, Nanos, Op, RequestKind, SourceSite,
    SyncPhase,
};
pub use timeline::{align_gpu, Timeline};

/// Why a file's events stop before its end: what was read before still counts.
#[derive(Clone, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug, PartialEq)]
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

// ---------------------------------------------------------------------------------------
// The analysis model: every rank on the run's timeline, compact enough for traces of
// tens of millions of events, with messages matched and request lifetimes resolved.
// ---------------------------------------------------------------------------------------

/// An event of a rank: `ranks[rank].spans[index]` of a [`Trace`] (the same index as in
/// the rank's events of a [`crate::merge::Merged`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

/// A non-blocking request from its post to its completion, in 32 bytes: event indices
/// are kept as `u32` (a rank holds fewer than 4 G events: each costs at least 32 bytes
/// of memory) and read through methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLife {
    /// Rank.
    pub rank: u32,
    post: u32,
    args: u32,
    completion: u32,
    freed: u32,
    /// What the request does.
    pub kind: RequestKind,
    /// Request id on that rank.
    pub request: u64,
}

const _: () = assert!(std::mem::size_of::<RequestLife>() == 32);

/// An event index of a rank as a `u32` field (see [`RequestLife`]).
fn index_u32(i: usize) -> u32 {
    debug_assert!(i < NO_INDEX as usize, "a rank of 4 G events or more");
    i as u32
}

fn some_index(i: u32) -> Option<usize> {
    (i != NO_INDEX).then_some(i as usize)
}

impl RequestLife {
    /// The request `request` of `rank`, posted at event `post`, described by the call at
    /// `args`, completed at `completion` or let go at `freed`.
    pub fn new(
        rank: u32,
        request: u64,
        kind: RequestKind,
        post: usize,
        args: usize,
        completion: Option<usize>,
        freed: Option<usize>,
    ) -> RequestLife {
        RequestLife {
            rank,
            post: index_u32(post),
            args: index_u32(args),
            completion: completion.map_or(NO_INDEX, index_u32),
            freed: freed.map_or(NO_INDEX, index_u32),
            kind,
            request,
        }
    }

    /// The post (Isend, Irecv, Start...): index in the rank's events.
    pub fn post(&self) -> usize {
        self.post as usize
    }

    /// The call whose arguments describe the transfer: the post itself, or for a
    /// started persistent request its Send_init or Recv_init.
    pub fn args(&self) -> usize {
        self.args as usize
    }

    /// The completing call, when there was one.
    pub fn completion(&self) -> Option<usize> {
        some_index(self.completion)
    }

    /// The `MPI_Request_free` that let go of the request before any call completed it:
    /// the operation went on, but the program never learned when it ended.
    pub fn freed(&self) -> Option<usize> {
        some_index(self.freed)
    }
}

/// What a span of a [`Timeline`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    /// A compute span; the name is `names[.0]` of its timeline.
    Compute(u32),
    /// An MPI call; its arguments are `calls[.1]` of its timeline.
    Call(Op, u32),
}

/// A call or compute span, ns since the run's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Start.
    pub start: Nanos,
    /// End (never before the start).
    pub end: Nanos,
    /// Recording thread.
    pub tid: u32,
    /// For a compute span that declared its buffers, their entry in its timeline
    /// ([`Timeline::access`]).
    pub access: Option<NonZeroU32>,
    /// What it is.
    pub what: What,
}

// Traces hold tens of millions of spans: naming a compute span's buffers costs no byte.
const _: () = assert!(std::mem::size_of::<Span>() == 32);

impl Span {
    /// Its duration.
    pub fn duration(&self) -> Nanos {
        self.end - self.start
    }

    /// The MPI call, if it is one.
    pub fn op(&self) -> Option<Op> {
        match self.what {
            What::Call(op, _) => Some(op),
            What::Compute(_) => None,
        }
    }
}

/// The receive half of a Sendrecv.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvHalf {
    /// Requested source (world rank; negative: wildcard).
    pub peer: Option<i32>,
    /// Requested tag.
    pub tag: Option<i32>,
    /// The receive buffer.
    pub buf: Option<Buffer>,
}

/// The arguments of an MPI call that analysis uses (see
/// [`CallArgs`](overlap_format::schema::CallArgs) for their meaning), in 80 bytes: a
/// trace holds one per call, tens of millions of them. Fields a call may lack are kept
/// with a sentinel (never a value MPI or the recorder uses: `i32::MIN` for a rank or
/// tag, `u64::MAX` for bytes or a request id, `u32::MAX` for a window) and read through
/// methods that give them back as `Option`s; the rare parts (Sendrecv's receive half,
/// the requests a Start started, a one-sided group) live in the timeline's side table
/// ([`Timeline::recv_half`], [`Timeline::started`], [`Timeline::group`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallInfo {
    peer: i32,
    tag: i32,
    /// Communicator id (0 when not recorded).
    pub comm: u32,
    root: i32,
    win: u32,
    /// Its entry in the timeline's side table of rare arguments, or [`NO_INDEX`].
    extra: u32,
    bytes: u64,
    request: u64,
    /// The (send) buffer.
    pub buf: Option<Buffer>,
    /// Requests this call completed: `done[completed.0 .. completed.0 + completed.1]` of
    /// its timeline.
    pub completed: (u32, u32),
    /// Where the program made the call: a code address (the preload), or an id of the
    /// rank's source-site table (the Rust layer); see [`crate::sites`]. `None` when not
    /// recorded. Non-zero on the wire, so it costs 8 bytes per call, not 16.
    pub site: Option<NonZeroU64>,
}

const _: () = assert!(std::mem::size_of::<CallInfo>() == 80);

/// The sentinel of a missing rank, tag or root in a [`CallInfo`].
const NO_I32: i32 = i32::MIN;
/// The sentinel of a missing byte count or request id.
const NO_U64: u64 = u64::MAX;
/// The sentinel of a missing window id or side-table entry.
const NO_INDEX: u32 = u32::MAX;

fn some_i32(v: i32) -> Option<i32> {
    (v != NO_I32).then_some(v)
}

fn some_u64(v: u64) -> Option<u64> {
    (v != NO_U64).then_some(v)
}

/// One request a call completed, with the status MPI returned for it (see
/// [`Completion`](overlap_format::schema::Completion)), in 24 bytes with the sentinels
/// of [`CallInfo`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    request: u64,
    bytes: u64,
    source: i32,
    tag: i32,
}

const _: () = assert!(std::mem::size_of::<Done>() == 24);

impl From<&overlap_format::schema::Completion> for Done {
    fn from(c: &overlap_format::schema::Completion) -> Done {
        Done {
            request: c.request.unwrap_or(NO_U64),
            bytes: c.bytes.unwrap_or(NO_U64),
            source: c.source.unwrap_or(NO_I32),
            tag: c.tag.unwrap_or(NO_I32),
        }
    }
}

impl Done {
    /// The request, as numbered by the post that created it; none for the receive half
    /// of a blocking call.
    pub fn request(&self) -> Option<u64> {
        some_u64(self.request)
    }

    /// Receives only: the world rank the message actually came from.
    pub fn source(&self) -> Option<i32> {
        some_i32(self.source)
    }

    /// Receives only: the message's actual tag.
    pub fn tag(&self) -> Option<i32> {
        some_i32(self.tag)
    }

    /// Receives only: the bytes actually received.
    pub fn bytes(&self) -> Option<u64> {
        some_u64(self.bytes)
    }
}

/// The arguments few calls have, kept apart from [`CallInfo`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CallExtra {
    /// Sendrecv's receive half.
    pub(crate) recv: Option<RecvHalf>,
    /// Start / Startall: the requests it started, `starts[started.0 ..][.. started.1]`.
    pub(crate) started: (u32, u32),
    /// Win_start / Win_post: the world ranks of the group,
    /// `groups[group.0 ..][.. group.1]` of its timeline.
    pub(crate) group: (u32, u32),
}

impl CallInfo {
    /// The arguments of a call, its rare parts at `extra` of its timeline's side table
    /// (`None`: it has none). A value equal to a field's sentinel (see the type) reads
    /// back as not recorded.
    pub(crate) fn new(
        a: &overlap_format::schema::CallArgs,
        buf: Option<Buffer>,
        completed: (u32, u32),
        extra: Option<u32>,
    ) -> CallInfo {
        CallInfo {
            peer: a.peer.unwrap_or(NO_I32),
            tag: a.tag.unwrap_or(NO_I32),
            comm: a.comm.unwrap_or(0),
            root: a.root.unwrap_or(NO_I32),
            win: a.win.unwrap_or(NO_INDEX),
            extra: extra.unwrap_or(NO_INDEX),
            bytes: a.bytes.unwrap_or(NO_U64),
            request: a.request.unwrap_or(NO_U64),
            buf,
            completed,
            site: a.site.and_then(NonZeroU64::new),
        }
    }

    /// Peer (world rank) of a point-to-point call.
    pub fn peer(&self) -> Option<i32> {
        some_i32(self.peer)
    }

    /// Tag.
    pub fn tag(&self) -> Option<i32> {
        some_i32(self.tag)
    }

    /// Bytes sent, or a receive's capacity.
    pub fn bytes(&self) -> Option<u64> {
        some_u64(self.bytes)
    }

    /// The request a post created.
    pub fn request(&self) -> Option<u64> {
        some_u64(self.request)
    }

    /// Rooted collectives: the root (world rank).
    pub fn root(&self) -> Option<i32> {
        some_i32(self.root)
    }

    /// Calls on a window: its id (the same on every rank of its group).
    pub fn win(&self) -> Option<u32> {
        (self.win != NO_INDEX).then_some(self.win)
    }

    /// Its entry in the timeline's side table, if it has one.
    pub(crate) fn extra(&self) -> Option<usize> {
        (self.extra != NO_INDEX).then_some(self.extra as usize)
    }
}

/// A whole run ready for analysis: every rank on one timeline, messages matched,
/// request lifetimes resolved. Built by [`crate::import::load`] from a merged trace or a
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
    /// Request lifetimes.
    pub requests: Vec<RequestLife>,
    /// The compute of each rank (same order as `ranks`): the one notion of compute every
    /// figure uses ([`crate::compute`]).
    pub compute: Vec<RankCompute>,
}

impl Trace {
    /// A trace of `ranks` (sorted by rank), with each rank's compute worked out once.
    pub fn new(
        source: PathBuf,
        info: MergedInfo,
        ranks: Vec<Timeline>,
        messages: Vec<Message>,
        requests: Vec<RequestLife>,
    ) -> Trace {
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
        self.ranks
            .binary_search_by_key(&rank, |t| t.rank)
            .ok()
            .and_then(|i| self.compute.get(i))
    }

    /// Where the run's compute comes from, over every rank.
    pub fn compute_source(&self) -> ComputeSource {
        ComputeSource::combine(self.compute.iter().map(RankCompute::source))
    }

    /// The timeline of a rank.
    pub fn rank(&self, rank: u32) -> Option<&Timeline> {
        self.ranks
            .binary_search_by_key(&rank, |t| t.rank)
            .ok()
            .and_then(|i| self.ranks.get(i))
    }

    /// The span behind a reference.
    pub fn span(&self, r: EventRef) -> Option<&Span> {
        self.rank(r.rank)?.spans.get(r.index)
    }

    /// The clock error bound of a rank, ns (0 when it reads rank 0's clock).
    pub fn clock_error(&self, rank: u32) -> Nanos {
        self.info.ranks.iter().find(|r| r.rank == rank).map_or(
            Nanos(self.info.max_clock_error_ns),
            |r| {
                if r.shared_clock {
                    Nanos::ZERO
                } else {
                    Nanos(r.init_error_ns.max(r.final_error_ns.unwrap_or(0)))
                }
            },
        )
    }
}
