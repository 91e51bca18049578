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

use overlap_format::schema::{GpuEvent, GpuOp, ALL_STREAMS};
use serde::Serialize;

use super::chains::Chain;
use super::coverage::CopyCoverage;
use super::intervals::Intervals;
use crate::model::{EventRef, Timeline, Trace, What};
use crate::units::duration;

/// What a GPU finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize)]
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

/// What the findings of one rank read, each worked out once for the run.
pub struct RankData<'a> {
    /// The rank.
    pub timeline: &'a Timeline,
    /// The chains it sends.
    pub sent: Vec<&'a Chain>,
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

/// Every rank with GPU work, with what its findings read: the messages, requests and
/// chains are gone through once for the run.
pub fn rank_data<'a>(trace: &'a Trace, chains: &'a [Chain]) -> Vec<RankData<'a>> {
    let with_gpu: Vec<&Timeline> = trace.ranks.iter().filter(|t| !t.gpu.is_empty()).collect();
    let slot = |rank: u32| with_gpu.binary_search_by_key(&rank, |t| t.rank).ok();
    let mut windows: Vec<Vec<(u64, u64)>> = vec![Vec::new(); with_gpu.len()];
    let span = |r: EventRef| trace.rank(r.rank)?.spans.get(r.index);
    for m in &trace.messages {
        let Some(w) = (|| Some((span(m.send())?.start.0, span(m.completion()?)?.end.0)))() else {
            continue;
        };
        let to_self = m.send().rank == m.recv_post().rank;
        let ranks = [
            Some(m.send().rank),
            (!to_self).then_some(m.recv_post().rank),
        ];
        for i in ranks.into_iter().flatten().filter_map(slot) {
            windows[i].push(w);
        }
    }
    let mut pending: Vec<Vec<(u64, u64)>> = vec![Vec::new(); with_gpu.len()];
    let last_end: Vec<Option<u64>> = with_gpu
        .iter()
        .map(|t| t.spans.iter().map(|s| s.end.0).max())
        .collect();
    for r in &trace.requests {
        let Some(i) = slot(r.rank) else { continue };
        let t = with_gpu[i];
        let Some(post) = t.spans.get(r.post()) else {
            continue;
        };
        let end = match r.completion() {
            Some(c) => t.spans.get(c).map(|s| s.start.0),
            None => last_end[i],
        };
        if let Some(end) = end {
            pending[i].push((post.end.0, end));
        }
    }
    let mut sent: Vec<Vec<&Chain>> = vec![Vec::new(); with_gpu.len()];
    for c in chains {
        if let Some(i) = slot(c.from) {
            sent[i].push(c);
        }
    }
    with_gpu
        .iter()
        .zip(windows.into_iter().zip(pending).zip(sent))
        .map(|(t, ((windows, pending), sent))| {
            let mut waits: Vec<&GpuEvent> =
                t.gpu.iter().filter(|g| g.op == GpuOp::HostWait).collect();
            waits.sort_by_key(|w| (w.end, w.start));
            RankData {
                timeline: t,
                sent,
                waits,
                coverage: CopyCoverage::new(t),
                pending: Intervals::union(pending),
                windows: Intervals::union(windows),
            }
        })
        .collect()
}

/// The serialized-staging finding of rank `t`, from the chains it sends.
pub fn serialized_staging(r: &RankData<'_>) -> Option<GpuFinding> {
    let t = r.timeline;
    let (mut instances, mut held_total, mut worst, mut checked) = (0u64, 0u64, None, 0u64);
    for c in &r.sent {
        let Some(own) = c.d2h.and_then(|i| t.gpu.get(i)) else {
            continue;
        };
        checked += 1;
        let send = c.times.send;
        // The last host wait before the send that was still going when the own copy
        // ended and covered a copy of another packet ending later than it.
        let before = r.waits.partition_point(|w| w.end <= send);
        let holding = r.waits[..before]
            .iter()
            .rev()
            .take_while(|w| w.end > own.end)
            .find(|w| w.start < send && r.coverage.latest_end(w).is_some_and(|end| end > own.end));
        let Some(w) = holding else { continue };
        let held = w.end.0 - w.start.0.max(own.end.0);
        if held <= own.clock_error.0 * 2 {
            continue;
        }
        instances += 1;
        held_total += held;
        if worst.is_none_or(|(h, _, _)| held > h) {
            worst = Some((held, *c, *w));
        }
    }
    let (held, c, w) = worst?;
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
        rank: t.rank,
        instances,
        of: checked,
        lost_ns: held_total,
        worst_ns: held,
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
                duration(held)
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
