//! The report's types: what `overlap analyze` says of a run, whose field names are the
//! stable keys of `overlap analyze --json` (docs/metrics.md), and the per-instance
//! figures behind it. Every room below fills a part of it; [`super::analyze`] assembles
//! them, and the printers of [`crate::report`] and the terminal UI read them.

use std::collections::BTreeMap;

use overlap_format::schema::{ImplausibleClock, IncompleteRank, ParamValue, PeersOutOfRange};
use serde::Serialize;

use crate::metrics::budget::{RankBudget, RunBudget};
use crate::metrics::by_site::BySite;
use crate::metrics::false_overlap::Finding;
use crate::metrics::false_overlap_summary::FalseOverlap;
use crate::metrics::oversubscription;
use crate::metrics::pop::Pop;
use crate::metrics::request_row::RequestRow;
use crate::metrics::request_summary::RequestSummary;
use crate::metrics::wait_kind::WaitInstance;
use crate::metrics::wait_states::WaitStates;
use crate::model::compute::ComputeSource;
use crate::sites::SiteTable;

/// Version of the report's JSON layout; bumped when a key changes meaning or goes away.
pub const REPORT_VERSION: u32 = 4;

/// The clock: how far apart ranks' times may be, and what that makes uncertain.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClockReport {
    /// True when every rank read rank 0's own clock (exact alignment).
    pub shared_clock: bool,
    /// Largest error bound of any rank, ns.
    pub max_error_ns: u64,
    /// Per rank: error bound, measured offset and drift.
    pub ranks: Vec<RankClockReport>,
    /// Messages whose receive completed before their send (after alignment).
    pub suspect_messages: u64,
    /// Wait-state instances shorter than the clock error bound, counted apart.
    pub indeterminate_waits: u64,
    /// Their total, ns.
    pub indeterminate_wait_ns: u64,
}

/// One rank's clock.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankClockReport {
    /// Rank.
    pub rank: u32,
    /// Error bound used for this rank, ns (0 when it reads rank 0's clock).
    pub error_ns: u64,
    /// Offset to rank 0 measured at init, ns.
    pub init_offset_ns: i64,
    /// Drift against rank 0, parts per billion (none without a final sync).
    pub drift_ppb: Option<f64>,
}

/// What is in the trace and what is missing from it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunInfo {
    /// The trace analysed.
    pub source: String,
    /// The program (kernel name or executable).
    pub program: String,
    /// Its parameters.
    pub params: BTreeMap<String, ParamValue>,
    /// Size of `MPI_COMM_WORLD`.
    pub world_size: u32,
    /// Ranks with a trace (of a window: the ranks analysed in it).
    pub ranks_traced: u32,
    /// True when the trace was cut to a window ([`crate::window`]): the ranks and events
    /// counted are those in it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub windowed: bool,
    /// Ranks without any trace.
    pub missing_ranks: Vec<u32>,
    /// Ranks whose trace was cut short.
    pub incomplete_ranks: Vec<u32>,
    /// Why each of them is incomplete (their rank file, or the merged file cut short).
    pub incomplete: Vec<IncompleteRank>,
    /// False for a merged file too old (format version 4 or before) to say how many
    /// events each rank has: whether it is complete is then unknown.
    pub completeness_known: bool,
    /// The run's id (empty: unknown, files older than format version 5).
    pub run_id: String,
    /// Wall-clock time of the run's start, ns since the Unix epoch (0: unknown).
    pub start_unix_ns: u64,
    /// Ranks whose measured clock alignment could not be true, and how they were
    /// aligned instead.
    pub clock_implausible: Vec<ImplausibleClock>,
    /// Ranks whose calls name peers outside the world (not matched as messages).
    pub peers_out_of_range: Vec<PeersOutOfRange>,
    /// Events analysed.
    pub events: u64,
    /// Messages matched.
    pub messages: u64,
    /// Sends without a receive.
    pub unmatched_sends: u64,
    /// Receives without a send.
    pub unmatched_receives: u64,
    /// Where the compute every figure uses comes from: `spans` (recorded), `gaps`
    /// (inferred from the time between MPI calls) or `both` ([`crate::model::compute`]).
    pub compute_source: ComputeSource,
    /// A GPU runtime a rank loaded though no GPU work was recorded (a program traced
    /// through the preload, which records MPI only): the GPU verdicts are unknown, not
    /// clean. Null when GPU work was recorded or no runtime was seen.
    pub gpu_unrecorded: Option<crate::gpu::UnrecordedRuntime>,
    /// Ranks that completed requests no recorded call posted (posted by MPI functions
    /// overlap does not record): their waits and overlap figures are unknown.
    pub unseen_requests: Vec<crate::unrecorded::UnseenRequests>,
    /// Whether a host ran more ranks than it had CPUs for ([`oversubscription`]).
    pub oversubscription: oversubscription::Oversubscription,
}

/// Everything `overlap analyze` reports. Field names are the stable JSON keys.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// Always "overlap-report".
    pub report: &'static str,
    /// [`REPORT_VERSION`].
    pub version: u32,
    /// The run.
    pub run: RunInfo,
    /// Time per rank, and for the run.
    pub ranks: Vec<RankBudget>,
    /// The run's totals.
    pub totals: RunBudget,
    /// Wait states.
    pub wait_states: WaitStates,
    /// Per-request overlap, summarised.
    pub requests: RequestSummary,
    /// False-overlap findings: counted and summed, the worst listed.
    pub false_overlap: FalseOverlap,
    /// POP efficiencies.
    pub pop: Pop,
    /// Clock bounds and what they make uncertain.
    pub clock: ClockReport,
    /// False overlap and wait states grouped by call site, and every site of the run.
    pub by_site: BySite,
    /// Where the ranks were stuck, from their in-flight dumps; null when no rank dumped.
    pub hang: Option<crate::hang::HangReport>,
    /// The measured order replayed on the network fitted to the trace: how well the
    /// replay behind `suggest` and `whatif` reproduces this run; null when it could not
    /// be made, and then `replay_unknown` says why.
    pub replay: Option<crate::replay::SelfCheck>,
    /// Why `replay` is null (absent when it is not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_unknown: Option<crate::replay::NoSelfCheck>,
    /// GPU work: per-rank copies and kernels, the staging chains and the findings on
    /// them ([`crate::gpu`]); null when no rank recorded GPU work.
    pub gpu: Option<crate::gpu::GpuReport>,
    /// Time per MPI function and call site, the communication matrix, message sizes
    /// and each rank's setup, body and finalize ([`crate::profile`]).
    pub profile: crate::profile::Profile,
}

/// Every per-instance figure behind a [`Report`] (the tables of `--csv`/`--parquet`).
#[derive(Clone, Debug, PartialEq)]
pub struct Details {
    /// Every wait-state instance (indeterminate ones included, flagged).
    pub waits: Vec<WaitInstance>,
    /// Every request (compact: [`RequestRow::metrics`] gives the report's form).
    pub requests: Vec<RequestRow>,
    /// Every false-overlap finding, in the report's order (the report lists the worst,
    /// their call references given their sites; these name no site: the tables look it
    /// up in `sites`).
    pub findings: Vec<Finding>,
    /// Every call site of the run, symbolized.
    pub sites: SiteTable,
    /// Every staging chain (empty without GPU work).
    pub chains: Vec<crate::gpu::ChainRow>,
}
