//! The network a replay runs on: Hockney's `latency + bytes / bandwidth` and the eager
//! limit, with a range for predictions. It comes from one of two places:
//!
//! - the trace's own messages: [`TransferModel`] (the one fit of transfer times the
//!   analyzer has): the typical transfer of each size class for the estimate, the
//!   fastest for the fast end of the range;
//! - a model file written by `overlap run pingpong --model FILE`
//!   ([`overlap_format::network_model`]), whose measured points against its fit give the
//!   range.
//!
//! The eager limit is fitted from the trace when it shows one: a send that completed
//! before its receive was posted was eager; a send whose completion was entered before
//! the receive was posted and left after it waited for the receiver (rendezvous). The
//! limit is the largest eager size; else `--eager-limit`; else [`DEFAULT_EAGER_LIMIT`].
//!
//! ```text
//!  r0 |Isend 64K|Wait|..........          eager: the Wait ended (2) before the
//!  r1 |c 0 ------------ 5|Irecv|Wait|     Irecv was posted (5): 64 KiB <= limit
//! ```

use std::path::{Path, PathBuf};

use overlap_format::network_model::{ModelError, NetworkModel};
use serde::Serialize;

use crate::metrics::transfer::TransferModel;
use crate::model::Trace;
use crate::ops::{OpKind, Program};

/// The eager limit assumed when neither the trace nor the user says: 64 KiB, the order
/// of MPICH's eager thresholds (ch3 switches to rendezvous above 128 KiB, its
/// shared-memory paths lower). Replays say when they assumed it ([`EagerSource`]).
pub const DEFAULT_EAGER_LIMIT: u64 = 64 * 1024;

/// A network: per message `latency + bytes × ns_per_byte`; eager at or below
/// `eager_limit` bytes, rendezvous above.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Network {
    /// One-way latency of an empty message, ns.
    pub latency_ns: f64,
    /// Time per byte, ns: `1e9 / bandwidth`; 0 is infinite bandwidth.
    pub ns_per_byte: f64,
    /// The largest eager message, bytes.
    pub eager_limit: u64,
}

impl Network {
    /// Zero latency, infinite bandwidth, every message eager (buffered).
    pub fn ideal() -> Network {
        Network {
            latency_ns: 0.0,
            ns_per_byte: 0.0,
            eager_limit: u64::MAX,
        }
    }

    /// The latency, whole ns.
    pub fn latency(&self) -> u64 {
        self.latency_ns.max(0.0).round() as u64
    }

    /// The time `bytes` take on the wire, without the latency, ns.
    pub fn data_ns(&self, bytes: u64) -> u64 {
        (bytes as f64 * self.ns_per_byte).max(0.0).round() as u64
    }

    /// The one-way time of a `bytes` message, ns.
    pub fn transfer_ns(&self, bytes: u64) -> u64 {
        self.latency() + self.data_ns(bytes)
    }

    /// The bandwidth, bytes per second; `None` when infinite.
    pub fn bandwidth_bytes_per_s(&self) -> Option<f64> {
        (self.ns_per_byte > 0.0).then(|| 1e9 / self.ns_per_byte)
    }
}

/// Where the eager limit came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum EagerSource {
    /// Fitted from the trace: the largest message seen eager, and the smallest larger
    /// one seen waiting for its receiver (when one was).
    Fitted {
        /// Largest eager size, bytes.
        largest_eager: u64,
        /// Smallest larger size that waited for its receive, bytes.
        smallest_rendezvous: Option<u64>,
    },
    /// Given by the user (`--eager-limit`).
    Given,
    /// Neither: [`DEFAULT_EAGER_LIMIT`].
    Default,
}

/// Where latency and bandwidth came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum NetworkSource {
    /// Fitted to the trace's messages.
    Fitted {
        /// Messages the fit used.
        messages: u64,
        /// Size classes observed.
        classes: usize,
    },
    /// A model file.
    File {
        /// The file.
        path: PathBuf,
    },
}

/// A network with its range and where each part came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NetworkFit {
    /// The best estimate.
    pub mid: Network,
    /// The fast end of the range (lowest latency and time per byte).
    pub low: Network,
    /// The slow end.
    pub high: Network,
    /// Where latency and bandwidth came from.
    pub source: NetworkSource,
    /// The latency was given by the user (the range keeps it fixed).
    pub latency_given: bool,
    /// The bandwidth was given by the user.
    pub bandwidth_given: bool,
    /// Where the eager limit came from.
    pub eager: EagerSource,
}

/// Why a network cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// The model file cannot be used.
    #[error(transparent)]
    Model(#[from] ModelError),
}

impl NetworkFit {
    /// The network fitted to `trace`'s messages (`program` is its program), with
    /// `eager_limit` used when the trace shows none. The best estimate is the line
    /// through each size class's typical transfer ([`TransferModel::typical`]); the fast
    /// end the line through the fastest ones ([`TransferModel::fit`]); the slow end the
    /// best estimate scaled by the largest ratio of a class's typical transfer to it.
    pub fn from_trace(trace: &Trace, program: &Program, eager_limit: Option<u64>) -> NetworkFit {
        NetworkFit::from_transfers(&TransferModel::fit(trace), program, eager_limit)
    }

    /// [`NetworkFit::from_trace`], from the transfers already fitted to the trace
    /// (`program` is its program).
    pub fn from_transfers(
        t: &TransferModel,
        program: &Program,
        eager_limit: Option<u64>,
    ) -> NetworkFit {
        let typical = t.typical();
        let mid = (typical.latency_ns, typical.ns_per_byte);
        let fastest = (
            t.latency_ns,
            t.bandwidth_bytes_per_s.map_or(0.0, |b| 1e9 / b),
        );
        let low = (fastest.0.min(mid.0), fastest.1.min(mid.1));
        let line = |bytes: u64| mid.0 + mid.1 * bytes as f64;
        let slow = t
            .classes
            .iter()
            .map(|c| (line(c.bytes), c.typical_ns.unwrap_or(c.min_ns) as f64))
            .filter(|(l, _)| *l > 0.0)
            .map(|(l, seen)| seen / l)
            .fold(1.0f64, f64::max);
        let messages = t.classes.iter().map(|c| c.messages).sum();
        let classes = t.classes.len();
        NetworkFit::build(
            [low, mid, (mid.0 * slow, mid.1 * slow)],
            NetworkSource::Fitted { messages, classes },
            program,
            eager_limit,
        )
    }

    /// The network of a model file (`overlap run pingpong --model FILE`): its fit, and
    /// for the range the fit scaled by the smallest and the largest ratio of a measured
    /// point to it.
    pub fn from_file(
        path: &Path,
        program: &Program,
        eager_limit: Option<u64>,
    ) -> Result<NetworkFit, NetworkError> {
        let m = NetworkModel::read(path)?;
        let (mut lo, mut hi) = (1.0f64, 1.0f64);
        for p in &m.points {
            let line = m.fit.at(p.bytes);
            if line > 0.0 {
                lo = lo.min(p.latency_ns / line);
                hi = hi.max(p.latency_ns / line);
            }
        }
        let at = |f: f64| (m.fit.latency_ns * f, m.fit.ns_per_byte * f);
        Ok(NetworkFit::build(
            [at(lo), at(1.0), at(hi)],
            NetworkSource::File {
                path: path.to_path_buf(),
            },
            program,
            eager_limit,
        ))
    }

    /// The fit of `[low, mid, high]` (latency ns, ns per byte each), with its eager limit.
    fn build(
        lines: [(f64, f64); 3],
        source: NetworkSource,
        program: &Program,
        eager_limit: Option<u64>,
    ) -> NetworkFit {
        let (eager_limit, eager) = match (fit_eager_limit(program), eager_limit) {
            (Some((largest_eager, smallest_rendezvous)), _) => (
                largest_eager,
                EagerSource::Fitted {
                    largest_eager,
                    smallest_rendezvous,
                },
            ),
            (None, Some(given)) => (given, EagerSource::Given),
            (None, None) => (DEFAULT_EAGER_LIMIT, EagerSource::Default),
        };
        let [low, mid, high] = lines.map(|(latency_ns, ns_per_byte)| Network {
            latency_ns,
            ns_per_byte,
            eager_limit,
        });
        NetworkFit {
            mid,
            low,
            high,
            source,
            latency_given: false,
            bandwidth_given: false,
            eager,
        }
    }

    /// The same, with the latency and the bandwidth (bytes per second) the user gave:
    /// given values are exact, so the range keeps them fixed.
    pub fn with_given(mut self, latency_ns: Option<f64>, bandwidth: Option<f64>) -> NetworkFit {
        for n in [&mut self.mid, &mut self.low, &mut self.high] {
            if let Some(l) = latency_ns {
                n.latency_ns = l;
            }
            if let Some(b) = bandwidth {
                n.ns_per_byte = if b.is_infinite() { 0.0 } else { 1e9 / b };
            }
        }
        self.latency_given |= latency_ns.is_some();
        self.bandwidth_given |= bandwidth.is_some();
        self
    }

    /// The same with the eager limit the user gave, over any fitted one.
    pub fn with_eager_limit(mut self, bytes: u64) -> NetworkFit {
        for n in [&mut self.mid, &mut self.low, &mut self.high] {
            n.eager_limit = bytes;
        }
        self.eager = EagerSource::Given;
        self
    }
}

/// The eager limit the program's messages show: the largest message whose send
/// completed before its receive was posted, and the smallest larger one whose send
/// completion was entered before the receive was posted and left after it; `None` when
/// no send was seen complete before its receive.
pub fn fit_eager_limit(program: &Program) -> Option<(u64, Option<u64>)> {
    let mut eager: Option<u64> = None;
    let mut waited: Vec<u64> = Vec::new();
    for m in &program.messages {
        let (Some(sender), Some(receiver)) = (program.rank(m.from().0), program.rank(m.to().0))
        else {
            continue;
        };
        let (Some(send), Some(recv)) = (sender.ops.get(m.from().1), receiver.ops.get(m.to().1))
        else {
            continue;
        };
        let completion = match &send.kind {
            OpKind::Blocking { .. } => Some(send),
            OpKind::Post { request } => program
                .requests
                .get(*request)
                .and_then(|r| r.complete())
                .and_then(|c| sender.ops.get(c)),
            _ => None,
        };
        let Some(c) = completion else { continue };
        let posted = recv.measured_start_ns;
        if c.measured_end_ns < posted {
            eager = Some(eager.map_or(m.bytes, |e| e.max(m.bytes)));
        } else if c.measured_start_ns < posted {
            waited.push(m.bytes);
        }
    }
    let largest = eager?;
    let rendezvous = waited.into_iter().filter(|&b| b > largest).min();
    Some((largest, rendezvous))
}
