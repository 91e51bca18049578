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

use super::chains::Chain;
use super::intervals::Intervals;
use super::{GpuFinding, GpuFindingKind};
use crate::model::{Timeline, Trace, What};
use crate::report::duration;

/// Below this share of the rank's run, idle GPU time during host waits is not a finding.
pub const IDLE_SHARE_FLAGGED: f64 = 0.05;

/// At or above this share of a rank's copy time run apart from its messages, copies are
/// flagged as serialized with MPI.
pub const SERIAL_COPY_SHARE_FLAGGED: f64 = 0.5;

/// True when host wait `w` covered device operation `x`: same device, its stream (or the
/// whole device), enqueued no later than what the wait waited for was marked.
pub fn covers(w: &GpuEvent, x: &GpuEvent) -> bool {
    x.op.on_device()
        && x.device == w.device
        && (w.stream == ALL_STREAMS || x.stream == w.stream)
        && x.issued <= w.issued
}

/// The serialized-staging finding of rank `t`, from the chains it sends.
pub fn serialized_staging(t: &Timeline, chains: &[Chain]) -> Option<GpuFinding> {
    let waits: Vec<&GpuEvent> = t.gpu.iter().filter(|g| g.op == GpuOp::HostWait).collect();
    let (mut instances, mut held_total, mut worst, mut checked) = (0u64, 0u64, None, 0u64);
    for c in chains.iter().filter(|c| c.from == t.rank) {
        let Some(own) = c.d2h.and_then(|i| t.gpu.get(i)) else {
            continue;
        };
        checked += 1;
        let send = c.times.send;
        // The last host wait before the send that was still going when the own copy
        // ended and covered a copy of another packet ending later than it.
        let holding = waits
            .iter()
            .filter(|w| w.end <= send && w.end > own.end && w.start < send)
            .filter(|w| {
                t.gpu.iter().any(|x| {
                    x.op.is_copy() && !std::ptr::eq(x, own) && x.end > own.end && covers(w, x)
                })
            })
            .max_by_key(|w| w.end);
        let Some(w) = holding else { continue };
        let held = w.end.0 - w.start.0.max(own.end.0);
        if held <= own.clock_error.0 * 2 {
            continue;
        }
        instances += 1;
        held_total += held;
        if worst.is_none_or(|(h, _, _)| held > h) {
            worst = Some((held, c, *w));
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
        What::Call(op, _) if crate::metrics::blocks(op) => Some((s.start.0, s.end.0)),
        _ => None,
    });
    let waits = t
        .gpu
        .iter()
        .filter(|g| g.op == GpuOp::HostWait)
        .map(|g| (g.start.0, g.end.0));
    Intervals::union(calls.chain(waits))
}

/// Every device operation of `t`, as one set.
pub fn device_busy(t: &Timeline, keep: impl Fn(GpuOp) -> bool) -> Intervals {
    Intervals::union(
        t.gpu
            .iter()
            .filter(|g| g.op.on_device() && keep(g.op))
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
            crate::report::share(idle, run).trim(),
            duration(run)
        )],
        suggestion: "launch independent device work (the interior compute) before blocking, \
                     so the GPU works while the host waits"
            .into(),
    };
    ((idle, blocked_ns), Some(finding))
}

/// The times rank `t` had an MPI request in flight: from the end of each post to the
/// start of the call that completed it.
fn pending(trace: &Trace, t: &Timeline) -> Intervals {
    Intervals::union(
        trace
            .requests
            .iter()
            .filter(|r| r.rank == t.rank)
            .filter_map(|r| {
                let post = t.spans.get(r.post)?;
                let end = match r.completion {
                    Some(c) => t.spans.get(c)?.start.0,
                    None => t.spans.iter().map(|s| s.end.0).max()?,
                };
                Some((post.end.0, end))
            }),
    )
}

/// The host-blocked-on-copies finding of `t`.
pub fn blocked_on_copies(trace: &Trace, t: &Timeline) -> Option<GpuFinding> {
    let pending = pending(trace, t);
    let (mut instances, mut total, mut worst, mut waits) = (0u64, 0u64, None, 0u64);
    for w in t.gpu.iter().filter(|g| g.op == GpuOp::HostWait) {
        let on_copies = t
            .gpu
            .iter()
            .any(|x| x.op.is_copy() && covers(w, x) && x.end > w.start);
        if !on_copies {
            continue;
        }
        waits += 1;
        let blocked = pending.covered(w.start.0, w.end.0);
        if blocked == 0 {
            continue;
        }
        instances += 1;
        total += blocked;
        if worst.is_none_or(|(b, _): (u64, &GpuEvent)| blocked > b) {
            worst = Some((blocked, w));
        }
    }
    let (blocked, w) = worst?;
    Some(GpuFinding {
        kind: GpuFindingKind::HostBlockedOnCopies,
        rank: t.rank,
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

/// The windows of the messages rank `t` sends or receives: send post to the end of the
/// call that completed the receive.
pub fn message_windows(trace: &Trace, rank: u32) -> Intervals {
    let span = |r: crate::model::EventRef| trace.rank(r.rank)?.spans.get(r.index);
    Intervals::union(
        trace
            .messages
            .iter()
            .filter(|m| m.send.rank == rank || m.recv_post.rank == rank)
            .filter_map(|m| Some((span(m.send)?.start.0, span(m.completion?)?.end.0))),
    )
}

/// The copies-serialized-with-MPI figure of `t`: (copy ns, copy ns with a message in
/// flight), and the finding.
pub fn copies_vs_messages(trace: &Trace, t: &Timeline) -> ((u64, u64), Option<GpuFinding>) {
    let copies = device_busy(t, |op| matches!(op, GpuOp::CopyD2H | GpuOp::CopyH2D));
    let copy_ns = copies.measure();
    let overlapped = copies.overlap(&message_windows(trace, t.rank));
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
            crate::report::share(serial, copy_ns).trim()
        )],
        suggestion: "split the halo into packets and pipeline them: copy packet i+1 while \
                     packet i is on the wire, and copy each received packet while the others \
                     are still arriving"
            .into(),
    };
    ((copy_ns, overlapped), Some(finding))
}
