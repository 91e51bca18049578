//! Pure transfer times, for the overlap formulas' `t_pure`: the time an operation takes
//! when nothing else delays it. A trace has no separate calibration run, so both
//! estimates are fitted to the trace's own operations, taking the fastest observation:
//!
//! - [`TransferModel`]: point-to-point messages by size (also used for the one-sided
//!   request operations, Rput, Rget..., which move the same bytes over the same network);
//! - [`CollectiveModel`]: non-blocking collectives by operation and size, from the time
//!   between the last member's post and a member's completion.
//!
//! ```text
//!  rank 0  |Ibcast 0-1|.............|Wait 5-9|     instance: last post at 3;
//!  rank 1  |c 0-3|Ibcast 3-4|Wait 4 ------- 8|     observed 9 - 3 = 6 and 8 - 3 = 5
//!                                                  -> t_pure(Ibcast, class) = 5
//! ```

use std::collections::BTreeMap;

use overlap_format::schema::{Nanos, Op};
use serde::Serialize;

use crate::model::Trace;

/// One size class of the transfer model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeClass {
    /// Smallest message of the class, bytes (classes are powers of two).
    pub bytes: u64,
    /// Messages observed.
    pub messages: u64,
    /// Shortest observed transfer, ns.
    pub min_ns: u64,
    /// Messages whose receiver was already waiting for them (its completion call entered
    /// before both sides were posted): their observed transfer is the whole transfer,
    /// neither cut short by an early arrival nor stretched by a late completion.
    pub waited: u64,
    /// The median transfer of those, ns: the class's typical transfer time; `None` when
    /// no receiver waited.
    pub typical_ns: Option<u64>,
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
    /// Fitted bandwidth, bytes per second; none when the fit has no slope (no message,
    /// or sizes whose times do not grow with them).
    pub bandwidth_bytes_per_s: Option<f64>,
    /// The classes observed.
    pub classes: Vec<SizeClass>,
}

/// A line `latency + bytes × ns_per_byte` through the classes' typical transfers (their
/// shortest where none was typical), for predicting a whole run ([`crate::replay`]):
/// the fastest transfers [`TransferModel`] fits are what a message costs at best.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TypicalLine {
    /// Latency, ns.
    pub latency_ns: f64,
    /// Time per byte, ns.
    pub ns_per_byte: f64,
}

pub(crate) fn class_of(bytes: u64) -> u32 {
    64 - bytes.leading_zeros()
}

impl TransferModel {
    /// Fits the model to the messages of `trace`.
    pub fn fit(trace: &Trace) -> TransferModel {
        let mut classes: BTreeMap<u32, SizeClass> = Default::default();
        let mut waited: BTreeMap<u32, Vec<u64>> = Default::default();
        for m in trace.messages.iter().filter(|m| !m.clock_suspect) {
            let (Some(c), Some(send), Some(post)) = (
                m.completion().and_then(|c| trace.span(c)),
                trace.span(m.send()),
                trace.span(m.recv_post()),
            ) else {
                continue;
            };
            let both = send.start.max(post.start);
            let observed = c.end.saturating_sub(both).0;
            let e = classes.entry(class_of(m.bytes)).or_insert(SizeClass {
                bytes: m.bytes,
                messages: 0,
                min_ns: u64::MAX,
                waited: 0,
                typical_ns: None,
            });
            e.bytes = e.bytes.min(m.bytes);
            e.messages += 1;
            e.min_ns = e.min_ns.min(observed);
            if c.start <= both {
                waited.entry(class_of(m.bytes)).or_default().push(observed);
            }
        }
        for (class, mut seen) in waited {
            if let Some(c) = classes.get_mut(&class) {
                seen.sort_unstable();
                c.waited = seen.len() as u64;
                c.typical_ns = seen.get(seen.len() / 2).copied();
            }
        }
        let classes: Vec<SizeClass> = classes.into_values().collect();
        let points: Vec<(f64, f64)> = classes
            .iter()
            .map(|c| (c.bytes as f64, c.min_ns as f64))
            .collect();
        let (latency_ns, ns_per_byte) = fit_line(&points);
        TransferModel {
            latency_ns,
            bandwidth_bytes_per_s: (ns_per_byte > 0.0).then(|| 1e9 / ns_per_byte),
            classes,
        }
    }

    /// The line through the classes' typical transfers.
    pub fn typical(&self) -> TypicalLine {
        let points: Vec<(f64, f64)> = self
            .classes
            .iter()
            .map(|c| (c.bytes as f64, c.typical_ns.unwrap_or(c.min_ns) as f64))
            .collect();
        let (latency_ns, ns_per_byte) = fit_line(&points);
        TypicalLine {
            latency_ns,
            ns_per_byte,
        }
    }

    /// The pure transfer time of a message of `bytes`.
    pub fn pure(&self, bytes: u64) -> Nanos {
        let class = class_of(bytes);
        if let Some(c) = self.classes.iter().find(|c| class_of(c.bytes) == class) {
            return Nanos(c.min_ns);
        }
        let per_byte = self.bandwidth_bytes_per_s.map_or(0.0, |b| 1e9 / b);
        Nanos((self.latency_ns + per_byte * bytes as f64).max(0.0).round() as u64)
    }
}

/// Least squares `t = a + b * bytes` with `a, b >= 0`.
fn fit_line(pts: &[(f64, f64)]) -> (f64, f64) {
    match pts {
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

/// One (operation, size class) of the collective model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollectiveClass {
    /// The operation's MPI name (the post, or a persistent collective's init).
    pub call: &'static str,
    /// Smallest byte count of the class (classes are powers of two).
    pub bytes: u64,
    /// Observations (members of complete instances).
    pub samples: u64,
    /// Shortest observation, ns: the class's pure communication time.
    pub min_ns: u64,
}

/// Pure communication time of non-blocking collectives, by operation and size.
///
/// An instance is the k-th non-blocking collective request of each rank on one
/// communicator ([`super::collectives::nonblocking`]). A member's observation is
/// `X(its completion) - max_j E(post_j)`: from the moment every member had started the
/// operation to the moment this member knew it done. Like a message's observed
/// transfer, that bounds the pure time from above (it also holds compute that ran
/// before the completion was entered, when the library made no progress meanwhile);
/// the shortest observation of each (operation, bytes power-of-two class) is taken.
/// There is no fit across sizes or operations: a class never observed has no estimate
/// (unknown), never 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CollectiveModel {
    /// The classes observed, by operation then size.
    pub classes: Vec<CollectiveClass>,
}

impl CollectiveModel {
    /// Fits the model to the non-blocking collectives of `trace`.
    pub fn fit(trace: &Trace) -> CollectiveModel {
        let mut classes: BTreeMap<(&'static str, u32), CollectiveClass> = BTreeMap::new();
        for members in super::collectives::nonblocking(trace) {
            let posts: Vec<_> = members
                .iter()
                .filter_map(|&i| {
                    let r = trace.requests.get(i)?;
                    Some((
                        r,
                        trace.span(crate::model::EventRef {
                            rank: r.rank,
                            index: r.post(),
                        })?,
                    ))
                })
                .collect();
            let Some(last) = posts.iter().map(|(_, s)| s.start).max() else {
                continue;
            };
            for (r, _) in &posts {
                let Some(t) = trace.rank(r.rank) else {
                    continue;
                };
                let (Some((op, call)), Some(done)) = (
                    t.call(r.args()),
                    r.completion().and_then(|c| t.spans.get(c)),
                ) else {
                    continue;
                };
                if done.end < last {
                    continue;
                }
                let bytes = call.bytes().unwrap_or(0);
                let e =
                    classes
                        .entry((op.mpi_name(), class_of(bytes)))
                        .or_insert(CollectiveClass {
                            call: op.mpi_name(),
                            bytes,
                            samples: 0,
                            min_ns: u64::MAX,
                        });
                e.bytes = e.bytes.min(bytes);
                e.samples += 1;
                e.min_ns = e.min_ns.min((done.end - last).0);
            }
        }
        CollectiveModel {
            classes: classes.into_values().collect(),
        }
    }

    /// The pure communication time of `op` (post or persistent init) on `bytes`, if
    /// that class was observed.
    pub fn pure(&self, op: Op, bytes: u64) -> Option<Nanos> {
        let class = class_of(bytes);
        self.classes
            .iter()
            .find(|c| c.call == op.mpi_name() && class_of(c.bytes) == class)
            .map(|c| Nanos(c.min_ns))
    }
}
