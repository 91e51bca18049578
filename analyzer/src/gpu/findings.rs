//! The GPU findings, each with the evidence that supports it (definitions in
//! docs/metrics.md, "GPU pipeline"):
//!
//! - **Serialized staging**: a send held back by a host wait that covered other packets'
//!   copies, though its own packet's copy had already ended (it waited for all D2H
//!   instead of its own).
//! - **GPU idle while the host waits**: time the host spent blocked (a blocking MPI call
//!   or a host wait) while no device operation of the rank ran.
//! - **Host blocked on copies while communication was pending**: host waits on copies
//!   during which the rank had MPI requests in flight that only progress while the rank
//!   is inside MPI.
//! - **Copies serialized with MPI**: copy time during which none of the rank's messages
//!   was in flight.
//!
//! Each is made of one rank at a time, as [`super::GpuFold`] reads a part: its own
//! timeline and requests, and its messages' windows ([`RankData`]). Serialized staging
//! also names the worst send's chain, whose packet the receiver's copy may give: what a
//! host wait held each send ([`held`]) is found on the rank, and the finding made once
//! the chains are ([`serialized_staging`]).

use overlap_format::schema::{GpuEvent, GpuOp, Nanos, ALL_STREAMS};
use serde::Serialize;

use super::chains::Chain;
use super::coverage::CopyCoverage;
use super::intervals::Intervals;
use crate::model::{RequestLife, Timeline, What};
use crate::units::duration;

/// What a GPU finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuFindingKind {
    /// Sends that waited for all copies instead of their own packet's.
    SerializedStaging,
    /// The device idle while the host was blocked.
    GpuIdleWhileHostWaits,
    /// The host blocked on copies while its requests were pending.
    HostBlockedOnCopies,
    /// Copies that ran while no message was in flight.
    CopiesSerializedWithMpi,
}

impl GpuFindingKind {
    /// The key in JSON and in `overlap diff`.
    pub fn key(self) -> &'static str {
        match self {
            GpuFindingKind::SerializedStaging => "serialized_staging",
            GpuFindingKind::GpuIdleWhileHostWaits => "gpu_idle_while_host_waits",
            GpuFindingKind::HostBlockedOnCopies => "host_blocked_on_copies",
            GpuFindingKind::CopiesSerializedWithMpi => "copies_serialized_with_mpi",
        }
    }

    /// The title shown.
    pub fn title(self) -> &'static str {
        match self {
            GpuFindingKind::SerializedStaging => "serialized staging",
            GpuFindingKind::GpuIdleWhileHostWaits => "GPU idle while the host waits",
            GpuFindingKind::HostBlockedOnCopies => {
                "host blocked on copies while communication was pending"
            }
            GpuFindingKind::CopiesSerializedWithMpi => "copies serialized with MPI",
        }
    }
}

/// One finding on one rank, with its evidence.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct GpuFinding {
    /// What it is.
    pub kind: GpuFindingKind,
    /// The rank.
    pub rank: u32,
    /// Instances found.
    pub instances: u64,
    /// Instances examined (sends staged through a copy; host waits on copies; 1 for the
    /// rank-wide figures).
    pub of: u64,
    /// Time it cost in all, ns.
    pub lost_ns: u64,
    /// The worst instance, ns.
    pub worst_ns: u64,
    /// The evidence, one line each.
    pub evidence: Vec<String>,
    /// What to change.
    pub suggestion: String,
}

/// Below this share of the rank's run, idle GPU time during host waits is not a finding.
pub const IDLE_SHARE_FLAGGED: f64 = 0.05;

/// At or above this share of a rank's copy time run apart from its messages, copies are
/// flagged as serialized with MPI.
pub const SERIAL_COPY_SHARE_FLAGGED: f64 = 0.5;

/// What the findings of one rank read, each worked out once from its own timeline and
/// requests, and the windows of its messages (whose other ends its part may not hold:
/// their calls' times come from the run's message ends).
pub struct RankData<'a> {
    /// The rank.
    pub timeline: &'a Timeline,
    /// Its host waits, by end.
    pub waits: Vec<&'a GpuEvent>,
    /// Its copies, for what a wait covered.
    pub coverage: CopyCoverage,
    /// When it had an MPI request in flight: from the end of each post to the start of
    /// the call that completed it (or its last event).
    pub pending: Intervals,
    /// The windows of the messages it sends or receives: send entry to the exit of the
    /// call that completed the receive.
    pub windows: Intervals,
}

impl<'a> RankData<'a> {
    /// The data of rank `t`, of its `requests` (the rank's own, or more: the others are
    /// left out) and the `windows` of its messages.
    pub fn of(t: &'a Timeline, requests: &[RequestLife], windows: Vec<(u64, u64)>) -> Self {
        let last_end = t.spans.iter().map(|s| s.end.0).max();
        let pending = requests
            .iter()
            .filter(|r| r.rank == t.rank)
            .filter_map(|r| {
                let post = t.spans.get(r.post())?;
                let end = match r.completion() {
                    Some(c) => t.spans.get(c).map(|s| s.start.0),
                    None => last_end,
                };
                Some((post.end.0, end?))
            });
        let mut waits: Vec<&GpuEvent> = t.gpu.iter().filter(|g| g.op == GpuOp::HostWait).collect();
        waits.sort_by_key(|w| (w.end, w.start));
        RankData {
            timeline: t,
            waits,
            coverage: CopyCoverage::new(t),
            pending: Intervals::union(pending),
            windows: Intervals::union(windows),
        }
    }
}

/// How long a host wait held a send back after its own packet's copy had ended: what
/// the serialized-staging finding reads of the wait, once its rank is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Held {
    /// How long, ns.
    pub ns: u64,
    /// The wait's device.
    pub device: u32,
    /// The stream it waited on ([`ALL_STREAMS`]: the whole device).
    pub stream: u32,
    /// When it ended.
    pub end: Nanos,
}

/// How long a host wait of rank `r` held back its send posted at `send`, whose own
/// packet's D2H `own` had already ended: the last host wait before the send that was
/// still going when the own copy ended and covered a copy of another packet ending
/// later than it. `None` when none did, or not by more than the copy's clock error.
pub fn held(r: &RankData<'_>, send: Nanos, own: &GpuEvent) -> Option<Held> {
    let before = r.waits.partition_point(|w| w.end <= send);
    let w = r.waits[..before]
        .iter()
        .rev()
        .take_while(|w| w.end > own.end)
        .find(|w| w.start < send && r.coverage.latest_end(w).is_some_and(|end| end > own.end))?;
    let ns = w.end.0 - w.start.0.max(own.end.0);
    (ns > own.clock_error.0 * 2).then_some(Held {
        ns,
        device: w.device,
        stream: w.stream,
        end: w.end,
    })
}

/// The serialized-staging finding of `rank`, from the chains it sends that have a D2H,
/// in message order, each with how long a host wait held it ([`held`]).
pub fn serialized_staging<'c>(
    rank: u32,
    staged: impl IntoIterator<Item = (&'c Chain, Option<Held>)>,
) -> Option<GpuFinding> {
    let (mut instances, mut held_total, mut worst, mut checked) = (0u64, 0u64, None, 0u64);
    for (c, held) in staged {
        checked += 1;
        let Some(h) = held else { continue };
        instances += 1;
        held_total += h.ns;
        // The first of the longest, in message order.
        if worst.is_none_or(|(w, _): (Held, &Chain)| h.ns > w.ns) {
            worst = Some((h, c));
        }
    }
    let (w, c) = worst?;
    let packet = c
        .packet
        .map_or_else(|| "a packet".to_string(), |p| format!("packet {p}"));
    let stream = if w.stream == ALL_STREAMS {
        "the whole device".to_string()
    } else {
        format!("stream {}", w.stream)
    };
    Some(GpuFinding {
        kind: GpuFindingKind::SerializedStaging,
        rank,
        instances,
        of: checked,
        lost_ns: held_total,
        worst_ns: w.ns,
        evidence: vec![
            format!(
                "{instances} of {checked} sends staged through a D2H were posted only after a \
                 host wait on other packets' copies"
            ),
            format!(
                "worst: the send of {packet} (tag {}, to rank {}) at {}: its D2H ended at {}, \
                 but the host waited on {stream} of GPU {} until {}: held {}",
                c.tag,
                c.to,
                duration(c.times.send.0),
                duration(c.times.d2h_end.map_or(0, |n| n.0)),
                w.device,
                duration(w.end.0),
                duration(w.ns)
            ),
        ],
        suggestion: "give each packet's copy its own event and post its send as soon as that \
                     event completes (poll the events), instead of synchronizing all copies"
            .into(),
    })
}

/// Host blocking time (blocking MPI calls and host waits) and device busy time of `t`.
fn host_blocked(t: &Timeline) -> Intervals {
    let calls = t.spans.iter().filter_map(|s| match s.what {
        What::Call(op, _) if op.blocks() => Some((s.start.0, s.end.0)),
        _ => None,
    });
    let waits = t
        .gpu
        .iter()
        .filter(|g| g.op == GpuOp::HostWait)
        .map(|g| (g.start.0, g.end.0));
    Intervals::union(calls.chain(waits))
}

/// The time `t`'s device worked (copies and kernels, not stream waits) on operations
/// `keep` accepts, as one set.
pub fn device_busy(t: &Timeline, keep: impl Fn(GpuOp) -> bool) -> Intervals {
    Intervals::union(
        t.gpu
            .iter()
            .filter(|g| g.op.is_work() && keep(g.op))
            .map(|g| (g.start.0, g.end.0)),
    )
}

/// The GPU-idle-while-the-host-waits figure of `t`: (idle ns, host blocked ns), and the
/// finding when idle time is a large enough share of the rank's run.
pub fn idle_while_waiting(t: &Timeline) -> ((u64, u64), Option<GpuFinding>) {
    let blocked = host_blocked(t);
    let busy = device_busy(t, |_| true);
    let blocked_ns = blocked.measure();
    let idle = blocked_ns - blocked.overlap(&busy);
    let (first, last) = (
        t.spans.first().map_or(0, |s| s.start.0),
        t.spans.iter().map(|s| s.end.0).max().unwrap_or(0),
    );
    let run = last.saturating_sub(first);
    if run == 0 || (idle as f64) < IDLE_SHARE_FLAGGED * run as f64 {
        return ((idle, blocked_ns), None);
    }
    let finding = GpuFinding {
        kind: GpuFindingKind::GpuIdleWhileHostWaits,
        rank: t.rank,
        instances: 1,
        of: 1,
        lost_ns: idle,
        worst_ns: idle,
        evidence: vec![format!(
            "the host was blocked for {} (blocking MPI calls and host waits); no device \
             operation ran for {} of it, {} of the rank's {}",
            duration(blocked_ns),
            duration(idle),
            crate::units::share(idle, run).trim(),
            duration(run)
        )],
        suggestion: "launch independent device work (the interior compute) before blocking, \
                     so the GPU works while the host waits"
            .into(),
    };
    ((idle, blocked_ns), Some(finding))
}

/// The host-blocked-on-copies finding of a rank.
pub fn blocked_on_copies(r: &RankData<'_>) -> Option<GpuFinding> {
    let (mut instances, mut total, mut worst, mut waits) = (0u64, 0u64, None, 0u64);
    for w in &r.waits {
        let on_copies = r.coverage.latest_end(w).is_some_and(|end| end > w.start);
        if !on_copies {
            continue;
        }
        waits += 1;
        let blocked = r.pending.covered(w.start.0, w.end.0);
        if blocked == 0 {
            continue;
        }
        instances += 1;
        total += blocked;
        if worst.is_none_or(|(b, _): (u64, &GpuEvent)| blocked > b) {
            worst = Some((blocked, *w));
        }
    }
    let (blocked, w) = worst?;
    Some(GpuFinding {
        kind: GpuFindingKind::HostBlockedOnCopies,
        rank: r.timeline.rank,
        instances,
        of: waits,
        lost_ns: total,
        worst_ns: blocked,
        evidence: vec![
            format!(
                "{instances} of {waits} host waits on copies blocked the host while it had MPI \
                 requests in flight: {} in all",
                duration(total)
            ),
            format!(
                "worst: the wait at {} on GPU {} ({} long): requests pending for {} of it; \
                 without asynchronous progress they move only while the rank is inside MPI",
                duration(w.start.0),
                w.device,
                duration(w.end.0 - w.start.0),
                duration(blocked)
            ),
        ],
        suggestion: "poll the copy events and test the requests in one loop instead of \
                     blocking on the copies"
            .into(),
    })
}

/// The copies-serialized-with-MPI figure of `t`: (copy ns, copy ns with a message in
/// flight), and the finding.
pub fn copies_vs_messages(r: &RankData<'_>) -> ((u64, u64), Option<GpuFinding>) {
    let t = r.timeline;
    let copies = device_busy(t, |op| matches!(op, GpuOp::CopyD2H | GpuOp::CopyH2D));
    let copy_ns = copies.measure();
    let overlapped = copies.overlap(&r.windows);
    let serial = copy_ns - overlapped;
    if copy_ns == 0 || (serial as f64) < SERIAL_COPY_SHARE_FLAGGED * copy_ns as f64 {
        return ((copy_ns, overlapped), None);
    }
    let finding = GpuFinding {
        kind: GpuFindingKind::CopiesSerializedWithMpi,
        rank: t.rank,
        instances: 1,
        of: 1,
        lost_ns: serial,
        worst_ns: serial,
        evidence: vec![format!(
            "the rank's D2H and H2D copies ran {}; none of its messages was in flight for {} \
             of it ({})",
            duration(copy_ns),
            duration(serial),
            crate::units::share(serial, copy_ns).trim()
        )],
        suggestion: "split the halo into packets and pipeline them: copy packet i+1 while \
                     packet i is on the wire, and copy each received packet while the others \
                     are still arriving"
            .into(),
    };
    ((copy_ns, overlapped), Some(finding))
}
