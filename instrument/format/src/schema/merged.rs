//! The `otherData` of a merged trace and the args of the events only a merge writes:
//! what the merge found about clocks, messages and missing data.
//!
//! Changing any struct here changes the wire format: bump `FORMAT_VERSION`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{InFlightDump, Params, SourceSite};

/// `otherData` of a merged trace.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergedInfo {
    /// Always [`super::FORMAT_NAME`].
    pub format: String,
    /// The [`super::FORMAT_VERSION`] the file was written with.
    pub format_version: u32,
    /// What was run.
    pub program: String,
    /// The run's parameters (from rank 0's header, or the first header found).
    pub params: Params,
    /// Size of `MPI_COMM_WORLD`.
    pub world_size: u32,
    /// Per rank: where it ran and how its clock was aligned.
    pub ranks: Vec<RankClock>,
    /// The largest clock error bound of any rank, in ns: differences between ranks below
    /// this cannot be trusted.
    pub max_clock_error_ns: u64,
    /// Messages matched from a send to the call that completed the receive.
    pub messages: u64,
    /// Sends no receive in the trace matched.
    pub unmatched_sends: u64,
    /// Receives no send in the trace matched.
    pub unmatched_receives: u64,
    /// Messages whose receive completed before their send was posted once clocks were
    /// aligned: drawn as an instant on the receiver, not as a backward arrow.
    pub clock_suspect: Vec<SuspectMessage>,
    /// Ranks whose file ended early or could not be read in full.
    pub incomplete: Vec<IncompleteRank>,
    /// Ranks of `MPI_COMM_WORLD` with no file at all.
    pub missing_ranks: Vec<u32>,
    /// The run the rank files came from (their headers' `run_id`; empty: unknown, files
    /// older than version 5). A merge never mixes runs.
    #[serde(default)]
    pub run_id: String,
    /// Wall-clock time of the timeline's 0 (the run's start), ns since the Unix epoch;
    /// 0: unknown.
    #[serde(default)]
    pub start_unix_ns: u64,
    /// Ranks whose measured clock alignment could not be true, and how they were
    /// aligned instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clock_implausible: Vec<ImplausibleClock>,
    /// Ranks whose calls name peers outside `MPI_COMM_WORLD`: those calls are not
    /// matched as messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peers_out_of_range: Vec<PeersOutOfRange>,
}

impl MergedInfo {
    /// True when the file says how many events each rank has (format version 5 on), so
    /// that a merged file cut short can be told from a whole one rank by rank. Older
    /// merged files have no counts: their completeness is unknown.
    pub fn completeness_known(&self) -> bool {
        self.format_version >= super::COUNTED_MERGE_VERSION
    }
}

/// How one rank's clock was mapped onto rank 0's.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankClock {
    /// The rank.
    pub rank: u32,
    /// Its host.
    pub host: String,
    /// True when the rank shares rank 0's clock (same clock domain): its times are used
    /// as they are, with no error, and the offsets below are what the ping-pong measured.
    pub shared_clock: bool,
    /// Offset to rank 0 at initialisation, ns.
    pub init_offset_ns: i64,
    /// Error bound of that offset, ns.
    pub init_error_ns: u64,
    /// Offset to rank 0 at finalisation, ns (absent when the rank did not finalise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_offset_ns: Option<i64>,
    /// Error bound of that offset, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_error_ns: Option<u64>,
    /// Drift of this rank's clock against rank 0's, in parts per billion (ns per s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_ppb: Option<f64>,
    /// The rank's executable mappings (`start-end offset path` per line), when its
    /// recorder listed them (the preload does, as the header's `code_maps` param): each
    /// process is loaded at its own addresses, so a call `site` is symbolized with its
    /// own rank's maps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_maps: Option<String>,
    /// The files the program itself loaded, one path a line, when its recorder said
    /// (the header's [`super::PROGRAM_OBJECTS_PARAM`]; the preload does since issue 42).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_objects: Option<String>,
    /// The CPUs the rank's affinity allowed, as a CPU list (`0-3,8`), when its recorder
    /// said (its header's `cpu_affinity` param; recorders before version 8 did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_affinity: Option<String>,
    /// The CPUs online on its host, when its recorder said (`online_cpus`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online_cpus: Option<u32>,
    /// The source locations the rank's calls name by id in their `site` (the Rust layer
    /// lists them; the preload records code addresses instead), by id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_sites: Vec<SourceSite>,
    /// Complete events (calls and compute spans) of this rank written into the merged
    /// file: a reader that finds fewer holds a file cut short. Absent (0) in merged
    /// files older than version 5, whose counts are unknown (see
    /// [`MergedInfo::completeness_known`]).
    #[serde(default)]
    pub events: u64,
    /// True when the rank's own file was complete (read to its footer, nothing
    /// skipped). Absent (false) in merged files older than version 5.
    #[serde(default)]
    pub complete: bool,
    /// The calls the rank was inside at its last in-flight dump (SIGUSR1 or a stall),
    /// times on the run's timeline; absent when it never dumped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<InFlightDump>,
    /// What the rank's recorder counted besides the calls it recorded (the preload,
    /// from format version 9); absent when it did not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_counts: Option<CallCounts>,
    /// The call paths the rank's calls name by their `site` (`overlap trace
    /// --callpath N`, format version 9 on); empty without.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub call_paths: Vec<CallPath>,
}

/// A call path: the site word calls that recorded it carry (with the stream's
/// `CALL_PATH_TAG` set) and its frames, return addresses from the call site outwards.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallPath {
    /// The site word.
    pub site: u64,
    /// Return addresses: the MPI call's site first, then its caller's, outwards.
    pub frames: Vec<u64>,
}

/// What a recorder counted besides the calls it recorded: the preload counts every
/// call of every MPI function its MPI's header declares, and the completions of
/// requests no recorded call posted.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallCounts {
    /// Calls of each MPI function not recorded, by name (only those called).
    pub unrecorded: BTreeMap<String, u64>,
    /// Requests a completion call (Wait, Test and their families) completed that no
    /// recorded call had posted: posted by a call overlap does not record, so the
    /// trace lacks their transfers and the waits for them are unexplained.
    pub unseen_completions: u64,
}

/// Why a rank's measured clock alignment was not used.
///
/// Wire type: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockProblem {
    /// Aligned with its measured offset (or, on rank 0's clock domain, as it is), the
    /// rank's init clock synchronisation falls far outside rank 0's: an epoch or an
    /// offset that cannot be true. Aligned instead by its init synchronisation.
    Anchor,
    /// The init offset's error bound is absurd (over a second). Aligned instead by its
    /// init synchronisation.
    ErrorBound,
    /// The drift between the init and final offsets is beyond any real clock's: the
    /// final offset is not used (a constant offset instead).
    Drift,
}

/// A rank whose clock alignment was replaced.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImplausibleClock {
    /// The rank.
    pub rank: u32,
    /// What was wrong.
    pub problem: ClockProblem,
    /// The figures, for people.
    pub reason: String,
}

/// Calls of one rank naming a peer outside `MPI_COMM_WORLD` (a rank at or above its
/// size; negative values are MPI's wildcards and null rank, not peers).
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeersOutOfRange {
    /// The rank.
    pub rank: u32,
    /// The file its events were read from.
    pub file: String,
    /// How many calls name such a peer.
    pub calls: u64,
    /// The first of them: the MPI function.
    pub first_call: String,
    /// Its start, ns on the run's timeline.
    pub first_ns: u64,
    /// The peer it names.
    pub first_peer: i32,
}

/// A message flagged because its receive completed before its send was posted.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuspectMessage {
    /// Sending rank.
    pub send_rank: u32,
    /// Receiving rank.
    pub recv_rank: u32,
    /// Tag.
    pub tag: i32,
    /// When the send was posted, ns since the run's start.
    pub send_ns: u64,
    /// When the receive completed, ns since the run's start.
    pub recv_complete_ns: u64,
    /// How far backwards the message would go, ns.
    pub backwards_ns: u64,
}

/// A rank whose data is incomplete.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IncompleteRank {
    /// The rank.
    pub rank: u32,
    /// The per-rank file it was read from.
    pub file: String,
    /// Why: the reader's message.
    pub reason: String,
    /// Events that were read and merged.
    pub events_read: u64,
}

/// Args of a region instance's slice in a merged trace: on a track of the rank's own
/// ([`crate::region::region_tid`]), from the `MPI_Pcontrol` call that entered the
/// region to the one that left it.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionArgs {
    /// The region's name (`pcontrol` for mpiP's unnamed on and off).
    pub region: String,
    /// Which time this rank entered it, from 1.
    pub instance: u32,
    /// True when the rank never left it: the slice ends at the rank's last event.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open: bool,
}

/// Args of a request's async slice (post to completion) in a merged trace.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestArgs {
    /// The request, as numbered on its rank.
    pub request: u64,
    /// The peer rank.
    pub peer: i32,
    /// The tag.
    pub tag: i32,
    /// Bytes.
    pub bytes: u64,
    /// The call that completed it (absent when none did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_by: Option<String>,
}
