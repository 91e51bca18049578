//! What both writers of the merged file take a rank's section from ([`super::write`]
//! for JSON, [`super::proto`] for protobuf): the rank's timeline, requests and site
//! labels ([`RankSection`]), its calls and compute spans read again from its file in
//! the timeline's order ([`write_rank_events`]), and the calls in flight at the ranks'
//! dumps ([`in_flight_slices`]). Kept apart from the writers so that neither imports
//! the other.

use std::collections::{BTreeMap, VecDeque};

use overlap_format::schema::{DumpReason, Event, InFlightCall, MergedInfo, Nanos};

use super::{RankEvents, RequestLife};
use crate::model::{Span, Timeline};
use crate::Error;

/// One rank's part of the merged file.
pub(crate) struct RankSection<'a> {
    /// The rank, on the run's timeline.
    pub(crate) t: &'a Timeline,
    /// Where its events are written from.
    pub(crate) events: &'a RankEvents,
    /// Its request lifetimes, in post order.
    pub(crate) requests: &'a [RequestLife],
    /// The id of its first request's slice (ids are the run's: one after another, rank
    /// after rank).
    pub(crate) first_request_id: u64,
    /// The rank's sites as its calls' `src` shows them ([`site_labels`]).
    pub(crate) labels: &'a SiteLabels,
}

/// A rank's call sites, symbolized: by the `site` its calls recorded.
pub(crate) type SiteLabels = crate::fxhash::FxHashMap<u64, crate::sites::Site>;

/// The labels of the sites `t`'s calls recorded (`calls.c:57 (main)`, a call path's
/// callers after `←`), symbolized with what `info` lists of the rank: what a trace
/// viewer shows as each call's `src`. Sites that cannot be symbolized get none.
pub(crate) fn site_labels(
    info: &MergedInfo,
    t: &Timeline,
    symbolizer: &mut crate::sites::Symbolizer,
) -> SiteLabels {
    let rank = info.ranks.iter().find(|r| r.rank == t.rank);
    let symbols = crate::sites::RankSymbols::new(rank);
    let mut labels = SiteLabels::default();
    for site in t.calls.iter().filter_map(|c| c.site) {
        let raw = site.get();
        if labels.contains_key(&raw) {
            continue;
        }
        let symbolized = symbols.site(symbolizer, raw);
        if symbolized.resolution != crate::sites::Resolution::Unavailable {
            labels.insert(raw, symbolized);
        }
    }
    labels
}

/// Events read again from a rank file per block: formatted in parallel, then written
/// in order.
pub(crate) const BLOCK_EVENTS: usize = 1 << 14;

/// A rank's calls and compute spans, from memory or read again from its file a block
/// at a time, in the order of its timeline (by start, then thread), each block handed
/// to `block` with `w`. The file is read on a thread of its own, a block or two ahead
/// of the blocks being formatted and written. An error reading the file is left in
/// `reread` (and the write stopped).
pub(crate) fn write_rank_events<O>(
    t: &Timeline,
    events: &RankEvents,
    w: &mut O,
    reread: &mut Option<Error>,
    block: &mut dyn FnMut(&mut O, &[Event]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let (path, align) = match events {
        RankEvents::Memory(events) => return block(w, events),
        RankEvents::File { path, align } => (path, align),
    };
    let (blocks, ready) = std::sync::mpsc::sync_channel::<Vec<Event>>(2);
    let (read, in_order, written) = std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            let mut block: Vec<Event> = Vec::with_capacity(BLOCK_EVENTS);
            let mut order = InTimelineOrder::new(&t.spans);
            // Once the writer has stopped, the rest of the file is read but not kept.
            let mut stopped = false;
            let read = crate::import::each_event(path, |mut e| {
                if stopped || matches!(e, Event::Gpu(_)) || order.overrun() {
                    return;
                }
                super::align_event(&mut e, |n| align.apply(n));
                order.push(e, &mut block);
                if block.len() >= BLOCK_EVENTS {
                    let full = std::mem::replace(&mut block, Vec::with_capacity(BLOCK_EVENTS));
                    stopped = blocks.send(full).is_err();
                }
            });
            let in_order = order.finish();
            if read.is_ok() && in_order && !stopped {
                // The last block; a writer that stopped has said why.
                let _ = blocks.send(block);
            }
            (read, in_order)
        });
        let mut written = Ok(());
        for events in &ready {
            written = block(w, &events);
            if written.is_err() {
                break;
            }
        }
        drop(ready);
        let (read, in_order) = reader
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (read, in_order, written)
    });
    if let Err(e) = read {
        *reread = Some(e);
        return Err(std::io::Error::other("a rank file could not be read again"));
    }
    written?;
    if !in_order {
        *reread = Some(Error::Changed { path: path.clone() });
        return Err(std::io::Error::other(
            "a rank file changed since it was read",
        ));
    }
    Ok(())
}

/// Puts the events of a rank file, as they are read (each thread's in recording order,
/// threads interleaved by page), back into the order of the rank's timeline: an event
/// goes out when it is the timeline's next, and waits otherwise. Only the events read
/// ahead of their turn are held (a page of another thread, the calls inside a compute
/// span recorded at its end), never the rank's whole run.
struct InTimelineOrder<'a> {
    spans: &'a [Span],
    next: usize,
    waiting: BTreeMap<(Nanos, u32), VecDeque<Event>>,
}

impl<'a> InTimelineOrder<'a> {
    fn new(spans: &'a [Span]) -> Self {
        InTimelineOrder {
            spans,
            next: 0,
            waiting: BTreeMap::new(),
        }
    }

    /// True when more events were read than the timeline has (the file changed): the
    /// rest is not held.
    fn overrun(&self) -> bool {
        self.waiting.len() > self.spans.len()
    }

    /// Takes the next event read; moves to `out` every event whose turn has come.
    fn push(&mut self, e: Event, out: &mut Vec<Event>) {
        let key = (e.start(), e.tid());
        let turn = self.spans.get(self.next).map(|s| (s.start, s.tid));
        if self.waiting.is_empty() && turn == Some(key) {
            out.push(e);
            self.next += 1;
            return;
        }
        self.waiting.entry(key).or_default().push_back(e);
        while let Some(s) = self.spans.get(self.next) {
            let Some(queue) = self.waiting.get_mut(&(s.start, s.tid)) else {
                break;
            };
            let Some(e) = queue.pop_front() else { break };
            if queue.is_empty() {
                self.waiting.remove(&(s.start, s.tid));
            }
            out.push(e);
            self.next += 1;
        }
    }

    /// True when every span of the timeline went out and nothing is left waiting: the
    /// file read as it did when the timeline was made of it.
    fn finish(self) -> bool {
        self.waiting.is_empty() && self.next == self.spans.len()
    }
}

/// Each call the ranks were inside at their last in-flight dump, as the slice both
/// outputs draw: `(rank, name, start, end, call)`, from the call's start to the dump. A
/// stall says the call was blocked; a signal only that it was in progress.
pub(crate) fn in_flight_slices(
    info: &MergedInfo,
) -> impl Iterator<Item = (u32, String, Nanos, Nanos, &InFlightCall)> {
    info.ranks.iter().flat_map(|r| {
        r.in_flight.iter().flat_map(move |dump| {
            dump.calls.iter().map(move |c| {
                let name = match dump.reason {
                    DumpReason::Stalled => {
                        format!("{} (blocked, in flight at dump)", c.call.mpi_name())
                    }
                    DumpReason::Signal => format!("{} (in flight at dump)", c.call.mpi_name()),
                };
                let (start, end) = (Nanos(c.start_ns), Nanos(dump.at_ns.max(c.start_ns)));
                (r.rank, name, start, end, c)
            })
        })
    })
}

/// The slices of `t`'s regions (its `MPI_Pcontrol` marks), by start, for both writers.
pub(crate) fn region_slices(t: &Timeline) -> Vec<crate::regions::RegionSlice> {
    if t.pcontrol.is_empty() {
        return Vec::new();
    }
    let rank_end = t.spans.iter().map(|s| s.end).max().unwrap_or_default();
    crate::regions::rank_slices(t.rank, &t.pcontrol, rank_end)
}
