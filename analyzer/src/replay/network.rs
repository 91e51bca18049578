//! The network a replay runs on: Hockney's `latency + bytes / bandwidth` and the eager
//! limit, with a range for predictions. It comes from one of three places:
//!
//! - the trace's own clean transfers: [`TransferModel`], the one network model of the
//!   analyzer (the same that gives `t_pure`); its line is the estimate, its range the
//!   range. Without a line ([`crate::metrics::transfer::Unfit`]), the classes' own
//!   times: of the one class of the run's messages ([`NetworkSource::OneClass`]), or of
//!   each of two or more, when every class the replay transfers was measured
//!   ([`classes`], [`NetworkSource::Classes`]); otherwise the network is unknown:
//!   [`UnknownNetwork`] says why, and takes what the user gives to complete it;
//! - a model file written by `overlap run pingpong --model FILE`
//!   ([`overlap_format::network_model`]), whose measured points against its fit give the
//!   range;
//! - the user's `--latency` and `--bandwidth`: exact.
//!
//! The eager limit is the trace's ([`EagerFit`], shared with the fit), else
//! `--eager-limit`, else [`DEFAULT_EAGER_LIMIT`].

use std::path::{Path, PathBuf};

use overlap_format::network_model::{ModelError, NetworkModel};
use serde::Serialize;

mod classes;
mod given;

pub use classes::{ClassTime, ClassTimes};

use crate::metrics::eager::EagerFit;
pub use crate::metrics::eager::DEFAULT_EAGER_LIMIT;
use crate::metrics::transfer::{Line, SizeClass, TransferModel, Unfit};
use crate::model::Trace;
use given::{bandwidth_for, latency_for, ns_per_byte, points};

/// A network: per message `latency + bytes × ns_per_byte`, or its class's time where
/// the network is one of size classes; eager at or below `eager_limit` bytes,
/// rendezvous above.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Network {
    /// One-way latency of an empty message, ns (a rendezvous transfer's handshake).
    pub latency_ns: f64,
    /// Time per byte, ns: `1e9 / bandwidth`; 0 is infinite bandwidth.
    pub ns_per_byte: f64,
    /// The largest eager message, bytes.
    pub eager_limit: u64,
    /// Each size class's time as the run measured it, for a network of classes
    /// ([`NetworkSource::Classes`]): a message takes its class's time, all of it the
    /// data's (the latency and the time per byte are then 0: a rendezvous transfer's
    /// handshake takes no time apart and the whole time needs progress, as the class's
    /// clean transfers had). None on a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<ClassTimes>,
}

impl Network {
    /// Zero latency, infinite bandwidth, every message eager (buffered).
    pub fn ideal() -> Network {
        Network::line(0.0, 0.0, u64::MAX)
    }

    /// The network of the line `latency_ns + bytes × ns_per_byte`, eager up to
    /// `eager_limit` bytes.
    pub fn line(latency_ns: f64, ns_per_byte: f64, eager_limit: u64) -> Network {
        Network {
            latency_ns,
            ns_per_byte,
            eager_limit,
            classes: None,
        }
    }

    /// A network of no time, eager up to `eager_limit` bytes: for what the times do not
    /// change (whether an order deadlocks) where no network is known. Its times are not
    /// a prediction.
    pub fn timeless(eager_limit: u64) -> Network {
        Network::line(0.0, 0.0, eager_limit)
    }

    /// The latency, whole ns.
    pub fn latency(&self) -> u64 {
        self.latency_ns.max(0.0).round() as u64
    }

    /// The time `bytes` take on the wire, without the latency, ns: its class's time on
    /// a network of classes.
    pub fn data_ns(&self, bytes: u64) -> u64 {
        if let Some(classes) = &self.classes {
            return classes.ns(bytes);
        }
        (bytes as f64 * self.ns_per_byte).max(0.0).round() as u64
    }

    /// The one-way time of a `bytes` message, ns.
    pub fn transfer_ns(&self, bytes: u64) -> u64 {
        self.latency() + self.data_ns(bytes)
    }

    /// The bandwidth, bytes per second; `None` when infinite, or on a network of
    /// classes (which has none).
    pub fn bandwidth_bytes_per_s(&self) -> Option<f64> {
        (self.ns_per_byte > 0.0 && self.classes.is_none()).then(|| 1e9 / self.ns_per_byte)
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
    /// Fitted to the trace's clean transfers.
    Fitted {
        /// Messages.
        messages: u64,
        /// Of which clean transfers.
        clean: u64,
        /// Size classes with an estimate the line went through.
        classes: usize,
    },
    /// The trace's clean transfers, all of one size class (every message of the run is
    /// of that class): the class's time is known, latency and bandwidth are not told
    /// apart, and the network holds for that class only. The replay takes the whole
    /// time as the bytes' (latency 0, `estimate / bytes` per byte; a class of empty
    /// messages: all latency), so that a rendezvous transfer needs progress for all of
    /// it, as its clean transfers had.
    OneClass {
        /// The class.
        class: SizeClass,
    },
    /// The trace's clean transfers, per size class: every class of the messages the
    /// replay transfers has an estimate, but no line goes through them (`line` says
    /// why). Each message takes its class's median clean transfer (the fastest for the
    /// fast end), all of it the data's ([`Network::classes`]). Holds for the run's sizes
    /// only; given a latency or a bandwidth, it is the unknown network completed by it
    /// ([`UnknownNetwork::with_given`]).
    Classes {
        /// The classes, by size then protocol.
        classes: Vec<SizeClass>,
        /// Why there is no line.
        line: Unfit,
    },
    /// No point-to-point message between two ranks: the replay moves no message over a
    /// network (its collectives have their own costs), so it needs none; latency and
    /// bandwidth are not figures of this run (0 and 0 per byte, never used).
    NoMessages,
    /// A model file.
    File {
        /// The file.
        path: PathBuf,
    },
    /// The user's `--latency` and `--bandwidth`.
    Given,
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

/// Why a model file cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// The model file cannot be used.
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// A network the trace cannot give: why, and what it measured (the clean size classes),
/// which a latency or a bandwidth the user gives can complete
/// ([`UnknownNetwork::with_given`]).
#[derive(Clone, Debug, PartialEq, Serialize, thiserror::Error)]
#[error("the network is unknown: {reason}")]
pub struct UnknownNetwork {
    /// Why.
    #[serde(flatten)]
    pub reason: Unfit,
    /// The classes with an estimate.
    #[serde(skip)]
    classes: Vec<SizeClass>,
    /// The eager limit.
    #[serde(skip)]
    eager: (u64, EagerSource),
}

/// The eager limit: the trace's, else `given`, else the default.
fn eager_limit(fit: &EagerFit, given: Option<u64>) -> (u64, EagerSource) {
    match (fit.largest_eager, given) {
        (Some(largest_eager), _) => (
            largest_eager,
            EagerSource::Fitted {
                largest_eager,
                smallest_rendezvous: fit.smallest_rendezvous,
            },
        ),
        (None, Some(given)) => (given, EagerSource::Given),
        (None, None) => (DEFAULT_EAGER_LIMIT, EagerSource::Default),
    }
}

impl NetworkFit {
    /// The network fitted to `trace`'s clean transfers, with `eager_limit` used when the
    /// trace shows none; unknown when the fit cannot be made or is implausible.
    pub fn from_trace(
        trace: &Trace,
        eager_limit: Option<u64>,
    ) -> Result<NetworkFit, UnknownNetwork> {
        NetworkFit::from_transfers(&TransferModel::fit(trace), eager_limit)
    }

    /// [`NetworkFit::from_trace`], from the transfers already fitted to the trace: the
    /// estimate is what a transfer typically took (the line through the classes' median
    /// clean transfers, or the model's line when that one has no positive terms), the
    /// range the model's line scaled by the model's range. Without a line, the one
    /// class's time, or each class's ([`NetworkSource::Classes`]), when they do.
    pub fn from_transfers(
        t: &TransferModel,
        eager_limit: Option<u64>,
    ) -> Result<NetworkFit, UnknownNetwork> {
        let eager = self::eager_limit(&t.eager, eager_limit);
        let (Some(line), Some(range)) = (t.line(), t.range) else {
            if t.unknown == Some(Unfit::NoMessages) {
                let none = Line {
                    latency_ns: 0.0,
                    ns_per_byte: 0.0,
                };
                return Ok(NetworkFit::build(
                    [none; 3],
                    NetworkSource::NoMessages,
                    eager,
                ));
            }
            if let [class] = t.classes.as_slice() {
                if let Some(lines) = one_class(class) {
                    let source = NetworkSource::OneClass {
                        class: class.clone(),
                    };
                    return Ok(NetworkFit::build(lines, source, eager));
                }
            }
            let reason = t.unknown.clone().unwrap_or(Unfit::NoMessages);
            if let Some(fit) = NetworkFit::of_classes(t, &reason, &eager) {
                return Ok(fit);
            }
            return Err(UnknownNetwork {
                reason,
                classes: t.estimated().cloned().collect(),
                eager,
            });
        };
        let at = |f: f64| Line {
            latency_ns: line.latency_ns * f,
            ns_per_byte: line.ns_per_byte * f,
        };
        let source = NetworkSource::Fitted {
            messages: t.messages,
            clean: t.clean,
            classes: t.estimated().count(),
        };
        Ok(NetworkFit::build(
            [
                at(range.low),
                t.typical_line().unwrap_or(line),
                at(range.high),
            ],
            source,
            eager,
        ))
    }

    /// The network of a model file (`overlap run pingpong --model FILE`): its fit, and
    /// for the range the fit scaled by the smallest and the largest ratio of a measured
    /// point to it. The eager limit is `trace`'s, else `eager_limit`, else the default.
    pub fn from_file(
        path: &Path,
        trace: &Trace,
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
        let at = |f: f64| Line {
            latency_ns: m.fit.latency_ns * f,
            ns_per_byte: m.fit.ns_per_byte * f,
        };
        let source = NetworkSource::File {
            path: path.to_path_buf(),
        };
        let eager = self::eager_limit(&EagerFit::of(trace), eager_limit);
        Ok(NetworkFit::build([at(lo), at(1.0), at(hi)], source, eager))
    }

    /// The fit of `[low, mid, high]`, with its eager limit.
    fn build(lines: [Line; 3], source: NetworkSource, eager: (u64, EagerSource)) -> NetworkFit {
        let [low, mid, high] = lines.map(|l| Network::line(l.latency_ns, l.ns_per_byte, eager.0));
        NetworkFit {
            mid,
            low,
            high,
            source,
            latency_given: false,
            bandwidth_given: false,
            eager: eager.1,
        }
    }

    /// The same, with the latency and the bandwidth (bytes per second) the user gave:
    /// given values are exact, so the range keeps them fixed. A network of one size
    /// class ([`NetworkSource::OneClass`]) given one term fits the other to the class;
    /// where that is implausible (a latency longer than the class's time) it keeps its
    /// own, and takes the given one as it is. A network of classes
    /// ([`NetworkSource::Classes`]) has no line to take a term: given one, it is the
    /// unknown network that it stands in for, completed as
    /// [`UnknownNetwork::with_given`] does, and unknown (the error) where that cannot.
    pub fn with_given(
        self,
        latency_ns: Option<f64>,
        bandwidth: Option<f64>,
    ) -> Result<NetworkFit, UnknownNetwork> {
        match &self.source {
            NetworkSource::Classes { classes, line }
                if latency_ns.is_some() || bandwidth.is_some() =>
            {
                let unknown = UnknownNetwork {
                    reason: line.clone(),
                    classes: classes.clone(),
                    eager: (self.mid.eager_limit, self.eager.clone()),
                };
                unknown.with_given(latency_ns, bandwidth)
            }
            _ => Ok(self.given(latency_ns, bandwidth)),
        }
    }

    /// [`NetworkFit::with_given`] on a line.
    fn given(mut self, latency_ns: Option<f64>, bandwidth: Option<f64>) -> NetworkFit {
        if let (NetworkSource::OneClass { class }, false) =
            (&self.source, latency_ns.is_some() && bandwidth.is_some())
        {
            let fitted = match (latency_ns, bandwidth) {
                (Some(l), None) => bandwidth_for(std::slice::from_ref(class), l).ok(),
                (None, Some(b)) => latency_for(std::slice::from_ref(class), ns_per_byte(b)).ok(),
                _ => None,
            };
            if let Some([low, mid, high]) = fitted {
                for (n, l) in [
                    (&mut self.low, low),
                    (&mut self.mid, mid),
                    (&mut self.high, high),
                ] {
                    n.latency_ns = l.latency_ns;
                    n.ns_per_byte = l.ns_per_byte;
                }
            }
        }
        for n in [&mut self.mid, &mut self.low, &mut self.high] {
            if let Some(l) = latency_ns {
                n.latency_ns = l;
            }
            if let Some(b) = bandwidth {
                n.ns_per_byte = ns_per_byte(b);
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

    /// The range of the one-way time of a `bytes` message, ns: the fast end's and the
    /// slow end's (what a figure resting on one message's transfer cannot tell apart).
    pub fn transfer_range(&self, bytes: u64) -> (u64, u64) {
        let (a, b) = (self.low.transfer_ns(bytes), self.high.transfer_ns(bytes));
        (a.min(b), a.max(b))
    }
}

impl UnknownNetwork {
    /// The eager limit the trace shows (else the user's, else the default): what an
    /// order's protocols are, with no network to time them.
    pub fn eager_limit(&self) -> u64 {
        self.eager.0
    }

    /// The network with what the user gave: both terms exact; one term, the other
    /// fitted through the trace's class estimates with it fixed (least squares on
    /// relative errors, the range from the classes' fastest and median clean
    /// transfers), when that is plausible; still unknown otherwise.
    pub fn with_given(
        self,
        latency_ns: Option<f64>,
        bandwidth: Option<f64>,
    ) -> Result<NetworkFit, UnknownNetwork> {
        let lines = match (latency_ns, bandwidth) {
            (Some(l), Some(b)) => {
                let line = Line {
                    latency_ns: l,
                    ns_per_byte: ns_per_byte(b),
                };
                return Ok(
                    NetworkFit::build([line; 3], NetworkSource::Given, self.eager)
                        .given(latency_ns, bandwidth),
                );
            }
            // Nothing measured to fit the other term to: the reason stands.
            _ if self.classes.is_empty() => return Err(self),
            (Some(l), None) => bandwidth_for(&self.classes, l),
            (None, Some(b)) => latency_for(&self.classes, ns_per_byte(b)),
            (None, None) => return Err(self),
        };
        match lines {
            Ok(lines) => {
                let source = NetworkSource::Fitted {
                    messages: self.classes.iter().map(|c| c.messages).sum(),
                    clean: self.classes.iter().map(|c| c.clean).sum(),
                    classes: self.classes.len(),
                };
                Ok(NetworkFit::build(lines, source, self.eager.clone())
                    .given(latency_ns, bandwidth))
            }
            Err(reason) => Err(UnknownNetwork { reason, ..self }),
        }
    }
}

/// The lines of one class's time all given to its bytes (or, for empty messages, to the
/// latency): its fastest clean transfer, its median (the estimate of a transfer in the
/// run), and its median again for the slow end.
fn one_class(class: &SizeClass) -> Option<[Line; 3]> {
    let (bytes, [fastest, _, typical]) = points(std::slice::from_ref(class)).next()?;
    Some([fastest, typical, typical].map(|t| {
        if bytes > 0.0 {
            Line {
                latency_ns: 0.0,
                ns_per_byte: t / bytes,
            }
        } else {
            Line {
                latency_ns: t,
                ns_per_byte: 0.0,
            }
        }
    }))
}

#[cfg(test)]
mod tests;
