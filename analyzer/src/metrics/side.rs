//! One end of a message as its own rank recorded it ([`Side`]), and the columns that hold
//! one per message ([`Sides`]): the analysis keeps two per message of the run beside
//! each other (the send's and the receive's), so their size is a share of every run's
//! peak. A side is read whole (40 B) but held in 24: the end call's entry, the
//! completing call's entry and exit and the time away as 32-bit offsets, the flags in
//! the entry's high byte. A side those bits cannot hold exactly (a run longer than two
//! years, a call that lasted more than four seconds, a completion recorded before the
//! call it completes) is kept whole beside the column, so that every side reads back as
//! it was made.
//!
//! ```text
//!  Side   | start 8 | done_start 8 | done_end 8 | away 8 | done_index 4 | flags 1 |  40 B
//!  held   | flags·start 1·7 | done_start−start 4 | done_end−done_start 4 | away 4 | done_index 4 |  24 B
//! ```

use overlap_format::schema::Nanos;
use rayon::prelude::*;

use crate::model::compact::{index_u32, some_index, NO_INDEX};
use crate::model::near::partition_point_near;
use crate::model::{EventRef, Timeline};

/// A call that completed one end of a message (or a request): where it is, when, and
/// whether it blocks (a Test that found it done does not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Done {
    /// The call.
    pub at: EventRef,
    /// Its entry.
    pub start: Nanos,
    /// Its exit.
    pub end: Nanos,
    /// True when its operation blocks.
    pub blocks: bool,
}

/// One end of a message as its own rank recorded it: the end's call (the send, or the
/// receive's post), the call that completed it, and how long the rank was away from MPI
/// between the two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Side {
    /// The end call's entry (when [`KNOWN`]).
    start: Nanos,
    done_start: Nanos,
    done_end: Nanos,
    /// The time its thread spent outside MPI calls from the end's call to the blocking
    /// call that completed it (when [`AWAY`]; [`super::clean`] reads it).
    away: Nanos,
    /// The completing call's index in its rank, or [`NO_INDEX`].
    done_index: u32,
    flags: u8,
}

/// The end's call is in the trace.
pub(super) const KNOWN: u8 = 1;
/// It is a call (its operation is known): the send of a message read whole.
pub(super) const CALL: u8 = 2;
/// The completing call blocks.
const DONE_BLOCKS: u8 = 4;
/// The completing call completed this end alone (a send's: no Sendrecv, no Waitall of
/// several).
pub(super) const ALONE: u8 = 8;
/// The time away from MPI is known: the completing call blocks, and lies near enough.
const AWAY: u8 = 16;

impl Side {
    /// A side not found (its call not in the trace).
    pub(crate) const NONE: Side = Side {
        start: Nanos::ZERO,
        done_start: Nanos::ZERO,
        done_end: Nanos::ZERO,
        away: Nanos::ZERO,
        done_index: NO_INDEX,
        flags: 0,
    };

    /// The side of an end call that entered at `start`, with `flags`, not (yet) known
    /// to be completed.
    pub(super) fn at(start: Nanos, flags: u8) -> Side {
        Side {
            start,
            flags,
            ..Side::NONE
        }
    }

    /// This side with `flags` besides its own.
    pub(super) fn with_flags(self, flags: u8) -> Side {
        Side {
            flags: self.flags | flags,
            ..self
        }
    }

    /// The end call's entry, when it is in the trace.
    pub(crate) fn start(&self) -> Option<Nanos> {
        (self.flags & KNOWN != 0).then_some(self.start)
    }

    /// True when the end's call is a call of the trace (its operation known).
    pub(super) fn is_call(&self) -> bool {
        self.flags & CALL != 0
    }

    /// True when the call that completed it completed this end alone.
    pub(super) fn done_alone(&self) -> bool {
        self.flags & ALONE != 0
    }

    /// The call that completed this end, on `rank`, when one did.
    pub(super) fn done(&self, rank: u32) -> Option<Done> {
        some_index(self.done_index).map(|index| Done {
            at: EventRef { rank, index },
            start: self.done_start,
            end: self.done_end,
            blocks: self.flags & DONE_BLOCKS != 0,
        })
    }

    /// The time its rank was away from MPI before the completing call, when known.
    pub(super) fn away(&self) -> Option<Nanos> {
        (self.flags & AWAY != 0).then_some(self.away)
    }

    /// This side of the end's call at `post` of `t`, completed by the call at `index`.
    pub(super) fn with_done(self, t: &Timeline, post: usize, index: usize) -> Side {
        let Some(span) = t.spans.get(index) else {
            return self;
        };
        let blocks = span.op().is_some_and(|op| op.blocks());
        // Nothing away when the end's call completed it itself (a blocking call).
        let away = match blocks {
            false => None,
            true if index == post => Some(Nanos::ZERO),
            true => t.outside_mpi(post, index),
        };
        let flags = if blocks { DONE_BLOCKS } else { 0 } | if away.is_some() { AWAY } else { 0 };
        Side {
            done_start: span.start,
            done_end: span.end,
            away: away.unwrap_or(Nanos::ZERO),
            done_index: index_u32(index),
            flags: self.flags | flags,
            ..self
        }
    }
}

/// A side in 24 bytes (the module's drawing).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Narrow {
    /// The flags in the high byte, the end call's entry below.
    flags_start: u64,
    /// The completing call's entry, after the end call's.
    done_after: u32,
    /// The completing call's length.
    done_for: u32,
    away: u32,
    done_index: u32,
}

const _: () = assert!(std::mem::size_of::<Narrow>() == 24);

/// The bits of a narrow side's entry below its flags.
const START_BITS: u32 = 56;
/// In a narrow side's flags only: the side is kept whole beside the column.
const WIDE: u8 = 128;

impl Narrow {
    /// The side that is kept whole beside the column.
    const WIDE: Narrow = Narrow {
        flags_start: (WIDE as u64) << START_BITS,
        done_after: 0,
        done_for: 0,
        away: 0,
        done_index: NO_INDEX,
    };

    /// `side` in 24 bytes, when they hold it exactly.
    fn of(side: &Side) -> Option<Narrow> {
        let done = side.done_index != NO_INDEX;
        let narrow = Narrow {
            flags_start: u64::from(side.flags) << START_BITS | side.start.0,
            done_after: match done {
                true => u32::try_from(side.done_start.0.checked_sub(side.start.0)?).ok()?,
                false => 0,
            },
            done_for: match done {
                true => u32::try_from(side.done_end.0.checked_sub(side.done_start.0)?).ok()?,
                false => 0,
            },
            away: u32::try_from(side.away.0).ok()?,
            done_index: side.done_index,
        };
        (side.flags & WIDE == 0 && narrow.side() == *side).then_some(narrow)
    }

    fn is_wide(&self) -> bool {
        self.flags() & WIDE != 0
    }

    fn flags(&self) -> u8 {
        (self.flags_start >> START_BITS) as u8
    }

    /// The side it holds (not one kept whole).
    fn side(&self) -> Side {
        let start = Nanos(self.flags_start & ((1 << START_BITS) - 1));
        let (done_start, done_end) = match self.done_index {
            NO_INDEX => (Nanos::ZERO, Nanos::ZERO),
            _ => {
                let done_start = start.0 + u64::from(self.done_after);
                (
                    Nanos(done_start),
                    Nanos(done_start + u64::from(self.done_for)),
                )
            }
        };
        Side {
            start,
            done_start,
            done_end,
            away: Nanos(u64::from(self.away)),
            done_index: self.done_index,
            flags: self.flags(),
        }
    }
}

/// Sides in 24 bytes each (32 with a key of up to 8), in order, each with an optional
/// key to be found by (`K`: `()` for a column by message); those that 24 bytes cannot
/// hold are kept whole by their position.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Sides<K> {
    #[serde(with = "crate::exchange::wire::chunked")]
    #[serde(bound(
        serialize = "K: serde::Serialize + Sync",
        deserialize = "K: serde::de::DeserializeOwned + Send"
    ))]
    narrow: Vec<(K, Narrow)>,
    /// The sides kept whole, by position, sorted.
    wide: Vec<(u32, Side)>,
}

impl<K> Default for Sides<K> {
    fn default() -> Self {
        Sides {
            narrow: Vec::new(),
            wide: Vec::new(),
        }
    }
}

/// Equal when they hold the same keys and sides in the same order, however held.
impl<K: Copy + PartialEq> PartialEq for Sides<K> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && (0..self.len())
                .all(|i| self.narrow[i].0 == other.narrow[i].0 && self.get(i) == other.get(i))
    }
}

impl<K: Copy + Eq> Eq for Sides<K> {}

/// Held narrow or, failing that, whole at `position` in `wide`.
fn hold(side: &Side, position: usize, wide: &mut Vec<(u32, Side)>) -> Narrow {
    Narrow::of(side).unwrap_or_else(|| {
        wide.push((index_u32(position), *side));
        Narrow::WIDE
    })
}

impl<K: Copy> Sides<K> {
    /// The keyed sides `items`, in their order.
    pub(crate) fn of(items: impl IntoIterator<Item = (K, Side)>) -> Sides<K> {
        let mut wide = Vec::new();
        let narrow = (items.into_iter().enumerate())
            .map(|(i, (key, side))| (key, hold(&side, i, &mut wide)))
            .collect();
        Sides { narrow, wide }
    }

    /// How many sides it holds.
    pub(crate) fn len(&self) -> usize {
        self.narrow.len()
    }

    /// The side at `position`.
    pub(crate) fn get(&self, position: usize) -> Side {
        let narrow = &self.narrow[position].1;
        if !narrow.is_wide() {
            return narrow.side();
        }
        let at = (self.wide).binary_search_by_key(&index_u32(position), |w| w.0);
        self.wide[at.expect("a side held whole is beside the column")].1
    }

    /// The sides whole, in order.
    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = Side> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

impl<K: Copy + Ord> Sides<K> {
    /// The side of `key`, when the sides (sorted by key) have one, searched from `near`
    /// outward (where the last key asked fell), which it then holds where this one
    /// falls: keys asked in nearly their order are found in a few steps each.
    pub(crate) fn find_near(&self, key: K, near: &mut usize) -> Option<Side> {
        let at = partition_point_near(&self.narrow, *near, |n| n.0 < key);
        *near = at;
        let found = self.narrow.get(at).is_some_and(|n| n.0 == key);
        found.then(|| self.get(at))
    }
}

impl Sides<()> {
    /// `len` sides, the side of position `i` being `side(i)` (rayon's threads, a block
    /// of positions each).
    pub(crate) fn fill(len: usize, side: impl Fn(usize) -> Side + Sync) -> Sides<()> {
        Self::fill_with(len, || (), |(), i| side(i))
    }

    /// [`Sides::fill`], `side` given a state of its block of positions (`state()` at
    /// the block's first): where the last lookup of the block fell, say.
    pub(crate) fn fill_with<S>(
        len: usize,
        state: impl Fn() -> S + Sync,
        side: impl Fn(&mut S, usize) -> Side + Sync,
    ) -> Sides<()> {
        const BLOCK: usize = 1 << 14;
        let mut narrow = vec![((), Narrow::WIDE); len];
        let wide = (narrow.par_chunks_mut(BLOCK).enumerate())
            .map(|(b, block)| {
                let (mut wide, mut state) = (Vec::new(), state());
                for (k, slot) in block.iter_mut().enumerate() {
                    let i = b * BLOCK + k;
                    slot.1 = hold(&side(&mut state, i), i, &mut wide);
                }
                wide
            })
            .collect::<Vec<_>>()
            .concat();
        Sides { narrow, wide }
    }

    /// The sides at the positions `which`, in that order, to be written (read back,
    /// they are the column of those sides).
    pub(crate) fn selected<'s>(&'s self, which: &'s [u32]) -> Selected<'s> {
        Selected { sides: self, which }
    }
}

/// The sides of a column at some of its positions, in their order, written as
/// [`Sides::of`] them would be ([`Sides::selected`]): a block's column made as it is
/// written, a bin at a time, never held beside the column it is cut from.
pub(crate) struct Selected<'s> {
    sides: &'s Sides<()>,
    which: &'s [u32],
}

impl serde::Serialize for Selected<'_> {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        use crate::exchange::wire::chunked::mapped;
        use serde::ser::SerializeStruct;
        let (sides, which) = (self.sides, self.which);
        // A side held narrow stays narrow where it is moved to; one kept whole is kept
        // whole at its new position.
        let narrow = mapped(which, |&p| &sides.narrow[p as usize]);
        let wide: Vec<(u32, Side)> = (which.par_iter().enumerate())
            .filter(|(_, &p)| sides.narrow[p as usize].1.is_wide())
            .map(|(i, &p)| (index_u32(i), sides.get(p as usize)))
            .collect();
        let mut column = to.serialize_struct("Sides", 2)?;
        column.serialize_field("narrow", &narrow)?;
        column.serialize_field("wide", &wide)?;
        column.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(start: u64, done: Option<(u64, u64, u32)>, away: Option<u64>, flags: u8) -> Side {
        let with = Side::at(Nanos(start), flags);
        let with = match done {
            Some((s, e, index)) => Side {
                done_start: Nanos(s),
                done_end: Nanos(e),
                done_index: index,
                flags: with.flags | DONE_BLOCKS,
                ..with
            },
            None => with,
        };
        match away {
            Some(a) => Side {
                away: Nanos(a),
                flags: with.flags | AWAY,
                ..with
            },
            None => with,
        }
    }

    /// Every side reads back as it was made, whether 24 bytes hold it or it is kept
    /// whole: the common ones (none, a side with no completion, a short wait) and each
    /// way of not fitting (an entry past 2^56 ns, a completion more than 2^32 ns after
    /// the entry or before it, a call that lasted longer, a time away that long).
    #[test]
    fn every_side_reads_back_narrow_or_whole() {
        let four_s = 1u64 << 32;
        let cases = [
            (Side::NONE, true),
            (side(10, None, None, KNOWN), true),
            (
                side(10, Some((15, 40, 3)), Some(2), KNOWN | CALL | ALONE),
                true,
            ),
            (
                side(1 << 56, Some((1 << 56, (1 << 56) + 1, 0)), None, KNOWN),
                false,
            ),
            (
                side(10, Some((10 + four_s, 11 + four_s, 9)), None, KNOWN),
                false,
            ),
            (side(10, Some((5, 12, 9)), None, KNOWN), false),
            (side(10, Some((10, 10 + four_s, 9)), None, KNOWN), false),
            (side(10, Some((20, 30, 9)), Some(four_s), KNOWN), false),
            (side(u64::MAX, None, None, KNOWN), false),
        ];
        for (s, narrow) in cases {
            assert_eq!(Narrow::of(&s).is_some(), narrow, "{s:?}");
        }
        let all: Vec<Side> = cases.iter().map(|c| c.0).collect();
        let keyed = Sides::of(all.iter().enumerate().map(|(i, s)| (i as u32 * 2, *s)));
        let filled = Sides::fill(all.len(), |i| all[i]);
        assert_eq!(keyed.iter().collect::<Vec<_>>(), all);
        assert_eq!(filled.iter().collect::<Vec<_>>(), all);
        // Found from wherever the search starts, which it leaves where the key falls.
        for (i, s) in all.iter().enumerate() {
            for start in 0..all.len() + 2 {
                let mut near = start;
                assert_eq!(keyed.find_near(i as u32 * 2, &mut near), Some(*s));
                assert_eq!(near, i);
                let mut near = start;
                assert_eq!(keyed.find_near(i as u32 * 2 + 1, &mut near), None);
                assert_eq!(near, i + 1);
            }
        }
        assert_eq!((keyed.wide.len(), filled.wide.len()), (6, 6));
    }

    /// A column longer than a block of the parallel fill keeps each block's sides held
    /// whole at their own positions.
    #[test]
    fn a_filled_column_finds_sides_held_whole_in_every_block() {
        let len = 3 * (1 << 14) + 5;
        let make = |i: usize| match i % 7_001 {
            0 => side(
                i as u64,
                Some((i as u64 + (1 << 33), i as u64 + (1 << 33), 1)),
                None,
                KNOWN,
            ),
            _ => side(i as u64, Some((i as u64 + 3, i as u64 + 9, 1)), None, KNOWN),
        };
        let filled = Sides::fill(len, make);
        assert_eq!(filled.wide.len(), len.div_ceil(7_001));
        assert!((0..len).all(|i| filled.get(i) == make(i)));
    }

    /// The sides of some positions, written from the column as it goes, are written as
    /// the column made of them is, byte for byte, and read back as it: positions out of
    /// order, repeated, across several bins, a side held whole now at a new position;
    /// and none.
    #[test]
    fn selected_sides_are_written_as_their_column() {
        use crate::exchange::wire::chunked::ITEMS;
        let len = 2 * ITEMS + 9;
        let make = |i: usize| match i % 1_001 {
            0 => side(
                i as u64,
                Some((i as u64 + (1 << 33), i as u64, 1)),
                None,
                KNOWN,
            ),
            _ => side(i as u64, Some((i as u64 + 3, i as u64 + 9, 2)), None, KNOWN),
        };
        let column = Sides::fill(len, make);
        let backwards: Vec<u32> = (0..len as u32).rev().step_by(3).collect();
        let repeated: Vec<u32> = vec![1_001, 5, 1_001, 0, 2 * ITEMS as u32 + 8];
        for which in [backwards, repeated, Vec::new()] {
            let made = Sides::of(which.iter().map(|&p| ((), column.get(p as usize))));
            let written = rmp_serde::to_vec(&column.selected(&which)).expect("written");
            assert_eq!(written, rmp_serde::to_vec(&made).expect("made"));
            let read: Sides<()> = rmp_serde::from_slice(&written).expect("read back");
            assert!(read == made && read.wide == made.wide);
            assert!((which.iter().enumerate()).all(|(i, &p)| read.get(i) == make(p as usize)));
        }
    }
}
