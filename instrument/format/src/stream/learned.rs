//! The learned-uses frame: what the program did with each completed request's buffer
//! (`overlap trace --buffers`, [`crate::schema::LearnedUse`]), and the completions whose
//! buffers were not watched ([`crate::schema::Unwatched`]).
//!
//! A watch ends long after the call that armed it (at the buffer's first touch, or when
//! it is handed to MPI again), often on another thread than the one that completed the
//! request, so its record belongs to the rank, not to a thread's events: the recorder
//! keeps the records made since its last drain and the writer puts them in a frame of
//! their own, as it does the bindings ([`super::buffers`]). Times in the frame are stamps
//! in the file's clock, converted by the reader.
//!
//! ```text
//! payload   := record*                                                   (LE)
//! record    := 1 u8 | request u64 | from u64 | reads range | writes range | outcome
//!            | 2 u8 | request u64 | at u64 | reason u8                   (unwatched)
//! range     := addr u64 | len u64                                        (len 0: none)
//! outcome   := 1 u8 | earliest u64 | latest u64 | touch u8 | addr u64 | ip u64
//!            | 2 u8 | until u64 | end u8
//! ```
//!
//! `touch` is 1 read, 2 write; `ip` 0 when unknown; `reason` and `end` are the
//! position, from 1, of the value in [`UnwatchedReason::ALL`] and [`WatchEnd::ALL`].

use std::num::NonZeroU64;

use super::convert::Converter;
use super::read::Problem;
use super::varint::{DecodeError, Reader};
use crate::schema::{
    ByteRange, LearnedUse, Nanos, Outcome, Touch, Unwatched, UnwatchedReason, WatchEnd,
};

/// What one record of a learned-uses frame holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Learned {
    /// A watch and how it ended.
    Watch(LearnedUse),
    /// A completion whose buffer was not watched.
    Unwatched(Unwatched),
}

const WATCH: u8 = 1;
const UNWATCHED: u8 = 2;
const USED: u8 = 1;
const UNTOUCHED: u8 = 2;

/// The most bytes one record takes.
pub const LEARNED_RECORD_MAX: usize = 1 + 8 * 6 + 1 + 8 * 2 + 1 + 8 * 2;

fn put(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_range(out: &mut Vec<u8>, r: Option<ByteRange>) {
    let r = r
        .filter(|r| r.len > 0)
        .unwrap_or(ByteRange { addr: 0, len: 0 });
    put(out, r.addr);
    put(out, r.len);
}

/// The wire code of `v` among `all`: its position, from 1.
fn code<T: PartialEq>(all: &[T], v: &T) -> u8 {
    all.iter().position(|a| a == v).map_or(0, |i| i as u8 + 1)
}

/// Appends a watch's record; its times are stamps in the file's clock.
pub fn push_watch(out: &mut Vec<u8>, w: &LearnedUse) {
    out.push(WATCH);
    put(out, w.request);
    put(out, w.from.0);
    put_range(out, w.reads);
    put_range(out, w.writes);
    match w.outcome {
        Outcome::Used {
            earliest,
            latest,
            touch,
            addr,
            ip,
        } => {
            out.push(USED);
            put(out, earliest.0);
            put(out, latest.0);
            out.push(match touch {
                Touch::Read => 1,
                Touch::Write => 2,
            });
            put(out, addr);
            put(out, ip.map_or(0, NonZeroU64::get));
        }
        Outcome::Untouched { until, why } => {
            out.push(UNTOUCHED);
            put(out, until.0);
            out.push(code(&WatchEnd::ALL, &why));
        }
    }
}

/// Appends an unwatched completion's record; its time is a stamp in the file's clock.
pub fn push_unwatched(out: &mut Vec<u8>, u: &Unwatched) {
    out.push(UNWATCHED);
    put(out, u.request);
    put(out, u.at.0);
    out.push(code(&UnwatchedReason::ALL, &u.why));
}

/// The records of a frame's payload, times as stamps, or why it cannot be read (all or
/// nothing: the frame passed its checksum, so a bad one was never written by overlap).
pub fn decode(payload: &[u8]) -> Result<Vec<Learned>, String> {
    let mut r = Reader::new(payload);
    let mut out = Vec::new();
    while !r.is_empty() {
        out.push(record(&mut r)?);
    }
    Ok(out)
}

/// The value of wire code `c` among `all`.
fn of<T: Copy>(all: &[T], c: u8, what: &str) -> Result<T, String> {
    (c as usize)
        .checked_sub(1)
        .and_then(|i| all.get(i).copied())
        .ok_or_else(|| format!("a learned-uses frame holds an unknown {what} code {c}"))
}

fn record(r: &mut Reader<'_>) -> Result<Learned, String> {
    let cut = |e: DecodeError| format!("a learned-uses frame is cut inside a record ({e:?})");
    let u64_ = |r: &mut Reader<'_>| -> Result<u64, String> {
        let b = r.take(8).map_err(cut)?;
        Ok(super::le_u64(b, 0))
    };
    let byte = |r: &mut Reader<'_>| -> Result<u8, String> { Ok(r.take(1).map_err(cut)?[0]) };
    match byte(r)? {
        WATCH => {
            let request = u64_(r)?;
            let from = Nanos(u64_(r)?);
            let range = |r: &mut Reader<'_>| -> Result<Option<ByteRange>, String> {
                let (addr, len) = (u64_(r)?, u64_(r)?);
                Ok((len > 0).then_some(ByteRange { addr, len }))
            };
            let reads = range(r)?;
            let writes = range(r)?;
            let outcome = match byte(r)? {
                USED => {
                    let earliest = Nanos(u64_(r)?);
                    let latest = Nanos(u64_(r)?);
                    let touch = match byte(r)? {
                        1 => Touch::Read,
                        2 => Touch::Write,
                        c => return Err(format!("a learned-uses frame holds touch code {c}")),
                    };
                    Outcome::Used {
                        earliest,
                        latest,
                        touch,
                        addr: u64_(r)?,
                        ip: NonZeroU64::new(u64_(r)?),
                    }
                }
                UNTOUCHED => Outcome::Untouched {
                    until: Nanos(u64_(r)?),
                    why: of(&WatchEnd::ALL, byte(r)?, "watch end")?,
                },
                c => return Err(format!("a learned-uses frame holds outcome code {c}")),
            };
            Ok(Learned::Watch(LearnedUse {
                request,
                from,
                reads,
                writes,
                outcome,
            }))
        }
        UNWATCHED => Ok(Learned::Unwatched(Unwatched {
            request: u64_(r)?,
            at: Nanos(u64_(r)?),
            why: of(&UnwatchedReason::ALL, byte(r)?, "unwatched reason")?,
        })),
        c => Err(format!("a learned-uses frame holds record kind {c}")),
    }
}

/// The records of one frame with their stamps converted, or the problem that leaves the
/// frame out (`offset` is the frame's, `events` the events read before it).
pub(super) fn convert(
    payload: &[u8],
    converter: &Converter,
    offset: u64,
    events: u64,
) -> Result<Vec<Learned>, Problem> {
    let raw = decode(payload).map_err(|reason| Problem {
        offset,
        event_index: events,
        reason,
    })?;
    let nanos = |n: Nanos| converter.nanos(n.0);
    Ok(raw
        .into_iter()
        .map(|l| match l {
            Learned::Watch(w) => Learned::Watch(w.map_times(nanos)),
            Learned::Unwatched(u) => Learned::Unwatched(u.map_times(nanos)),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used() -> LearnedUse {
        LearnedUse {
            request: 17,
            from: Nanos(100),
            reads: None,
            writes: Some(ByteRange {
                addr: 0x7f00_0000_1010,
                len: 65536,
            }),
            outcome: Outcome::Used {
                earliest: Nanos(250),
                latest: Nanos(250),
                touch: Touch::Write,
                addr: 0x7f00_0000_2000,
                ip: NonZeroU64::new(0x5555_1234),
            },
        }
    }

    fn untouched() -> LearnedUse {
        LearnedUse {
            request: 18,
            from: Nanos(120),
            reads: Some(ByteRange {
                addr: 0x1000,
                len: 8192,
            }),
            writes: Some(ByteRange {
                addr: 0xff0,
                len: 8208,
            }),
            outcome: Outcome::Untouched {
                until: Nanos(900),
                why: WatchEnd::HandedToMpi,
            },
        }
    }

    #[test]
    fn records_round_trip() {
        let gone = Unwatched {
            request: 19,
            at: Nanos(130),
            why: UnwatchedReason::SharedWithWatched,
        };
        let mut p = Vec::new();
        push_watch(&mut p, &used());
        push_watch(&mut p, &untouched());
        push_unwatched(&mut p, &gone);
        assert!(p.len() <= 3 * LEARNED_RECORD_MAX);
        assert_eq!(
            decode(&p).expect("decodes"),
            vec![
                Learned::Watch(used()),
                Learned::Watch(untouched()),
                Learned::Unwatched(gone)
            ]
        );
        let unknown_ip = LearnedUse {
            outcome: Outcome::Used {
                earliest: Nanos(1),
                latest: Nanos(5),
                touch: Touch::Read,
                addr: 8,
                ip: None,
            },
            ..used()
        };
        let mut q = Vec::new();
        push_watch(&mut q, &unknown_ip);
        assert_eq!(decode(&q), Ok(vec![Learned::Watch(unknown_ip)]));
    }

    #[test]
    fn every_reason_and_end_has_a_code() {
        for (i, why) in UnwatchedReason::ALL.iter().enumerate() {
            assert_eq!(code(&UnwatchedReason::ALL, why) as usize, i + 1);
            assert_eq!(UnwatchedReason::from_name(why.name()), Some(*why));
        }
        for w in WatchEnd::ALL {
            assert_eq!(WatchEnd::from_name(w.name()), Some(w));
        }
    }

    #[test]
    fn a_cut_or_unknown_record_is_refused() {
        let mut p = Vec::new();
        push_watch(&mut p, &used());
        for cut in [1, 9, p.len() - 1] {
            let e = decode(&p[..cut]).expect_err("cut");
            assert!(e.contains("cut inside a record"), "{e}");
        }
        let mut bad = p.clone();
        bad[0] = 9;
        assert!(decode(&bad).expect_err("kind").contains("record kind 9"));
        let mut q = Vec::new();
        push_unwatched(
            &mut q,
            &Unwatched {
                request: 1,
                at: Nanos(2),
                why: UnwatchedReason::Limit,
            },
        );
        let last = q.len() - 1;
        q[last] = 0;
        assert!(decode(&q)
            .expect_err("code")
            .contains("unknown unwatched reason"));
    }

    /// A stream with two learned-uses frames, then a third cut short by the end of the
    /// file: the first two are read (stamps are monotonic ns, so times are unchanged),
    /// the cut one is left out and said.
    #[test]
    fn a_stream_carries_the_frames_and_a_cut_one_is_left_out() {
        use crate::stream::{file_start, frame, read, Collected, FrameKind, StampClock};
        let mut out = file_start(&super::super::tests::header());
        let clock = [StampClock::Monotonic as u8];
        frame(&mut out, FrameKind::Clock, 0, &[&clock]);
        let mut one = Vec::new();
        push_watch(&mut one, &used());
        frame(&mut out, FrameKind::Learned, 0, &[&one]);
        let gone = Unwatched {
            request: 3,
            at: Nanos(40),
            why: UnwatchedReason::SmallerThanPage,
        };
        let mut two = Vec::new();
        push_unwatched(&mut two, &gone);
        push_watch(&mut two, &untouched());
        frame(&mut out, FrameKind::Learned, 0, &[&two]);
        let whole = out.len();
        frame(&mut out, FrameKind::Learned, 0, &[&one]);
        out.truncate(whole + 20);
        let mut got = Collected::new();
        let problems = read(&out, &mut got).expect("readable");
        assert_eq!(got.learned, vec![used(), untouched()]);
        assert_eq!(got.unwatched, vec![gone]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].reason.contains("cut short"), "{problems:?}");
    }
}
