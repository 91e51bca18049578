//! A [`Visitor`] that keeps everything it is handed: for tests, and for small streams
//! read whole (the recorder's memory sink).

use super::Visitor;
use crate::schema::{ClockSync, Event, Footer, Header, SourceSite};

/// Everything read from a stream.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Collected {
    /// The header.
    pub header: Option<Header>,
    /// `(tid, name)` of each thread, in file order.
    pub threads: Vec<(u32, String)>,
    /// Calls and compute spans, in file order.
    pub events: Vec<Event>,
    /// Clock synchronisations.
    pub syncs: Vec<ClockSync>,
    /// Source locations, in order of first use.
    pub sites: Vec<SourceSite>,
    /// The footer, when the rank finished.
    pub footer: Option<Footer>,
}

impl Visitor for Collected {
    fn header(&mut self, header: Header) {
        self.header = Some(header);
    }
    fn thread(&mut self, tid: u32, name: String) {
        self.threads.push((tid, name));
    }
    fn event(&mut self, event: Event) {
        self.events.push(event);
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
}
