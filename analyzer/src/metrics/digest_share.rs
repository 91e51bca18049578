//! The first pass ([`super::digest`]) made by several workers ([`crate::exchange`]):
//! each reads through and digests only its own block of the run's rank files, and
//! worker 0 joins the digests into what crosses ranks, as one process would.
//!
//! ```text
//!  worker w: its files read through ─► headers, clocks, counts ─┐ all-gather: every
//!                                                               │ worker the run's
//!  every worker: the run's files checked, its clock plan  ◄─────┘ files, as one reads
//!  worker w: its ranks read again ─► digests ─────► gather at worker 0 ─► join
//! ```
//!
//! Every worker checks the run as one process would (the same files, the same errors),
//! and the digests are the same records one process makes, joined in rank order: what
//! comes out at worker 0 is [`super::digest::digest_dir`]'s, field for field.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::digest::{digest_files, digest_files_written, joined, Digested};
use crate::exchange::{all_gather, gather_values, share, Exchange, Values};
use crate::import::{rank_files, Reading};
use crate::merge::{file_size, read_each_into, Counted, RunFiles, Unreadable};
use crate::model::RankTrace;
use crate::Result;

/// What a worker found of its files when it read them through: each usable one's
/// header, clocks and event count, and the files it could not use.
type ReadThrough = (Vec<RankTrace<Counted>>, Vec<Unreadable>);

/// What the first pass made by several workers gives a worker.
pub(crate) enum Shared {
    /// At worker 0: what crosses the run's ranks, joined.
    Joined(Box<Digested>),
    /// At the others: the run's files, as every worker checked them.
    Own(RunFiles),
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
    // Every worker lists the same directory, and takes its block of the listing (a
    // listing that fails is sent as this worker's part: none waits for it).
    let (mine, read) = match rank_files(dir) {
        Ok(listed) => {
            let sizes: Vec<u64> = listed.iter().map(|f| file_size(f)).collect();
            let block = share(&sizes, exchange.workers())[exchange.worker()].clone();
            let mine: Vec<PathBuf> = listed[block.clone()].to_vec();
            let each = |i: usize| reading.read(sizes[block.start + i]);
            let read = read_each_into::<Counted>(mine.clone(), each);
            (mine, Ok(read))
        }
        Err(e) => (Vec::new(), Err(e)),
    };
    // The blocks follow the listing, so the workers' parts in worker order are the
    // listing's files in its order, as one process reads them.
    let parts: Vec<ReadThrough> = all_gather(exchange, read)?;
    let (mut metas, mut unreadable) = (Vec::new(), Vec::new());
    for (m, u) in parts {
        metas.extend(m);
        unreadable.extend(u);
    }
    let files = RunFiles::of(dir, metas, unreadable)?;
    let own: HashSet<&Path> = mine.iter().map(PathBuf::as_path).collect();
    let which: Vec<usize> = (0..files.metas.len())
        .filter(|&i| own.contains(files.metas[i].path.as_path()))
        .collect();
    // Worker 0 keeps its digests; the others send theirs, each written as it is made
    // (what a worker holds is their bytes, not the digests).
    let digests = match exchange.worker() {
        0 => digest_files(&files, &which, reading).map(Values::Kept),
        _ => digest_files_written(&files, &which, reading).map(Values::Written),
    };
    let Some(mut digests) = gather_values(exchange, digests)? else {
        return Ok(Shared::Own(files));
    };
    digests.sort_by_key(|(d, _)| d.rank);
    Ok(Shared::Joined(Box::new(joined(files, digests))))
}

#[cfg(test)]
mod tests {
    use super::{digest_dir_shared, Shared};
    use crate::exchange::Threads;
    use crate::import::Reading;
    use crate::metrics::digest::digest_dir;

    /// On every kept run, the first pass made by 1, 2, 3 and 7 workers gives at worker 0
    /// what one process gives, and nothing at the others.
    #[test]
    fn workers_digest_what_one_process_digests() {
        for dir in &crate::load::kept_run_dirs() {
            let name = dir.display();
            let one = digest_dir(dir, &Reading::unwatched()).expect("its first pass");
            for workers in [1, 2, 3, 7] {
                let got = Threads::run(workers, |ex| {
                    digest_dir_shared(dir, &Reading::unwatched(), ex).expect("shared")
                });
                for (w, d) in got.into_iter().enumerate() {
                    let Shared::Joined(d) = d else {
                        assert!(w != 0, "{name}: worker 0 of {workers} has the digest");
                        continue;
                    };
                    assert_eq!(w, 0, "{name}: only worker 0 of {workers} has it");
                    let at = format!("{name} on {workers} workers");
                    assert!(d.info == one.info, "{at}: info");
                    assert!(d.messages == one.messages, "{at}: messages");
                    assert!(d.requests == one.requests, "{at}: requests");
                    assert!(d.compute == one.compute, "{at}: compute");
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
}
