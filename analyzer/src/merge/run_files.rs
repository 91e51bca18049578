//! A directory of rank files read one rank at a time: first every file through, keeping
//! its header, clocks and event count (the clock plan needs every rank's
//! synchronisations), then any rank read again into its timeline on the run's
//! timeline. The merge that holds one rank at a time ([`super::stream`]) and the
//! analysis's first pass over the rank files (`metrics::digest`) both read a run so.

use std::path::{Path, PathBuf};

use overlap_format::schema::Event;
use overlap_format::stream::EventStore;

use super::{checked_run, on_run_timeline, read_each_into, world_size_of, ClockPlan, Unreadable};
use crate::fxhash::FxHashMap;
use crate::import::{rank_files, read_rank_file_into, EventSink};
use crate::model::{RankTrace, Timeline};
use crate::{Error, Result};

/// A sink that only counts: the first reading needs a file's header, clocks, sites and
/// problems, and how many events it holds, not the events (the reader builds none).
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Counted(usize);

impl EventStore for Counted {
    const BUILT: bool = false;
    fn skipped(&mut self) {
        self.0 += 1;
    }
}

impl Extend<Event> for Counted {
    fn extend<I: IntoIterator<Item = Event>>(&mut self, events: I) {
        self.0 += events.into_iter().count();
    }
}

impl EventSink for Counted {
    fn push(&mut self, _: Event) {
        self.0 += 1;
    }
    fn len(&self) -> usize {
        self.0
    }
}

/// The size of the file at `path`, bytes; 0 when it cannot be read (the reading says
/// why).
pub(crate) fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The files of one run (those [`super::merge_dir`] would use, with the same checks),
/// their events counted, not kept, and the plan that puts each on the run's timeline.
pub(crate) struct RunFiles {
    /// Each usable file's header, clocks and event count, sorted by rank.
    pub(crate) metas: Vec<RankTrace<Counted>>,
    /// How each rank's clock maps onto the run's timeline.
    pub(crate) plan: ClockPlan,
    /// The world size the headers give.
    pub(crate) world_size: u32,
    /// Files that could not be used at all.
    pub(crate) unreadable: Vec<Unreadable>,
    /// Each usable file's size, bytes, as [`Self::metas`].
    bytes: Vec<u64>,
}

impl RunFiles {
    /// Reads every rank file of `dir` through (rayon's threads), keeping what the clock
    /// plan needs.
    pub(crate) fn open(dir: &Path) -> Result<RunFiles> {
        Self::open_with(dir, &|_| {})
    }

    /// [`Self::open`], `read` told each file's size as it is read through.
    pub(crate) fn open_with(dir: &Path, read: &(dyn Fn(u64) + Sync)) -> Result<RunFiles> {
        let files = rank_files(dir)?;
        let sizes: Vec<u64> = files.iter().map(|f| file_size(f)).collect();
        let listed: Vec<(PathBuf, u64)> =
            files.iter().cloned().zip(sizes.iter().copied()).collect();
        let (metas, unreadable) = read_each_into::<Counted>(files, |i| read(sizes[i]));
        Self::of(dir, metas, unreadable, &listed)
    }

    /// The run of the files of `dir` read through (`metas`, in the order listed, and
    /// the `unreadable`), as [`Self::open`] makes it of them, with the same checks; each
    /// file's size as `listed` gives it (when it was read through: the workers of a job
    /// cut the run into blocks by these, so that they agree however the files change).
    pub(crate) fn of(
        dir: &Path,
        metas: Vec<RankTrace<Counted>>,
        unreadable: Vec<Unreadable>,
        listed: &[(PathBuf, u64)],
    ) -> Result<RunFiles> {
        let (metas, unreadable) = checked_run(dir, metas, unreadable)?;
        let plan = ClockPlan::new(&metas);
        let world_size = world_size_of(&metas);
        let size: FxHashMap<&Path, u64> = listed.iter().map(|(p, n)| (p.as_path(), *n)).collect();
        // Every usable file was listed; one that was not is measured now, never taken
        // for empty.
        let bytes = (metas.iter())
            .map(|m| match size.get(m.path.as_path()) {
                Some(&n) => n,
                None => file_size(&m.path),
            })
            .collect();
        Ok(RunFiles {
            metas,
            plan,
            world_size,
            unreadable,
            bytes,
        })
    }

    /// The size of the usable file `i` (of [`Self::metas`]), bytes.
    pub(crate) fn bytes(&self, i: usize) -> u64 {
        self.bytes[i]
    }

    /// Rank `i` (of [`Self::metas`]) read again into its timeline on the run's timeline,
    /// with what the file holds besides; the file must still hold `events` events, or
    /// it changed since it was first read ([`Error::Changed`]).
    pub(crate) fn timeline(
        &self,
        i: usize,
        events: u64,
    ) -> Result<(RankTrace<Timeline>, Timeline)> {
        let path = &self.metas[i].path;
        let mut t = read_rank_file_into::<Timeline>(path)?;
        if t.events.len() as u64 != events || t.rank() != self.metas[i].rank() {
            return Err(Error::Changed { path: path.clone() });
        }
        let tl = on_run_timeline(&mut t, &self.plan.rank_align(i, &self.metas[i]));
        Ok((t, tl))
    }

    /// Rank `i` read again, as many events as its first reading counted.
    pub(crate) fn first_timeline(&self, i: usize) -> Result<(RankTrace<Timeline>, Timeline)> {
        self.timeline(i, self.metas[i].events.len() as u64)
    }
}
