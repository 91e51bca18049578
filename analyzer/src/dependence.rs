//! The one rule of data dependence between a request's buffer and the program's own
//! work: whether a unit of work (a compute, a call) may touch the buffer in a way that
//! forbids moving the request's post or completion across it. The reordering
//! ([`crate::dag::essential`], on a program's operations) and the false-overlap finding
//! ([`crate::metrics::false_overlap`], on a trace's calls and compute) both ask it, so
//! that `overlap suggest` and `overlap analyze` say the same of where a wait can move.
//!
//! What is known of a unit and a buffer ([`Effect`]):
//!
//! - an MPI call that names an overlapping buffer uses it (the buffer is handed to MPI
//!   again);
//! - a compute span that declared its buffers touches those it names and leaves the
//!   others alone;
//! - a learned watch (`overlap trace --buffers`, [`LearnedUse`]) proves that the work
//!   between a request's completion and the first touch it saw leaves the watched bytes
//!   alone, for the kinds of touch it watched; the unit that holds the first touch uses
//!   the buffer; from there on (and after a watch that ended untouched) nothing is known;
//! - anything else is unknown.
//!
//! A unit is a half-open stretch of time `[start, end)`: one that ends at or before the
//! first touch's earliest moment is proven free. A compute inferred from a gap between
//! MPI calls is cut at each first touch known inside it ([`TouchCut`]): the part before
//! the touch is proven free, the part from it on holds it, so that a wait can move to
//! the touch itself rather than to the gap's start.
//!
//! A send's buffer is read by MPI while the send is in flight: only the program's writes
//! conflict ([`Guard::Writes`]); a receive's is written: any touch does
//! ([`Guard::Touches`]). In [`Mode::Proven`] (what is suggested) unknown work is taken
//! to touch every buffer; in [`Mode::Permissive`] (what "possible if" lists) it is taken
//! to touch none.
//!
//! ```text
//!  |Isend s|Waitall s|.. gap A ..|MPI_Allreduce|.. gap B: pack writes s ..|Isend s|
//!                    ^ watch armed             ^ first write (learned)
//!  gap A ends before the write: Free;  gap B holds it: Touches(Learned)
//!  the completion of s may move past gap A and the Allreduce, not into gap B
//!
//!  |Waitall r|.... interior ....|unpack: reads r ..|Irecv r|
//!                               ^ first read (a fault: one instant): the gap is cut
//!  [interior]: Free;  [unpack ..]: Touches(Learned): the wait moves to the read
//! ```

use overlap_format::schema::{ByteRange, LearnedUse, Outcome};
pub use overlap_format::schema::{Touch, WatchEnd};
use serde::Serialize;

use crate::model::{Access, Buffer};

/// How a move treats work whose effect on a buffer is not known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Unknown work is taken to touch every buffer: a move crosses only work proven to
    /// leave its buffer alone (what `overlap suggest` suggests).
    #[default]
    Proven,
    /// Unknown work is taken to touch nothing: only recorded uses (MPI calls, declared
    /// spans, learned touches) hold a move back (what "possible if" lists).
    Permissive,
}

/// Which of the program's touches a request's buffer cannot bear while MPI holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Guard {
    /// MPI reads it (a send): the program may read it too, not write it.
    Writes,
    /// MPI writes it (a receive, a collective, a one-sided request): no touch at all.
    Touches,
}

impl Guard {
    /// The guard of a buffer MPI uses this way.
    pub fn of_mpi(mpi: Touch) -> Guard {
        match mpi {
            Touch::Read => Guard::Writes,
            Touch::Write => Guard::Touches,
        }
    }

    /// Whether the program's `touch` conflicts.
    pub fn conflicts(self, touch: Touch) -> bool {
        self == Guard::Touches || touch == Touch::Write
    }

    /// What the program must not do, in words ("write", "read or write").
    pub fn verb(self) -> &'static str {
        match self {
            Guard::Writes => "write",
            Guard::Touches => "read or write",
        }
    }
}

/// Where knowledge of a unit's effect on a buffer comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// An MPI call names an overlapping buffer.
    Mpi,
    /// A compute span declared the buffer.
    Declared,
    /// The buffer watch saw the program touch it.
    Learned,
}

/// What a unit of work does to a buffer, as far as is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Proven to leave it alone (for the touches that conflict).
    Free,
    /// Touches it in a conflicting way.
    Touches(Evidence),
    /// Nothing is known.
    Unknown,
}

impl Effect {
    /// Whether the unit holds a move of the request back in `mode`.
    pub fn stops(self, mode: Mode) -> bool {
        match self {
            Effect::Free => false,
            Effect::Touches(_) => true,
            Effect::Unknown => mode == Mode::Proven,
        }
    }
}

/// What a compute span that declared its buffers does to `buf` (none: the request's
/// buffer is not recorded, and any conflicting declared use may be it).
pub fn declared(access: &Access, buf: Option<Buffer>, guard: Guard) -> Effect {
    let touches = |list: &[crate::model::NamedBuffer]| {
        list.iter().any(|n| buf.is_none_or(|b| b.overlaps(&n.buf)))
    };
    let read = guard == Guard::Touches && touches(&access.reads);
    if read || touches(&access.writes) {
        Effect::Touches(Evidence::Declared)
    } else {
        Effect::Free
    }
}

/// Whether `range` holds every byte of `buf`.
fn holds(range: Option<ByteRange>, buf: Buffer) -> bool {
    range.is_some_and(|r| {
        r.addr <= buf.addr && buf.addr.saturating_add(buf.len) <= r.addr.saturating_add(r.len)
    })
}

/// Whether a learned watch knows what the program did to `buf` for `guard`: it watched
/// every byte of it for every kind of touch that conflicts (a send's buffer needs its
/// writes watched, a receive's its reads and writes).
pub fn watch_covers(u: &LearnedUse, buf: Buffer, guard: Guard) -> bool {
    holds(u.writes, buf) && (guard == Guard::Writes || holds(u.reads, buf))
}

/// The time up to which a watch knows the watched bytes were left alone: its first
/// touch's earliest moment (a unit `[start, end)` ending there did not hold it), or the
/// moment it ended untouched.
pub fn known_until(o: &Outcome) -> u64 {
    match o {
        Outcome::Used { earliest, .. } => earliest.0,
        Outcome::Untouched { until, .. } => until.0,
    }
}

/// Whether a unit of work that follows the completion that armed the watch and ends at
/// `end` is proven to leave the watched bytes alone: it ends no later than the watch's
/// knowledge does.
pub fn proven_free(o: &Outcome, end: u64) -> bool {
    end <= known_until(o)
}

/// Whether a unit that follows the completion and ends at `end` reaches the watch's
/// first touch: the first such unit holds it (the touch lies in `[earliest, latest]`, so
/// the first unit it can fall in is taken).
pub fn reaches_touch(o: &Outcome, end: u64) -> bool {
    matches!(o, Outcome::Used { earliest, .. } if end > earliest.0)
}

/// A point inside a gap between MPI calls where a learned first touch began: compute
/// inferred from the gap is cut there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TouchCut {
    /// When: the touch's earliest moment.
    pub at: u64,
    /// The latest it can have happened.
    pub latest: u64,
    /// Its learned use, by index in the rank's list.
    pub learned: usize,
}

/// The cuts the first touches of `learned` (a rank's learned uses) can make, by time:
/// every touch known to an instant (a fault, a system call) or to an interval (a changed
/// edge byte found at a later checkpoint), at its earliest moment. Which gap a cut falls
/// in is [`cuts_inside`]'s.
pub fn touch_cuts(learned: &[LearnedUse]) -> Vec<TouchCut> {
    let mut cuts: Vec<TouchCut> = (learned.iter().enumerate())
        .filter_map(|(k, u)| touch_cut(k, u))
        .collect();
    cuts.sort_unstable();
    cuts
}

/// The cut of the first touch of `u`, the rank's learned use `k`; none when it ended
/// untouched.
pub fn touch_cut(k: usize, u: &LearnedUse) -> Option<TouchCut> {
    match u.outcome {
        Outcome::Used {
            earliest, latest, ..
        } => Some(TouchCut {
            at: earliest.0,
            latest: latest.0,
            learned: k,
        }),
        Outcome::Untouched { .. } => None,
    }
}

/// The cuts of `cuts` (sorted, [`touch_cuts`]) in the gap `[from, to)` among those
/// `keep` keeps: those whose touch lies strictly inside it, earliest and latest (an
/// interval that reaches a call is not known to be in the gap: it does not cut it), one
/// per time (the first use's).
pub fn cuts_inside<'a>(
    cuts: &'a [TouchCut],
    (from, to): (u64, u64),
    keep: impl Fn(&TouchCut) -> bool + 'a,
) -> impl Iterator<Item = TouchCut> + 'a {
    let lo = cuts.partition_point(|c| c.at <= from);
    let hi = cuts.partition_point(|c| c.at < to).max(lo);
    let mut last = None;
    cuts[lo..hi].iter().copied().filter(move |c| {
        let new = c.latest < to && last != Some(c.at) && keep(c);
        if new {
            last = Some(c.at);
        }
        new
    })
}

#[cfg(test)]
mod tests {
    use overlap_format::schema::Nanos;

    use super::*;
    use crate::model::NamedBuffer;

    fn range(addr: u64, len: u64) -> Option<ByteRange> {
        Some(ByteRange { addr, len })
    }

    /// A send buffer needs only its writes watched; a receive buffer its reads too; a
    /// watch of part of a buffer knows nothing of the rest.
    #[test]
    fn a_watch_covers_what_it_watched() {
        let used = LearnedUse {
            request: 1,
            from: Nanos(10),
            reads: None,
            writes: range(0x1000, 4096),
            outcome: Outcome::Untouched {
                until: Nanos(20),
                why: WatchEnd::HandedToMpi,
            },
        };
        let buf = Buffer {
            addr: 0x1000,
            len: 4096,
        };
        assert!(watch_covers(&used, buf, Guard::Writes));
        assert!(!watch_covers(&used, buf, Guard::Touches));
        let bigger = Buffer { len: 4097, ..buf };
        assert!(!watch_covers(&used, bigger, Guard::Writes));
        // Untouched until 20: a unit ending at 20 is free, one ending at 21 is not.
        assert!(proven_free(&used.outcome, 20) && !proven_free(&used.outcome, 21));
        assert!(!reaches_touch(&used.outcome, 100));
    }

    /// A touch at [15, 18]: units `[start, end)` ending at 15 or before are free; the
    /// first that ends after 15 holds it.
    #[test]
    fn the_first_touch_ends_what_is_proven() {
        let o = Outcome::Used {
            earliest: Nanos(15),
            latest: Nanos(18),
            touch: Touch::Write,
            addr: 0x1000,
            ip: None,
        };
        assert!(proven_free(&o, 15) && !proven_free(&o, 16));
        assert!(reaches_touch(&o, 16) && !reaches_touch(&o, 15));
    }

    /// Touches at 15 (twice: one system call into two buffers), at [20, 22], at [28, 31]
    /// and at 40, and a watch that ended untouched; the gap [10, 30) between two calls:
    ///
    /// ```text
    ///  call 0-10 |........ gap 10-30 ........| call 30-40 | gap 40-50
    ///               15     20-22      28--31              40
    ///  cuts:        15     20         (28-31 reaches the call: none)   (40: the gap's start)
    /// ```
    #[test]
    fn a_gap_is_cut_at_the_touches_known_inside_it() {
        let used = |request, earliest, latest| LearnedUse {
            request,
            from: Nanos(10),
            reads: None,
            writes: range(0x1000, 4096),
            outcome: Outcome::Used {
                earliest: Nanos(earliest),
                latest: Nanos(latest),
                touch: Touch::Write,
                addr: 0x1000,
                ip: None,
            },
        };
        let mut learned = vec![
            used(1, 40, 40),
            used(2, 15, 15),
            used(3, 28, 31),
            used(4, 20, 22),
            used(5, 15, 15),
        ];
        learned.push(LearnedUse {
            outcome: Outcome::Untouched {
                until: Nanos(12),
                why: WatchEnd::Released,
            },
            ..learned[0].clone()
        });
        let cuts = touch_cuts(&learned);
        assert_eq!(cuts.len(), 5);
        let inside = |gap, keep: fn(&TouchCut) -> bool| {
            cuts_inside(&cuts, gap, keep)
                .map(|c| (c.at, c.learned))
                .collect::<Vec<_>>()
        };
        let all: fn(&TouchCut) -> bool = |_| true;
        assert_eq!(inside((10, 30), all), [(15, 1), (20, 3)]);
        assert_eq!(inside((40, 50), all), []);
        assert_eq!(inside((35, 50), all), [(40, 0)]);
        assert_eq!(inside((20, 28), all), []);
        // A use left out (its request is not the program's): the other at its time cuts.
        assert_eq!(inside((10, 30), |c| c.learned != 1), [(15, 4), (20, 3)]);
    }

    /// A declared span touches what it names (a read conflicts only with a receive's
    /// buffer) and leaves the rest alone; unknown work stops a move only when proven.
    #[test]
    fn declared_spans_and_modes() {
        let b = |addr| Buffer { addr, len: 8 };
        let access = Access {
            reads: vec![NamedBuffer {
                name: "in".into(),
                buf: b(0x100),
            }],
            writes: vec![NamedBuffer {
                name: "out".into(),
                buf: b(0x200),
            }],
        };
        let send = Guard::of_mpi(Touch::Read);
        let recv = Guard::of_mpi(Touch::Write);
        let declared_use = Effect::Touches(Evidence::Declared);
        assert_eq!(declared(&access, Some(b(0x100)), send), Effect::Free);
        assert_eq!(declared(&access, Some(b(0x100)), recv), declared_use);
        assert_eq!(declared(&access, Some(b(0x204)), send), declared_use);
        assert_eq!(declared(&access, Some(b(0x300)), recv), Effect::Free);
        assert_eq!(declared(&access, None, send), declared_use);
        assert!(Effect::Unknown.stops(Mode::Proven) && !Effect::Unknown.stops(Mode::Permissive));
        assert!(!Effect::Free.stops(Mode::Proven));
        assert!(declared_use.stops(Mode::Permissive));
        assert_eq!((send.verb(), recv.verb()), ("write", "read or write"));
    }
}
