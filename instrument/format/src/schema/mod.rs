//! The trace format: the typed event model and its wire form (Chrome Trace Event JSON).
//!
//! This module is the only place that says what a trace file looks like. The recorder
//! writes through it, `overlap-analyzer`'s importer reads through it, and the merged
//! trace is written with it. `docs/trace-format.md` is the prose version of this module;
//! change both together.
//!
//! Inside the program every time is a [`Nanos`]; the wire format's microseconds appear
//! only in [`wire::Micros`]. Every struct that reaches the wire carries a comment saying
//! that changing it means bumping [`FORMAT_VERSION`].

use std::sync::Arc;

mod args;
mod buffers;
mod cpus;
mod gpu;
mod ids;
mod inflight;
mod learned;
mod learned_args;
pub mod marker;
mod merged;
mod op;
pub mod wire;

pub use args::{
    CallArgs, ClockSync, Completion, Footer, Header, ParamValue, Params, SourceSite, Started,
    SyncPhase,
};
pub use buffers::{Binding, Bindings, BufferUse, SpanBuffers, Unbound};
pub use cpus::{cpu_list, parse_cpu_list, CPU_AFFINITY_PARAM, ONLINE_CPUS_PARAM};
pub use gpu::{
    stream_of_tid, stream_tid, stream_track_name, GpuArgs, GpuEvent, GpuOp, ALL_STREAMS, CUDA,
    GPU_BACKEND_PARAM, GPU_TID_BASE, HOST_EMULATED, PROGRAM_OBJECTS_PARAM, STREAMS_PER_DEVICE,
};
pub use ids::{CommId, Nanos, Rank, RequestId, Tag};
pub use inflight::{DumpReason, InFlightCall, InFlightDump};
pub use learned::{ByteRange, LearnedUse, Outcome, Touch, Unwatched, UnwatchedReason, WatchEnd};
pub use learned_args::LearnedArgs;
pub use merged::{
    CallCounts, CallPath, ClockProblem, ImplausibleClock, IncompleteRank, MergedInfo,
    PeersOutOfRange, RankClock, RegionArgs, RequestArgs, SuspectMessage,
};
pub use op::{negligible_mpi_call, CollectivePattern, Op, OpClass, RequestKind, Waiting};

/// Name of the format, written in every header so a reader can tell our files apart.
pub const FORMAT_NAME: &str = "overlap-trace";

/// Header parameter the preload writes: the MPI functions the program imports that
/// overlap neither records nor counts as negligible, comma-separated (empty: none).
pub const UNRECORDED_CALLS_PARAM: &str = "unrecorded_calls";

/// Header parameter the preload writes: of [`UNRECORDED_CALLS_PARAM`], those imported
/// through a binding that bypasses the C entry points (Open MPI's Fortran bindings), so
/// that their calls are not counted ([`CallCounts`]), comma-separated (empty: none).
pub const UNCOUNTED_CALLS_PARAM: &str = "uncounted_calls";

/// Header parameter the preload writes: the first line of `MPI_Get_library_version`.
pub const MPI_LIBRARY_PARAM: &str = "mpi_library";

/// Header parameter the preload writes: the MPI language bindings the program imports
/// (`C`, `Fortran mpif.h/mpi`, `Fortran mpi_f08`), comma-separated.
pub const MPI_BINDINGS_PARAM: &str = "mpi_bindings";

/// Header parameter the preload writes: the MPI it was built for (`Open MPI 4.1.4`).
pub const PRELOAD_BUILT_FOR_PARAM: &str = "preload_built_for";

/// Header parameter the preload writes when `overlap trace` said what launched the run:
/// the launcher's first line of `--version` (`mpirun (Open MPI) 4.1.4`), or its name.
pub const LAUNCHER_PARAM: &str = "launcher";

/// The provenance parameters, in the order the report lists them, each with its label.
pub const PROVENANCE_PARAMS: [(&str, &str); 4] = [
    (MPI_LIBRARY_PARAM, "MPI"),
    (LAUNCHER_PARAM, "launcher"),
    (MPI_BINDINGS_PARAM, "bindings"),
    (PRELOAD_BUILT_FOR_PARAM, "preload built for"),
];

/// Version of the wire format. Bump it whenever a wire struct changes meaning or shape.
///
/// Version 2 added the preload's calls (Ssend, Waitany, persistent requests, more
/// collectives...) and the `site`, `root`, `recv_bytes` and `started` arguments.
/// Version 3 added the remaining collectives (non-blocking, persistent, neighbourhood,
/// scans), one-sided communication and synchronisation, and the `win`, `group` and
/// `exclusive` arguments.
/// Version 4 made per-rank files binary streams ([`crate::stream`], `rank-N.ovlp`); the
/// merged JSON trace is unchanged but for this number, and per-rank JSON files of
/// versions 1 to 3 are still read.
/// Version 5 added the run's identity to the per-rank header (`run_id`,
/// `start_unix_ns`) and to the merged `otherData`, with each rank's event count and
/// completeness ([`RankClock`]'s `events` and `complete`), the clocks found implausible
/// and the peers outside the world; and the stream's `InFlight` frame (the calls a rank
/// was inside when it dumped) with the merged trace's per-rank `in_flight`.
/// Version 6 added the buffers a compute span reads and writes: the stream's bindings
/// frame (names bound to address ranges) and its annotated compute records, and the
/// merged trace's compute-span `args` (`reads`, `writes`: [`SpanBuffers`]).
/// Version 7 added GPU work ([`GpuEvent`]): the stream's GPU record and, in the merged
/// trace, events of category `gpu` on one thread per device stream, host waits on GPU
/// work, and the `gpu_chain` flows linking a packet's copies to its messages.
/// Version 8 added the CPUs each rank could run on to the merged trace's [`RankClock`]
/// (`cpu_affinity`, `online_cpus`, from the headers' params of those names), and what
/// the program did with its requests' buffers after they completed (`overlap trace
/// --buffers`, [`LearnedUse`], [`Unwatched`]): the stream's learned-uses frame and, in
/// the merged trace, instants of category `buffer`.
/// Version 9 added what the preload counts besides the calls it records: the stream's
/// call-counts frame and the merged trace's per-rank `call_counts` ([`CallCounts`]);
/// the call paths of `overlap trace --callpath` (the stream's call-paths frame, the
/// merged trace's per-rank `call_paths`, [`CallPath`]);
/// and the ops of MPI-4's Isendrecv, the matched probes and receives, and persistent
/// sends of every mode, with the stream's call record of a non-blocking Sendrecv.
/// Version 10 added the function a source site is in: the stream's site definition
/// with a function (tag 55, the preload's Python frames) and [`SourceSite::function`]
/// (optional), so files of versions 1 to 9 read as they did.
/// Version 11 records `MPI_Pcontrol` ([`Op::Pcontrol`], counted before): the stream's
/// call record with a level and a region name (tag 15), [`CallArgs::level`] and
/// [`CallArgs::region`].
pub const FORMAT_VERSION: u32 = 11;

/// The first version whose merged files say how many events each rank has
/// ([`RankClock::events`]): a reader can tell a merged file cut short from a whole one
/// only from this version on.
pub const COUNTED_MERGE_VERSION: u32 = 5;

/// The last version whose per-rank files are JSON (`rank-N.json`).
pub const LAST_JSON_RANK_VERSION: u32 = 3;

/// The oldest version readers still accept: every version since only added names and
/// optional fields, so an older file reads as it always did.
pub const OLDEST_READABLE_VERSION: u32 = 1;

/// True when a file written with format `version` can be read by this build.
pub fn readable_version(version: u32) -> bool {
    (OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version)
}

/// The per-rank file name inside a trace directory (a binary stream).
pub fn rank_file_name(rank: u32) -> String {
    format!("rank-{rank}.{RANK_FILE_EXTENSION}")
}

/// The extension of binary per-rank files.
pub const RANK_FILE_EXTENSION: &str = "ovlp";

/// The extension of per-rank files of versions 1 to 3 (JSON), still read.
pub const JSON_RANK_FILE_EXTENSION: &str = "json";

/// One thing that happened on one thread of one rank, in the rank's own clock.
///
/// This is the typed form of an event; [`wire::WireEvent`] is its JSON form.
#[derive(Clone, Debug, PartialEq)]
// Calls are the bulk of the events: boxing them would cost an allocation per call on the
// import path to save memory on the rarer compute spans.
#[allow(clippy::large_enum_variant)]
pub enum Event {
    /// An MPI call, from entry to exit.
    Call(CallEvent),
    /// A span of user computation, from a guard or a `tracing` span.
    Compute(ComputeEvent),
    /// GPU work: a copy, a kernel, or the host waiting for them.
    Gpu(GpuEvent),
}

impl Event {
    /// The thread the event happened on.
    pub fn tid(&self) -> u32 {
        match self {
            Event::Call(c) => c.tid,
            Event::Compute(c) => c.tid,
            Event::Gpu(g) => g.tid,
        }
    }

    /// Entry time.
    pub fn start(&self) -> Nanos {
        match self {
            Event::Call(c) => c.start,
            Event::Compute(c) => c.start,
            Event::Gpu(g) => g.start,
        }
    }

    /// Exit time.
    pub fn end(&self) -> Nanos {
        match self {
            Event::Call(c) => c.end,
            Event::Compute(c) => c.end,
            Event::Gpu(g) => g.end,
        }
    }
}

/// An MPI call with its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct CallEvent {
    /// Recording thread (0 is the first thread that recorded).
    pub tid: u32,
    /// Entry into the call.
    pub start: Nanos,
    /// Exit from the call.
    pub end: Nanos,
    /// Which MPI function.
    pub op: Op,
    /// Its arguments and, for completing calls, what it completed.
    pub args: CallArgs,
}

/// A compute span with its user-given name.
#[derive(Clone, Debug, PartialEq)]
pub struct ComputeEvent {
    /// Recording thread.
    pub tid: u32,
    /// Start of the span.
    pub start: Nanos,
    /// End of the span.
    pub end: Nanos,
    /// The name the user gave the span.
    pub name: String,
    /// The buffers it declared it reads and writes, with their addresses then; `None`
    /// when it declared nothing (unknown, not "none"). Shared: the spans of a loop
    /// mostly declare the same buffers.
    pub buffers: Option<Arc<SpanBuffers>>,
}
