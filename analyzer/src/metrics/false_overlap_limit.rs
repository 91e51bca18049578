//! Where a wait can move: the first work after it that may touch a buffer of the
//! requests it completed, by [`crate::dependence`]'s rule (the one the reordering of
//! `overlap suggest` uses), walked over the waiting thread's work as the operations
//! model sees it: its calls, its compute spans, and for a thread without spans the gaps
//! between its calls (inferred compute).
//!
//! Two points come out: the *proven* one, before the first work not proven to leave the
//! buffers alone (unknown compute counts), and the *possible* one, before the first
//! recorded use (an MPI call naming an overlapping buffer, a declared span, the first
//! touch the buffer watch learned). A gap is cut at the first touches of the wait's own
//! buffers known inside it ([`dependence::cuts_inside`], as the operations' gaps are):
//! the point can be the touch itself. A report names a unit of compute by
//! [`ComputeRef`], a part of a gap with the touches that bound it ([`FirstUse`]).
//!
//! ```text
//!  |Waitall s|gap A|Allreduce|gap B .. first write of s at 50 ..|Isend s|
//!  watched (s's writes), touch in gap B:  proven: before the write, inside gap B
//!                                         (gap B cut at 50); possible: the same
//!  nothing learned:                       proven: before gap A (no move);
//!                                         possible: before Isend s, if gaps A and B
//!                                         do not write s
//! ```

use std::collections::VecDeque;

use overlap_format::schema::{LearnedUse, Outcome, Touch};
use serde::Serialize;

use super::CallRef;
use crate::dependence::{self, Effect, Evidence, Guard, Mode, TouchCut};
use crate::model::{Buffer, Timeline, Trace, What};

/// Why the wait cannot move further.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The next MPI call that names an overlapping buffer.
    BufferReuse,
    /// No buffer address recorded: the next send to the same peer and tag.
    SamePeerAndTag,
    /// The first touch of the buffer the watch learned (`overlap trace --buffers`).
    LearnedUse,
    /// A compute span that declared it writes the buffer (reads it, for a receive).
    DeclaredUse,
    /// Compute whose effect on the buffer is unknown (the proven point only).
    UnknownCompute,
    /// Nothing later depends on it in the trace.
    EndOfTrace,
}

impl Limit {
    /// The key in JSON and tables.
    pub fn key(self) -> &'static str {
        match self {
            Limit::BufferReuse => "buffer_reuse",
            Limit::SamePeerAndTag => "same_peer_and_tag",
            Limit::LearnedUse => "learned_use",
            Limit::DeclaredUse => "declared_use",
            Limit::UnknownCompute => "unknown_compute",
            Limit::EndOfTrace => "end_of_trace",
        }
    }

    pub(super) fn of(effect: Effect, by_peer_and_tag: bool) -> Limit {
        match effect {
            Effect::Touches(Evidence::Mpi) if by_peer_and_tag => Limit::SamePeerAndTag,
            Effect::Touches(Evidence::Mpi) => Limit::BufferReuse,
            Effect::Touches(Evidence::Learned) => Limit::LearnedUse,
            Effect::Touches(Evidence::Declared) => Limit::DeclaredUse,
            Effect::Unknown => Limit::UnknownCompute,
            Effect::Free => Limit::EndOfTrace,
        }
    }
}

impl Serialize for Limit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.key())
    }
}

/// A limit is read back from its [`Limit::key`].
impl<'de> serde::Deserialize<'de> for Limit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const ALL: [Limit; 6] = [
            Limit::BufferReuse,
            Limit::SamePeerAndTag,
            Limit::LearnedUse,
            Limit::DeclaredUse,
            Limit::UnknownCompute,
            Limit::EndOfTrace,
        ];
        let key = String::deserialize(d)?;
        (ALL.into_iter().find(|l| l.key() == key))
            .ok_or_else(|| serde::de::Error::custom(format!("no limit is called {key}")))
    }
}

/// Compute of a rank: a span, or the gap between two MPI calls (inferred compute).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ComputeRef {
    /// The span's name; none for a gap.
    pub name: Option<String>,
    /// Start, ns since the run's start.
    pub start_ns: u64,
    /// Duration, ns.
    pub duration_ns: u64,
    /// For a gap: the call before it.
    pub after: Option<CallRef>,
    /// For a gap: the call after it (none: the end of the rank's work).
    pub until: Option<CallRef>,
    /// For a part of a gap cut at the learned first touches of the wait's buffers: the
    /// touch it starts at (the part runs from it on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_touch: Option<FirstUse>,
    /// The touch it ends at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_touch: Option<FirstUse>,
}

/// The first touch of a buffer the watch learned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FirstUse {
    /// Read or write.
    #[serde(serialize_with = "touch_key")]
    pub touch: Touch,
    /// The instruction (a code address), when known.
    pub ip: Option<u64>,
    /// Where it is in the source (`file:line`, or a library's function), when it could be
    /// symbolized.
    pub site: Option<String>,
}

impl FirstUse {
    /// The first touch of `u`, when it had one.
    pub(super) fn of(u: &LearnedUse) -> Option<FirstUse> {
        match u.outcome {
            Outcome::Used { touch, ip, .. } => Some(FirstUse {
                touch,
                ip: ip.map(|i| i.get()),
                site: None,
            }),
            Outcome::Untouched { .. } => None,
        }
    }
}

fn touch_key<S: serde::Serializer>(t: &Touch, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match t {
        Touch::Read => "read",
        Touch::Write => "write",
    })
}

impl ComputeRef {
    pub(super) fn touches(&mut self) -> [&mut Option<FirstUse>; 2] {
        [&mut self.from_touch, &mut self.to_touch]
    }
}

/// The rank's compute `p` as a report names it.
pub(super) fn compute_ref(trace: &Trace, t: &Timeline, p: &Placed) -> Option<ComputeRef> {
    let rank = t.rank;
    match p.unit {
        Unit::Call(_) => None,
        Unit::Span(i) => {
            let What::Compute(id) = t.spans.get(i)?.what else {
                return None;
            };
            Some(ComputeRef {
                name: Some(t.name(id).to_string()),
                start_ns: p.start,
                duration_ns: p.end - p.start,
                after: None,
                until: None,
                from_touch: None,
                to_touch: None,
            })
        }
        Unit::Gap {
            after,
            until,
            from,
            to,
        } => {
            let touch = |k: Option<usize>| t.learned.get(k?).and_then(FirstUse::of);
            Some(ComputeRef {
                name: None,
                start_ns: p.start,
                duration_ns: p.end - p.start,
                after: CallRef::of(trace, rank, after),
                until: until.and_then(|u| CallRef::of(trace, rank, u)),
                from_touch: touch(from),
                to_touch: touch(to),
            })
        }
    }
}

/// A unit of the waiting thread's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unit {
    /// An MPI call (its span).
    Call(usize),
    /// A compute span.
    Span(usize),
    /// The gap after the call `after` until the call `until` (none: the end), or its
    /// part from the first touch of learned use `from` (an index in the timeline's
    /// `learned`) to that of `to`, where it was cut.
    Gap {
        after: usize,
        until: Option<usize>,
        from: Option<usize>,
        to: Option<usize>,
    },
}

/// A unit with its time.
#[derive(Clone, Copy, Debug)]
pub(super) struct Placed {
    pub unit: Unit,
    pub start: u64,
    pub end: u64,
}

impl Placed {
    /// The span index the unit is at or just before (for names and the call before it).
    pub fn index(&self) -> usize {
        match self.unit {
            Unit::Call(i) | Unit::Span(i) => i,
            Unit::Gap { until, after, .. } => until.unwrap_or(after + 1),
        }
    }
}

/// The units of the waiting thread after its wait, in program order, made as they are
/// asked for (a walk stops at the first unit that holds the move back).
pub(super) struct Walk<'t> {
    t: &'t Timeline,
    tid: u32,
    /// The thread recorded no compute span: its compute is the gaps between its calls.
    gaps: bool,
    /// The end of the rank's analysed part.
    hi: u64,
    /// Where its gaps are cut: the first touches of the wait's buffers, by time.
    cuts: Vec<TouchCut>,
    next: usize,
    prev_end: u64,
    prev_call: usize,
    /// The units found and not given yet (a gap's parts, then the span after it).
    pending: VecDeque<Placed>,
    ended: bool,
}

impl<'t> Walk<'t> {
    /// The units of the thread of call `from` of `t` after it, up to `hi`, its gaps cut
    /// at the first touches of `watches` (indices in `t.learned`); `gaps`: the thread
    /// recorded no compute span, so its compute is the gaps between its calls.
    pub(super) fn after(
        t: &'t Timeline,
        from: usize,
        hi: u64,
        gaps: bool,
        watches: impl Iterator<Item = usize>,
    ) -> Walk<'t> {
        let (tid, end) = t.spans.get(from).map_or((0, 0), |w| (w.tid, w.end.0));
        let mut cuts: Vec<TouchCut> = watches
            .filter_map(|k| dependence::touch_cut(k, t.learned.get(k)?))
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        Walk {
            t,
            tid,
            gaps,
            hi,
            cuts,
            next: from + 1,
            prev_end: end,
            prev_call: from,
            pending: VecDeque::new(),
            ended: from >= t.spans.len(),
        }
    }

    /// Queues the gap `[from, to)` before the call `until`, part by part.
    fn queue_gap(&mut self, (from, to): (u64, u64), until: Option<usize>) {
        let cuts: Vec<TouchCut> =
            dependence::cuts_inside(&self.cuts, (from, to), |_| true).collect();
        // Each part's start and end, each a touch or the gap's own.
        let ends = (cuts.iter().map(|c| (c.at, Some(c.learned)))).chain([(to, None)]);
        let mut start = (from, None);
        for end in ends {
            self.pending.push_back(Placed {
                unit: Unit::Gap {
                    after: self.prev_call,
                    until,
                    from: start.1,
                    to: end.1,
                },
                start: start.0,
                end: end.0,
            });
            start = end;
        }
    }
}

impl Iterator for Walk<'_> {
    type Item = Placed;

    fn next(&mut self) -> Option<Placed> {
        if let Some(p) = self.pending.pop_front() {
            return Some(p);
        }
        while let Some(s) = self.t.spans.get(self.next) {
            let i = self.next;
            self.next += 1;
            if s.tid != self.tid || s.start.0 >= self.hi {
                continue;
            }
            let compute = matches!(s.what, What::Compute(_));
            if compute && s.end.0 <= self.prev_end {
                continue; // nested inside the compute before it
            }
            if self.gaps && s.start.0 > self.prev_end {
                self.queue_gap((self.prev_end, s.start.0), Some(i));
            }
            let start = s.start.0.max(self.prev_end);
            let end = s.end.0.max(start);
            let unit = if compute {
                Unit::Span(i)
            } else {
                self.prev_call = i;
                Unit::Call(i)
            };
            self.prev_end = end;
            self.pending.push_back(Placed { unit, start, end });
            return self.pending.pop_front();
        }
        if self.ended {
            return None;
        }
        self.ended = true;
        if self.gaps && self.hi > self.prev_end {
            self.queue_gap((self.prev_end, self.hi), None);
        }
        self.pending.pop_front()
    }
}

/// A request's buffer as the rule asks about it, with its own watch (the learned use
/// armed when the wait completed it).
pub(super) struct Guarded<'a> {
    pub buf: Option<Buffer>,
    pub guard: Guard,
    /// Without a buffer: the peer and tag a later send must not share.
    pub peer_tag: Option<(i32, i32)>,
    /// Its watch, and where it is in the timeline's `learned`.
    pub watch: Option<&'a LearnedUse>,
    pub watch_index: Option<usize>,
}

/// What `unit` does to `g`'s buffer.
pub(super) fn effect(t: &Timeline, p: &Placed, g: &Guarded) -> Effect {
    // The first touch the watch saw, in the first unit that reaches it.
    if let Some(Outcome::Used { touch, addr, .. }) = g.watch.map(|w| &w.outcome) {
        let inside = g
            .buf
            .is_none_or(|b| b.addr <= *addr && *addr - b.addr < b.len);
        let reached = g
            .watch
            .is_some_and(|w| dependence::reaches_touch(&w.outcome, p.end));
        if reached && inside && g.guard.conflicts(*touch) {
            return Effect::Touches(Evidence::Learned);
        }
    }
    let learned = |end: u64| {
        let covered = g.watch.zip(g.buf).is_some_and(|(w, b)| {
            dependence::watch_covers(w, b, g.guard) && dependence::proven_free(&w.outcome, end)
        });
        if covered {
            Effect::Free
        } else {
            Effect::Unknown
        }
    };
    match p.unit {
        Unit::Call(i) => {
            let Some((op, c)) = t.call(i) else {
                return Effect::Free;
            };
            let named = [c.buf(), t.recv_half(c).and_then(|h| h.buf)];
            let reused = match (g.buf, g.peer_tag) {
                (Some(b), _) => named.iter().flatten().any(|n| {
                    // A length of 0 counts as one byte, as the call may still use it.
                    let n = Buffer {
                        len: n.len.max(1),
                        ..*n
                    };
                    n.overlaps(&Buffer {
                        len: b.len.max(1),
                        ..b
                    })
                }),
                (None, Some((peer, tag))) => {
                    op.sends() && c.peer() == Some(peer) && c.tag() == Some(tag)
                }
                (None, None) => false,
            };
            if reused {
                Effect::Touches(Evidence::Mpi)
            } else {
                Effect::Free
            }
        }
        Unit::Span(i) => match t.access(i) {
            Some(a) => dependence::declared(a, g.buf, g.guard),
            None => learned(p.end),
        },
        Unit::Gap { .. } => learned(p.end),
    }
}

/// A unit that stops a move: its place in [`Stops::units`], what it does, and to which
/// of the buffers (an index in the guarded list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stop {
    pub unit: usize,
    pub effect: Effect,
    pub guarded: usize,
}

/// Where a wait can move, walked once: the units up to the first that stops the move
/// in [`Mode::Permissive`] (a recorded use), and which of them stops it in each mode.
pub(super) struct Stops {
    /// The units walked, up to and with the permissive stop.
    pub units: Vec<Placed>,
    /// The first unit that stops the move in [`Mode::Proven`].
    pub proven: Option<Stop>,
    /// The first in [`Mode::Permissive`].
    pub possible: Option<Stop>,
}

/// The stops of a move of every one of `guarded` (the earliest over them) along `walk`;
/// `proven_only`: the walk ends at the proven stop.
pub(super) fn stops(t: &Timeline, walk: Walk, guarded: &[Guarded], proven_only: bool) -> Stops {
    let mut out = Stops {
        units: Vec::new(),
        proven: None,
        possible: None,
    };
    for p in walk {
        let k = out.units.len();
        out.units.push(p);
        for (j, g) in guarded.iter().enumerate() {
            let e = effect(t, &p, g);
            let stop = Stop {
                unit: k,
                effect: e,
                guarded: j,
            };
            if out.proven.is_none() && e.stops(Mode::Proven) {
                out.proven = Some(stop);
                if proven_only {
                    return out;
                }
            }
            if e.stops(Mode::Permissive) {
                out.possible = Some(stop);
                return out;
            }
        }
    }
    out
}
