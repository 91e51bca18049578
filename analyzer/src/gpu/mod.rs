//! GPU work in a run: what each rank's device did, the staging chains that carried its
//! packets (D2H → send → receive → H2D), and where the pipeline serialized.
//!
//! Nothing here knows a kernel: copies and MPI calls are linked by the buffer addresses
//! they were recorded with ([`chains`]), so a program traced through any layer that
//! records its copies is judged the same way. Every figure is measured on the run's
//! timeline; device times are known within each operation's clock error, which the
//! report carries.
//!
//! The section is made a part of whole ranks at a time ([`GpuFold`]): each rank's
//! figures and findings from its own timeline, with its messages' other ends read in
//! the run's message ends; the chains are joined by message once every part is in, from
//! the copies each side's part found ([`fold`]). So is the note of a GPU runtime loaded
//! with no GPU work recorded ([`UnrecordedFold`]).

pub mod chains;
mod coverage;
pub mod findings;
pub mod fold;
pub mod intervals;
mod unrecorded;

use serde::Serialize;

use crate::metrics::message_ends::MessageEnds;
use crate::model::Trace;
pub use chains::Breakdown;
use chains::Chain;
pub use findings::{GpuFinding, GpuFindingKind};
pub use fold::GpuFold;
pub use unrecorded::{unrecorded_runtime, Loader, UnrecordedFold, UnrecordedRuntime};

/// Worst chains the report lists.
pub const WORST_CHAINS: usize = 10;

/// Copies of one direction on one rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CopyStats {
    /// How many.
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
    /// Time at least one ran, ns.
    pub busy_ns: u64,
}

/// One rank's GPU work.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct RankGpu {
    /// The rank.
    pub rank: u32,
    /// Devices it used.
    pub devices: Vec<u32>,
    /// Streams it used (device, stream).
    pub streams: Vec<(u32, u32)>,
    /// Device-to-host copies.
    pub d2h: CopyStats,
    /// Host-to-device copies.
    pub h2d: CopyStats,
    /// Device-to-device copies.
    pub d2d: CopyStats,
    /// Kernels run.
    pub kernels: u64,
    /// Time at least one kernel ran, ns.
    pub kernel_ns: u64,
    /// Host waits on GPU work.
    pub host_waits: u64,
    /// Time the host spent in them, ns.
    pub host_wait_ns: u64,
    /// Time the host was blocked (blocking MPI calls and host waits), ns.
    pub host_blocked_ns: u64,
    /// Of it, time no device operation ran, ns.
    pub gpu_idle_in_host_blocked_ns: u64,
    /// D2H and H2D copy time, ns.
    pub copy_ns: u64,
    /// Of it, time one of the rank's messages was in flight, ns.
    pub copy_with_messages_ns: u64,
    /// The pipeline: its copies and the windows of its messages, ns.
    pub pipeline_ns: u64,
    /// Of it, time a kernel ran (what the compute hid), ns.
    pub pipeline_hidden_ns: u64,
    /// Largest clock error of its device times, ns.
    pub clock_error_ns: u64,
}

/// Chains summarised.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ChainSummary {
    /// Chains found (messages with a recorded copy on either side).
    pub count: u64,
    /// Chains with both copies.
    pub complete: u64,
    /// Mean of each step over the chains that have it, ns.
    pub mean: Breakdown,
    /// Largest of each step, ns.
    pub max: Breakdown,
    /// The slowest complete chains, slowest first.
    pub worst: Vec<ChainRow>,
}

/// One chain as reported and tabled.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct ChainRow {
    /// Message id.
    pub message: u64,
    /// Sender.
    pub from: u32,
    /// Receiver.
    pub to: u32,
    /// Tag.
    pub tag: i32,
    /// Packet index.
    pub packet: Option<u32>,
    /// Bytes.
    pub bytes: u64,
    /// The send: its index in the sender's events.
    pub send_index: usize,
    /// The call that completed the receive: its index in the receiver's events.
    pub completion_index: Option<usize>,
    /// When its D2H was enqueued (or its send posted), ns on the run's timeline.
    pub start_ns: u64,
    /// Its steps.
    pub breakdown: Breakdown,
}

impl ChainRow {
    fn of(c: &Chain) -> ChainRow {
        ChainRow {
            message: c.message,
            from: c.from,
            to: c.to,
            tag: c.tag,
            packet: c.packet,
            bytes: c.bytes,
            send_index: c.send.index,
            completion_index: c.completion.map(|e| e.index),
            start_ns: c.times.d2h_issued.unwrap_or(c.times.send).0,
            breakdown: c.times.breakdown(),
        }
    }
}

/// The `gpu` section of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuReport {
    /// The backend the run says it used (`cuda`, `host-emulated`), when it says.
    pub backend: Option<String>,
    /// Per rank with GPU work.
    pub ranks: Vec<RankGpu>,
    /// The staging chains.
    pub chains: ChainSummary,
    /// Findings, largest loss first.
    pub findings: Vec<GpuFinding>,
    /// Share of the pipeline the kernels hid, over the ranks (`None`: no pipeline).
    pub pipeline_hidden: Option<f64>,
    /// Largest clock error of any device time, ns.
    pub clock_error_ns: u64,
}

/// The GPU analysis of `trace`: `None` when no rank recorded GPU work. The chains come
/// with it, for the table. [`GpuFold`] given the whole run as one part.
pub fn analyze(trace: &Trace) -> Option<(GpuReport, Vec<ChainRow>)> {
    // No GPU work: no section, and no message ends to find for it.
    if trace.ranks.iter().all(|t| t.gpu.is_empty()) {
        return None;
    }
    let ends = MessageEnds::of(trace);
    let mut fold = GpuFold::new();
    fold.add(trace, &ends);
    fold.finish(&trace.info, &trace.messages, &ends)
}

/// Means, maxima and the worst complete chains.
fn summarize(rows: &[ChainRow]) -> ChainSummary {
    let step = |f: fn(&Breakdown) -> Option<u64>| {
        let values: Vec<u64> = rows.iter().filter_map(|r| f(&r.breakdown)).collect();
        let mean = (!values.is_empty()).then(|| values.iter().sum::<u64>() / values.len() as u64);
        (mean, values.into_iter().max())
    };
    let steps: [fn(&Breakdown) -> Option<u64>; 6] = [
        |b| b.d2h_ns,
        |b| b.wait_send_ns,
        |b| b.transfer_ns,
        |b| b.wait_h2d_ns,
        |b| b.h2d_ns,
        |b| b.total_ns,
    ];
    let [d2h, wait_send, transfer, wait_h2d, h2d, total] = steps.map(step);
    let pick = |i: usize| -> Breakdown {
        let p = |s: (Option<u64>, Option<u64>)| if i == 0 { s.0 } else { s.1 };
        Breakdown {
            d2h_ns: p(d2h),
            wait_send_ns: p(wait_send),
            transfer_ns: p(transfer),
            wait_h2d_ns: p(wait_h2d),
            h2d_ns: p(h2d),
            total_ns: p(total),
        }
    };
    let mut worst: Vec<ChainRow> = rows
        .iter()
        .filter(|r| r.breakdown.total_ns.is_some())
        .copied()
        .collect();
    worst.sort_by_key(|r| std::cmp::Reverse(r.breakdown.total_ns));
    worst.truncate(WORST_CHAINS);
    ChainSummary {
        count: rows.len() as u64,
        complete: rows
            .iter()
            .filter(|r| r.breakdown.total_ns.is_some())
            .count() as u64,
        mean: pick(0),
        max: pick(1),
        worst,
    }
}
