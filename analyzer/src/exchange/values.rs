//! The many values worker 0 gathers of every worker (the first pass's digests, the
//! tables' rows): each worker's written as it makes them (or read back from where it set
//! them aside, as each round is made), sent one piece of whole values a round, each read
//! and dropped before the next, so that neither side holds more than the values' bytes
//! once beside what it already holds. A piece tells each value's length before the
//! values, so that worker 0 reads a piece's values on all its threads while the others
//! wait for it.
//!
//! ```text
//!  piece   [VALUES | count 3 | lengths 40 12 7 | value 0 | value 1 | value 2]
//!  failed  [FAILED | the worker's error, as text]
//! ```

use std::ops::Range;

use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::wire::Bytes;
use super::{Exchange, Parts};
use crate::{Error, Result};

/// The first byte of a piece of a part of [`Values`] sent: values follow, or the error
/// that left the worker without them.
const VALUES: u8 = 0;
const FAILED: u8 = 1;

/// How many bytes of values a worker sends worker 0 at most in one round (but a value
/// larger alone): worker 0 holds one such piece at a time beside the values it read.
/// Worker 0's [`super::scatter`] sends as many bytes at most in one round.
pub(super) const PIECE_BYTES: usize = 64 << 20;

/// The values of a worker's part for [`gather_values`]: kept as they are (worker 0's,
/// which never leave it), or written as the worker made them, so that it holds their
/// bytes (MessagePack, by position), not the values: each value's apart, never copied
/// into one buffer beside them, each freed once sent.
pub(crate) enum Values<T> {
    Kept(Vec<T>),
    /// Each value's bytes ([`Values::write`]'s), in order.
    Written(Vec<Vec<u8>>),
    /// Each value's bytes read when its piece is sent, never all held at once.
    Read(Read),
}

/// Values' bytes read one at a time ([`Values::Read`]): as many bytes at most as each
/// of `lengths` says, read in order by `values`.
pub(crate) struct Read {
    lengths: Vec<usize>,
    values: ReadValues,
}

/// Each value's bytes in order, or the error that left one unread.
type ReadValues = Box<dyn Iterator<Item = Result<Vec<u8>>> + Send>;

impl Values<Bytes> {
    /// The byte strings `pieces`, of `lengths` bytes each, read one at a time as they are
    /// sent ([`Values::Read`]).
    pub(crate) fn read(lengths: Vec<usize>, pieces: ReadValues) -> Values<Bytes> {
        Values::Read(Read {
            // Each is written as MessagePack's bin: at most 5 bytes before its own.
            lengths: lengths.into_iter().map(|n| n + 5).collect(),
            values: Box::new(pieces.map(|piece| Values::write(&Bytes(piece?)))),
        })
    }
}

impl<T: Serialize> Values<T> {
    /// One value's bytes, for [`Values::Written`].
    pub(crate) fn write(value: &T) -> Result<Vec<u8>> {
        rmp_serde::to_vec(value).map_err(|e| Error::Exchange {
            reason: format!("a part could not be written: {e}"),
        })
    }

    /// This part as it is sent: its values' bytes, in pieces of whole values of at most
    /// `most` bytes each (but a value larger alone).
    fn into_pieces(self, most: usize) -> Pieces {
        let (lengths, values) = match self {
            Values::Written(values) => {
                (values.iter().map(Vec::len).collect(), Source::Held(values))
            }
            Values::Kept(kept) => {
                match kept.iter().map(Values::write).collect::<Result<Vec<_>>>() {
                    Ok(values) => (values.iter().map(Vec::len).collect(), Source::Held(values)),
                    Err(e) => return Pieces::failed(e.to_string()),
                }
            }
            Values::Read(Read { lengths, values }) => (lengths, Source::Read(values)),
        };
        let mut cuts = Vec::new();
        let (mut start, mut held) = (0, 0);
        for (k, length) in lengths.iter().enumerate() {
            if k > start && held + length > most {
                cuts.push(start..k);
                (start, held) = (k, 0);
            }
            held += length;
        }
        if start < lengths.len() {
            cuts.push(start..lengths.len());
        }
        Pieces {
            failed: None,
            values,
            cuts,
            unread: None,
        }
    }
}

/// A worker's part, as [`gather_values`] sends it: one piece a round, each made when
/// it is sent (its first byte, its values' lengths, then their bytes) and its values
/// freed (or read only then), so that only one is copied at a time.
struct Pieces {
    /// Why the worker has no values to send, when it has none: its one piece says so.
    failed: Option<String>,
    values: Source,
    /// The values of each piece.
    cuts: Vec<Range<usize>>,
    /// The error that left a value unread: the piece it was to be in, and every one
    /// after, says it instead.
    unread: Option<Error>,
}

/// The values' bytes of [`Pieces`]: held, or read as each piece is made.
enum Source {
    Held(Vec<Vec<u8>>),
    Read(ReadValues),
}

impl Pieces {
    /// The part of a worker that failed: one piece, its error.
    fn failed(reason: String) -> Pieces {
        Pieces {
            failed: Some(reason),
            values: Source::Held(Vec::new()),
            cuts: std::iter::once(0..0).collect(),
            unread: None,
        }
    }

    /// No piece at all (what worker 0 sends itself).
    fn none() -> Pieces {
        Pieces {
            failed: None,
            values: Source::Held(Vec::new()),
            cuts: Vec::new(),
            unread: None,
        }
    }

    /// Piece `k`, ready to send; its values are freed.
    fn piece(&mut self, k: usize) -> Vec<u8> {
        let Some(cut) = self.cuts.get(k).cloned() else {
            return Vec::new();
        };
        if let Some(reason) = &self.failed {
            return failed_piece(reason);
        }
        if let Some(e) = &self.unread {
            return failed_piece(&e.to_string());
        }
        let mut piece = vec![VALUES];
        // The values' lengths first, so that worker 0 reads them on all its threads.
        piece.extend_from_slice(&(cut.len() as u64).to_le_bytes());
        let table = piece.len();
        piece.resize(table + LENGTH * cut.len(), 0);
        let put = |piece: &mut Vec<u8>, i: usize, value: &[u8]| {
            let at = table + LENGTH * i;
            piece[at..at + LENGTH].copy_from_slice(&(value.len() as u64).to_le_bytes());
            piece.extend_from_slice(value);
        };
        match &mut self.values {
            Source::Held(values) => {
                let values = &mut values[cut];
                piece.reserve(values.iter().map(Vec::len).sum::<usize>());
                for (i, value) in values.iter_mut().enumerate() {
                    put(&mut piece, i, &std::mem::take(value));
                }
            }
            Source::Read(values) => {
                for i in 0..cut.len() {
                    let value = values.next().unwrap_or_else(|| {
                        Err(Error::Exchange {
                            reason: "fewer values were read than were told".into(),
                        })
                    });
                    match value {
                        Ok(value) => put(&mut piece, i, &value),
                        Err(e) => {
                            let failed = failed_piece(&e.to_string());
                            self.unread = Some(e);
                            return failed;
                        }
                    }
                }
            }
        }
        piece
    }
}

/// The bytes of each value's length in a piece's table of them.
const LENGTH: usize = 8;

/// A piece that says why there are no values (`reason`) instead of values.
fn failed_piece(reason: &str) -> Vec<u8> {
    let mut piece = vec![FAILED];
    piece.extend_from_slice(reason.as_bytes());
    piece
}

/// The values every worker gives, on worker 0, in worker order (`None` on the others).
/// A worker whose `mine` is an error sends the error, then returns it; worker 0 returns
/// the error of the first worker that failed. Worker 0 takes the others' values one
/// piece at a time ([`PIECE_BYTES`]), each read and dropped before the next comes.
pub(crate) fn gather_values<T: Serialize + DeserializeOwned + Send>(
    ex: &dyn Exchange,
    mine: Result<Values<T>>,
) -> Result<Option<Vec<T>>> {
    gather_values_in(ex, mine, PIECE_BYTES)
}

/// [`gather_values`], in pieces of at most `most` bytes.
pub(super) fn gather_values_in<T: Serialize + DeserializeOwned + Send>(
    ex: &dyn Exchange,
    mine: Result<Values<T>>,
    most: usize,
) -> Result<Option<Vec<T>>> {
    let mut values = Vec::new();
    gather_each_in(ex, mine, most, &mut |value| values.push(value))?;
    Ok((ex.worker() == 0).then_some(values))
}

/// [`gather_values`], each value handed to `take` at worker 0 as it is read, in worker
/// order (worker 0's own first), none kept here; after the first failure, none.
pub(crate) fn gather_each<T: Serialize + DeserializeOwned + Send>(
    ex: &dyn Exchange,
    mine: Result<Values<T>>,
    take: &mut dyn FnMut(T),
) -> Result<()> {
    gather_each_in(ex, mine, PIECE_BYTES, take)
}

/// [`gather_each`], in pieces of at most `most` bytes.
pub(super) fn gather_each_in<T: Serialize + DeserializeOwned + Send>(
    ex: &dyn Exchange,
    mine: Result<Values<T>>,
    most: usize,
    take: &mut dyn FnMut(T),
) -> Result<()> {
    let (workers, me) = (ex.workers(), ex.worker());
    let exchanged = |to| {
        ex.all_to_all(to)
            .map_err(|reason| Error::Exchange { reason })
    };
    let mut first_failed: Option<Error> = None;
    let (mut pieces, failed) = match (mine, me) {
        (Ok(Values::Kept(kept)), 0) => {
            kept.into_iter().for_each(&mut *take);
            (Pieces::none(), None)
        }
        (Ok(own), 0) => {
            let mut own = own.into_pieces(most);
            for k in 0..own.cuts.len() {
                match read_values(&own.piece(k), 0, workers)? {
                    Ok(read) => read.into_iter().for_each(&mut *take),
                    Err(e) => first_failed = Some(e),
                }
            }
            // A value it could not read is its own error, not a worker's it was sent.
            (Pieces::none(), own.unread.take())
        }
        (Ok(own), _) => (own.into_pieces(most), None),
        (Err(e), _) => (Pieces::failed(e.to_string()), Some(e)),
    };
    let failed = match (me, failed) {
        (0, Some(e)) => {
            first_failed = Some(e);
            None
        }
        (_, failed) => failed,
    };
    // How many pieces each worker sends, told to every worker: the rounds that follow
    // are collective, one piece of one worker each.
    let count = (pieces.cuts.len() as u64).to_le_bytes().to_vec();
    let counts: Vec<u64> = exchanged(Parts::of_parts(vec![count; workers]))?
        .parts()
        .map(|b| b.try_into().map_or(0, u64::from_le_bytes))
        .collect();
    for from in 1..workers {
        for k in 0..counts.get(from).copied().unwrap_or(0) {
            let piece = match me == from {
                true => pieces.piece(k as usize),
                false => Vec::new(),
            };
            let got = exchanged(Parts::one(workers, 0, piece))?;
            if me != 0 || first_failed.is_some() {
                continue;
            }
            let bytes = got.parts().nth(from).unwrap_or_default();
            match read_values(bytes, from, workers)? {
                Ok(read) => read.into_iter().for_each(&mut *take),
                Err(e) => first_failed = Some(e),
            }
        }
    }
    let failed = failed.or(pieces.unread.take());
    match (me, failed, first_failed) {
        (0, _, Some(e)) | (_, Some(e), _) => Err(e),
        _ => Ok(()),
    }
}

/// The bytes of each value of a piece's `rest` (after its first byte): its count, each
/// one's length, then their bytes; `None` when they do not add up.
fn value_bytes(rest: &[u8]) -> Option<Vec<&[u8]>> {
    let word = |at: usize| -> Option<usize> {
        let bytes = rest.get(at..at + LENGTH)?;
        usize::try_from(u64::from_le_bytes(bytes.try_into().ok()?)).ok()
    };
    let count = word(0)?;
    let mut at = LENGTH.checked_mul(count.checked_add(1)?)?;
    let mut values = Vec::with_capacity(count.min(rest.len()));
    for i in 0..count {
        let n = word(LENGTH * (i + 1))?;
        values.push(rest.get(at..at.checked_add(n)?)?);
        at += n;
    }
    (at == rest.len()).then_some(values)
}

/// The values of a piece `bytes` of worker `from`, or the error it sent (`Err` inside).
fn read_values<T: DeserializeOwned + Send>(
    bytes: &[u8],
    from: usize,
    workers: usize,
) -> Result<std::result::Result<Vec<T>, Error>> {
    let unreadable = |why: String| Error::Exchange {
        reason: format!("the part of worker {from} could not be read: {why}"),
    };
    match bytes.split_first() {
        Some((&VALUES, rest)) => {
            let values = value_bytes(rest).ok_or_else(|| {
                unreadable("its values' lengths do not add up to its size".into())
            })?;
            // Each value read on its own, on every thread (worker 0 reads the others'
            // values while they wait).
            let read = (values.par_iter())
                .map(|&(mut value)| {
                    let mut reader = rmp_serde::Deserializer::new(&mut value);
                    let read = T::deserialize(&mut reader).map_err(|e| e.to_string())?;
                    match value.is_empty() {
                        true => Ok(read),
                        false => Err("a value is followed by bytes of no value".into()),
                    }
                })
                .collect::<std::result::Result<Vec<T>, String>>();
            Ok(Ok(read.map_err(unreadable)?))
        }
        Some((&FAILED, reason)) => Ok(Err(Error::Worker {
            worker: from,
            workers,
            reason: String::from_utf8_lossy(reason).into_owned(),
        })),
        _ => Err(unreadable("it is empty or of no known kind".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::{read_values, value_bytes, Pieces, Source, Values};

    /// The one piece of `values`, as a worker sends it.
    fn piece_of(values: Vec<Vec<u8>>) -> Vec<u8> {
        let mut pieces = Pieces {
            failed: None,
            cuts: std::iter::once(0..values.len()).collect(),
            values: Source::Held(values),
            unread: None,
        };
        pieces.piece(0)
    }

    fn written(v: u32) -> Vec<u8> {
        Values::write(&v).expect("a number is written")
    }

    /// A piece's table of lengths cuts its bytes into its values; a table that does not
    /// add up to the piece's size (too few bytes, bytes left over, a count past the
    /// end) is refused, never read past.
    #[test]
    fn a_piece_is_cut_by_its_lengths_or_refused() {
        let piece = piece_of(vec![vec![1, 2, 3], vec![], vec![4]]);
        //  count 3 | lengths 3 0 1 | bytes 1 2 3 4
        let rest = &piece[1..];
        assert_eq!(rest.len(), 8 + 3 * 8 + 4);
        let cut = value_bytes(rest).expect("it adds up");
        assert_eq!(cut, vec![&[1u8, 2, 3][..], &[][..], &[4][..]]);
        assert_eq!(value_bytes(&rest[..rest.len() - 1]), None, "a byte short");
        let mut longer = rest.to_vec();
        longer.push(9);
        assert_eq!(value_bytes(&longer), None, "a byte left over");
        let mut counted = rest.to_vec();
        counted[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(value_bytes(&counted), None, "a count past the end");
        assert_eq!(value_bytes(&[]), None, "no count");
    }

    /// Values read on several threads come back in their order; a value followed by
    /// bytes that are none of it is refused with the worker's name.
    #[test]
    fn values_are_read_in_order_and_whole() {
        let piece = piece_of((0..100).map(written).collect());
        let read: Vec<u32> = read_values(&piece, 1, 2).expect("read").expect("values");
        assert_eq!(read, (0..100).collect::<Vec<u32>>());
        // One value of two numbers where one number is told.
        let piece = piece_of(vec![[written(7), written(8)].concat()]);
        let e = read_values::<u32>(&piece, 1, 2).expect_err("refused");
        assert!(e.to_string().contains("worker 1"), "{e}");
    }
}
