//! GPU work in a run: what each rank's device did, the staging chains that carried its
//! packets (D2H → send → receive → H2D), and where the pipeline serialized.
//!
//! Nothing here knows a kernel: copies and MPI calls are linked by the buffer addresses
//! they were recorded with ([`chains`]), so a program traced through any layer that
//! records its copies is judged the same way. Every figure is measured on the run's
//! timeline; device times are known within each operation's clock error, which the
//! report carries.

pub mod chains;
mod coverage;
pub mod findings;
pub mod intervals;

use serde::Serialize;

use overlap_format::schema::{GpuOp, ParamValue, GPU_BACKEND_PARAM};

use crate::model::Trace;
pub use chains::Breakdown;
use chains::Chain;
use findings::device_busy;
pub use findings::{GpuFinding, GpuFindingKind};
use intervals::Intervals;

/// Worst chains the report lists.
pub const WORST_CHAINS: usize = 10;

/// Copies of one direction on one rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CopyStats {
    /// How many.
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
    /// Time at least one ran, ns.
    pub busy_ns: u64,
}

/// One rank's GPU work.
#[derive(Clone, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
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
/// with it, for the table.
pub fn analyze(trace: &Trace) -> Option<(GpuReport, Vec<ChainRow>)> {
    if trace.ranks.iter().all(|t| t.gpu.is_empty()) {
        return None;
    }
    let chains = chains::build(&trace.ranks, &trace.messages);
    let mut findings = Vec::new();
    let mut ranks = Vec::new();
    for r in findings::rank_data(trace, &chains) {
        let t = r.timeline;
        let copies = |op: GpuOp| {
            let mine = t.gpu.iter().filter(|g| g.op == op);
            CopyStats {
                count: mine.clone().count() as u64,
                bytes: mine.map(|g| g.bytes).sum(),
                busy_ns: device_busy(t, |o| o == op).measure(),
            }
        };
        let ((idle, blocked), idle_finding) = findings::idle_while_waiting(t);
        let ((copy_ns, with_messages), serial_finding) = findings::copies_vs_messages(&r);
        findings.extend(findings::serialized_staging(&r));
        findings.extend(idle_finding);
        findings.extend(findings::blocked_on_copies(&r));
        findings.extend(serial_finding);
        let kernels = device_busy(t, |op| op == GpuOp::Kernel);
        let pipeline = Intervals::union(
            t.gpu
                .iter()
                .filter(|g| g.op.is_copy())
                .map(|g| (g.start.0, g.end.0))
                .chain(r.windows.spans().iter().copied()),
        );
        let waits = t.gpu.iter().filter(|g| g.op == GpuOp::HostWait);
        let mut devices: Vec<u32> = t.gpu.iter().map(|g| g.device).collect();
        devices.sort_unstable();
        devices.dedup();
        let mut streams: Vec<(u32, u32)> = t
            .gpu
            .iter()
            .filter(|g| g.op.on_device())
            .map(|g| (g.device, g.stream))
            .collect();
        streams.sort_unstable();
        streams.dedup();
        ranks.push(RankGpu {
            rank: t.rank,
            devices,
            streams,
            d2h: copies(GpuOp::CopyD2H),
            h2d: copies(GpuOp::CopyH2D),
            d2d: copies(GpuOp::CopyD2D),
            kernels: t.gpu.iter().filter(|g| g.op == GpuOp::Kernel).count() as u64,
            kernel_ns: kernels.measure(),
            host_waits: waits.clone().count() as u64,
            host_wait_ns: waits.map(|g| g.end.0 - g.start.0).sum(),
            host_blocked_ns: blocked,
            gpu_idle_in_host_blocked_ns: idle,
            copy_ns,
            copy_with_messages_ns: with_messages,
            pipeline_ns: pipeline.measure(),
            pipeline_hidden_ns: pipeline.overlap(&kernels),
            clock_error_ns: t.gpu.iter().map(|g| g.clock_error.0).max().unwrap_or(0),
        });
    }
    findings.sort_by(|a, b| b.lost_ns.cmp(&a.lost_ns).then(a.rank.cmp(&b.rank)));
    let rows: Vec<ChainRow> = chains.iter().map(ChainRow::of).collect();
    let pipeline: u64 = ranks.iter().map(|r| r.pipeline_ns).sum();
    let hidden: u64 = ranks.iter().map(|r| r.pipeline_hidden_ns).sum();
    let report = GpuReport {
        backend: match trace.info.params.get(GPU_BACKEND_PARAM) {
            Some(ParamValue::Text(b)) => Some(b.clone()),
            _ => None,
        },
        clock_error_ns: ranks.iter().map(|r| r.clock_error_ns).max().unwrap_or(0),
        ranks,
        chains: summarize(&rows),
        findings,
        pipeline_hidden: (pipeline > 0).then(|| hidden as f64 / pipeline as f64),
    };
    Some((report, rows))
}

/// File names of GPU runtimes and drivers: a process that mapped one of these ran (or
/// could run) GPU work.
const GPU_RUNTIMES: [&str; 7] = [
    "libcuda.so",
    "libcudart.so",
    "libamdhip64.so",
    "libhsa-runtime64.so",
    "libze_loader.so",
    "libsycl.so",
    "libOpenCL.so",
];

/// Who loaded a GPU runtime, as far as the trace says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Loader {
    /// The program itself: its executable, a library it needs, or one it opened before
    /// `MPI_Init` (the rank's `program_objects`).
    Program,
    /// Not told: a trace recorded before the preload listed the program's own files,
    /// which lists only what the process had mapped (its MPI's components included).
    Unknown,
}

/// A GPU runtime loaded by a rank whose GPU work was not recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnrecordedRuntime {
    /// The first rank found with it.
    pub rank: u32,
    /// The library's file name (`libcudart.so.12`).
    pub library: String,
    /// Who loaded it.
    pub by: Loader,
}

impl UnrecordedRuntime {
    /// What the reports say of it, one line.
    pub fn said(&self) -> String {
        let (rank, library) = (self.rank, &self.library);
        let who = match self.by {
            Loader::Program => format!("rank {rank}'s program loads {library} itself"),
            Loader::Unknown => format!(
                "rank {rank} loaded {library} (by the program or by its MPI: a trace this old \
                 does not say which)"
            ),
        };
        format!(
            "GPU work not recorded: {who}, but the trace holds no copy or kernel (the preload \
             records MPI only): the GPU verdicts are unknown"
        )
    }
}

/// The first of `files` (paths, one a line) that is a GPU runtime: its file name.
fn gpu_runtime_in(files: &str) -> Option<String> {
    files.lines().find_map(|line| {
        let file = line.rsplit('/').next()?;
        GPU_RUNTIMES
            .iter()
            .any(|lib| file.starts_with(lib))
            .then(|| file.to_string())
    })
}

/// A GPU runtime a rank's program loaded though no rank recorded GPU work (the preload
/// records MPI only): the rank and the library's file name. Found in the files the
/// program itself loaded (`program_objects`, which leaves out what MPI loaded: MPICH's
/// hwloc opens `libOpenCL.so` in every MPI program); in a trace without that list, in
/// every executable mapping of the process (`code_maps`), which cannot tell who loaded it.
pub fn unrecorded_runtime(trace: &Trace) -> Option<UnrecordedRuntime> {
    if trace.ranks.iter().any(|t| !t.gpu.is_empty()) {
        return None;
    }
    let found = |by: Loader| {
        trace.info.ranks.iter().find_map(|r| {
            let files = match by {
                Loader::Program => r.program_objects.as_deref()?,
                Loader::Unknown if r.program_objects.is_none() => r.code_maps.as_deref()?,
                Loader::Unknown => return None,
            };
            gpu_runtime_in(files).map(|library| UnrecordedRuntime {
                rank: r.rank,
                library,
                by,
            })
        })
    };
    found(Loader::Program).or_else(|| found(Loader::Unknown))
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
