//! A [`Visitor`] that keeps everything it is handed: for tests, and for small streams
//! read whole (the recorder's memory sink).

use super::{Problem, Visitor};
use crate::schema::{
    CallCounts, CallPath, ClockSync, Event, Footer, Header, InFlightDump, LearnedUse, SourceSite,
    Unwatched,
};

/// Everything read from a stream; the events go into `E` (all of them, in a `Vec`, by
/// default; the analyzer gives its compact timeline).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Collected<E = Vec<Event>> {
    /// The header.
    pub header: Option<Header>,
    /// `(tid, name)` of each thread, in file order.
    pub threads: Vec<(u32, String)>,
    /// Calls and compute spans, in file order.
    pub events: E,
    /// Clock synchronisations.
    pub syncs: Vec<ClockSync>,
    /// Source locations, in order of first use.
    pub sites: Vec<SourceSite>,
    /// The footer, when the rank finished.
    pub footer: Option<Footer>,
    /// In-flight dumps, in file order.
    pub in_flight: Vec<InFlightDump>,
    /// Watches of completed requests' buffers, in file order (`overlap trace --buffers`).
    pub learned: Vec<LearnedUse>,
    /// Completed requests whose buffers were not watched, in file order.
    pub unwatched: Vec<Unwatched>,
    /// What the recorder counted besides the calls it recorded: the last frame's totals.
    pub call_counts: Option<CallCounts>,
    /// The call paths the calls name by site word, in file order.
    pub call_paths: Vec<CallPath>,
    /// What was read but could not be used in full (a span naming a buffer never
    /// bound); the file is still whole.
    pub notes: Vec<Problem>,
    /// True when a frame failed its checksum or was no frame: what follows it is
    /// corrupt, not missing.
    pub damaged: bool,
}

/// Where [`Collected`] puts the events: every store takes them (`Vec<Event>`, the
/// analyzer's timelines) but one that only counts them, which the reader then spares
/// building them ([`Visitor::wants_events`]).
pub trait EventStore: Extend<Event> {
    /// False for a store that only counts the events.
    const BUILT: bool = true;
    /// An event read but not built (a store that only counts).
    fn skipped(&mut self) {}
}

impl EventStore for Vec<Event> {}

impl Collected {
    /// Nothing read yet, the events to go into a `Vec`.
    pub fn new() -> Collected {
        Collected::default()
    }
}

impl<E: EventStore> Visitor for Collected<E> {
    fn header(&mut self, header: Header) {
        self.header = Some(header);
    }
    fn thread(&mut self, tid: u32, name: String) {
        self.threads.push((tid, name));
    }
    fn event(&mut self, event: Event) {
        self.events.extend(std::iter::once(event));
    }
    fn clock_sync(&mut self, sync: ClockSync) {
        self.syncs.push(sync);
    }
    fn site(&mut self, site: SourceSite) {
        self.sites.push(site);
    }
    fn footer(&mut self, footer: Footer) {
        self.footer = Some(footer);
    }
    fn in_flight(&mut self, dump: InFlightDump) {
        self.in_flight.push(dump);
    }
    fn learned(&mut self, watch: LearnedUse) {
        self.learned.push(watch);
    }
    fn unwatched(&mut self, completion: Unwatched) {
        self.unwatched.push(completion);
    }
    fn call_counts(&mut self, counts: CallCounts) {
        self.call_counts = Some(counts);
    }
    fn call_path(&mut self, path: CallPath) {
        self.call_paths.push(path);
    }
    fn note(&mut self, note: Problem) {
        self.notes.push(note);
    }
    fn damaged(&mut self) {
        self.damaged = true;
    }
    fn wants_events(&self) -> bool {
        E::BUILT
    }
    fn skipped(&mut self) {
        self.events.skipped();
    }
}
