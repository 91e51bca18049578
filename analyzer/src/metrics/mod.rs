//! The figures an engineer acts on, computed from a [`Trace`]: where each rank's time
//! goes, the wait states that waste it (Scalasca's catalogue), how much each
//! non-blocking request overlapped, which waits are false overlap, and the POP
//! efficiencies of the run. Every figure is defined in `docs/metrics.md`.
//!
//! Each part is its own module; [`analyze`] runs them all and assembles the
//! [`Report`], whose field names are the stable keys of `overlap analyze --json`.

pub mod budget;
pub mod clean;
pub mod collective_model;
mod collective_waits;
pub mod collectives;
pub mod descheduled;
pub mod eager;
pub mod false_overlap;
mod false_overlap_limit;
pub mod false_overlap_summary;
pub mod ideal;
mod message_ends;
pub mod one_sided;
pub mod oversubscription;
pub mod pop;
pub mod progress;
pub mod request_row;
mod request_summary;
pub mod requests;
mod schedule;
pub mod split;
pub mod transfer;
pub mod wait_states;

use std::collections::BTreeMap;

use overlap_format::schema::{
    ImplausibleClock, IncompleteRank, Nanos, Op, OpClass, ParamValue, PeersOutOfRange,
};
use serde::Serialize;

use crate::compute::ComputeSource;
use crate::model::Trace;
use crate::sites::{BySite, SiteTable};

pub use budget::{RankBudget, RunBudget};
pub use false_overlap::Finding;
pub use false_overlap_summary::FalseOverlap;
pub use pop::Pop;
pub use requests::{RequestMetrics, RequestRow, RequestSummary, TransferModel};
pub use wait_states::{WaitInstance, WaitKind, WaitStates};

/// Version of the report's JSON layout; bumped when a key changes meaning or goes away.
pub const REPORT_VERSION: u32 = 4;

/// Thresholds of the analysis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// How many worst instances to list per wait state, and worst requests.
    pub worst: usize,
    /// How many false-overlap findings the report lists in full, largest loss first
    /// (every finding is counted, summed and grouped by site).
    pub findings: usize,
    /// A false-overlap loss (or the independent work after it) shorter than this is not
    /// worth reporting. Wait states count every positive wait.
    pub min_wait: Nanos,
    /// A request's window counts as empty when the compute inside it is less than this
    /// share of the time its wait lost.
    pub empty_window_share: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            worst: 5,
            findings: 100,
            min_wait: Nanos(1_000),
            empty_window_share: 0.1,
        }
    }
}

/// An MPI call of a rank, as reports name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallRef {
    /// Rank.
    pub rank: u32,
    /// Index of the call among the rank's events.
    pub index: usize,
    /// MPI function.
    pub call: &'static str,
    /// Start, ns since the run's start.
    pub start_ns: u64,
    /// Duration, ns.
    pub duration_ns: u64,
    /// Where the program made the call (a [`crate::sites::Site`] label such as
    /// `calls.c:57 (main)`); `None` when no site was recorded. Filled in by [`analyze`].
    pub site: Option<String>,
}

impl CallRef {
    /// The call of `rank` at `index`, if that event is a call.
    pub fn of(trace: &Trace, rank: u32, index: usize) -> Option<CallRef> {
        let s = trace.rank(rank)?.spans.get(index)?;
        Some(CallRef {
            rank,
            index,
            call: s.op()?.mpi_name(),
            start_ns: s.start.0,
            duration_ns: s.duration().0,
            site: None,
        })
    }
}

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
    /// Ranks with a trace.
    pub ranks_traced: u32,
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
    /// (inferred from the time between MPI calls) or `both` ([`crate::compute`]).
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

/// Runs every analysis on `trace`, each step beside those whose memory it can share
/// ([`schedule`] says in what order and why).
pub fn analyze(trace: &Trace, opts: &Options) -> (Report, Details) {
    let _span = tracing::info_span!("metrics").entered();
    let (replays, m) = schedule::figures(trace, opts);
    let of_trace = OfTrace::of(trace, &m);
    assemble(of_trace, m, replays)
}

/// [`analyze`]'s report, of a trace that nothing needs afterwards: it is dropped while
/// the replays' program is built, and the per-instance figures behind the report (its
/// [`Details`]) are not kept, so that analysis peaks lower ([`schedule`]). The report is
/// [`analyze`]'s, figure for figure.
pub fn analyze_owned(trace: Trace, opts: &Options) -> Report {
    analyze_owned_in_parts(trace, opts, schedule::PART)
}

/// [`analyze_owned`], the requests' rows made `part` requests (whole ranks) at a time.
fn analyze_owned_in_parts(trace: Trace, opts: &Options, part: usize) -> Report {
    let _span = tracing::info_span!("metrics").entered();
    let (replays, m, of_trace) = schedule::figures_owned(trace, opts, part, OfTrace::of);
    assemble(of_trace, m, replays).0
}

/// The parts of the report read from the trace beside the measured figures.
struct OfTrace {
    run: RunInfo,
    clock: ClockReport,
    hang: Option<crate::hang::HangReport>,
    gpu: Option<crate::gpu::GpuReport>,
    chains: Vec<crate::gpu::ChainRow>,
    profile: crate::profile::Profile,
}

impl OfTrace {
    fn of(trace: &Trace, m: &schedule::Measured) -> OfTrace {
        let (indeterminate_waits, indeterminate_wait_ns) = m
            .waits
            .iter()
            .filter(|w| w.indeterminate)
            .fold((0u64, 0u64), |(n, t), w| (n + 1, t + w.amount_ns));
        let clock = ClockReport {
            shared_clock: trace.info.ranks.iter().all(|r| r.shared_clock),
            max_error_ns: trace
                .ranks
                .iter()
                .map(|t| trace.clock_error(t.rank).0)
                .max()
                .unwrap_or(0),
            ranks: trace
                .info
                .ranks
                .iter()
                .map(|r| RankClockReport {
                    rank: r.rank,
                    error_ns: trace.clock_error(r.rank).0,
                    init_offset_ns: r.init_offset_ns,
                    drift_ppb: r.drift_ppb,
                })
                .collect(),
            suspect_messages: trace.messages.iter().filter(|m| m.clock_suspect).count() as u64,
            indeterminate_waits,
            indeterminate_wait_ns,
        };
        let info = &trace.info;
        let run = RunInfo {
            source: trace.source.display().to_string(),
            program: info.program.clone(),
            params: info.params.clone(),
            world_size: info.world_size,
            ranks_traced: trace.ranks.len() as u32,
            missing_ranks: info.missing_ranks.clone(),
            incomplete_ranks: trace
                .ranks
                .iter()
                .filter(|t| !t.complete)
                .map(|t| t.rank)
                .collect(),
            incomplete: info.incomplete.clone(),
            completeness_known: info.completeness_known(),
            run_id: info.run_id.clone(),
            start_unix_ns: info.start_unix_ns,
            clock_implausible: info.clock_implausible.clone(),
            peers_out_of_range: info.peers_out_of_range.clone(),
            events: trace.ranks.iter().map(|t| t.event_count() as u64).sum(),
            messages: trace.messages.len() as u64,
            unmatched_sends: info.unmatched_sends,
            unmatched_receives: info.unmatched_receives,
            compute_source: trace.compute_source(),
            gpu_unrecorded: crate::gpu::unrecorded_runtime(trace),
            unseen_requests: crate::unrecorded::unseen_requests(&trace.info),
            oversubscription: oversubscription::Oversubscription::of(&trace.info),
        };
        let (gpu, chains) = {
            let _s = tracing::info_span!("gpu").entered();
            crate::gpu::analyze(trace).unzip()
        };
        OfTrace {
            run,
            clock,
            hang: crate::hang::analyze(trace, &m.sites),
            gpu,
            chains: chains.unwrap_or_default(),
            profile: crate::profile::of(trace, &m.sites, &m.waits),
        }
    }
}

/// The report of the measured figures `m`, the parts read from the trace and the
/// replays, and the per-instance figures behind it.
fn assemble(
    of_trace: OfTrace,
    m: schedule::Measured,
    replays: schedule::Replays,
) -> (Report, Details) {
    let pop = pop::efficiencies(
        &m.ranks,
        &m.totals,
        &m.wait_states.per_rank_ns,
        replays.ideal,
    );
    let report = Report {
        report: "overlap-report",
        version: REPORT_VERSION,
        run: of_trace.run,
        ranks: m.ranks,
        totals: m.totals,
        wait_states: m.wait_states,
        requests: m.request_summary,
        false_overlap: m.false_overlap,
        pop,
        clock: of_trace.clock,
        by_site: m.by_site,
        hang: of_trace.hang,
        replay: replays.self_check.as_ref().ok().copied(),
        replay_unknown: replays.self_check.err(),
        gpu: of_trace.gpu,
        profile: of_trace.profile,
    };
    let details = Details {
        waits: m.waits,
        requests: m.requests,
        findings: m.findings,
        sites: m.sites,
        chains: of_trace.chains,
    };
    (report, details)
}

/// True for calls that block until something happens elsewhere (wait states are
/// charged to them): blocking point-to-point, the waiting completion calls, and the
/// one-sided synchronisation calls that may wait for other ranks or for pending
/// operations (Win_start, Win_complete, Win_wait, locks, unlocks, flushes). A Test, a
/// Win_test, a Win_post and a Win_sync never block.
pub fn blocks(op: Op) -> bool {
    match op.class() {
        OpClass::BlockingPointToPoint => true,
        OpClass::Completion => !op.is_test(),
        OpClass::OneSidedSync => !matches!(op, Op::WinTest | Op::WinPost | Op::WinSync),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{analyze, analyze_owned_in_parts, schedule, Options};
    use crate::model::Trace;

    /// The kept runs of `tests/data/reports`, loaded from their rank files.
    fn kept_runs() -> Vec<Trace> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports");
        let mut dirs: Vec<_> = std::fs::read_dir(&root)
            .expect("tests/data/reports")
            .filter_map(|e| Some(e.ok()?.path().join("ranks")))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        assert!(dirs.len() >= 10, "the runs under {}", root.display());
        let load = |d: &std::path::PathBuf| crate::import::load_dir(d, &mut |_, _| {});
        dirs.iter()
            .map(|d| load(d).expect("a kept run").trace)
            .collect()
    }

    /// The analysis given the trace reports what the one that keeps it does, however
    /// the requests' rows are cut into parts of whole ranks: a rank at a time, a few,
    /// or all in one (the kept runs hold fewer requests than a part).
    #[test]
    fn the_report_does_not_depend_on_the_parts() {
        let opts = Options::default();
        for trace in kept_runs() {
            let kept = analyze(&trace, &opts).0;
            for part in [1, 7, schedule::PART] {
                let given = analyze_owned_in_parts(trace.clone(), &opts, part);
                assert!(given == kept, "{}: parts of {part}", trace.source.display());
            }
        }
    }

    /// However few findings the report lists, it counts, sums and groups them all: its
    /// list is the first of the one that lists every finding, on either path and in
    /// parts of any size (some kept runs have more findings than listed here).
    #[test]
    fn the_findings_listed_are_the_worst_of_all() {
        let mut cut = 0;
        for trace in kept_runs() {
            let every = Options {
                findings: usize::MAX,
                ..Options::default()
            };
            let all = analyze(&trace, &every).0;
            let whole = &all.false_overlap;
            assert_eq!(whole.count, whole.worst.len() as u64);
            for listed in [0, 1, 2] {
                let opts = Options {
                    findings: listed,
                    ..Options::default()
                };
                let kept = analyze(&trace, &opts).0;
                let fo = &kept.false_overlap;
                let name = trace.source.display();
                assert_eq!(
                    (fo.count, fo.lost_ns, fo.hideable_ns),
                    (whole.count, whole.lost_ns, whole.hideable_ns),
                    "{name}"
                );
                assert_eq!(fo.worst[..], whole.worst[..listed.min(whole.worst.len())]);
                assert!(kept.by_site == all.by_site, "{name}");
                cut += usize::from(whole.worst.len() > listed);
                for part in [1, 7] {
                    let given = analyze_owned_in_parts(trace.clone(), &opts, part);
                    assert!(given == kept, "{name}: {listed} listed, parts of {part}");
                }
            }
        }
        // Fewer since a finding must hide more than its transfer's uncertainty (issue
        // 36): c-reorder, c-threads and false-overlap have three or more.
        assert!(cut >= 9, "runs with more findings than listed: {cut}");
    }

    /// Requests given out of rank order (as a trace built by hand may give them) are put
    /// back in it, each rank's kept in its order: the analysis is the one of the
    /// ordered trace, on either path, and does not fail.
    #[test]
    fn requests_out_of_rank_order_are_put_in_it() {
        let opts = Options::default();
        for trace in kept_runs() {
            let mut reversed = trace.requests.clone();
            reversed.sort_by_key(|r| std::cmp::Reverse(r.rank));
            let t = &trace;
            let again = Trace::new(
                t.source.clone(),
                t.info.clone(),
                t.ranks.clone(),
                t.messages.clone(),
                reversed,
            );
            assert!(again.requests == trace.requests, "{}", t.source.display());
            let kept = analyze(&trace, &opts).0;
            assert!(analyze(&again, &opts).0 == kept, "{}", t.source.display());
            let given = analyze_owned_in_parts(again, &opts, 1);
            assert!(given == kept, "{}", t.source.display());
        }
    }
}
