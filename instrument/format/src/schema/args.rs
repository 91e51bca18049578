//! The `args` objects of the wire format: what a call carries, and the metadata records
//! (header, clock synchronisation, footer) that make a per-rank file self-describing.
//!
//! Changing any struct here changes the wire format: bump `FORMAT_VERSION`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Arguments of an MPI call event. Absent fields do not apply to the call.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallArgs {
    /// Destination of a send, or requested source of a receive, as a rank of
    /// `MPI_COMM_WORLD` whatever the communicator (negative values are MPI's wildcards
    /// and null rank: `-2` is `MPI_ANY_SOURCE` in MPICH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<i32>,
    /// Message tag (requested tag for a receive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<i32>,
    /// Message size in bytes (for a receive: the buffer's capacity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Communicator id (0 is `MPI_COMM_WORLD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comm: Option<u32>,
    /// Address of the send (or receive) buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buf: Option<u64>,
    /// Length of that buffer in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buf_len: Option<u64>,
    /// The request a post (Isend, Irecv) created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<u64>,
    /// Sendrecv only: the source the receive half named (world rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_peer: Option<i32>,
    /// Sendrecv only: the tag the receive half named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_tag: Option<i32>,
    /// Sendrecv only: address of the receive buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_buf: Option<u64>,
    /// Sendrecv only: length of the receive buffer in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_buf_len: Option<u64>,
    /// Collectives: bytes contributed by this rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_bytes: Option<u64>,
    /// Collectives that deliver data to this rank: the bytes it receives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_bytes: Option<u64>,
    /// Rooted collectives (Bcast, Reduce, Gather, Scatter): the root, as a world rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<i32>,
    /// Where the program called from, when the recording layer could see it: the preload
    /// records the code address (the return address of the MPI call); the Rust layer
    /// records the id of a [`SourceSite`] its file lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<u64>,
    /// Where `site` is in the source, as the merge symbolized it (`halo.c:57 (exchange)`,
    /// a call path's callers after `←`): what a trace viewer shows of the call's site.
    /// Only merged traces carry it; readers go by `site`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    /// Calls on a window (one-sided communication, synchronisation, creation): the
    /// window's id, the same on every rank of its group (as communicator ids are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub win: Option<u32>,
    /// Win_start / Win_post: the world ranks of the group the epoch is opened to (the
    /// targets of an access epoch, the origins of an exposure epoch).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group: Vec<i32>,
    /// Win_lock: whether the lock is exclusive (1) or shared (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusive: Option<u8>,
    /// Test only: whether the request had completed (1) or not (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<u8>,
    /// Requests this call completed (Wait, Waitall, Test), or for a blocking receive
    /// (Recv, Sendrecv) the status of the message it received, without a request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completed: Vec<Completion>,
    /// Start / Startall: the requests this call started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub started: Vec<Started>,
    /// Pcontrol only: its level (version 11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<i32>,
    /// Pcontrol only: the region it names, when the program passed a name the preload
    /// could read (see [`crate::region`]; version 11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

/// One persistent request started by `MPI_Start` or `MPI_Startall`.
///
/// A persistent request is created once (Send_init / Recv_init record it under
/// `persistent`) and may be started many times; each start is a fresh `request`, which
/// the completing call names like any other.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Started {
    /// The request this start created.
    pub request: u64,
    /// The persistent request started: the `request` its Send_init or Recv_init recorded.
    pub persistent: u64,
}

/// One request completed by a call, with the status MPI returned for it.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Completion {
    /// The request, as numbered by the post that created it. Absent for the receive
    /// half of a blocking call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<u64>,
    /// Receives only: the world rank the message actually came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<i32>,
    /// Receives only: the message's actual tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<i32>,
    /// Receives only: the bytes actually received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// A run parameter as the program reported it (kernel options, command line).
///
/// Wire type: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    /// A whole number.
    Int(i64),
    /// A real number.
    Float(f64),
    /// Text.
    Text(String),
}

/// The run's parameters, by name.
pub type Params = BTreeMap<String, ParamValue>;

/// First record of every per-rank file: who wrote it and against which clock.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Always [`super::FORMAT_NAME`].
    pub format: String,
    /// The [`super::FORMAT_VERSION`] the file was written with.
    pub format_version: u32,
    /// This rank in `MPI_COMM_WORLD`.
    pub rank: u32,
    /// Size of `MPI_COMM_WORLD`.
    pub size: u32,
    /// Host name (`MPI_Get_processor_name`).
    pub host: String,
    /// Operating-system process id.
    pub os_pid: u32,
    /// The rank's epoch: `CLOCK_MONOTONIC` in ns when recording started. Every `ts` in the
    /// file is relative to it.
    pub epoch_ns: u64,
    /// Identifies the clock `epoch_ns` was read from: the kernel's boot id on Linux.
    /// Ranks with the same non-empty domain read the very same `CLOCK_MONOTONIC`, so
    /// their offset is exactly zero whatever the ping-pong measured.
    #[serde(default)]
    pub clock_domain: String,
    /// What was run (kernel or program name).
    pub program: String,
    /// The run's parameters.
    #[serde(default)]
    pub params: Params,
    /// The run this file belongs to: 16 hex digits rank 0 chose at `MPI_Init` (from the
    /// time, its pid and a hash of its host) and broadcast to every rank, so files of
    /// one run share it and a reused trace directory is told apart. Empty: unknown
    /// (files older than version 5).
    #[serde(default)]
    pub run_id: String,
    /// `CLOCK_REALTIME` in ns since the Unix epoch, read with `epoch_ns` (when recording
    /// started on this rank). 0: unknown (files older than version 5).
    #[serde(default)]
    pub start_unix_ns: u64,
}

/// When a clock synchronisation was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncPhase {
    /// At initialisation, before the program's first traced call.
    Init,
    /// At finalisation, after its last traced call.
    Final,
}

/// One estimate of this rank's clock offset to rank 0 (Score-P's ping-pong method).
///
/// At local time `local_ns` (relative to this rank's epoch), rank 0's `CLOCK_MONOTONIC`
/// read `epoch_ns + local_ns - offset_ns`, give or take `error_ns`.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSync {
    /// Init or final.
    pub phase: SyncPhase,
    /// Local time of the estimate, ns since this rank's epoch.
    pub local_ns: u64,
    /// This rank's absolute clock minus rank 0's, in ns (Score-P's sign).
    pub offset_ns: i64,
    /// Bound on the error of `offset_ns`: half the best round trip, in ns.
    pub error_ns: u64,
    /// The best (smallest) round trip seen, in ns.
    pub rtt_ns: u64,
    /// How many ping-pongs were made.
    pub rounds: u32,
}

/// Last record of a per-rank file that was closed properly. A file without it was cut
/// short (the rank died or was killed).
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Footer {
    /// Call and compute events written.
    pub events: u64,
    /// Threads that recorded.
    pub threads: u32,
    /// Times a thread found its buffer full and waited for the writer.
    pub buffer_stalls: u64,
}

/// A source location calls were made from, as a recording layer knows it: the Rust
/// layer's `#[track_caller]` line, or the Python frame that called MPI (the preload, in
/// a Python program). Listed once per rank file (an `overlap_site` metadata record,
/// written before the first call that names it), and named by id in each call's `site`.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSite {
    /// The id calls give as their `site` (from 1; unique within the rank's file).
    pub id: u64,
    /// Source file, as the compiler named it (relative to the workspace for a crate
    /// built in it, e.g. `kernels/src/halo.rs`).
    pub file: String,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1 (0: unknown, as for a Python frame).
    pub column: u32,
    /// The function the call was made in, when the recorder knows it (a Python frame's
    /// qualified name: `exchange`, `Ring.step`; format version 10). Absent in older
    /// files and from the Rust layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
}
