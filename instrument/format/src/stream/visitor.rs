//! What a reader of a stream gets besides its events: the [`Visitor`] the contents are
//! handed to, the errors that make a stream unreadable ([`StreamError`]), and the
//! [`Problem`]s that cost part of it.

use crate::schema::{
    CallCounts, CallPath, ClockSync, Event, Footer, Header, InFlightDump, LearnedUse, SourceSite,
    Unwatched, FORMAT_VERSION,
};

/// Where the contents of a stream go as they are read.
pub trait Visitor {
    /// The header (first).
    fn header(&mut self, header: Header);
    /// A thread's name.
    fn thread(&mut self, tid: u32, name: String);
    /// A call or compute span, per thread in recording order.
    fn event(&mut self, event: Event);
    /// A clock synchronisation.
    fn clock_sync(&mut self, sync: ClockSync);
    /// A source location, before the first event that names it.
    fn site(&mut self, site: SourceSite);
    /// The footer, when the rank finished recording.
    fn footer(&mut self, footer: Footer);
    /// An in-flight dump, in file order among the events (ignored by default).
    fn in_flight(&mut self, _dump: InFlightDump) {}
    /// A watch of a completed request's buffer and how it ended, in file order
    /// (ignored by default).
    fn learned(&mut self, _watch: LearnedUse) {}
    /// A completed request whose buffer was not watched, in file order (ignored by
    /// default).
    fn unwatched(&mut self, _completion: Unwatched) {}
    /// What the recorder counted besides the calls it recorded, totals so far: each
    /// call-counts frame in file order, the last one holding the rank's totals
    /// (ignored by default).
    fn call_counts(&mut self, _counts: CallCounts) {}
    /// A call path the rank's calls name by their site word, in file order (possibly
    /// after the first call naming it; ignored by default).
    fn call_path(&mut self, _path: CallPath) {}
    /// Something read that could not be used in full, though nothing was lost (a
    /// compute span naming a buffer never bound): ignored by default.
    fn note(&mut self, _note: Problem) {}
    /// A frame failed its checksum or was no frame at all: the rest of the file is
    /// corrupt, not missing (it was not cut short). Ignored by default.
    fn damaged(&mut self) {}
    /// Whether the events are wanted (they are by default). A visitor that only counts
    /// them is handed none, [`Visitor::skipped`] told of each instead, and the reader
    /// builds none; everything else (clock readings, sites, problems, notes) comes as
    /// when they are wanted.
    fn wants_events(&self) -> bool {
        true
    }
    /// An event read but not built, [`Visitor::wants_events`] having said no: in the
    /// order, and as many, as [`Visitor::event`] would have been handed.
    fn skipped(&mut self) {}
}

/// Why a stream cannot be read at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// Not a binary per-rank stream.
    #[error("not an overlap per-rank stream: {0}")]
    NotAStream(String),
    /// Written by another version of the format.
    #[error("format version {found} (this build reads up to {FORMAT_VERSION})")]
    Version {
        /// The version the file says.
        found: u32,
    },
    /// The header frame is missing or unusable.
    #[error("bad header at byte offset {offset}: {reason}")]
    BadHeader {
        /// Where.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// TSC stamps without the two calibration readings that give their rate.
    #[error(
        "the stamps are TSC ticks but the file holds {readings} usable calibration reading(s), \
         two are needed (the rank stopped within its first flush)"
    )]
    NoCalibration {
        /// Usable readings found.
        readings: usize,
    },
}

/// Something in a stream that could not be used; everything else was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Byte offset in the file of the frame (or record) concerned.
    pub offset: u64,
    /// Events read before it.
    pub event_index: u64,
    /// What is wrong.
    pub reason: String,
}
