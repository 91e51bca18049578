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

mod scatter;
mod threads;
mod values;
pub(crate) mod wire;

use std::ops::Range;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Error, Result};
pub(crate) use scatter::scatter;
pub use threads::Threads;
pub(crate) use values::{gather_each, gather_values, Values};

/// How the workers of one analysis reach one another. Every worker makes the same calls
/// in the same order (as with MPI's collectives).
pub trait Exchange: Sync {
    /// This worker's number, from 0; worker 0 assembles the report.
    fn worker(&self) -> usize;

    /// How many workers there are.
    fn workers(&self) -> usize;

    /// Sends part `k` of `to` to worker `k`, for every worker (`to` has one part per
    /// worker, its own included), and gives what every worker sent this one, in worker
    /// order.
    fn all_to_all(&self, to: Parts) -> std::result::Result<Parts, String>;
}

/// One part for or from each worker, in worker order, one after another in one buffer:
/// what a worker sends is written there (none copied in), and what it received is read
/// where it lies (none copied out).
#[derive(Debug, Default)]
pub struct Parts {
    /// The parts, one after another.
    pub bytes: Vec<u8>,
    /// Each worker's part's length.
    pub sizes: Vec<usize>,
}

impl Parts {
    /// The parts `parts` gives, one after another.
    pub fn of_parts(parts: Vec<Vec<u8>>) -> Parts {
        let sizes = parts.iter().map(Vec::len).collect();
        let bytes = match parts.len() {
            1 => parts.into_iter().next().unwrap_or_default(),
            _ => parts.concat(),
        };
        Parts { bytes, sizes }
    }

    /// `workers` parts, all empty but part `k`, `part`: its bytes moved, not copied.
    pub fn one(workers: usize, k: usize, part: Vec<u8>) -> Parts {
        let mut sizes = vec![0; workers];
        sizes[k] = part.len();
        Parts { bytes: part, sizes }
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

    fn all_to_all(&self, to: Parts) -> std::result::Result<Parts, String> {
        Ok(to)
    }
}

/// What a worker sends: its part, or the error that left it without one.
type Sent<T> = std::result::Result<T, String>;

/// `sent` written by name (the file formats' types leave out fields they do not have,
/// which a writing by position would misplace).
fn encode<T: Serialize>(sent: &Sent<T>) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    encode_into(&mut bytes, sent)?;
    Ok(bytes)
}

/// [`encode`], after `bytes`. A part that cannot be written is written as its error,
/// in its place (so that none waits for it).
fn encode_into<T: Serialize>(bytes: &mut Vec<u8>, sent: &Sent<T>) -> Result<()> {
    let at = bytes.len();
    let written = wire::for_a_worker(|| rmp_serde::encode::write_named(bytes, sent));
    let Err(e) = written else { return Ok(()) };
    bytes.truncate(at);
    let reason = format!("a part could not be written: {e}");
    let said = rmp_serde::encode::write_named(bytes, &Sent::<T>::Err(reason.clone()));
    said.map_err(|_| Error::Exchange { reason })
}

fn decode<T: DeserializeOwned>(bytes: &[u8], from: usize) -> Result<Sent<T>> {
    rmp_serde::from_slice(bytes).map_err(|e| Error::Exchange {
        reason: format!("the part of worker {from} could not be read: {e}"),
    })
}

/// The parts of every worker, in worker order, or the error of the first that failed.
fn parts_of<T: DeserializeOwned>(ex: &dyn Exchange, got: Parts) -> Result<Vec<T>> {
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
        .all_to_all(Parts::of_parts(vec![bytes; ex.workers()]))
        .map_err(|reason| Error::Exchange { reason })?;
    parts_of(ex, got)
}

/// Every worker's part at worker 0, in worker order (`None` at the others); worker 0
/// returns the error of the first worker that failed, and a worker that failed returns
/// its own error once it has sent it.
pub(crate) fn gather<T: Serialize + DeserializeOwned>(
    ex: &dyn Exchange,
    mine: Result<T>,
) -> Result<Option<Vec<T>>> {
    let (sent, failed) = match mine {
        Ok(part) => (Ok(part), None),
        Err(e) => (Err(e.to_string()), Some(e)),
    };
    let to = Parts::one(ex.workers(), 0, encode(&sent)?);
    drop(sent);
    let got = ex
        .all_to_all(to)
        .map_err(|reason| Error::Exchange { reason })?;
    match (ex.worker(), failed) {
        (0, _) => parts_of(ex, got).map(Some),
        (_, Some(e)) => Err(e),
        (_, None) => Ok(None),
    }
}

/// Whether every worker could go on: each gives its own `Ok` or the reason it cannot,
/// and every worker gets the first failure's reason (an [`Error::Worker`]), so that none
/// goes on to wait for a worker that gave up.
pub fn agree(ex: &dyn Exchange, mine: std::result::Result<(), String>) -> Result<()> {
    let mine = mine.map_err(|reason| Error::Worker {
        worker: ex.worker(),
        workers: ex.workers(),
        reason,
    });
    all_gather::<()>(ex, mine).map(|_| ())
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
mod tests;
