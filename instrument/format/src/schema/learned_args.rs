//! The merged trace's form of what a rank learned of its buffers: the `args` of a
//! `buffer` instant ([`LearnedArgs`]), every field of a [`LearnedUse`] or an
//! [`Unwatched`], times in the wire's microseconds.

use std::num::NonZeroU64;

use serde::{Deserialize, Serialize};

use super::learned::{ByteRange, LearnedUse, Outcome, Touch, Unwatched, UnwatchedReason, WatchEnd};
use super::wire::Micros;

/// The `args` of a `buffer` instant of the merged trace: a watch and how it ended, or an
/// unwatched completion, every field of [`LearnedUse`] or [`Unwatched`] (times on the
/// run's timeline).
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "learned", rename_all = "snake_case", deny_unknown_fields)]
pub enum LearnedArgs {
    /// A watch whose buffer the program touched.
    Used {
        /// The request.
        request: u64,
        /// When the watch began.
        from: Micros,
        /// Bytes whose reads were watched.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reads: Option<ByteRange>,
        /// Bytes whose writes were watched.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        writes: Option<ByteRange>,
        /// The earliest the touch can have happened.
        earliest: Micros,
        /// The latest.
        latest: Micros,
        /// Read or write.
        touch: Touch,
        /// The address touched.
        addr: u64,
        /// The instruction (see [`Outcome::Used`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ip: Option<u64>,
    },
    /// A watch that ended with its buffer untouched.
    Untouched {
        /// The request.
        request: u64,
        /// When the watch began.
        from: Micros,
        /// Bytes whose reads were watched.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reads: Option<ByteRange>,
        /// Bytes whose writes were watched.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        writes: Option<ByteRange>,
        /// When it ended.
        until: Micros,
        /// Why.
        why: WatchEnd,
    },
    /// A completion whose buffer was not watched.
    Unwatched {
        /// The request.
        request: u64,
        /// When it completed.
        at: Micros,
        /// Why.
        why: UnwatchedReason,
    },
}

impl LearnedArgs {
    /// The args of a watch.
    pub fn of_use(u: &LearnedUse) -> LearnedArgs {
        let (request, from, reads, writes) = (u.request, Micros(u.from), u.reads, u.writes);
        match u.outcome {
            Outcome::Used {
                earliest,
                latest,
                touch,
                addr,
                ip,
            } => LearnedArgs::Used {
                request,
                from,
                reads,
                writes,
                earliest: Micros(earliest),
                latest: Micros(latest),
                touch,
                addr,
                ip: ip.map(NonZeroU64::get),
            },
            Outcome::Untouched { until, why } => LearnedArgs::Untouched {
                request,
                from,
                reads,
                writes,
                until: Micros(until),
                why,
            },
        }
    }

    /// The args of an unwatched completion.
    pub fn of_unwatched(u: &Unwatched) -> LearnedArgs {
        LearnedArgs::Unwatched {
            request: u.request,
            at: Micros(u.at),
            why: u.why,
        }
    }

    /// What the args hold.
    pub fn into_learned(self) -> Result<LearnedUse, Unwatched> {
        match self {
            LearnedArgs::Used {
                request,
                from,
                reads,
                writes,
                earliest,
                latest,
                touch,
                addr,
                ip,
            } => Ok(LearnedUse {
                request,
                from: from.0,
                reads,
                writes,
                outcome: Outcome::Used {
                    earliest: earliest.0,
                    latest: latest.0,
                    touch,
                    addr,
                    ip: ip.and_then(NonZeroU64::new),
                },
            }),
            LearnedArgs::Untouched {
                request,
                from,
                reads,
                writes,
                until,
                why,
            } => Ok(LearnedUse {
                request,
                from: from.0,
                reads,
                writes,
                outcome: Outcome::Untouched {
                    until: until.0,
                    why,
                },
            }),
            LearnedArgs::Unwatched { request, at, why } => Err(Unwatched {
                request,
                at: at.0,
                why,
            }),
        }
    }

    /// When the instant is: the touch's earliest time, a watch's end, or the
    /// completion.
    pub fn at(&self) -> Micros {
        match self {
            LearnedArgs::Used { earliest, .. } => *earliest,
            LearnedArgs::Untouched { until, .. } => *until,
            LearnedArgs::Unwatched { at, .. } => *at,
        }
    }

    /// The instant's name, as Perfetto shows it: "first write of the send buffer of
    /// request 17".
    pub fn title(&self) -> String {
        let which = |reads: &Option<ByteRange>| match reads {
            None => "send buffer",
            Some(_) => "receive buffer",
        };
        match self {
            LearnedArgs::Used {
                request,
                reads,
                touch,
                ..
            } => format!(
                "first {} of the {} of request {request}",
                touch.name(),
                which(reads)
            ),
            LearnedArgs::Untouched {
                request,
                reads,
                why,
                ..
            } => format!(
                "{} of request {request} untouched ({})",
                which(reads),
                why.describe()
            ),
            LearnedArgs::Unwatched { request, why, .. } => format!(
                "buffer of request {request} not watched ({})",
                why.describe()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Nanos;

    #[test]
    fn the_merged_args_round_trip_through_json() {
        let used = LearnedUse {
            request: 17,
            from: Nanos(1_000_001),
            reads: Some(ByteRange {
                addr: 0x1000,
                len: 8192,
            }),
            writes: Some(ByteRange {
                addr: 0xff0,
                len: 8300,
            }),
            outcome: Outcome::Used {
                earliest: Nanos(1_500_007),
                latest: Nanos(1_600_000),
                touch: Touch::Read,
                addr: 0x1008,
                ip: NonZeroU64::new(0x5555_0000_1234),
            },
        };
        let untouched = LearnedUse {
            reads: None,
            outcome: Outcome::Untouched {
                until: Nanos(2_000_000),
                why: WatchEnd::HandedToMpi,
            },
            ..used.clone()
        };
        let gone = Unwatched {
            request: 4,
            at: Nanos(999),
            why: UnwatchedReason::SmallerThanPage,
        };
        for args in [
            LearnedArgs::of_use(&used),
            LearnedArgs::of_use(&untouched),
            LearnedArgs::of_unwatched(&gone),
        ] {
            let text = serde_json::to_string(&args).expect("json");
            let back: LearnedArgs = serde_json::from_str(&text).expect("reads back");
            assert_eq!(back, args, "{text}");
        }
        let text = serde_json::to_string(&LearnedArgs::of_unwatched(&gone)).expect("json");
        assert_eq!(
            text,
            r#"{"learned":"unwatched","request":4,"at":0.999,"why":"smaller_than_page"}"#
        );
        assert_eq!(LearnedArgs::of_use(&used).into_learned(), Ok(used.clone()));
        assert_eq!(LearnedArgs::of_unwatched(&gone).into_learned(), Err(gone));
        assert_eq!(
            LearnedArgs::of_use(&used).title(),
            "first read of the receive buffer of request 17"
        );
        assert_eq!(
            LearnedArgs::of_use(&untouched).title(),
            "send buffer of request 17 untouched (handed to MPI again)"
        );
    }
}
