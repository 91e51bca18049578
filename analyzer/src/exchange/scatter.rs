//! What worker 0 makes for each worker, given to that worker: the views of the second
//! pass, each as large as its worker's share of the run. A part is written by position
//! straight into rounds of at most [`super::values::PIECE_BYTES`] (a round sent as soon
//! as it is full, in the middle of a part if need be), so that worker 0 holds one
//! round's bytes, not a worker's part, and never every worker's; each worker keeps the
//! pieces of its own part as they come and reads it once the last has come, each piece
//! dropped once read (never the part's bytes in one buffer beside what is read of
//! them).
//!
//! ```text
//!  round      1            2            3 (last)
//!  worker 1   [more|a a a] [more|a a]   [last|]
//!  worker 2   [more|]      [more|b]     [last|b b]
//! ```

use std::collections::VecDeque;
use std::io::{Read, Write};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{wire, Exchange, Parts, Sent};
use crate::{Error, Result};

/// What worker 0 makes for each worker (`part_for(k)` for worker `k`, written as a `T`;
/// `None` at the other workers), given to that worker (read as a `U`): every worker
/// returns its own part, or the error worker 0 had instead.
pub(crate) fn scatter<T: Serialize, U: DeserializeOwned>(
    ex: &dyn Exchange,
    part_for: Option<&dyn Fn(usize) -> Result<T>>,
) -> Result<U> {
    scatter_in(ex, part_for, super::values::PIECE_BYTES)
}

/// The first byte of each worker's piece of a round: whether more rounds follow, and
/// whether the worker is to forget what came of its part before (a part that could not
/// be written whole, its error following).
const MORE_ROUNDS: u8 = 1;
const START_AGAIN: u8 = 2;

/// [`scatter`], in rounds of at most `most` bytes.
pub(super) fn scatter_in<T: Serialize, U: DeserializeOwned>(
    ex: &dyn Exchange,
    part_for: Option<&dyn Fn(usize) -> Result<T>>,
    most: usize,
) -> Result<U> {
    let mut rounds = Rounds::new(ex, most);
    match part_for {
        Some(part_for) => {
            for k in 0..ex.workers() {
                rounds.write_for(k);
                let sent: Sent<T> = part_for(k).map_err(|e| e.to_string());
                let written = wire::for_a_worker(|| rmp_serde::encode::write(&mut rounds, &sent));
                drop(sent);
                if let Err(e) = written {
                    if let Some(broken) = rounds.broken.take() {
                        return Err(broken);
                    }
                    // What was sent of the part is forgotten; its error is sent instead.
                    rounds.start_again();
                    let reason = format!("a part could not be written: {e}");
                    rmp_serde::encode::write(&mut rounds, &Sent::<T>::Err(reason))
                        .map_err(|e| rounds.broken.take().unwrap_or(exchange_error(e)))?;
                }
            }
            rounds.send(false)?;
        }
        None => {
            while !rounds.done {
                rounds.send(false)?;
            }
        }
    }
    let pieces = Pieces {
        pieces: std::mem::take(&mut rounds.mine),
        at: FIRST_BYTE,
    };
    let mine: Sent<U> = rmp_serde::from_read(pieces).map_err(|e| Error::Exchange {
        reason: format!("the part of worker 0 could not be read: {e}"),
    })?;
    mine.map_err(|reason| Error::Worker {
        worker: 0,
        workers: ex.workers(),
        reason,
    })
}

fn exchange_error(e: impl std::fmt::Display) -> Error {
    Error::Exchange {
        reason: e.to_string(),
    }
}

/// The rounds of one scatter, at every worker: at worker 0, what is written of the parts
/// until the round is full (worker `to`'s part being written); at every worker, the
/// bytes of its own part received so far.
///
/// Worker 0 writes a round as the exchange sends it ([`Parts`]): each worker's piece
/// after its first byte (set when the round is sent), one after another, so that the
/// round is handed to the exchange as it is, never copied beside itself.
///
/// ```text
///  pending   [·|a a a a][·|b b][·|c c c]     · the first byte of each worker's piece
///  starts     0         5      8             (worker `to` = 2 being written)
/// ```
struct Rounds<'e> {
    ex: &'e dyn Exchange,
    most: usize,
    /// The worker whose part is being written.
    to: usize,
    /// This round's pieces, those of workers `0..=to`, each behind its first byte.
    pending: Vec<u8>,
    /// Where each piece of `pending` starts (its first byte).
    starts: Vec<usize>,
    /// The workers to forget what came of their parts before this round's bytes.
    again: Vec<bool>,
    /// This worker's part so far, a piece a round, each behind its first byte.
    mine: VecDeque<Vec<u8>>,
    /// Whether the last round has come.
    done: bool,
    /// The exchange's failure inside a writing (which can only say it failed).
    broken: Option<Error>,
}

impl<'e> Rounds<'e> {
    fn new(ex: &'e dyn Exchange, most: usize) -> Rounds<'e> {
        let mut rounds = Rounds {
            ex,
            most,
            to: 0,
            pending: Vec::new(),
            starts: Vec::with_capacity(ex.workers()),
            again: vec![false; ex.workers()],
            mine: VecDeque::new(),
            done: false,
            broken: None,
        };
        rounds.open_round();
        rounds
    }

    /// Starts the next round at worker 0: a piece (without bytes yet) for each worker
    /// up to `to`. Its room is made once: a write past `most` (a bin) fits in an eighth
    /// more, where growing the round would copy it.
    fn open_round(&mut self) {
        if self.ex.worker() != 0 {
            return;
        }
        self.pending = Vec::with_capacity(self.most + self.most / 8 + self.ex.workers());
        self.starts.clear();
        self.open_pieces(self.to);
    }

    /// Opens the pieces of the workers after the last open one up to `to`.
    fn open_pieces(&mut self, to: usize) {
        while self.starts.len() <= to {
            self.starts.push(self.pending.len());
            self.pending.push(0);
        }
    }

    /// What follows is worker `to`'s part (the workers are written in order).
    fn write_for(&mut self, to: usize) {
        debug_assert!(
            to >= self.to,
            "a scatter's parts are written in worker order"
        );
        self.open_pieces(to);
        self.to = to;
    }

    /// Drops what is written of worker `to`'s part, in this round and before.
    fn start_again(&mut self) {
        self.pending.truncate(self.starts[self.to] + 1);
        self.again[self.to] = true;
    }

    /// Sends this round (every worker's piece behind its first byte; worker 0 says
    /// whether more rounds follow, `more`), and keeps this worker's piece.
    fn send(&mut self, more: bool) -> Result<()> {
        let workers = self.ex.workers();
        let to = match self.ex.worker() {
            0 => {
                self.open_pieces(workers - 1);
                let ends = self.starts[1..].iter().copied().chain([self.pending.len()]);
                let sizes = self.starts.iter().zip(ends).map(|(s, e)| e - s).collect();
                for (k, &at) in self.starts.iter().enumerate() {
                    let again = std::mem::take(&mut self.again[k]);
                    self.pending[at] = u8::from(more) * MORE_ROUNDS + u8::from(again) * START_AGAIN;
                }
                let bytes = std::mem::take(&mut self.pending);
                if more {
                    self.open_round();
                }
                Parts { bytes, sizes }
            }
            _ => Parts::of_parts(vec![Vec::new(); workers]),
        };
        let got = self.ex.all_to_all(to).map_err(exchange_error)?;
        // Worker 0's piece comes first: the received bytes cut to it are kept as they
        // are, its first byte with them (never copied out of what came).
        let from_0 = got.sizes.first().copied().unwrap_or(0);
        let mut piece = got.bytes;
        piece.truncate(from_0);
        let Some(&first) = piece.first() else {
            return Err(exchange_error(
                "worker 0 sent a round of its scatter without a word",
            ));
        };
        if first & START_AGAIN != 0 {
            self.mine.clear();
        }
        if piece.len() > 1 {
            self.mine.push_back(piece);
        }
        self.done = first & MORE_ROUNDS == 0;
        Ok(())
    }
}

/// What worker 0 writes goes into the round, sent once full. (MessagePack is written
/// a few bytes a call: a write only appends, the round's sending kept out of its way.)
impl Write for Rounds<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.write_all(bytes).map(|()| bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= self.most {
            self.send_full()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Rounds<'_> {
    /// Sends the full round that a write made, the exchange's failure kept
    /// ([`Rounds::broken`]).
    #[cold]
    #[inline(never)]
    fn send_full(&mut self) -> std::io::Result<()> {
        self.send(true).map_err(|e| {
            let said = e.to_string();
            self.broken = Some(e);
            std::io::Error::other(said)
        })
    }
}

/// Where a piece's bytes of the part start: after its first byte.
const FIRST_BYTE: usize = 1;

/// The pieces of a part, each behind its first byte, read one after another, each
/// dropped once read (`at`: how far the first is read).
struct Pieces {
    pieces: VecDeque<Vec<u8>>,
    at: usize,
}

impl Read for Pieces {
    /// MessagePack is read a few bytes a call: those within the first piece are copied
    /// at once, the rest read as [`Read::read`] reads.
    #[inline]
    fn read_exact(&mut self, into: &mut [u8]) -> std::io::Result<()> {
        if let Some(within) =
            (self.pieces.front()).and_then(|f| f.get(self.at..self.at + into.len()))
        {
            into.copy_from_slice(within);
            self.at += into.len();
            return Ok(());
        }
        read_exact_across(self, into)
    }

    fn read(&mut self, into: &mut [u8]) -> std::io::Result<usize> {
        while let Some(front) = self.pieces.front() {
            let rest = &front[self.at..];
            if rest.is_empty() {
                self.pieces.pop_front();
                self.at = FIRST_BYTE;
                continue;
            }
            let n = into.len().min(rest.len());
            into[..n].copy_from_slice(&rest[..n]);
            self.at += n;
            return Ok(n);
        }
        Ok(0)
    }
}

/// [`Read::read_exact`] as the standard library reads it, across pieces.
#[cold]
#[inline(never)]
fn read_exact_across(pieces: &mut Pieces, mut into: &mut [u8]) -> std::io::Result<()> {
    while !into.is_empty() {
        match pieces.read(into)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => into = &mut into[n..],
        }
    }
    Ok(())
}
