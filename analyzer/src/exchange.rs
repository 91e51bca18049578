//! The analysis's workers and what they send one another. A run too large for one
//! process is analysed by W workers (`overlap analyze --parallel W`, an MPI job), each
//! owning a contiguous block of the run's rank files of about equal bytes ([`share`]);
//! what they share moves between them through [`Exchange::all_to_all`]. The analyzer
//! holds no MPI: the `overlap` binary implements [`Exchange`] over MPI, and here are the
//! exchange of one process alone ([`Alone`]) and that of workers on threads of one
//! process ([`Threads`]), with which the tests run the workers' path without MPI.
//!
//! What crosses is MessagePack ([`rmp_serde`]): small parts every worker gets, by name
//! ([`all_gather`]), and the many values worker 0 gathers, by position, each worker's
//! written as it makes them ([`gather_values`]). Each worker sends its part or the error
//! that left it without one: a worker that fails is reported by every worker that hears
//! from it, with the error the analysis of one process would give, and none waits for a
//! part that will never come.

use std::ops::Range;
use std::sync::{Barrier, Mutex};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Error, Result};

/// How the workers of one analysis reach one another. Every worker makes the same calls
/// in the same order (as with MPI's collectives).
pub trait Exchange: Sync {
    /// This worker's number, from 0; worker 0 assembles the report.
    fn worker(&self) -> usize;

    /// How many workers there are.
    fn workers(&self) -> usize;

    /// Sends `to[k]` to worker `k`, for every worker (`to` has one entry per worker, its
    /// own included), and gives what every worker sent this one, in worker order.
    fn all_to_all(&self, to: Vec<Vec<u8>>) -> std::result::Result<Received, String>;
}

/// What a worker received of every worker, in worker order, in one buffer: each part
/// is read where it lies, none copied out.
#[derive(Debug, Default)]
pub struct Received {
    /// The parts, one after another.
    pub bytes: Vec<u8>,
    /// Each worker's part's length.
    pub sizes: Vec<usize>,
}

impl Received {
    /// The parts `parts` gives, one after another.
    pub fn of_parts(parts: Vec<Vec<u8>>) -> Received {
        let sizes = parts.iter().map(Vec::len).collect();
        let bytes = match parts.len() {
            1 => parts.into_iter().next().unwrap_or_default(),
            _ => parts.concat(),
        };
        Received { bytes, sizes }
    }

    /// Each worker's part, in worker order.
    pub fn parts(&self) -> impl Iterator<Item = &[u8]> {
        let mut at = 0;
        self.sizes.iter().map(move |&n| {
            let part = &self.bytes[at..at + n];
            at += n;
            part
        })
    }
}

/// The exchange of an analysis that is one process: the worker sends only to itself.
pub struct Alone;

impl Exchange for Alone {
    fn worker(&self) -> usize {
        0
    }

    fn workers(&self) -> usize {
        1
    }

    fn all_to_all(&self, to: Vec<Vec<u8>>) -> std::result::Result<Received, String> {
        Ok(Received::of_parts(to))
    }
}

/// Workers on threads of one process, exchanging through memory: the workers' path run
/// without MPI.
pub struct Threads {
    workers: usize,
    /// `posted[from][to]`: what `from` sent `to`, taken by `to`.
    posted: Mutex<Vec<Vec<Vec<u8>>>>,
    /// Every worker posts, then every worker takes, then the next call may post.
    barrier: Barrier,
}

/// One worker of [`Threads`].
struct ThreadWorker<'b> {
    board: &'b Threads,
    worker: usize,
}

impl Threads {
    /// Runs `each` on `workers` workers, each on a thread of its own, and gives what each
    /// returned, in worker order.
    pub fn run<R: Send>(workers: usize, each: impl Fn(&dyn Exchange) -> R + Sync) -> Vec<R> {
        let workers = workers.max(1);
        let board = Threads {
            workers,
            posted: Mutex::new(vec![Vec::new(); workers]),
            barrier: Barrier::new(workers),
        };
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|worker| {
                    let (board, each) = (&board, &each);
                    s.spawn(move || each(&ThreadWorker { board, worker }))
                })
                .collect();
            (handles.into_iter())
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    }
}

impl Exchange for ThreadWorker<'_> {
    fn worker(&self) -> usize {
        self.worker
    }

    fn workers(&self) -> usize {
        self.board.workers
    }

    fn all_to_all(&self, to: Vec<Vec<u8>>) -> std::result::Result<Received, String> {
        let board = self.board;
        if to.len() != board.workers {
            return Err(format!("{} parts for {} workers", to.len(), board.workers));
        }
        let lock = || board.posted.lock().unwrap_or_else(|p| p.into_inner());
        lock()[self.worker] = to;
        board.barrier.wait();
        let got: Vec<Vec<u8>> = {
            let mut posted = lock();
            (posted.iter_mut())
                .map(|from| std::mem::take(&mut from[self.worker]))
                .collect()
        };
        board.barrier.wait();
        Ok(Received::of_parts(got))
    }
}

/// What a worker sends: its part, or the error that left it without one.
type Sent<T> = std::result::Result<T, String>;

/// `sent` written by name (the file formats' types leave out fields they do not have,
/// which a writing by position would misplace).
fn encode<T: Serialize>(sent: &Sent<T>) -> Result<Vec<u8>> {
    rmp_serde::to_vec_named(sent).map_err(|e| Error::Exchange {
        reason: format!("a part could not be written: {e}"),
    })
}

fn decode<T: DeserializeOwned>(bytes: &[u8], from: usize) -> Result<Sent<T>> {
    rmp_serde::from_slice(bytes).map_err(|e| Error::Exchange {
        reason: format!("the part of worker {from} could not be read: {e}"),
    })
}

/// The parts of every worker, in worker order, or the error of the first that failed.
fn parts_of<T: DeserializeOwned>(ex: &dyn Exchange, got: Received) -> Result<Vec<T>> {
    let mut parts = Vec::with_capacity(got.sizes.len());
    for (from, bytes) in got.parts().enumerate() {
        match decode::<T>(bytes, from)? {
            Ok(part) => parts.push(part),
            Err(reason) => {
                return Err(Error::Worker {
                    worker: from,
                    workers: ex.workers(),
                    reason,
                })
            }
        }
    }
    Ok(parts)
}

/// The first byte of a piece of a part of [`Values`] sent: values follow, or the error
/// that left the worker without them.
const VALUES: u8 = 0;
const FAILED: u8 = 1;

/// How many bytes of values a worker sends worker 0 at most in one round (but a value
/// larger alone): worker 0 holds one such piece at a time beside the values it read.
const PIECE_BYTES: usize = 64 << 20;

/// The values of a worker's part for [`gather_values`]: kept as they are (worker 0's,
/// which never leave it), or written one after another as the worker made them, so
/// that it holds their bytes (MessagePack, by position), not the values.
pub(crate) enum Values<T> {
    Kept(Vec<T>),
    Written {
        bytes: Vec<u8>,
        /// Where each value ends in `bytes`.
        ends: Vec<usize>,
    },
}

impl<T: Serialize> Values<T> {
    /// One value's bytes, for [`Values::of_written`].
    pub(crate) fn write(value: &T) -> Result<Vec<u8>> {
        rmp_serde::to_vec(value).map_err(|e| Error::Exchange {
            reason: format!("a part could not be written: {e}"),
        })
    }

    /// The values whose bytes are `pieces` ([`Values::write`]'s), in that order, each
    /// piece freed as it is copied (what is held is about their bytes once).
    pub(crate) fn of_written(pieces: Vec<Vec<u8>>) -> Values<T> {
        let mut bytes = Vec::with_capacity(pieces.iter().map(Vec::len).sum::<usize>());
        let mut ends = Vec::with_capacity(pieces.len());
        for piece in pieces {
            bytes.extend_from_slice(&piece);
            ends.push(bytes.len());
        }
        Values::Written { bytes, ends }
    }

    /// This part as it is sent: its bytes, cut into pieces of whole values of at most
    /// `most` bytes each (but a value larger alone).
    fn into_pieces(self, most: usize) -> Pieces {
        let (bytes, ends) = match self {
            Values::Written { bytes, ends } => (bytes, ends),
            Values::Kept(kept) => {
                let written: Result<Vec<Vec<u8>>> = kept.iter().map(Values::write).collect();
                match written.map(Values::<T>::of_written) {
                    Ok(Values::Written { bytes, ends }) => (bytes, ends),
                    Ok(Values::Kept(_)) => (Vec::new(), Vec::new()),
                    Err(e) => return Pieces::failed(&e.to_string()),
                }
            }
        };
        let mut cuts = Vec::new();
        let mut start = 0;
        for (k, &end) in ends.iter().enumerate() {
            let next = ends.get(k + 1).copied();
            if next.is_none_or(|next| next - start > most) {
                cuts.push(start..end);
                start = end;
            }
        }
        Pieces {
            first: VALUES,
            bytes,
            cuts,
        }
    }
}

/// A worker's part, as [`gather_values`] sends it: one piece a round, each made when
/// it is sent (its first byte, then its bytes), so that only one is copied at a time.
struct Pieces {
    first: u8,
    bytes: Vec<u8>,
    cuts: Vec<Range<usize>>,
}

impl Pieces {
    /// The part of a worker that failed: one piece, its error.
    fn failed(reason: &str) -> Pieces {
        let bytes = reason.as_bytes().to_vec();
        Pieces {
            first: FAILED,
            cuts: std::iter::once(0..bytes.len()).collect(),
            bytes,
        }
    }

    /// No piece at all (what worker 0 sends itself).
    fn none() -> Pieces {
        Pieces {
            first: VALUES,
            bytes: Vec::new(),
            cuts: Vec::new(),
        }
    }

    /// Piece `k`, ready to send.
    fn piece(&self, k: usize) -> Vec<u8> {
        let Some(cut) = self.cuts.get(k) else {
            return Vec::new();
        };
        let mut piece = Vec::with_capacity(1 + cut.len());
        piece.push(self.first);
        piece.extend_from_slice(&self.bytes[cut.clone()]);
        piece
    }
}

/// The values every worker gives, on worker 0, in worker order (`None` on the others).
/// A worker whose `mine` is an error sends the error, then returns it; worker 0 returns
/// the error of the first worker that failed. Worker 0 takes the others' values one
/// piece at a time ([`PIECE_BYTES`]), each read and dropped before the next comes.
pub(crate) fn gather_values<T: Serialize + DeserializeOwned>(
    ex: &dyn Exchange,
    mine: Result<Values<T>>,
) -> Result<Option<Vec<T>>> {
    gather_values_in(ex, mine, PIECE_BYTES)
}

/// [`gather_values`], in pieces of at most `most` bytes.
fn gather_values_in<T: Serialize + DeserializeOwned>(
    ex: &dyn Exchange,
    mine: Result<Values<T>>,
    most: usize,
) -> Result<Option<Vec<T>>> {
    let (workers, me) = (ex.workers(), ex.worker());
    let exchanged = |to| {
        ex.all_to_all(to)
            .map_err(|reason| Error::Exchange { reason })
    };
    let (mut values, mut first_failed): (Vec<T>, Option<Error>) = (Vec::new(), None);
    let (pieces, failed) = match (mine, me) {
        (Ok(Values::Kept(kept)), 0) => {
            values = kept;
            (Pieces::none(), None)
        }
        (Ok(own), 0) => {
            let own = own.into_pieces(most);
            for k in 0..own.cuts.len() {
                match read_values(&own.piece(k), 0, workers)? {
                    Ok(read) => values.extend(read),
                    Err(e) => first_failed = Some(e),
                }
            }
            (Pieces::none(), None)
        }
        (Ok(own), _) => (own.into_pieces(most), None),
        (Err(e), _) => (Pieces::failed(&e.to_string()), Some(e)),
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
    let counts: Vec<u64> = exchanged(vec![count; workers])?
        .parts()
        .map(|b| b.try_into().map_or(0, u64::from_le_bytes))
        .collect();
    for from in 1..workers {
        for k in 0..counts.get(from).copied().unwrap_or(0) {
            let mut to = vec![Vec::new(); workers];
            if me == from {
                to[0] = pieces.piece(k as usize);
            }
            let got = exchanged(to)?;
            if me != 0 || first_failed.is_some() {
                continue;
            }
            let bytes = got.parts().nth(from).unwrap_or_default();
            match read_values(bytes, from, workers)? {
                Ok(read) => values.extend(read),
                Err(e) => first_failed = Some(e),
            }
        }
    }
    if me != 0 {
        return match failed {
            Some(e) => Err(e),
            None => Ok(None),
        };
    }
    match first_failed {
        Some(e) => Err(e),
        None => Ok(Some(values)),
    }
}

/// The values of a piece `bytes` of worker `from`, or the error it sent (`Err` inside).
fn read_values<T: DeserializeOwned>(
    bytes: &[u8],
    from: usize,
    workers: usize,
) -> Result<std::result::Result<Vec<T>, Error>> {
    let unreadable = |why: String| Error::Exchange {
        reason: format!("the part of worker {from} could not be read: {why}"),
    };
    match bytes.split_first() {
        Some((&VALUES, mut rest)) => {
            let mut values = Vec::new();
            while !rest.is_empty() {
                let mut reader = rmp_serde::Deserializer::new(&mut rest);
                let value = T::deserialize(&mut reader).map_err(|e| unreadable(e.to_string()))?;
                values.push(value);
            }
            Ok(Ok(values))
        }
        Some((&FAILED, reason)) => Ok(Err(Error::Worker {
            worker: from,
            workers,
            reason: String::from_utf8_lossy(reason).into_owned(),
        })),
        _ => Err(unreadable("it is empty or of no known kind".into())),
    }
}

/// Every worker's part on every worker, in worker order, or on every worker the error of
/// the first worker that failed.
pub(crate) fn all_gather<T: Serialize + DeserializeOwned>(
    ex: &dyn Exchange,
    mine: Result<T>,
) -> Result<Vec<T>> {
    let sent = mine.map_err(|e| e.to_string());
    let bytes = encode(&sent)?;
    drop(sent);
    let got = ex
        .all_to_all(vec![bytes; ex.workers()])
        .map_err(|reason| Error::Exchange { reason })?;
    parts_of(ex, got)
}

/// The files each of `workers` workers owns, of files of `sizes` bytes in rank order:
/// contiguous blocks of about equal bytes (a file goes to the worker whose share of the
/// bytes holds its middle), some empty when files are fewer than workers.
pub fn share(sizes: &[u64], workers: usize) -> Vec<Range<usize>> {
    let workers = workers.max(1);
    let total: u128 = sizes.iter().map(|&s| u128::from(s.max(1))).sum();
    let mut owner = Vec::with_capacity(sizes.len());
    let mut before: u128 = 0;
    for &s in sizes {
        let s = u128::from(s.max(1));
        let middle = 2 * before + s;
        let w = (middle * workers as u128 / (2 * total)) as usize;
        owner.push(w.min(workers - 1));
        before += s;
    }
    (0..workers)
        .map(|w| owner.partition_point(|&o| o < w)..owner.partition_point(|&o| o <= w))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_contiguous_blocks_of_about_equal_bytes() {
        // 8 files of 10 bytes on 4 workers: two each.
        assert_eq!(share(&[10; 8], 4), vec![0..2, 2..4, 4..6, 6..8]);
        // One large file and four small ones: the large one alone.
        //   bytes: 80 | 5 5 5 5   (total 100; halves at 50)
        assert_eq!(share(&[80, 5, 5, 5, 5], 2), vec![0..1, 1..5]);
        // Fewer files than workers: some workers own none.
        assert_eq!(share(&[7, 7], 4), vec![0..0, 0..1, 1..1, 1..2]);
        assert_eq!(share(&[], 3), vec![0..0, 0..0, 0..0]);
        // Empty files still count: they are owned by someone.
        let blocks = share(&[0, 0, 0], 2);
        assert_eq!(blocks.iter().map(|b| b.len()).sum::<usize>(), 3);
    }

    #[test]
    fn every_worker_gets_every_part_in_worker_order() {
        let got = Threads::run(3, |ex| {
            let mine: Result<u32> = Ok(10 * ex.worker() as u32);
            let all = all_gather(ex, mine).expect("parts");
            // Worker 0's values kept, worker 1's written as made, worker 2's kept and
            // written by the gather.
            let w = ex.worker() as u32;
            let mine = match w {
                1 => {
                    let pieces: Result<Vec<Vec<u8>>> =
                        [w, 100 + w].iter().map(Values::write).collect();
                    Values::of_written(pieces.expect("written"))
                }
                _ => Values::Kept(vec![w, 100 + w]),
            };
            // In pieces of one value each, as in one piece: the same values.
            let at_first = gather_values_in(ex, Ok(mine), 1).expect("parts");
            let mine = Values::Kept(vec![w, 100 + w]);
            let whole = gather_values(ex, Ok(mine)).expect("parts");
            assert_eq!(at_first, whole);
            (all, at_first)
        });
        for (worker, (all, at_first)) in got.into_iter().enumerate() {
            assert_eq!(all, vec![0, 10, 20]);
            let expected = (worker == 0).then(|| vec![0, 100, 1, 101, 2, 102]);
            assert_eq!(at_first, expected);
        }
    }

    /// Worker 0 hears of the first worker that failed, itself included; a worker that
    /// failed returns its own error, the others nothing.
    #[test]
    fn the_gather_reports_the_first_worker_that_failed() {
        let failing = |fails: &'static [usize]| {
            Threads::run(4, move |ex| {
                let w = ex.worker();
                let mine: Result<Values<u32>> = match fails.contains(&w) {
                    true => Err(Error::Exchange {
                        reason: format!("worker {w} broke"),
                    }),
                    false => Ok(Values::Kept(vec![w as u32])),
                };
                gather_values(ex, mine).map_err(|e| e.to_string())
            })
        };
        let got = failing(&[2, 3]);
        let said = |r: &std::result::Result<Option<Vec<u32>>, String>| {
            r.clone().expect_err("the worker failed")
        };
        assert!(said(&got[0]).contains("worker 2 broke"), "{:?}", got[0]);
        assert_eq!(got[1], Ok(None));
        assert!(said(&got[3]).contains("worker 3 broke"));
        let got = failing(&[0, 1]);
        assert!(said(&got[0]).contains("worker 0 broke"), "{:?}", got[0]);
        assert_eq!(got[2], Ok(None));
        let got = failing(&[]);
        assert_eq!(got[0], Ok(Some(vec![0, 1, 2, 3])));
    }

    #[test]
    fn a_failing_worker_is_reported_with_its_own_error_and_none_waits() {
        let got = Threads::run(3, |ex| {
            let mine: Result<u32> = match ex.worker() {
                1 => Err(Error::Exchange {
                    reason: "rank-1.ovlp: broken".into(),
                }),
                w => Ok(w as u32),
            };
            let all = all_gather(ex, mine).map_err(|e| e.to_string());
            // The workers go on to the next exchange all the same: none is left waiting.
            let kept = Values::Kept(vec![0u8]);
            let at_first = gather_values(ex, Ok(kept)).map_err(|e| e.to_string());
            (all, at_first)
        });
        for (all, at_first) in &got {
            let all = all.as_ref().expect_err("worker 1 failed");
            assert!(all.contains("rank-1.ovlp: broken"), "{all}");
            assert!(at_first.is_ok());
        }
    }
}
