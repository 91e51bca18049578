//! Reading a binary per-rank stream (format version 4 on) into a [`RankTrace`]: the
//! format crate decodes and regroups the records and converts the stamps; this module
//! only collects what it hands over and turns its errors into the analyzer's.

use std::collections::BTreeMap;
use std::path::Path;

use overlap_format::schema::{ClockSync, Event, Footer, Header, SourceSite, FORMAT_VERSION};
use overlap_format::stream::{self, StreamError, Visitor};

use super::EventSink;
use crate::model::{Place, RankTrace, ReadProblem};
use crate::{Error, Result};

/// True when `buf` starts as a binary stream does (a file cut inside its magic too).
pub(crate) fn is_stream(buf: &[u8]) -> bool {
    let opening = &buf[..buf.len().min(stream::MAGIC.len())];
    !buf.is_empty() && stream::MAGIC.starts_with(opening)
}

struct Collect<S> {
    header: Option<Header>,
    threads: BTreeMap<u32, String>,
    syncs: Vec<ClockSync>,
    sites: Vec<SourceSite>,
    events: S,
    footer: Option<Footer>,
}

impl<S: EventSink> Visitor for Collect<S> {
    fn header(&mut self, header: Header) {
        self.header = Some(header);
    }
    fn thread(&mut self, tid: u32, name: String) {
        self.threads.insert(tid, name);
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

/// Reads the bytes of a binary per-rank stream (`path` is for messages).
pub(crate) fn parse_stream_into<S: EventSink>(path: &Path, buf: &[u8]) -> Result<RankTrace<S>> {
    let mut c = Collect {
        header: None,
        threads: BTreeMap::new(),
        syncs: Vec::new(),
        sites: Vec::new(),
        events: S::default(),
        footer: None,
    };
    let problems = stream::read(buf, &mut c).map_err(|e| match e {
        StreamError::Version { found } => Error::Version {
            path: path.to_path_buf(),
            found,
            supported: FORMAT_VERSION,
        },
        other => Error::NotATrace {
            path: path.to_path_buf(),
            reason: other.to_string(),
        },
    })?;
    let header = c.header.ok_or_else(|| Error::NoHeader {
        path: path.to_path_buf(),
    })?;
    Ok(RankTrace {
        path: path.to_path_buf(),
        header,
        threads: c.threads,
        syncs: c.syncs,
        sites: c.sites,
        events: c.events,
        footer: c.footer,
        problems: problems
            .into_iter()
            .map(|p| ReadProblem {
                event_index: p.event_index,
                place: Place::Offset(p.offset),
                reason: p.reason,
            })
            .collect(),
    })
}
