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

/// The time from which a watch knows nothing (exclusive): its first touch, or just
/// after the moment it ended untouched.
pub fn known_until(o: &Outcome) -> u64 {
    match o {
        Outcome::Used { earliest, .. } => earliest.0,
        Outcome::Untouched { until, .. } => until.0.saturating_add(1),
    }
}

/// Whether a unit of work that follows the completion that armed the watch and ends at
/// `end` is proven to leave the watched bytes alone: it ends before the watch's
/// knowledge does.
pub fn proven_free(o: &Outcome, end: u64) -> bool {
    end < known_until(o)
}

/// Whether a unit that follows the completion and ends at `end` reaches the watch's
/// first touch: the first such unit holds it (the touch lies in `[earliest, latest]`, so
/// the first unit it can fall in is taken).
pub fn reaches_touch(o: &Outcome, end: u64) -> bool {
    matches!(o, Outcome::Used { earliest, .. } if end >= earliest.0)
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

    /// A touch at [15, 18]: units ending before 15 are free; the first that ends at 15
    /// or later holds it.
    #[test]
    fn the_first_touch_ends_what_is_proven() {
        let o = Outcome::Used {
            earliest: Nanos(15),
            latest: Nanos(18),
            touch: Touch::Write,
            addr: 0x1000,
            ip: None,
        };
        assert!(proven_free(&o, 14) && !proven_free(&o, 15));
        assert!(reaches_touch(&o, 15) && !reaches_touch(&o, 14));
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
