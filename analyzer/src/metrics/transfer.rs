//! The network as the trace measured it: the one model of point-to-point transfer times
//! behind `t_pure` (per-request overlap, [`super::requests`]), overlap written but not
//! achieved ([`super::progress`]), the replay and through it `whatif` and `suggest`
//! ([`crate::replay::NetworkFit`]). One-sided request operations use it too (they move
//! the same bytes over the same network); non-blocking collectives have their own
//! ([`super::collective_model`]).
//!
//! It is fitted to clean transfers only ([`super::clean`]: both ends were ready, so the
//! observed time is the transfer's), grouped by power-of-two size class and protocol
//! ([`super::eager`]). A class with at least [`MIN_CLEAN`] clean transfers gets an
//! estimate: the [`QUANTILE`] order statistic of its observations, never the single
//! fastest. A line `latency + bytes / bandwidth` is fitted through the estimates
//! (least squares on relative errors, so that small messages set the latency and large
//! ones the bandwidth) and kept only when it is plausible; otherwise it is unknown,
//! with the reason ([`Unfit`]). `t_pure(bytes)` is its class's estimate, else the line,
//! else unknown.
//!
//! ```text
//!  clean transfers of 8 B:   1.1 1.2 1.2 1.3 9.0 µs  -> 2nd of 5: 1.2 µs (fastest 1.1, typical 1.2)
//!  clean transfers of 1 MiB: 262 265 270 µs         -> 2nd of 3: 265 µs
//!  line through (8, 1.2 µs) and (1 MiB, 265 µs): latency 1.2 µs, bandwidth 3.98 GB/s
//! ```

use std::collections::BTreeMap;

use overlap_format::schema::Nanos;
use rayon::prelude::*;
use serde::Serialize;

use super::clean::Cleaner;
use super::eager::{EagerFit, Protocol};
use super::message_ends::MessageEnds;
use crate::model::{Message, Trace};

/// The quantile of a class's clean transfers taken as its estimate. Clean transfers
/// still carry delays that only lengthen them (the operating system, cache misses, a
/// poll that came late, other messages in flight), so the fast end is the transfer; a
/// quarter of them may be wrong on the fast side (a clock error, a protocol taken for
/// the other) without moving the estimate. The order statistic taken is
/// `max(2, ceil(QUANTILE × n))`: never the single fastest, so that one bad
/// observation cannot set it.
pub const QUANTILE: f64 = 0.25;

/// The fewest clean transfers a class needs for an estimate: three, the fewest for
/// which the second fastest (the estimate) has a slower one beside it, so that one bad
/// observation on either side moves it to a neighbour, not to itself.
pub const MIN_CLEAN: u64 = 3;

/// The plausible latencies, ns: no MPI message arrives in less than 10 ns (a function
/// call and a memory fence on each side), none waits 1 ms for a working network (TCP
/// over Ethernet takes tens of µs). A millisecond is a scheduler's time slice: a rank
/// taken off its CPU, on a host with more ranks than CPUs or a loaded machine.
pub const LATENCY_RANGE_NS: (f64, f64) = (10.0, 1e6);

/// The plausible bandwidths, bytes per second: from 1 MB/s (slower than any network an
/// MPI run uses) to 10 TB/s (faster than any memory bus or interconnect).
pub const BANDWIDTH_RANGE: (f64, f64) = (1e6, 1e13);

/// The largest root-mean-square relative distance of the class estimates from the line
/// for the line to stand for them: beyond it the points are not on a line.
pub const MAX_RESIDUAL: f64 = 0.5;

/// One (size class, protocol) of the model.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct SizeClass {
    /// Smallest message of the class, bytes (classes are powers of two).
    pub bytes: u64,
    /// Its protocol (by the eager limit).
    pub protocol: Protocol,
    /// Messages of the class.
    pub messages: u64,
    /// Of which clean transfers.
    pub clean: u64,
    /// The fastest clean transfer, ns (none below [`MIN_CLEAN`]).
    pub fastest_ns: Option<u64>,
    /// The class's transfer time, ns: the [`QUANTILE`] order statistic of the clean
    /// transfers (none below [`MIN_CLEAN`]).
    pub estimate_ns: Option<u64>,
    /// The median clean transfer, ns (none below [`MIN_CLEAN`]).
    pub typical_ns: Option<u64>,
    /// The estimate when it was slower than any network (the longest latency and the
    /// lowest bandwidth that are plausible, [`LATENCY_RANGE_NS`] and
    /// [`BANDWIDTH_RANGE`]): then `estimate_ns` is none. A scheduler's time, not the
    /// network's.
    pub too_slow_ns: Option<u64>,
}

/// Why the line cannot be had.
#[derive(Clone, Debug, PartialEq, Serialize, thiserror::Error, serde::Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Unfit {
    /// No matched message (with both ends in the trace).
    #[error("no message to fit it to")]
    NoMessages,
    /// No message had both ends ready.
    #[error("none of the {messages} message(s) was a clean transfer (both ends ready)")]
    NoCleanTransfer {
        /// Messages.
        messages: u64,
    },
    /// Every class with enough clean transfers was slower than any network.
    #[error(
        "the clean transfers are slower than any network ({bytes} B in {estimate_ns} ns, \
         more than 1 ms plus 1 µs a byte): the scheduler's time, not the network's"
    )]
    TooSlow {
        /// The smallest such class's bytes.
        bytes: u64,
        /// Its estimate, ns.
        estimate_ns: u64,
    },
    /// No class has enough clean transfers.
    #[error(
        "too few clean transfers: at most {most} in a size class, {needed} needed for an estimate"
    )]
    TooFewClean {
        /// The most clean transfers of a class.
        most: u64,
        /// [`MIN_CLEAN`].
        needed: u64,
    },
    /// One size class only: latency and bandwidth cannot be told apart.
    #[error(
        "one size class only ({bytes} B in {estimate_ns} ns): latency and bandwidth cannot be \
         told apart"
    )]
    OneSizeClass {
        /// Its smallest message, bytes.
        bytes: u64,
        /// Its estimate, ns.
        estimate_ns: u64,
    },
    /// Larger messages did not take longer.
    #[error("the transfer times do not grow with the size ({from} B to {to} B): no bandwidth")]
    NoGrowth {
        /// The smallest size with an estimate.
        from: u64,
        /// The largest.
        to: u64,
    },
    /// The line reaches 0 at or before 0 bytes.
    #[error(
        "the line through the size classes gives a latency of {latency_ns:.0} ns: the \
         smallest messages ({from} B) do not show one"
    )]
    NoLatency {
        /// The line's value at 0 bytes, ns.
        latency_ns: f64,
        /// The smallest size with an estimate.
        from: u64,
    },
    /// A latency no network has.
    #[error("implausible latency {latency_ns:.0} ns (plausible: 10 ns to 1 ms)")]
    Latency {
        /// The latency, ns.
        latency_ns: f64,
    },
    /// A bandwidth no network has.
    #[error("implausible bandwidth {bytes_per_s:.3e} B/s (plausible: 1 MB/s to 10 TB/s)")]
    Bandwidth {
        /// The bandwidth, bytes per second.
        bytes_per_s: f64,
    },
    /// The class estimates are far off the line.
    #[error(
        "the size classes are not on a line (they are {residual:.0}% off it, root mean \
         square; 50% at most)",
        residual = rms * 100.0
    )]
    Residuals {
        /// The root-mean-square relative distance.
        rms: f64,
    },
}

/// The range of predictions as factors of the line: the fast end and the slow end.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Range {
    /// The fast end (at most 1): the fastest clean transfer of a class against the line,
    /// the smallest such ratio.
    pub low: f64,
    /// The slow end (at least 1): the median clean transfer of a class against the
    /// line, the largest such ratio.
    pub high: f64,
}

/// Transfer time by message size and protocol, fitted to the trace's clean transfers.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct TransferModel {
    /// The line's latency, ns; none when the line is unknown.
    pub latency_ns: Option<f64>,
    /// The line's bandwidth, bytes per second; none when the line is unknown.
    pub bandwidth_bytes_per_s: Option<f64>,
    /// The latency of the line through the classes' median clean transfers (what a
    /// transfer typically takes in this run: the replay's estimate), ns; none without
    /// the line, or when this one has no positive latency and bandwidth.
    pub typical_latency_ns: Option<f64>,
    /// Its bandwidth, bytes per second.
    pub typical_bandwidth_bytes_per_s: Option<f64>,
    /// The range of predictions around the line; none when the line is unknown.
    pub range: Option<Range>,
    /// Why the line is unknown; none when it is known.
    pub unknown: Option<Unfit>,
    /// The eager limit the protocols come from.
    pub eager: EagerFit,
    /// Messages (matched, not clock-suspect, between two ranks).
    pub messages: u64,
    /// Of which clean transfers.
    pub clean: u64,
    /// The classes observed, by size then protocol.
    pub classes: Vec<SizeClass>,
    /// The classes (smallest size, protocol) of the messages the fit leaves out (to the
    /// sender's own rank, or clock-suspect) that no fitted message shares: the replay
    /// transfers them too, so a network of the measured classes must have their times
    /// ([`crate::replay::NetworkSource::Classes`]). Not a figure of the model.
    #[serde(default, skip_serializing_if = "crate::exchange::wire::left_out")]
    pub unfitted: Vec<(u64, Protocol)>,
}

/// A line `latency + bytes × ns_per_byte`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    /// Latency, ns.
    pub latency_ns: f64,
    /// Time per byte, ns.
    pub ns_per_byte: f64,
}

impl Line {
    /// Its time for `bytes`, ns.
    pub fn at(&self, bytes: u64) -> f64 {
        self.latency_ns + self.ns_per_byte * bytes as f64
    }
}

/// The power-of-two class of a size: its bit length.
pub(crate) fn class_of(bytes: u64) -> u32 {
    64 - bytes.leading_zeros()
}

impl TransferModel {
    /// Fits the model to the messages of `trace`.
    pub fn fit(trace: &Trace) -> TransferModel {
        TransferModel::fit_with(trace, &MessageEnds::of(trace))
    }

    /// [`TransferModel::fit`], the ends of `trace`'s messages already found.
    pub fn fit_with(trace: &Trace, ends: &MessageEnds) -> TransferModel {
        let eager = EagerFit::of_ends(trace, ends);
        let cleaner = Cleaner::with_ends(trace, ends, eager);
        let fitted = |m: &Message| !m.clock_suspect && m.send().rank != m.recv_post().rank;
        // Per class: its smallest message, its messages, and its clean transfers (which
        // `SizeClass::of` sorts): folded on rayon's threads, never a record per message.
        type Classes = BTreeMap<(u32, Protocol), (u64, u64, Vec<u64>)>;
        let add = |mut by_class: Classes, (mi, m): (usize, &Message)| {
            let key = (class_of(m.bytes), eager.protocol(m.bytes));
            let e = by_class.entry(key).or_insert((m.bytes, 0, Vec::new()));
            e.0 = e.0.min(m.bytes);
            e.1 += 1;
            e.2.extend(cleaner.clean(mi).map(|c| c.ns));
            by_class
        };
        let join = |mut a: Classes, b: Classes| {
            for (key, (bytes, messages, clean)) in b {
                let e = a.entry(key).or_insert((bytes, 0, Vec::new()));
                e.0 = e.0.min(bytes);
                e.1 += messages;
                e.2.extend(clean);
            }
            a
        };
        let by_class: Classes = (trace.messages.par_iter().enumerate())
            .filter(|(_, m)| fitted(m))
            .fold(Classes::new, add)
            .reduce(Classes::new, join);
        let mut unfitted: BTreeMap<(u32, Protocol), u64> = BTreeMap::new();
        for m in trace.messages.iter().filter(|m| !fitted(m)) {
            let key = (class_of(m.bytes), eager.protocol(m.bytes));
            if !by_class.contains_key(&key) {
                let smallest = unfitted.entry(key).or_insert(m.bytes);
                *smallest = (*smallest).min(m.bytes);
            }
        }
        let classes: Vec<SizeClass> = by_class
            .into_iter()
            .map(|((_, protocol), (bytes, messages, clean))| {
                SizeClass::of(bytes, protocol, messages, clean)
            })
            .collect();
        TransferModel {
            unfitted: (unfitted.into_iter())
                .map(|((_, protocol), bytes)| (bytes, protocol))
                .collect(),
            ..TransferModel::of_classes(eager, classes)
        }
    }

    /// The model of `classes`, its line fitted through their estimates.
    pub fn of_classes(eager: EagerFit, classes: Vec<SizeClass>) -> TransferModel {
        let messages = classes.iter().map(|c| c.messages).sum();
        let clean = classes.iter().map(|c| c.clean).sum();
        let (line, range, unknown) = match line_of(&classes, messages, clean) {
            Ok((line, range)) => (Some(line), Some(range), None),
            Err(why) => (None, None, Some(why)),
        };
        let typical = line.and_then(|_| typical_of(&classes));
        TransferModel {
            latency_ns: line.map(|l| l.latency_ns),
            bandwidth_bytes_per_s: line.map(|l| 1e9 / l.ns_per_byte),
            typical_latency_ns: typical.map(|l| l.latency_ns),
            typical_bandwidth_bytes_per_s: typical.map(|l| 1e9 / l.ns_per_byte),
            range,
            unknown,
            eager,
            messages,
            clean,
            classes,
            unfitted: Vec::new(),
        }
    }

    /// The line, when it is known.
    pub fn line(&self) -> Option<Line> {
        Some(Line {
            latency_ns: self.latency_ns?,
            ns_per_byte: 1e9 / self.bandwidth_bytes_per_s?,
        })
    }

    /// The line through the classes' median clean transfers, when it is known.
    pub fn typical_line(&self) -> Option<Line> {
        Some(Line {
            latency_ns: self.typical_latency_ns?,
            ns_per_byte: 1e9 / self.typical_bandwidth_bytes_per_s?,
        })
    }

    /// The class of a `bytes` message, if it has an estimate.
    fn estimated_class(&self, bytes: u64) -> Option<&SizeClass> {
        let (class, protocol) = (class_of(bytes), self.eager.protocol(bytes));
        self.classes
            .iter()
            .find(|c| class_of(c.bytes) == class && c.protocol == protocol)
            .filter(|c| c.estimate_ns.is_some())
    }

    /// The pure transfer time of a `bytes` message: its class's estimate, else the
    /// line's; none when neither is known.
    pub fn pure(&self, bytes: u64) -> Option<Nanos> {
        if let Some(c) = self.estimated_class(bytes) {
            return c.estimate_ns.map(Nanos);
        }
        let line = self.line()?;
        Some(Nanos(line.at(bytes).max(0.0).round() as u64))
    }

    /// The range of the pure transfer time of a `bytes` message: its class's fastest
    /// and median clean transfers, else the line's range; none when neither is known.
    pub fn pure_range(&self, bytes: u64) -> Option<(Nanos, Nanos)> {
        if let Some(c) = self.estimated_class(bytes) {
            return Some((Nanos(c.fastest_ns?), Nanos(c.typical_ns?)));
        }
        let (line, range) = (self.line()?, self.range?);
        let at = |f: f64| Nanos((line.at(bytes) * f).max(0.0).round() as u64);
        Some((at(range.low), at(range.high)))
    }

    /// The classes with an estimate.
    pub fn estimated(&self) -> impl Iterator<Item = &SizeClass> {
        self.classes.iter().filter(|c| c.estimate_ns.is_some())
    }
}

impl SizeClass {
    /// The class of messages of at least `bytes` and `protocol`, `messages` of them,
    /// whose clean transfers took `clean` ns each.
    pub fn of(bytes: u64, protocol: Protocol, messages: u64, mut clean: Vec<u64>) -> SizeClass {
        clean.sort_unstable();
        let n = clean.len();
        let enough = n as u64 >= MIN_CLEAN;
        let k = ((QUANTILE * n as f64).ceil() as usize).max(2);
        let estimate = clean.get(k - 1).copied().filter(|&e| enough && e > 0);
        let slowest = LATENCY_RANGE_NS.1 + bytes as f64 * 1e9 / BANDWIDTH_RANGE.0;
        let too_slow = estimate.filter(|&e| e as f64 > slowest);
        SizeClass {
            bytes,
            protocol,
            messages,
            clean: n as u64,
            fastest_ns: clean.first().copied().filter(|_| enough),
            estimate_ns: estimate.filter(|_| too_slow.is_none()),
            typical_ns: clean.get(n / 2).copied().filter(|_| enough),
            too_slow_ns: too_slow,
        }
    }
}

/// The line through the estimates of `classes` and its range, or why there is none.
fn line_of(classes: &[SizeClass], messages: u64, clean: u64) -> Result<(Line, Range), Unfit> {
    let estimated: Vec<&SizeClass> = classes.iter().filter(|c| c.estimate_ns.is_some()).collect();
    let (Some(first), Some(last)) = (estimated.first(), estimated.last()) else {
        let slow = classes.iter().find_map(|c| Some((c.bytes, c.too_slow_ns?)));
        return Err(match (messages, clean, slow) {
            (0, _, _) => Unfit::NoMessages,
            (m, 0, _) => Unfit::NoCleanTransfer { messages: m },
            (_, _, Some((bytes, estimate_ns))) => Unfit::TooSlow { bytes, estimate_ns },
            _ => Unfit::TooFewClean {
                most: classes.iter().map(|c| c.clean).max().unwrap_or(0),
                needed: MIN_CLEAN,
            },
        });
    };
    if class_of(first.bytes) == class_of(last.bytes) {
        return Err(Unfit::OneSizeClass {
            bytes: first.bytes,
            estimate_ns: first.estimate_ns.unwrap_or(0),
        });
    }
    let points: Vec<(f64, f64)> = estimated
        .iter()
        .map(|c| (c.bytes as f64, c.estimate_ns.unwrap_or(0) as f64))
        .collect();
    let line = relative_fit(&points);
    let (from, to) = (first.bytes, last.bytes);
    if line.ns_per_byte <= 0.0 {
        return Err(Unfit::NoGrowth { from, to });
    }
    if line.latency_ns <= 0.0 {
        return Err(Unfit::NoLatency {
            latency_ns: line.latency_ns,
            from,
        });
    }
    let (l, b) = (line.latency_ns, 1e9 / line.ns_per_byte);
    if !(LATENCY_RANGE_NS.0..=LATENCY_RANGE_NS.1).contains(&l) {
        return Err(Unfit::Latency { latency_ns: l });
    }
    if !(BANDWIDTH_RANGE.0..=BANDWIDTH_RANGE.1).contains(&b) {
        return Err(Unfit::Bandwidth { bytes_per_s: b });
    }
    let rms = (points
        .iter()
        .map(|&(x, y)| ((y - line.at(x as u64)) / y).powi(2))
        .sum::<f64>()
        / points.len() as f64)
        .sqrt();
    if rms > MAX_RESIDUAL {
        return Err(Unfit::Residuals { rms });
    }
    let ratio = |c: &SizeClass, v: Option<u64>| v.unwrap_or(0) as f64 / line.at(c.bytes);
    let low = estimated
        .iter()
        .map(|c| ratio(c, c.fastest_ns))
        .fold(1.0f64, f64::min);
    let high = estimated
        .iter()
        .map(|c| ratio(c, c.typical_ns).max(ratio(c, c.estimate_ns)))
        .fold(1.0f64, f64::max);
    Ok((line, Range { low, high }))
}

/// The line through the median clean transfers of the classes with an estimate, fitted
/// as the line is; none unless its latency and time per byte are positive.
fn typical_of(classes: &[SizeClass]) -> Option<Line> {
    let points: Vec<(f64, f64)> = classes
        .iter()
        .filter(|c| c.estimate_ns.is_some())
        .filter_map(|c| Some((c.bytes as f64, c.typical_ns? as f64)))
        .collect();
    let line = relative_fit(&points);
    (line.latency_ns > 0.0 && line.ns_per_byte > 0.0).then_some(line)
}

/// Least squares `y = a + b x` on relative errors: each point weighs `1 / y²`, so that
/// a class of small messages counts as much as one of large ones (plain least squares
/// lets the largest sizes set the line and leaves the latency to chance).
pub(crate) fn relative_fit(points: &[(f64, f64)]) -> Line {
    let weight = |y: f64| 1.0 / (y * y).max(1.0);
    let sw: f64 = points.iter().map(|p| weight(p.1)).sum();
    let mx = points.iter().map(|p| weight(p.1) * p.0).sum::<f64>() / sw;
    let my = points.iter().map(|p| weight(p.1) * p.1).sum::<f64>() / sw;
    let sxx: f64 = points
        .iter()
        .map(|p| weight(p.1) * (p.0 - mx).powi(2))
        .sum();
    let sxy: f64 = points
        .iter()
        .map(|p| weight(p.1) * (p.0 - mx) * (p.1 - my))
        .sum();
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    Line {
        latency_ns: my - b * mx,
        ns_per_byte: b,
    }
}

#[cfg(test)]
mod tests;
