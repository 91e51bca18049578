//! The program's own uses of its requests' buffers, learned while it ran
//! ([`LearnedUse`], `overlap trace --buffers`), placed among a rank's operations, and
//! what they prove ([`Knowledge`]).
//!
//! A learned use of request `q` (completed by operation `c`) becomes a [`LearnedOp`]:
//! the operations strictly between `c` and its `until` are proven to leave the watched
//! bytes alone (for the kinds of touch watched); `until` is the first operation whose
//! end reaches the first touch (a compute, or the call the program was in; never a post
//! or completion, which the main thread spends inside MPI), or, for a watch that ended
//! untouched, the first operation that ends after it did (for
//! [`WatchEnd::HandedToMpi`], the call that named the buffer). That is
//! [`crate::dependence`]'s rule, on operations. A touch known inside a gap cut the gap
//! there ([`super::cuts`]): its `until` is the part that starts at it.
//!
//! ```text
//!  ops     Isend(s) Wait(s) gap Allreduce gap(pack: writes s) Isend(s)
//!  index      0       1      2      3            4               5
//!  learned: request s, until 4, touched by a write: 2 and 3 proven free of writes to s
//! ```

use std::num::NonZeroU64;

use overlap_format::schema::{LearnedUse, Outcome, WatchEnd};

use super::{Cut, OpKind, Operation, Program, RankProgram, RequestOp, RequestRole, Touch};
use crate::dependence::{self, Effect, Evidence, Guard};
use crate::fxhash::FxHashMap;
use crate::model::compact::{buffer_or_none, index_u32, some_buffer, some_index, NO_INDEX};
use crate::model::Buffer;

/// How a learned watch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LearnedEnd {
    /// The program touched the watched bytes, in operation `until`.
    Touched(Touch),
    /// Nothing touched them until the watch ended, for this reason.
    Untouched(WatchEnd),
}

/// A learned use placed among its rank's operations, in 56 bytes (a program holds at
/// most one per request).
#[derive(Clone, Debug, PartialEq)]
pub struct LearnedOp {
    request: u32,
    until: u32,
    reads: Buffer,
    writes: Buffer,
    /// How the watch ended.
    pub end: LearnedEnd,
    /// The instruction of the first touch (a code address), when known.
    pub ip: Option<NonZeroU64>,
}

const _: () = assert!(std::mem::size_of::<LearnedOp>() == 56);

impl LearnedOp {
    /// A learned use of `request`'s buffer (watched `reads` and `writes`) whose knowledge
    /// ends at operation `until` (none: past the last), ended by `end`; the touch's
    /// instruction `ip` (hand-built programs; a trace's come from [`place`]).
    pub fn new(
        request: usize,
        until: Option<usize>,
        (reads, writes): (Option<Buffer>, Option<Buffer>),
        end: LearnedEnd,
        ip: Option<NonZeroU64>,
    ) -> LearnedOp {
        LearnedOp {
            request: index_u32(request),
            until: until.map_or(NO_INDEX, index_u32),
            reads: buffer_or_none(reads),
            writes: buffer_or_none(writes),
            end,
            ip,
        }
    }

    /// The request whose buffer was watched (an index in [`Program::requests`]).
    pub fn request(&self) -> usize {
        self.request as usize
    }

    /// The first operation not proven to leave the watched bytes alone; none when the
    /// knowledge lasts past the rank's last operation.
    pub fn until(&self) -> Option<usize> {
        some_index(self.until)
    }

    /// The bytes whose reads were watched.
    pub fn reads(&self) -> Option<Buffer> {
        some_buffer(self.reads)
    }

    /// The bytes whose writes were watched.
    pub fn writes(&self) -> Option<Buffer> {
        some_buffer(self.writes)
    }

    /// The bytes the first touch shows the program using, by the kind of touch: the
    /// watched range of that kind (which byte it touched first says nothing of the
    /// others).
    pub fn touched(&self) -> Option<(Buffer, Touch)> {
        match self.end {
            LearnedEnd::Touched(t) => {
                let range = match t {
                    Touch::Read => self.reads(),
                    Touch::Write => self.writes(),
                };
                Some((range?, t))
            }
            LearnedEnd::Untouched(_) => None,
        }
    }

    fn covers(&self, buf: Buffer, guard: Guard) -> bool {
        let holds = |r: Option<Buffer>| {
            r.is_some_and(|r| {
                r.addr <= buf.addr
                    && buf.addr.saturating_add(buf.len) <= r.addr.saturating_add(r.len)
            })
        };
        holds(self.writes()) && (guard == Guard::Writes || holds(self.reads()))
    }
}

impl RequestOp {
    /// Which of the program's touches its buffer cannot bear while it is in flight: a
    /// send's, writes; any other's (MPI writes it), any touch.
    pub fn guard(&self) -> Guard {
        match self.role {
            RequestRole::Send => Guard::Writes,
            _ => Guard::Touches,
        }
    }

    /// Whether the program's work can conflict with it at all: a point-to-point request
    /// of no bytes, or to or from `MPI_PROC_NULL`, moves no data.
    pub fn moves_data(&self) -> bool {
        let point_to_point = matches!(self.role, RequestRole::Send | RequestRole::Recv);
        !(self.proc_null || (point_to_point && self.bytes == 0))
    }
}

/// The learned uses of a rank (`uses`, by its requests' trace ids) placed among its
/// operations `ops`, and the parts of inferred compute that start at their touches.
/// `completed`: each completion operation with its request's trace id, sorted by (id,
/// operation); `cut_starts`: the operations that start at a cut of a gap, ascending. A
/// use whose request completed in no operation is left out.
pub(super) fn place(
    uses: &[LearnedUse],
    ops: &[Operation],
    completed: &[(u64, u32)],
    cut_starts: &[u32],
) -> (Vec<LearnedOp>, Vec<Cut>) {
    let mut out = Vec::with_capacity(uses.len());
    let mut cuts = Vec::with_capacity(cut_starts.len());
    for u in uses {
        // The completion of that id that ended nearest to the watch's start (ids are
        // reused from one iteration to the next).
        let from = completed.partition_point(|c| c.0 < u.request);
        let to = completed.partition_point(|c| c.0 <= u.request);
        let mine = &completed[from..to];
        let end_of = |c: &(u64, u32)| ops[c.1 as usize].measured_end_ns;
        let after = mine.partition_point(|c| end_of(c) <= u.from.0);
        let near = [after.checked_sub(1), Some(after)]
            .into_iter()
            .flatten()
            .filter_map(|k| mine.get(k))
            .min_by_key(|c| end_of(c).abs_diff(u.from.0));
        let Some(&(_, c)) = near else { continue };
        let c = c as usize;
        let OpKind::Complete { request } = ops[c].kind else {
            continue;
        };
        let (end, until) = match u.outcome {
            Outcome::Used {
                touch,
                ip,
                earliest,
                ..
            } => {
                let mut k = first_reaching(ops, c, &u.outcome);
                // The main thread spends a post or completion inside MPI: the touch is
                // taken to be in the next call or compute.
                while ops.get(k).is_some_and(|o| !o.kind.is_anchor()) {
                    k += 1;
                }
                // The part of a gap cut at this touch starts it.
                let starts = cut_starts.binary_search(&index_u32(k)).is_ok()
                    && ops[k].measured_start_ns == earliest.0;
                if starts {
                    cuts.push(Cut::new(k, out.len()));
                }
                (LearnedEnd::Touched(touch), (k, ip))
            }
            Outcome::Untouched { why, .. } => (
                LearnedEnd::Untouched(why),
                (first_reaching(ops, c, &u.outcome), None),
            ),
        };
        let range = |r: Option<overlap_format::schema::ByteRange>| {
            buffer_or_none(r.map(|r| Buffer {
                addr: r.addr,
                len: r.len,
            }))
        };
        out.push(LearnedOp {
            request: index_u32(request),
            until: if until.0 < ops.len() {
                index_u32(until.0)
            } else {
                NO_INDEX
            },
            reads: range(u.reads),
            writes: range(u.writes),
            end,
            ip: until.1,
        });
    }
    // Several uses touched at one time: the part is the first's.
    cuts.sort_unstable();
    cuts.dedup_by_key(|c| c.op());
    (out, cuts)
}

/// The first operation after `c` that is not proven free by `outcome`
/// ([`dependence::proven_free`]): operations end in program order.
fn first_reaching(ops: &[Operation], c: usize, outcome: &Outcome) -> usize {
    let rest = &ops[c + 1..];
    c + 1 + rest.partition_point(|o| dependence::proven_free(outcome, o.measured_end_ns))
}

/// What the learned uses of a rank prove, asked per buffer: which operations leave it
/// alone ([`Knowledge::free`]), and what a compute does to a request's buffer
/// ([`Knowledge::effect`]).
pub struct Knowledge<'a> {
    program: &'a Program,
    rank: &'a RankProgram,
    /// The rank's learned uses by the start of their watched writes, and the longest.
    by_addr: Vec<(u64, u32)>,
    longest: u64,
    /// The learned uses that ended with a touch, by the operation that holds it.
    touches: Vec<(u32, u32)>,
    /// Per buffer and guard asked: the stretches of operations proven free, merged.
    cache: FxHashMap<(u64, u64, Guard), Vec<(u32, u32)>>,
}

impl<'a> Knowledge<'a> {
    /// What `rank`'s learned uses prove.
    pub fn new(program: &'a Program, rank: &'a RankProgram) -> Knowledge<'a> {
        let mut by_addr: Vec<(u64, u32)> = (rank.learned.iter().enumerate())
            .filter_map(|(i, l)| Some((l.writes()?.addr, index_u32(i))))
            .collect();
        by_addr.sort_unstable();
        let longest = (rank.learned.iter())
            .filter_map(|l| l.writes().map(|w| w.len))
            .max()
            .unwrap_or(0);
        let mut touches: Vec<(u32, u32)> = (rank.learned.iter().enumerate())
            .filter(|(_, l)| l.touched().is_some())
            .filter_map(|(i, l)| Some((index_u32(l.until()?), index_u32(i))))
            .collect();
        touches.sort_unstable();
        Knowledge {
            program,
            rank,
            by_addr,
            longest,
            touches,
            cache: FxHashMap::default(),
        }
    }

    /// The stretches of operations `[first, end)` proven to leave `buf` alone for
    /// `guard`, sorted and merged: those between a completion and the end of a watch
    /// that covered every byte of `buf` for the touches that conflict.
    pub fn free(&mut self, buf: Buffer, guard: Guard) -> &[(u32, u32)] {
        let (rank, by_addr, longest) = (self.rank, &self.by_addr, self.longest);
        let program = self.program;
        self.cache
            .entry((buf.addr, buf.len, guard))
            .or_insert_with(|| {
                let lo = by_addr.partition_point(|e| e.0 < buf.addr.saturating_sub(longest));
                let hi = by_addr.partition_point(|e| e.0 <= buf.addr);
                let mut spans: Vec<(u32, u32)> = by_addr[lo..hi]
                    .iter()
                    .map(|e| &rank.learned[e.1 as usize])
                    .filter(|l| l.covers(buf, guard))
                    .filter_map(|l| {
                        let c = program.requests.get(l.request())?.complete()?;
                        let end = l.until().unwrap_or(rank.ops.len());
                        (end > c + 1).then(|| (index_u32(c + 1), index_u32(end)))
                    })
                    .collect();
                spans.sort_unstable();
                let mut merged: Vec<(u32, u32)> = Vec::with_capacity(spans.len());
                for (a, b) in spans {
                    match merged.last_mut() {
                        Some(last) if a <= last.1 => last.1 = last.1.max(b),
                        _ => merged.push((a, b)),
                    }
                }
                merged
            })
    }

    /// Whether operation `i` is proven to leave `buf` alone for `guard`.
    pub fn is_free(&mut self, i: usize, buf: Buffer, guard: Guard) -> bool {
        let free = self.free(buf, guard);
        let k = free.partition_point(|s| s.0 as usize <= i);
        k > 0 && i < free[k - 1].1 as usize
    }

    /// What compute operation `i` does to the buffer of `request`: declared, learned
    /// (the touch it holds, or proven free), or unknown. Other operations: free (their
    /// MPI uses are the essential graph's own).
    pub fn effect(&mut self, i: usize, request: &RequestOp) -> Effect {
        let op = &self.rank.ops[i];
        if !matches!(op.kind, OpKind::Compute { .. }) || !request.moves_data() {
            return Effect::Free;
        }
        let (buf, guard) = (request.buffer(), request.guard());
        if let Some(a) = self.rank.access(op) {
            return dependence::declared(a, buf, guard);
        }
        let Some(buf) = buf else {
            return Effect::Unknown;
        };
        let at = self.touches.partition_point(|t| (t.0 as usize) < i);
        let touched = (self.touches[at..].iter())
            .take_while(|t| t.0 as usize == i)
            .filter_map(|t| self.rank.learned[t.1 as usize].touched())
            .any(|(b, t)| guard.conflicts(t) && b.overlaps(&buf));
        if touched {
            Effect::Touches(Evidence::Learned)
        } else if self.is_free(i, buf, guard) {
            Effect::Free
        } else {
            Effect::Unknown
        }
    }
}

impl RankProgram {
    /// The learned use whose first touch starts operation `i` (a part of an inferred
    /// compute cut there), if one does.
    pub fn cut_at(&self, i: usize) -> Option<&LearnedOp> {
        let k = self.cuts.partition_point(|c| c.op() < i);
        let cut = self.cuts.get(k).filter(|c| c.op() == i)?;
        self.learned.get(cut.learned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The learned use whose touch starts an operation is found by that operation, and
    /// only while the cut is listed.
    #[test]
    fn a_cut_names_its_learned_use() {
        let mut rank = RankProgram {
            learned: vec![LearnedOp::new(
                0,
                Some(3),
                (None, None),
                LearnedEnd::Touched(Touch::Read),
                None,
            )],
            cuts: vec![Cut::new(3, 0)],
            ..RankProgram::default()
        };
        assert_eq!(rank.cut_at(3), rank.learned.first());
        assert_eq!((rank.cut_at(2), rank.cut_at(1)), (None, None));
        rank.cuts.clear();
        assert_eq!(rank.cut_at(3), None);
    }
}
