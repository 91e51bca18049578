//! The run of a directory after its first pass, read again a part at a time: its
//! columns in a trace without ranks, and each part's ranks read beside them
//! ([`Parts`]); how large a part is ([`PartSize`]: whole ranks, enough to give each
//! thread one, small beside the columns); and the blocks of the run's files each worker
//! of a job reads ([`blocks_of`]).

use std::ops::Range;
use std::path::Path;

use overlap_format::schema::MergedInfo;

use rayon::prelude::*;

use super::folds::Bounds;
use super::view::Block;
use crate::import::{EventSink, Reading};
use crate::merge::RunFiles;
use crate::metrics::digest_share::blocks;
use crate::model::compute::RankCompute;
use crate::model::{Message, RequestLife, Trace};
use crate::Result;

/// How many events a part is cut at, when its ranks are smaller (a rank is never
/// split) and it has a rank per thread, and what share of the run: reading a rank takes
/// a few times its timeline's memory while it lasts, which is then small beside the
/// columns (a run of 10 M events is read in parts of 312 500 events, one of 1 000 M in
/// parts of 2 M).
pub(super) const PART_EVENTS: u64 = 1 << 21;
const PARTS_PER_RUN: u64 = 32;

/// The share of the run up to which a part still takes ranks to give each thread one
/// (at least [`PART_EVENTS`]): a run of 16 ranks of 100 M events is read two ranks a
/// part on two threads, 12.5 M events, not one rank on one thread while the other
/// waits.
const THREADS_PART_OF_RUN: u64 = 8;

/// How large each part is at least (but the last; a rank is never split).
#[derive(Clone, Copy, Debug)]
pub(super) struct PartSize {
    /// Events.
    pub events: u64,
    /// Ranks, while the part holds fewer than `most` events: a part's ranks are read,
    /// and most of its figures made, one rank per thread.
    pub ranks: usize,
    /// Events past which a part takes no more ranks for its threads.
    pub most: u64,
}

impl PartSize {
    /// Parts of `events` events, however many ranks.
    #[cfg(test)]
    pub(super) fn of_events(events: u64) -> PartSize {
        PartSize {
            events,
            ranks: 1,
            most: events,
        }
    }

    /// The parts of a run of `events` events: the share [`PARTS_PER_RUN`] gives, at
    /// most [`PART_EVENTS`], and as many ranks as rayon has threads while they hold at
    /// most the share [`THREADS_PART_OF_RUN`] gives (a run of 16 ranks of 10 M events is
    /// read two ranks a part on two threads, not one).
    pub(super) fn of_run(events: u64) -> PartSize {
        PartSize {
            events: (events / PARTS_PER_RUN).clamp(1, PART_EVENTS),
            ranks: rayon::current_num_threads(),
            most: (events / THREADS_PART_OF_RUN).max(PART_EVENTS),
        }
    }
}

/// The run of a directory after its first pass: its columns in a trace without ranks,
/// whose ranks are then read again a part at a time.
pub(super) struct Parts<'r> {
    /// Told of each file read.
    pub reading: &'r Reading<'r>,
    /// The run's description, messages and requests; its ranks and compute are those of
    /// the part being analysed, and empty between parts.
    pub run: Trace,
    /// Each rank's compute, in rank order (moved into `run` while its part is read),
    /// from the rank of file `first` on; empty once the figures that read it are made,
    /// the parts then without it.
    pub compute: Vec<RankCompute>,
    pub first: usize,
    pub files: RunFiles,
}

impl<'r> Parts<'r> {
    /// The run of `files` (from the run's file `first` on) in `dir` after its first
    /// pass: its description, messages and requests, and its ranks' compute; its ranks
    /// read again a part at a time, each told to `reading`.
    pub(super) fn new(
        (dir, reading): (&Path, &'r Reading<'r>),
        (info, messages, requests): (MergedInfo, Vec<Message>, Vec<RequestLife>),
        compute: Vec<RankCompute>,
        (first, files): (usize, RunFiles),
    ) -> Parts<'r> {
        Parts {
            reading,
            run: Trace {
                source: dir.to_path_buf(),
                info,
                ranks: Vec::new(),
                messages,
                requests,
                compute: Vec::new(),
            },
            compute,
            first,
            files,
        }
    }

    /// How large the parts of the run of `files` are at least: `at_least`, else as the
    /// run's events give ([`PartSize::of_run`]).
    pub(super) fn sized(files: &RunFiles, at_least: Option<PartSize>) -> PartSize {
        let events: u64 = (files.metas.iter()).map(|m| m.events.len() as u64).sum();
        at_least.unwrap_or(PartSize::of_run(events))
    }

    /// The run's columns, no rank's events among them.
    pub(super) fn columns(&self) -> &Trace {
        &self.run
    }

    /// The ranks (indices of the run's files) of each part of `block` ([`cuts_of`]).
    fn cuts(&self, block: &Block, at_least: PartSize) -> Vec<Range<usize>> {
        let events: Vec<u64> = (self.files.metas[block.files.clone()].iter())
            .map(|m| m.events.len() as u64)
            .collect();
        let first = block.files.start;
        let cuts = cuts_of(&events, at_least).into_iter();
        cuts.map(|c| first + c.start..first + c.end).collect()
    }

    /// The run's requests cut into each part's of at least `at_least` (those of
    /// its ranks), the run's column given up: each share can be freed once its part is
    /// done with it.
    pub(super) fn requests_by_part(&mut self, at_least: PartSize) -> Vec<Vec<RequestLife>> {
        let mut requests = std::mem::take(&mut self.run.requests);
        let cuts = self.cuts(&Block::whole(self.files.metas.len()), at_least);
        // Where each part's requests start: those of ranks after the part before it's.
        let mut starts = vec![0; cuts.len()];
        for (k, cut) in cuts.iter().enumerate().skip(1) {
            let before = self.files.metas[cut.start - 1].rank();
            starts[k] = requests.partition_point(|r| r.rank <= before);
        }
        // Each part's cut off the end, last first, the run's column shrinking in place
        // behind it: never both whole.
        let mut shares: Vec<Vec<RequestLife>> = (starts.iter().rev())
            .map(|&start| {
                let share = requests.split_off(start.min(requests.len()));
                crate::heap::shrink_behind(&mut requests);
                share
            })
            .collect();
        shares.reverse();
        shares
    }

    /// Calls `each` on every part of `block` of at least `at_least`, in rank order: a
    /// trace of the part's ranks (read again, on rayon's threads) and the run's columns,
    /// dropped before the next part is read; and the part's bounds.
    pub(super) fn each(
        &mut self,
        block: &Block,
        at_least: PartSize,
        each: &mut dyn FnMut(&Trace, Bounds),
    ) -> Result<()> {
        let cuts = self.cuts(block, at_least);
        let mut after: Option<u32> = block.after;
        for (k, cut) in cuts.iter().cloned().enumerate() {
            // The block's last part takes whatever rank lies beyond its files' up to its
            // bound (the run's: none does, a message is matched between ranks of the run).
            let last = self.files.metas[cut.end - 1].rank();
            let bounds = (
                after,
                if k + 1 < cuts.len() {
                    Some(last)
                } else {
                    block.up_to
                },
            );
            after = Some(last);
            let (files, reading) = (&self.files, self.reading);
            let _s = tracing::info_span!("read part").entered();
            let timelines = (cut.clone().into_par_iter())
                .map(|i| {
                    let (_, t) = files.first_timeline(i)?;
                    reading.read(files.bytes(i));
                    Ok(t)
                })
                .collect::<Result<Vec<_>>>()?;
            drop(_s);
            self.run.ranks = timelines;
            // Each rank's compute lent to the part (none once dropped: see `compute`).
            let held = cut.start - self.first..cut.end - self.first;
            let compute = self.compute.get_mut(held.clone()).unwrap_or_default();
            self.run.compute = compute.iter_mut().map(std::mem::take).collect();
            each(&self.run, bounds);
            for (slot, c) in self.run.compute.drain(..).enumerate() {
                self.compute[held.start + slot] = c;
            }
            self.run.ranks = Vec::new();
        }
        Ok(())
    }
}

/// The blocks of the run's `files` of `workers` workers: those whose ranks each worker
/// digested in the first pass ([`blocks`]: contiguous in rank order, of about equal
/// bytes).
pub(super) fn blocks_of(files: &RunFiles, workers: usize) -> Vec<Block> {
    let ranks: Vec<u32> = files.metas.iter().map(|m| m.rank()).collect();
    Block::of_shares(&blocks(files, workers), &ranks)
}

/// The ranks of each part of a run whose ranks hold `events` events each, in rank order:
/// whole ranks, each part at least `at_least` but the last.
pub(super) fn cuts_of(events: &[u64], at_least: PartSize) -> Vec<Range<usize>> {
    let mut cuts = Vec::new();
    let (mut start, mut held) = (0, 0);
    for (i, &n) in events.iter().enumerate() {
        held += n;
        let ranks = i + 1 - start;
        if held >= at_least.events && (ranks >= at_least.ranks || held >= at_least.most) {
            cuts.push(start..i + 1);
            (start, held) = (i + 1, 0);
        }
    }
    if start < events.len() {
        cuts.push(start..events.len());
    }
    cuts
}
