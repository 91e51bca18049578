//! How much each non-blocking request overlapped, after the Intel MPI Benchmarks' NBC
//! formula applied to one request of a trace:
//!
//! - window `[X(post), E(wait)]`: where the program could compute while the transfer
//!   runs; `t_cpu` is the compute inside it;
//! - exposed wait: the duration of the call that completed the request;
//! - `t_ovrl = X(wait) - E(post)`;
//! - `t_pure`: the transfer time of the request's size on its own, from a model fitted
//!   to the trace's own messages ([`TransferModel`]);
//! - `overlap = max(0, min(1, (t_pure + t_cpu - t_ovrl) / min(t_pure, t_cpu)))`,
//!   0 when nothing was computed in the window, none when `t_pure` is 0.
//!
//! ```text
//!  |Isend 1|..compute 10..|Wait 2|     t_cpu 10, t_ovrl 13, t_pure 4:
//!  0       1             11     13    (4 + 10 - 13) / min(4, 10) = 0.25
//! ```

use overlap_instrument::schema::{Nanos, RequestKind};
use serde::Serialize;

use super::{CallRef, Options};
use crate::model::{EventRef, Timeline, Trace, What};

/// Compute spans of a rank, for sums over intervals in `O(log n)`.
pub(crate) struct ComputeIndex {
    /// (start, end) of each compute span, by start.
    spans: Vec<(u64, u64)>,
    /// `prefix[i]`: summed durations of `spans[..i]`.
    prefix: Vec<u64>,
    /// Largest end among `spans[..=i]`.
    max_end: Vec<u64>,
    /// True when some spans overlap (nested spans, or several threads): sums then
    /// sweep the spans in the interval, counting covered time once.
    overlapping: bool,
}

impl ComputeIndex {
    pub(crate) fn new(t: &Timeline) -> ComputeIndex {
        let spans: Vec<(u64, u64)> = t
            .spans
            .iter()
            .filter(|s| matches!(s.what, What::Compute(_)))
            .map(|s| (s.start.0, s.end.0))
            .collect();
        let mut prefix = Vec::with_capacity(spans.len() + 1);
        let mut max_end = Vec::with_capacity(spans.len());
        let (mut sum, mut hi) = (0u64, 0u64);
        let mut overlapping = false;
        prefix.push(0);
        for (a, b) in &spans {
            overlapping |= *a < hi;
            sum += b - a;
            hi = hi.max(*b);
            prefix.push(sum);
            max_end.push(hi);
        }
        ComputeIndex {
            spans,
            prefix,
            max_end,
            overlapping,
        }
    }

    /// Compute time inside `[from, to)`, and how many spans touch it.
    pub(crate) fn within(&self, from: Nanos, to: Nanos) -> (Nanos, usize) {
        let (a, b) = (from.0, to.0);
        if b <= a {
            return (Nanos::ZERO, 0);
        }
        // Spans starting before `b`, minus those that ended by `a`.
        let hi = self.spans.partition_point(|s| s.0 < b);
        let lo = self.max_end[..hi].partition_point(|e| *e <= a);
        if lo >= hi {
            return (Nanos::ZERO, 0);
        }
        if self.overlapping {
            // Time covered by any span (nested spans count once), by a sweep.
            let (mut total, mut reach) = (0u64, a);
            for &(s, e) in &self.spans[lo..hi] {
                let (s, e) = (s.max(reach), e.min(b));
                if e > s {
                    total += e - s;
                    reach = e;
                }
            }
            return (Nanos(total), hi - lo);
        }
        let mut total = self.prefix[hi] - self.prefix[lo];
        // Clip the spans that stick out of the interval.
        for &(s, e) in &self.spans[lo..hi] {
            if s >= a {
                break;
            }
            total -= e.min(a) - s;
        }
        for &(s, e) in self.spans[lo..hi].iter().rev() {
            if e <= b {
                break;
            }
            total -= e - b.max(s);
        }
        (Nanos(total), hi - lo)
    }
}

/// One size class of the transfer model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeClass {
    /// Smallest message of the class, bytes (classes are powers of two).
    pub bytes: u64,
    /// Messages observed.
    pub messages: u64,
    /// Shortest observed transfer, ns.
    pub min_ns: u64,
}

/// Transfer time by message size, fitted to the trace's own messages.
///
/// A message's observed transfer is `X(completion) - max(E(send), E(recv post))`: from
/// the moment both sides had asked for it to the moment the receive was known complete.
/// That bounds the true transfer from above; the smallest observation in each
/// power-of-two size class is taken as that class's pure transfer time, and a line
/// `latency + bytes / bandwidth` is fitted through the classes (least squares, both
/// terms kept non-negative) for sizes no message had.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransferModel {
    /// Fitted latency, ns.
    pub latency_ns: f64,
    /// Fitted bandwidth, bytes per second (0 when unknown).
    pub bandwidth_bytes_per_s: f64,
    /// The classes observed.
    pub classes: Vec<SizeClass>,
}

fn class_of(bytes: u64) -> u32 {
    64 - bytes.leading_zeros()
}

impl TransferModel {
    /// Fits the model to the messages of `trace`.
    pub fn fit(trace: &Trace) -> TransferModel {
        let mut classes: std::collections::BTreeMap<u32, SizeClass> = Default::default();
        for m in trace.messages.iter().filter(|m| !m.clock_suspect) {
            let (Some(c), Some(send), Some(post)) = (
                m.completion.and_then(|c| trace.span(c)),
                trace.span(m.send),
                trace.span(m.recv_post),
            ) else {
                continue;
            };
            let observed = c.end.saturating_sub(send.start.max(post.start)).0;
            let e = classes.entry(class_of(m.bytes)).or_insert(SizeClass {
                bytes: m.bytes,
                messages: 0,
                min_ns: u64::MAX,
            });
            e.bytes = e.bytes.min(m.bytes);
            e.messages += 1;
            e.min_ns = e.min_ns.min(observed);
        }
        let classes: Vec<SizeClass> = classes.into_values().collect();
        let (latency_ns, ns_per_byte) = fit_line(&classes);
        TransferModel {
            latency_ns,
            bandwidth_bytes_per_s: if ns_per_byte > 0.0 {
                1e9 / ns_per_byte
            } else {
                0.0
            },
            classes,
        }
    }

    /// The pure transfer time of a message of `bytes`.
    pub fn pure(&self, bytes: u64) -> Nanos {
        let class = class_of(bytes);
        if let Some(c) = self.classes.iter().find(|c| class_of(c.bytes) == class) {
            return Nanos(c.min_ns);
        }
        let per_byte = if self.bandwidth_bytes_per_s > 0.0 {
            1e9 / self.bandwidth_bytes_per_s
        } else {
            0.0
        };
        Nanos((self.latency_ns + per_byte * bytes as f64).max(0.0).round() as u64)
    }
}

/// Least squares `t = a + b * bytes` with `a, b >= 0`.
fn fit_line(classes: &[SizeClass]) -> (f64, f64) {
    let pts: Vec<(f64, f64)> = classes
        .iter()
        .map(|c| (c.bytes as f64, c.min_ns as f64))
        .collect();
    match pts.as_slice() {
        [] => (0.0, 0.0),
        [(x, y)] => {
            if *x > 0.0 {
                (0.0, y / x)
            } else {
                (*y, 0.0)
            }
        }
        _ => {
            let n = pts.len() as f64;
            let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
            let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
            let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
            let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
            let b = if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
            let a = my - b * mx;
            if a >= 0.0 {
                (a, b)
            } else {
                // Through the origin.
                let sxy0: f64 = pts.iter().map(|p| p.0 * p.1).sum();
                let sxx0: f64 = pts.iter().map(|p| p.0 * p.0).sum();
                (
                    0.0,
                    if sxx0 > 0.0 {
                        (sxy0 / sxx0).max(0.0)
                    } else {
                        0.0
                    },
                )
            }
        }
    }
}

/// One request's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestMetrics {
    /// Rank.
    pub rank: u32,
    /// Request id on that rank.
    pub request: u64,
    /// The post: `MPI_Isend` or `MPI_Irecv`.
    pub post: CallRef,
    /// True for a send.
    pub is_send: bool,
    /// The call whose arguments describe the transfer (the post, or a started
    /// persistent request's init): index among the rank's events.
    #[serde(skip)]
    pub args_index: usize,
    /// Peer (world rank), when known.
    pub peer: Option<i32>,
    /// Tag.
    pub tag: Option<i32>,
    /// Bytes (sent, or received when known, else the buffer's capacity).
    pub bytes: u64,
    /// The call that completed it, if one did.
    pub completion: Option<CallRef>,
    /// `E(wait) - X(post)`, ns (0 when the wait began inside the post).
    pub window_ns: u64,
    /// Compute inside the window, ns.
    pub cpu_ns: u64,
    /// Duration of the completing call, ns.
    pub exposed_wait_ns: u64,
    /// `X(wait) - E(post)`, ns.
    pub t_ovrl_ns: u64,
    /// Estimated pure transfer time, ns.
    pub t_pure_ns: u64,
    /// Overlap (0..1) by the IMB formula; none when `t_pure` is 0 or the request never
    /// completed.
    pub overlap: Option<f64>,
}

/// The figures of every request of the trace, in rank and post order.
pub fn per_request(trace: &Trace, model: &TransferModel) -> Vec<RequestMetrics> {
    // Bytes actually received, by receive post.
    let mut received: crate::fxhash::FxHashMap<EventRef, u64> = Default::default();
    for m in &trace.messages {
        received.insert(m.recv_post, m.bytes);
    }
    let mut out = Vec::with_capacity(trace.requests.len());
    let mut index: Option<(u32, ComputeIndex)> = None;
    for r in &trace.requests {
        let Some(t) = trace.rank(r.rank) else {
            continue;
        };
        if index.as_ref().is_none_or(|(rank, _)| *rank != r.rank) {
            index = Some((r.rank, ComputeIndex::new(t)));
        }
        let Some((_, cpu)) = index.as_ref() else {
            continue;
        };
        // Non-blocking collectives have no peer nor transfer model: their requests are
        // counted in the budget and the timeline, not here.
        if r.kind == RequestKind::Collective {
            continue;
        }
        let Some((_, call)) = t.call(r.args) else {
            continue;
        };
        // A send to or receive from MPI_PROC_NULL (a negative peer that is not the
        // any-source wildcard of a receive that got a message) moves nothing.
        let from_nobody = r.kind == RequestKind::Recv
            && r.completion.is_some()
            && !received.contains_key(&EventRef {
                rank: r.rank,
                index: r.post,
            })
            && call.peer.is_some_and(|p| p < 0);
        if (r.kind == RequestKind::Send && call.peer.is_some_and(|p| p < 0)) || from_nobody {
            continue;
        }
        let Some(post) = CallRef::of(trace, r.rank, r.post) else {
            continue;
        };
        let is_send = r.kind == RequestKind::Send;
        let bytes = if is_send {
            call.bytes.unwrap_or(0)
        } else {
            received
                .get(&EventRef {
                    rank: r.rank,
                    index: r.post,
                })
                .copied()
                .or(call.bytes)
                .unwrap_or(0)
        };
        let completion = r.completion.and_then(|i| CallRef::of(trace, r.rank, i));
        let t_pure = model.pure(bytes);
        let mut m = RequestMetrics {
            rank: r.rank,
            request: r.request,
            is_send,
            args_index: r.args,
            peer: call.peer,
            tag: call.tag,
            bytes,
            completion: None,
            window_ns: 0,
            cpu_ns: 0,
            exposed_wait_ns: 0,
            t_ovrl_ns: 0,
            t_pure_ns: t_pure.0,
            overlap: None,
            post,
        };
        if let Some(c) = completion {
            let post_end = m.post.start_ns + m.post.duration_ns;
            let window = (Nanos(post_end), Nanos(c.start_ns));
            m.window_ns = c.start_ns.saturating_sub(post_end);
            m.cpu_ns = cpu.within(window.0, window.1).0 .0;
            m.exposed_wait_ns = c.duration_ns;
            m.t_ovrl_ns = (c.start_ns + c.duration_ns).saturating_sub(m.post.start_ns);
            m.overlap = imb_overlap(t_pure.0, m.cpu_ns, m.t_ovrl_ns);
            m.completion = Some(c);
        }
        out.push(m);
    }
    out
}

/// The IMB overlap of one operation (0..1): 0 when nothing was computed, none when the
/// pure transfer time is 0.
pub fn imb_overlap(t_pure: u64, t_cpu: u64, t_ovrl: u64) -> Option<f64> {
    if t_pure == 0 {
        return None;
    }
    if t_cpu == 0 {
        return Some(0.0);
    }
    let num = t_pure as f64 + t_cpu as f64 - t_ovrl as f64;
    let den = t_pure.min(t_cpu) as f64;
    Some((num / den).clamp(0.0, 1.0))
}

/// Requests summarised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestSummary {
    /// Requests posted.
    pub count: u64,
    /// Of which sends.
    pub sends: u64,
    /// Of which receives.
    pub receives: u64,
    /// Requests that never completed.
    pub never_completed: u64,
    /// Mean overlap of the requests that have one (0..1).
    pub mean_overlap: f64,
    /// Requests that overlapped nothing (overlap 0).
    pub zero_overlap: u64,
    /// Summed exposed wait, ns (a call completing several requests counts once).
    pub exposed_wait_ns: u64,
    /// The transfer model used for `t_pure`.
    pub transfer_model: TransferModel,
    /// The completed requests with the least overlap, and among equals the largest
    /// exposed wait, worst first.
    pub worst: Vec<RequestMetrics>,
}

/// Summarises the requests.
pub fn summarize(reqs: &[RequestMetrics], model: &TransferModel, opts: &Options) -> RequestSummary {
    let with: Vec<f64> = reqs.iter().filter_map(|r| r.overlap).collect();
    let mut waits: Vec<(u32, usize, u64)> = reqs
        .iter()
        .filter_map(|r| {
            r.completion
                .as_ref()
                .map(|c| (c.rank, c.index, c.duration_ns))
        })
        .collect();
    waits.sort_unstable();
    waits.dedup();
    let mut worst: Vec<&RequestMetrics> = reqs.iter().filter(|r| r.completion.is_some()).collect();
    worst.sort_by(|a, b| {
        let key = |r: &RequestMetrics| {
            (
                r.overlap.unwrap_or(1.0),
                std::cmp::Reverse(r.exposed_wait_ns),
            )
        };
        let (ka, kb) = (key(a), key(b));
        ka.0.total_cmp(&kb.0)
            .then(ka.1.cmp(&kb.1))
            .then((a.rank, a.request).cmp(&(b.rank, b.request)))
    });
    RequestSummary {
        count: reqs.len() as u64,
        sends: reqs.iter().filter(|r| r.is_send).count() as u64,
        receives: reqs.iter().filter(|r| !r.is_send).count() as u64,
        never_completed: reqs.iter().filter(|r| r.completion.is_none()).count() as u64,
        mean_overlap: if with.is_empty() {
            0.0
        } else {
            with.iter().sum::<f64>() / with.len() as f64
        },
        zero_overlap: with.iter().filter(|o| **o == 0.0).count() as u64,
        exposed_wait_ns: waits.iter().map(|w| w.2).sum(),
        transfer_model: model.clone(),
        worst: worst.into_iter().take(opts.worst).cloned().collect(),
    }
}
