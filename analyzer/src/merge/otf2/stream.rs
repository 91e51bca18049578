//! A rank's events written location by location without holding the rank: a first
//! reading of its file indexes each event (its thread, start, end and place in the
//! file) and keeps what a completion's records need of each post; then, thread by
//! thread, a second reading hands the thread's events to its [`ThreadWriter`] in their
//! order, holding only those the file has before their turn.
//!
//! The file has each event at its end (a call or span is recorded when it ends), so a
//! span that encloses calls comes after them; OTF2 wants the span's `Enter` first:
//!
//! ```text
//!  file order   Isend(10-11)  Wait(12-20)  span solve(5-30)  Isend(31-32)
//!  write order  solve(5-30)   Isend(10-11) Wait(12-20)       Isend(31-32)
//!  held         Isend, Wait until solve is read; nothing else
//! ```
//!
//! What is held is at most the events inside the longest span that encloses others;
//! the index is 24 bytes per event and each post's arguments about 80 bytes per
//! request, instead of the whole events (about 1.4 KB each with what writing them
//! built around them).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use overlap_format::schema::{Event, LearnedUse, Unwatched};
use overlap_otf2::EventWriter;

use super::defs::Builder;
use super::named::Named;
use super::records::{Losses, Posted, ThreadWriter};
use crate::import::EventSink;
use crate::{Error, Result};

/// An event's place in its thread's order: its start, its end (the longer first), its
/// place in the file (the file's order among equals).
type Key = (u64, std::cmp::Reverse<u64>, u64);

/// What the first reading of a rank file keeps.
#[derive(Default)]
pub(super) struct RankIndex {
    /// Each thread's events, as keys.
    pub threads: BTreeMap<u32, Vec<Key>>,
    /// The posts of requests (and persistent inits), by request.
    pub posted: HashMap<u64, Posted>,
    /// Started requests and the persistent request each came from.
    started: Vec<(u64, u64)>,
    /// The sites the calls recorded.
    pub sites: HashSet<u64>,
    /// Events read (GPU work included).
    pub events: u64,
    /// GPU events (not written).
    pub gpu: u64,
}

impl RankIndex {
    /// The posts, with each started request's own (its persistent request's).
    pub fn finish(&mut self) {
        for (request, persistent) in std::mem::take(&mut self.started) {
            if let Some(p) = self.posted.get(&persistent).copied() {
                self.posted.insert(request, p);
            }
        }
    }
}

impl Extend<Event> for RankIndex {
    fn extend<I: IntoIterator<Item = Event>>(&mut self, events: I) {
        events.into_iter().for_each(|e| self.push(e));
    }
}

impl overlap_format::stream::EventStore for RankIndex {}

impl EventSink for RankIndex {
    fn push(&mut self, e: Event) {
        let place = self.events;
        self.events += 1;
        if let Event::Gpu(_) = e {
            // Not written; its thread has a location all the same.
            self.gpu += 1;
            self.threads.entry(e.tid()).or_default();
            return;
        }
        let key = (e.start().0, std::cmp::Reverse(e.end().0), place);
        self.threads.entry(e.tid()).or_default().push(key);
        if let Event::Call(c) = e {
            if let Some((request, posted)) = Posted::of(&c) {
                self.posted.insert(request, posted);
            }
            let started = c.args.started.iter();
            self.started
                .extend(started.map(|s| (s.request, s.persistent)));
            self.sites.extend(c.args.site);
        }
    }
    fn len(&self) -> usize {
        self.events as usize
    }
    fn learned(&mut self, _learned: Vec<LearnedUse>, _unwatched: Vec<Unwatched>) {}
}

/// What writing one thread of a rank needs besides its events.
pub(super) struct ThreadOut<'a, 'w> {
    pub w: &'a mut EventWriter<'w>,
    pub b: &'a mut Builder,
    pub named: &'a mut Named,
    pub losses: &'a mut Losses,
}

/// Reads the rank file `path` again and writes thread `tid`'s events (whose keys are
/// `keys`) in their order.
pub(super) fn write_thread(
    path: &Path,
    tid: u32,
    mut keys: Vec<Key>,
    writer: ThreadWriter<'_>,
    out: ThreadOut<'_, '_>,
) -> Result<()> {
    keys.sort_unstable();
    let ThreadOut {
        w,
        b,
        named,
        losses,
    } = out;
    let mut writer = writer;
    let mut next = 0usize;
    let mut held: HashMap<u64, Event> = HashMap::new();
    let mut place = 0u64;
    let mut failed: Option<Error> = None;
    crate::import::each_event(path, |e| {
        let at = place;
        place += 1;
        if failed.is_some() || e.tid() != tid || matches!(e, Event::Gpu(_)) {
            return;
        }
        held.insert(at, e);
        while let Some(e) = keys.get(next).and_then(|k| held.remove(&k.2)) {
            next += 1;
            if let Err(err) = writer.event(w, b, &e, named, losses) {
                failed = Some(err);
                return;
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if next < keys.len() {
        return Err(Error::NotATrace {
            path: path.to_path_buf(),
            reason: format!(
                "thread {tid}: {} of its events were not found again on a second reading \
                 (did the file change while it was written as OTF2?)",
                keys.len() - next
            ),
        });
    }
    writer.finish(w, b)
}
