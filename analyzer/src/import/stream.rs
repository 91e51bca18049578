//! Reading a binary per-rank stream (format version 4 on) into a [`RankTrace`]: the
//! format crate decodes and regroups the records and converts the stamps; this module
//! only turns what it hands over into a [`RankTrace`] and its errors into the
//! analyzer's.

use std::collections::BTreeMap;
use std::path::Path;

use overlap_format::input::{read_input, UNCAPPED};
use overlap_format::schema::{ClockSync, Event, Footer, Header, SourceSite, FORMAT_VERSION};
use overlap_format::stream::{self, Collected, StreamError, Visitor};

use super::EventSink;
use crate::model::{Place, RankTrace, ReadProblem};
use crate::{Error, Result};

fn read_problem(p: stream::Problem) -> ReadProblem {
    ReadProblem {
        event_index: p.event_index,
        place: Place::Offset(p.offset),
        reason: p.reason,
    }
}

/// The events of a stream handed one by one to a function, the rest ignored.
struct EachEvent<F>(F);

impl<F: FnMut(Event)> Visitor for EachEvent<F> {
    fn header(&mut self, _: Header) {}
    fn thread(&mut self, _: u32, _: String) {}
    fn event(&mut self, event: Event) {
        (self.0)(event);
    }
    fn clock_sync(&mut self, _: ClockSync) {}
    fn site(&mut self, _: SourceSite) {}
    fn footer(&mut self, _: Footer) {}
}

/// Hands every event of the bytes of a binary per-rank stream to `each`, in file order
/// (per thread, recording order), holding none of them.
pub(crate) fn each_stream_event(path: &Path, buf: &[u8], each: impl FnMut(Event)) -> Result<()> {
    read_stream(path, buf, &mut EachEvent(each))?;
    Ok(())
}

/// Reads `buf`, the stream of `path`, into `v`. A file whose own clock readings are too
/// few to convert its stamps (a rank cut short before its second reading, recorded by a
/// build that took it late) borrows those of another rank file beside it recorded on
/// the same host, which read the same time-stamp counter.
fn read_stream(path: &Path, buf: &[u8], v: &mut impl Visitor) -> Result<Vec<stream::Problem>> {
    let no_rate = match stream::read(buf, v) {
        Err(e @ StreamError::NoCalibration { .. }) => e,
        other => return other.map_err(|e| stream_error(path, e)),
    };
    // Nothing reached `v`: the conversion is settled before the header is handed over.
    let Some(borrowed) = readings_of_its_host(path, buf) else {
        return Err(stream_error(path, no_rate));
    };
    stream::read_borrowing(buf, v, &borrowed).map_err(|e| stream_error(path, e))
}

/// The readings of another rank file in `path`'s directory recorded on the same host
/// as `buf`, when one has enough.
fn readings_of_its_host(path: &Path, buf: &[u8]) -> Option<Vec<(u64, u64)>> {
    let (host, _) = stream::host_readings(buf)?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    super::rank_files(dir)
        .ok()?
        .into_iter()
        .filter(|other| other.file_name() != path.file_name())
        .filter_map(|other| read_input(&other, UNCAPPED, "trace").ok())
        .filter_map(|bytes| stream::host_readings(&bytes))
        .find(|(h, readings)| *h == host && readings.len() >= 2)
        .map(|(_, readings)| readings)
}

fn stream_error(path: &Path, e: StreamError) -> Error {
    match e {
        StreamError::Version { found } => Error::Version {
            path: path.to_path_buf(),
            found,
            supported: FORMAT_VERSION,
        },
        other => Error::NotATrace {
            path: path.to_path_buf(),
            reason: other.to_string(),
        },
    }
}

/// Reads the bytes of a binary per-rank stream (`path` is for messages).
pub(crate) fn parse_stream_into<S: EventSink>(path: &Path, buf: &[u8]) -> Result<RankTrace<S>> {
    let mut c = Collected::<S>::default();
    let problems = read_stream(path, buf, &mut c)?;
    c.events.learned(c.learned, c.unwatched);
    let header = c.header.ok_or_else(|| Error::NoHeader {
        path: path.to_path_buf(),
    })?;
    Ok(RankTrace {
        path: path.to_path_buf(),
        header,
        threads: c.threads.into_iter().collect::<BTreeMap<_, _>>(),
        syncs: c.syncs,
        sites: c.sites,
        events: c.events,
        footer: c.footer,
        in_flight: c.in_flight,
        problems: problems.into_iter().map(read_problem).collect(),
        notes: c.notes.into_iter().map(read_problem).collect(),
        damaged: c.damaged,
        call_counts: c.call_counts,
        call_paths: c.call_paths,
    })
}
