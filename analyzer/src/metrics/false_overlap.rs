//! False overlap: a wait placed where nothing could overlap the transfer it waits for,
//! while work that does not need it runs right after.
//!
//! A blocking completion call `W` (Wait, Waitall) that completed at least one send is a
//! finding when all of these hold:
//!
//! 1. it cost time: the part of `W` spent on its sends, `lost` (all of `W`, less the
//!    Late Sender wait of any receive it also completed), is at least `min_wait`;
//! 2. the window of its sends was (nearly) empty: the compute between each send's post
//!    and `W` is less than `empty_window_share` of `lost`;
//! 3. work that does not depend on the sends ran after `W`: compute between the end of
//!    `W` and the sends' dependence limit, at least `min_wait` of it.
//!
//! The dependence limit of a send is the next MPI call of the rank that names a buffer
//! overlapping the send's buffer (it is about to be reused), or, when the trace has no
//! buffer address, the next send to the same peer and tag; else the end of the rank's
//! trace. A received message may be read by any compute that follows its wait, so a
//! receive's wait never moves past compute, and a wait of receives alone is never a
//! finding. The evidence names the request(s), the waiting call, the time lost, the
//! independent work and the point the wait can move to; `hideable` is the smaller of
//! the time lost and the independent work.
//!
//! ```text
//!  |Isend s|Irecv r|Waitall r|Waitall s 7|unpack 2|compute 20|pack 1|Isend s'|
//!                             ^ W: lost 7, window of s empty    ^ s's buffer reused
//!  independent work after W: 23 -> finding, hideable 7, move before Isend s'
//! ```
//! (`pack` writes the buffer, which a trace cannot see: the report says the wait must
//! also precede any write to the buffer.)

use std::collections::BTreeMap;

use crate::fxhash::FxHashMap as HashMap;

use overlap_format::schema::OpClass;
use serde::Serialize;

use super::requests::RequestRow;
use super::wait_states::WaitKind;
use super::{blocks, CallRef, Options};
use crate::model::{Timeline, Trace, What};

/// Why the wait cannot move further.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The next call that names an overlapping buffer.
    BufferReuse,
    /// No buffer address recorded: the next send to the same peer and tag.
    SamePeerAndTag,
    /// Nothing later depends on it in the trace.
    EndOfTrace,
}

impl Limit {
    /// The key in JSON and tables.
    pub fn key(self) -> &'static str {
        match self {
            Limit::BufferReuse => "buffer_reuse",
            Limit::SamePeerAndTag => "same_peer_and_tag",
            Limit::EndOfTrace => "end_of_trace",
        }
    }
}

impl Serialize for Limit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.key())
    }
}

/// A request of a finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FindingRequest {
    /// Request id on its rank.
    pub request: u64,
    /// Its post.
    pub post: CallRef,
    /// Destination (world rank).
    pub peer: Option<i32>,
    /// Tag.
    pub tag: Option<i32>,
    /// Bytes.
    pub bytes: u64,
    /// Compute between its post and the wait, ns.
    pub window_cpu_ns: u64,
}

/// One false-overlap finding, with its evidence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// Rank.
    pub rank: u32,
    /// The call that waited.
    pub wait: CallRef,
    /// The send requests it waited for.
    pub requests: Vec<FindingRequest>,
    /// True when the wait also completed receives (only its sends can move).
    pub mixed: bool,
    /// Time the wait lost on the sends, ns.
    pub lost_ns: u64,
    /// Compute after the wait that does not depend on the sends, ns.
    pub independent_work_ns: u64,
    /// Compute spans in that work.
    pub independent_spans: u64,
    /// Names of the first of them.
    pub independent_names: Vec<String>,
    /// The latest point the wait can move to: just before this call (none: the end).
    pub move_before: Option<CallRef>,
    /// The same point named by the call after which the wait may go: the last MPI call
    /// of the waiting thread before `move_before` (or before the end of the rank's
    /// work); none when that is the wait itself (only compute lies between).
    pub move_after: Option<CallRef>,
    /// What a trace cannot see and would forbid the move.
    pub caveat: &'static str,
    /// Why it cannot move further.
    pub limit: Limit,
    /// Time the move could hide: `min(lost, independent work)`, ns.
    pub hideable_ns: u64,
}

/// Calls of a rank by buffer and by (peer, tag), for the next-use queries.
struct UseIndex {
    /// Distinct buffer start addresses, sorted, each with the span indices of the calls
    /// using a buffer that starts there and the longest such buffer.
    by_addr: Vec<(u64, u64, Vec<usize>)>,
    longest: u64,
    /// Sends by (peer, tag), span indices in order.
    sends: HashMap<(i32, i32), Vec<usize>>,
}

impl UseIndex {
    fn new(t: &Timeline) -> UseIndex {
        let mut map: BTreeMap<u64, (u64, Vec<usize>)> = BTreeMap::new();
        let mut sends: HashMap<(i32, i32), Vec<usize>> = HashMap::default();
        for i in 0..t.spans.len() {
            let Some((op, c)) = t.call(i) else { continue };
            let bufs = [c.buf(), t.recv_half(c).and_then(|r| r.buf)];
            for b in bufs.into_iter().flatten() {
                let e = map.entry(b.addr).or_default();
                e.0 = e.0.max(b.len);
                e.1.push(i);
            }
            if op.sends() {
                if let (Some(p), Some(tag)) = (c.peer(), c.tag()) {
                    sends.entry((p, tag)).or_default().push(i);
                }
            }
        }
        let longest = map.values().map(|v| v.0).max().unwrap_or(0);
        UseIndex {
            by_addr: map.into_iter().map(|(a, (l, v))| (a, l, v)).collect(),
            longest,
            sends,
        }
    }

    /// The first call after `after` whose buffer overlaps `[addr, addr + len)`.
    fn next_buffer_use(&self, addr: u64, len: u64, after: usize) -> Option<usize> {
        let lo = addr.saturating_sub(self.longest);
        let end = addr.saturating_add(len.max(1));
        let first = self.by_addr.partition_point(|e| e.0 < lo);
        let mut best: Option<usize> = None;
        for (a, l, uses) in &self.by_addr[first..] {
            if *a >= end {
                break;
            }
            if a.saturating_add((*l).max(1)) <= addr {
                continue;
            }
            let k = uses.partition_point(|i| *i <= after);
            if let Some(i) = uses.get(k) {
                best = Some(best.map_or(*i, |b| b.min(*i)));
            }
        }
        best
    }

    fn next_send(&self, peer: i32, tag: i32, after: usize) -> Option<usize> {
        let v = self.sends.get(&(peer, tag))?;
        v.get(v.partition_point(|i| *i <= after)).copied()
    }
}

/// The false-overlap findings of the trace, largest loss first.
pub fn findings(
    trace: &Trace,
    reqs: &[RequestRow],
    late_sender: &HashMap<(u32, usize), u64>,
    opts: &Options,
) -> Vec<Finding> {
    // Requests by the call that completed them.
    let mut by_wait: Vec<((u32, usize), &RequestRow)> = reqs
        .iter()
        .filter_map(|r| Some(((r.rank, r.completion_index()?), r)))
        .collect();
    by_wait.sort_by_key(|(k, _)| *k);
    let mut out = Vec::new();
    let mut current: Option<(u32, UseIndex)> = None;
    for chunk in by_wait.chunk_by(|a, b| a.0 == b.0) {
        let (rank, wait_index) = chunk[0].0;
        let group: Vec<&RequestRow> = chunk.iter().map(|(_, r)| *r).collect();
        let Some(t) = trace.rank(rank) else { continue };
        let Some(w) = t.spans.get(wait_index) else {
            continue;
        };
        if !w.op().is_some_and(blocks) {
            continue;
        }
        let sends: Vec<&RequestRow> = group.iter().copied().filter(|r| r.is_send()).collect();
        if sends.is_empty() {
            continue;
        }
        let mixed = sends.len() < group.len();
        let ls = if mixed {
            late_sender.get(&(rank, wait_index)).copied().unwrap_or(0)
        } else {
            0
        };
        let lost = w.duration().0.saturating_sub(ls);
        if lost < opts.min_wait.0 {
            continue;
        }
        let window_cpu = sends.iter().map(|r| r.cpu_ns).max().unwrap_or(0);
        if window_cpu as f64 >= opts.empty_window_share * lost as f64 {
            continue;
        }
        let Some(cpu) = trace.compute(rank) else {
            continue;
        };
        if current.as_ref().is_none_or(|c| c.0 != rank) {
            current = Some((rank, UseIndex::new(t)));
        }
        let Some((_, uses)) = current.as_ref() else {
            continue;
        };
        // The earliest dependence limit of its sends.
        let mut limit: (Option<usize>, Limit) = (None, Limit::EndOfTrace);
        for r in &sends {
            let Some((_, post)) = t.call(r.args_index()) else {
                continue;
            };
            let next = match (post.buf(), post.peer(), post.tag()) {
                (Some(b), _, _) => uses
                    .next_buffer_use(b.addr, b.len, wait_index)
                    .map(|i| (i, Limit::BufferReuse)),
                (None, Some(p), Some(tag)) => uses
                    .next_send(p, tag, wait_index)
                    .map(|i| (i, Limit::SamePeerAndTag)),
                _ => None,
            };
            if let Some((i, why)) = next {
                if limit.0.is_none_or(|l| i < l) {
                    limit = (Some(i), why);
                }
            }
        }
        let until = match limit.0 {
            Some(i) => t.spans.get(i).map_or(w.end, |s| s.start),
            None => t.extent().map_or(w.end, |e| e.1),
        };
        let (independent, spans) = cpu.within(w.end, until);
        if independent < opts.min_wait {
            continue;
        }
        let last = limit.0.unwrap_or(t.spans.len());
        let mut names: Vec<String> = Vec::new();
        for s in t.spans.get(wait_index + 1..last).unwrap_or(&[]) {
            if let What::Compute(id) = s.what {
                let n = t.name(id);
                if !names.iter().any(|x| x == n) {
                    names.push(n.to_string());
                }
                if names.len() >= 3 {
                    break;
                }
            }
        }
        let Some(wait) = CallRef::of(trace, rank, wait_index) else {
            continue;
        };
        out.push(Finding {
            rank,
            wait,
            requests: sends
                .iter()
                .filter_map(|r| {
                    Some(FindingRequest {
                        request: r.request,
                        post: CallRef::of(trace, r.rank, r.post_index())?,
                        peer: r.peer(),
                        tag: r.tag(),
                        bytes: r.bytes,
                        window_cpu_ns: r.cpu_ns,
                    })
                })
                .collect(),
            mixed,
            lost_ns: lost,
            independent_work_ns: independent.0,
            independent_spans: spans as u64,
            independent_names: names,
            move_before: limit.0.and_then(|i| CallRef::of(trace, rank, i)),
            move_after: last_call_before(t, wait_index, last)
                .and_then(|i| CallRef::of(trace, rank, i)),
            caveat: CAVEAT,
            limit: limit.1,
            hideable_ns: lost.min(independent.0),
        });
    }
    sort_findings(&mut out);
    out
}

/// Findings in the report's order: largest loss first, then by rank and waiting call
/// (a finding's rank and call are its own: the order is total, whatever the order
/// given).
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by_key(report_order);
}

/// A finding's place in the report's order, as a key ([`sort_findings`]).
pub fn report_order(f: &Finding) -> (std::cmp::Reverse<u64>, u32, usize) {
    (std::cmp::Reverse(f.lost_ns), f.rank, f.wait.index)
}

/// What every finding's move depends on, which a trace cannot see.
pub const CAVEAT: &str = "a write to the send buffer between the wait and the point it \
moves to (e.g. packing the next message) forbids the move: a trace cannot see such writes";

/// The last MPI call of the waiting call's thread after `wait` and before event `limit`
/// (MPI_Finalize excluded: the analysed part ends where it starts).
fn last_call_before(t: &Timeline, wait: usize, limit: usize) -> Option<usize> {
    let tid = t.spans.get(wait)?.tid;
    let end = limit.min(t.spans.len());
    (wait + 1..end).rev().find(|&i| {
        t.spans[i].tid == tid
            && t.spans[i]
                .op()
                .is_some_and(|op| op.class() != OpClass::Environment)
    })
}

/// The Late Sender wait of each call, for [`findings`]: the whole of it, before any
/// split with a Late Receiver of the same call (the receives alone would have cost that
/// much, so that much of the wait cannot move with the sends).
pub fn late_sender_by_call(waits: &[super::WaitInstance]) -> HashMap<(u32, usize), u64> {
    waits
        .iter()
        .filter(|w| w.kind == WaitKind::LateSender)
        .map(|w| ((w.rank, w.index), w.split_from_ns.unwrap_or(w.amount_ns)))
        .collect()
}
