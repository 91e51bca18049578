//! The first pass ([`super::digest`]) made by several workers ([`crate::exchange`]):
//! each reads through and digests only its own block of the run's rank files, and
//! worker 0 joins the digests into what crosses ranks, as one process would.
//!
//! ```text
//!  worker w: its files read through ─► headers, clocks, counts ─┐ all-gather: every
//!                                                               │ worker the run's
//!  every worker: the run's files checked, its clock plan  ◄─────┘ files, as one reads
//!  worker w: its block's ranks read again ─► digests ─► gather at worker 0 ─► join
//!                                         └─► compute and requests, kept
//! ```
//!
//! Every worker checks the run as one process would (the same files, the same errors),
//! and the digests are the same records one process makes, joined in rank order: what
//! comes out at worker 0 is [`super::digest::digest_dir`]'s, field for field, but for
//! the ranks' compute and the other blocks' requests. A worker digests the block of ranks
//! whose figures it will make ([`blocks`]), and keeps their compute and requests: only
//! the figures of its own ranks read them (the requests cross once more, later, for the
//! program).

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::digest::{digest_files, joined, requests_kept, Digested};
use crate::exchange::wire::chunked::column;
use crate::exchange::{all_gather, gather_values, share, Exchange, Values};
use crate::import::{rank_files, Reading};
use crate::merge::{file_size, read_each_into, Counted, RunFiles, Unreadable};
use crate::model::compute::RankCompute;
use crate::model::{RankTrace, RequestLife};
use crate::{Error, Result};

/// What a worker found of its files when it read them through: each usable one's
/// header, clocks and event count, the files it could not use, and each file's size
/// then.
type ReadThrough = (
    Vec<RankTrace<Counted>>,
    Vec<Unreadable>,
    Vec<(PathBuf, u64)>,
);

/// What the first pass made by several workers gives a worker.
pub(crate) enum Shared {
    /// At worker 0: what crosses the run's ranks, joined.
    Joined(Box<Digested>),
    /// At the others: the run's files, as every worker checked them, and what the
    /// worker keeps of its block of them ([`blocks`]).
    Own(Box<RunFiles>, Kept),
}

/// What a worker of a job keeps of the ranks of its block from the first pass, in rank
/// order: only the figures of its block read them.
pub(crate) struct Kept {
    /// Each rank's compute.
    pub compute: Vec<RankCompute>,
    /// Each rank's requests, written as a [`RequestColumn`] (fewer bytes than they take
    /// decoded; held through the gather beside the digests' bytes, each rank's a block
    /// of its own, not a vector the run's is made of), read back when the block's
    /// figures are made ([`Kept::read_requests`]).
    requests: Vec<Vec<u8>>,
    /// How many requests they are.
    request_count: usize,
}

impl Kept {
    /// The ranks' requests in rank order, each rank's read back and its bytes freed in
    /// turn.
    pub(crate) fn read_requests(&mut self) -> Result<Vec<RequestLife>> {
        let mut requests = Vec::with_capacity(self.request_count);
        for written in std::mem::take(&mut self.requests) {
            let rank: RequestColumn = rmp_serde::from_slice(&written).map_err(|e| {
                let reason = format!("a rank's requests kept could not be read back: {e}");
                Error::Exchange { reason }
            })?;
            requests.extend(rank.0);
        }
        // Each rank's, read on the threads and freed, is given back, not kept in the
        // heap beside the block's.
        crate::heap::release_free();
        Ok(requests)
    }
}

/// Some requests written as a column of them ([`crate::exchange::wire::chunked`]):
/// how a worker keeps its ranks' requests until its figures read them, and sends them
/// to worker 0 for the program.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub(crate) struct RequestColumn(
    #[serde(with = "crate::exchange::wire::chunked")] pub Vec<RequestLife>,
);

/// The block of the run's usable `files` of each of `workers` workers, past the first
/// read: contiguous in rank order (the files' order), of about equal bytes ([`share`]).
/// A worker digests its block's ranks and then makes their figures.
pub(crate) fn blocks(files: &RunFiles, workers: usize) -> Vec<Range<usize>> {
    let sizes: Vec<u64> = (0..files.metas.len()).map(|i| files.bytes(i)).collect();
    share(&sizes, workers)
}

/// [`super::digest::digest_dir`] made by the workers of `exchange`, each reading only its
/// share of the files ([`share`]): what crosses the ranks of `dir` at worker 0, the
/// run's files at the others. Every worker fails alike when the files are not one run; a
/// worker that cannot read one of its ranks again fails them all with that error.
pub(crate) fn digest_dir_shared(
    dir: &Path,
    reading: &Reading,
    exchange: &dyn Exchange,
) -> Result<Shared> {
    let _span = tracing::info_span!("first pass").entered();
    // Every worker lists the same directory, and reads through its block of the
    // listing (a listing that fails is sent as this worker's part: none waits for it).
    let read = rank_files(dir).map(|listed| {
        let sizes: Vec<u64> = listed.iter().map(|f| file_size(f)).collect();
        let block = share(&sizes, exchange.workers())[exchange.worker()].clone();
        let mine: Vec<PathBuf> = listed[block.clone()].to_vec();
        let each = |i: usize| reading.read(sizes[block.start + i]);
        let sized = (mine.iter().cloned())
            .zip(sizes[block.clone()].iter().copied())
            .collect();
        let (metas, unreadable) = read_each_into::<Counted>(mine, each);
        (metas, unreadable, sized)
    });
    // The blocks follow the listing, so the workers' parts in worker order are the
    // listing's files in its order, as one process reads them.
    let parts: Vec<ReadThrough> = all_gather(exchange, read)?;
    let (mut metas, mut unreadable, mut listed) = (Vec::new(), Vec::new(), Vec::new());
    for (m, u, l) in parts {
        metas.extend(m);
        unreadable.extend(u);
        listed.extend(l);
    }
    // The sizes the files had when they were read through, the same at every worker:
    // the blocks are cut by them.
    let files = RunFiles::of(dir, metas, unreadable, &listed)?;
    // The usable files are known now, in rank order: each worker digests the block whose
    // figures it makes (not quite the block it read through, whose files may not all be
    // usable), worker 0 the first, so that the gathered digests come in rank order.
    let which = blocks(&files, exchange.workers()).swap_remove(exchange.worker());
    // Worker 0 keeps its digests; the others send theirs, each written as it is made
    // (what a worker holds is their bytes, not the digests), but for its requests, which
    // it keeps written (each rank's, and how many). Each keeps its compute.
    let (mut requests, mut counts): (Vec<Vec<u8>>, Vec<usize>) = Default::default();
    let digested = match exchange.worker() {
        0 => digest_files(&files, which, reading, Ok).map(|(d, c)| (Values::Kept(d), c)),
        _ => {
            let keep = |d| {
                let (d, requests) = requests_kept(d);
                let kept = Values::write(&column(&requests))?;
                Ok((Values::write(&d)?, (kept, requests.len())))
            };
            (digest_files(&files, which, reading, keep)).map(|(written, c)| {
                let (written, kept): (Vec<_>, Vec<_>) = written.into_iter().unzip();
                (requests, counts) = kept.into_iter().unzip();
                (Values::Written(written), c)
            })
        }
    };
    // A worker that failed sends its error, and keeps nothing.
    let (digests, compute) = match digested {
        Ok((digests, compute)) => (Ok(digests), compute),
        Err(e) => (Err(e), Vec::new()),
    };
    let Some(digests) = gather_values(exchange, digests)? else {
        // What reading the block left free around what it keeps goes back to the system
        // (each rank's is small blocks of the heap among the timelines' freed).
        crate::heap::release_free();
        let request_count = counts.iter().sum();
        let kept = Kept {
            compute,
            requests,
            request_count,
        };
        return Ok(Shared::Own(Box::new(files), kept));
    };
    debug_assert!(
        digests.windows(2).all(|w| w[0].0.rank < w[1].0.rank),
        "the blocks, gathered in worker order, are in rank order"
    );
    Ok(Shared::Joined(Box::new(joined(files, digests, compute))))
}

#[cfg(test)]
mod tests {
    use super::{blocks, digest_dir_shared, Shared};
    use crate::exchange::Threads;
    use crate::import::rank_files;
    use crate::import::Reading;
    use crate::merge::{read_each_into, Counted, RunFiles};
    use crate::metrics::digest::digest_dir;

    /// On every kept run, the first pass made by 1, 2, 3 and 7 workers gives at worker 0
    /// what one process gives, and nothing at the others; each keeps the compute and the
    /// requests of its block's ranks, as one process finds them.
    #[test]
    fn workers_digest_what_one_process_digests() {
        for dir in &crate::load::kept_run_dirs() {
            let name = dir.display();
            let one = digest_dir(dir, &Reading::unwatched()).expect("its first pass");
            for workers in [1, 2, 3, 7] {
                let got = Threads::run(workers, |ex| {
                    digest_dir_shared(dir, &Reading::unwatched(), ex).expect("shared")
                });
                let shares = blocks(&one.files, workers);
                let starts = &one.request_starts;
                let requests_of = |w: usize| {
                    let b = &shares[w];
                    &one.requests[starts[b.start]..starts[b.end]]
                };
                // The blocks tile the files, so every rank's compute is kept somewhere.
                assert_eq!(shares.last().map(|b| b.end), Some(one.compute.len()));
                for (w, d) in got.into_iter().enumerate() {
                    let at = format!("{name} on {workers} workers");
                    let kept = &one.compute[shares[w].clone()];
                    let d = match d {
                        Shared::Own(_, mut own) => {
                            assert!(w != 0, "{at}: worker 0 has the digest");
                            assert!(own.compute == kept, "{at}: worker {w}'s compute");
                            let requests = own.read_requests().expect("read back");
                            let want = requests_of(w);
                            assert!(requests == want, "{at}: worker {w}'s requests");
                            continue;
                        }
                        Shared::Joined(d) => d,
                    };
                    assert_eq!(w, 0, "{at}: only worker 0 has it");
                    assert!(d.info == one.info, "{at}: info");
                    assert!(d.messages == one.messages, "{at}: messages");
                    assert!(d.requests == requests_of(0), "{at}: worker 0's requests");
                    assert_eq!(d.request_starts, one.request_starts, "{at}: request starts");
                    assert!(d.compute == kept, "{at}: worker 0's compute");
                    assert!(d.budgets == one.budgets, "{at}: budgets");
                    assert!(d.sites == one.sites, "{at}: sites");
                    assert!(d.cross.messages == one.cross.messages, "{at}: sides");
                    let (c, o) = (&d.cross.collectives, &one.cross.collectives);
                    assert!(c == o, "{at}: collectives");
                    assert!(d.cross.one_sided == one.cross.one_sided, "{at}: one-sided");
                    assert!(d.instances == one.instances, "{at}: instances");
                    assert!(d.by_rank == one.by_rank, "{at}: by rank");
                    assert_eq!(d.work, one.work, "{at}: work");
                    assert_eq!(d.ends_early, one.ends_early, "{at}: ends early");
                    assert_eq!(d.notes, one.notes, "{at}: notes");
                    assert_eq!(d.unreadable, one.unreadable, "{at}: unreadable");
                }
            }
        }
    }

    /// Each file's size is the one it was listed with (when it was read through), not
    /// what the file holds later: the workers of a job cut the run into blocks by these
    /// sizes, and a file changed meanwhile must not cut them differently at each.
    #[test]
    fn a_files_size_is_the_one_it_was_read_through_at() {
        let dir = crate::load::kept_run_copy("c-ring");
        let files = rank_files(dir.path()).expect("listed");
        let listed: Vec<_> = (files.iter().cloned())
            .zip([7, 11, 13].into_iter().cycle())
            .collect();
        let (metas, unreadable) = read_each_into::<Counted>(files.clone(), |_| {});
        // Changed after the read through: its size then stands.
        std::fs::write(&files[0], b"no rank file").expect("written");
        let run = RunFiles::of(dir.path(), metas, unreadable, &listed).expect("one run");
        let sizes: Vec<u64> = (0..run.metas.len()).map(|i| run.bytes(i)).collect();
        let want: Vec<u64> = (run.metas.iter())
            .map(|m| listed.iter().find(|(p, _)| *p == m.path).expect("listed").1)
            .collect();
        assert_eq!(sizes, want);
        assert_eq!(&sizes[..3], &[7, 11, 13]);
        // A file left out of the list is measured, not taken for empty.
        let (metas, unreadable) = read_each_into::<Counted>(files[1..].to_vec(), |_| {});
        let run = RunFiles::of(dir.path(), metas, unreadable, &listed[2..]).expect("one run");
        let first = run
            .metas
            .iter()
            .position(|m| m.path == files[1])
            .expect("read");
        let on_disk = std::fs::metadata(&files[1]).expect("there").len();
        assert!(on_disk > 0);
        assert_eq!(run.bytes(first), on_disk);
    }
}
