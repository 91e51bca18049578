//! The only reader of trace files.
//!
//! Per-rank files are binary streams (format version 4 on, read by [`stream`] through
//! the format crate) or JSON arrays (versions 1 to 3). JSON files are read event by
//! event: an unusable event is skipped alone ([`skip`]), and a file whose end is missing
//! (no closing bracket, a half-written last event, no footer) still yields every event
//! before the cut, and the cut is reported with its event index and line. Problems that
//! make a file unusable as a whole (no trace of either layout, another format version,
//! no header, a run no run can be, see [`plausible`]) are errors naming the file and the
//! reason. Every file is opened through [`overlap_format::input`]: never a fifo or a
//! device.

mod completeness;
mod event;
mod fastparse;
mod merged;
mod merged_stream;
pub mod otf2;
mod pftrace;
mod plausible;
mod reading;
mod skip;
mod stream;

use fastparse::parse_complete;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use overlap_format::input::{read_input, UNCAPPED};
use overlap_format::schema::wire::{MetaName, NameArgs, Phase, WireEvent};
use overlap_format::schema::{
    readable_version, ClockSync, Event, Footer, Header, LearnedUse, SourceSite, Unwatched,
    FORMAT_NAME, FORMAT_VERSION, JSON_RANK_FILE_EXTENSION, RANK_FILE_EXTENSION,
};
use overlap_format::stream::EventStore;
use serde_json::Value;

pub(crate) use event::{complete_event, learned_args, meta_args};
pub use merged::read_merged;
pub(crate) use merged::read_merged_noting;
pub use merged_stream::{read_merged_timelines, MergedRead, ReadProgress};
pub use reading::Reading;

use crate::model::{Place, RankTrace, ReadProblem, Timeline};
use crate::{Error, Result};

pub(crate) type RawEvent<'a> = WireEvent<'a, Value>;

fn check_header(path: &Path, header: &Header) -> Result<()> {
    if header.format != FORMAT_NAME {
        return Err(Error::NotATrace {
            path: path.to_path_buf(),
            reason: format!("format is {:?}, not {FORMAT_NAME:?}", header.format),
        });
    }
    if !readable_version(header.format_version) {
        return Err(Error::Version {
            path: path.to_path_buf(),
            found: header.format_version,
            supported: FORMAT_VERSION,
        });
    }
    Ok(())
}

fn skip_whitespace(buf: &[u8], mut pos: usize) -> usize {
    while pos < buf.len() && buf[pos].is_ascii_whitespace() {
        pos += 1;
    }
    pos
}

/// Where the events of a file go as they are read (a sink that only counts them spares
/// the reader building them: [`EventStore::BUILT`]).
pub trait EventSink: Default + EventStore {
    /// Takes one event.
    fn push(&mut self, e: Event);
    /// Events taken so far.
    fn len(&self) -> usize;
    /// True when no event was taken.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// What the sink could not take more of, if anything ([`Timeline::overflow`]).
    fn overflow(&self) -> Option<&'static str> {
        None
    }
    /// Takes what the rank learned of its buffers (`overlap trace --buffers`); dropped
    /// unless the sink keeps it.
    fn learned(&mut self, _learned: Vec<LearnedUse>, _unwatched: Vec<Unwatched>) {}
}

impl EventSink for Vec<Event> {
    fn push(&mut self, e: Event) {
        Vec::push(self, e);
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
}

impl EventStore for Timeline {}

impl EventSink for Timeline {
    fn push(&mut self, e: Event) {
        Timeline::push(self, &e);
    }
    fn len(&self) -> usize {
        self.event_count()
    }
    fn overflow(&self) -> Option<&'static str> {
        Timeline::overflow(self)
    }
    fn learned(&mut self, learned: Vec<LearnedUse>, unwatched: Vec<Unwatched>) {
        self.learned.extend(learned);
        self.unwatched.extend(unwatched);
    }
}

impl Extend<Event> for Timeline {
    fn extend<I: IntoIterator<Item = Event>>(&mut self, events: I) {
        for e in events {
            Timeline::push(self, &e);
        }
    }
}

/// Reads a per-rank trace file.
pub fn read_rank_file(path: &Path) -> Result<RankTrace> {
    read_rank_file_into(path)
}

/// Reads a per-rank trace file, its events into `S`.
pub fn read_rank_file_into<S: EventSink>(path: &Path) -> Result<RankTrace<S>> {
    parse_rank_file_into(path, &rank_file_bytes(path)?)
}

/// The bytes of a per-rank file (never a fifo or a device).
fn rank_file_bytes(path: &Path) -> Result<Vec<u8>> {
    Ok(read_input(path, UNCAPPED, "trace")?)
}

/// Hands every call, compute span and GPU operation of a per-rank file to `each`, in
/// file order: the merge's second reading, which writes them without holding them (a
/// JSON file of versions 1 to 3 is read whole first).
pub(crate) fn each_event(path: &Path, mut each: impl FnMut(Event)) -> Result<()> {
    let buf = rank_file_bytes(path)?;
    match rank_file_kind(path, &buf)? {
        RankFileKind::Stream => stream::each_stream_event(path, &buf, each),
        RankFileKind::Json => {
            let t = parse_rank_trace(path, &buf)?;
            t.events.into_iter().for_each(&mut each);
            Ok(())
        }
    }
}

/// The two layouts of a per-rank file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RankFileKind {
    /// A binary stream (format version 4 on), told by its magic.
    Stream,
    /// A JSON array of events (versions 1 to 3), told by its `[`.
    Json,
}

/// Which layout the bytes of a per-rank file have; neither is an error naming the file.
fn rank_file_kind(path: &Path, buf: &[u8]) -> Result<RankFileKind> {
    if overlap_format::stream::is_stream(buf) {
        return Ok(RankFileKind::Stream);
    }
    // An empty file is told as such by the JSON reader.
    if buf.is_empty() || buf.get(skip_whitespace(buf, 0)) == Some(&b'[') {
        return Ok(RankFileKind::Json);
    }
    Err(Error::NotATrace {
        path: path.to_path_buf(),
        reason: "no \"OVLPRANK\" magic at its start (nor the '[' that JSON rank files of \
                 versions 1 to 3 start with)"
            .into(),
    })
}

/// Parses the bytes of a per-rank file of any readable version: a binary stream, or a
/// JSON array (`path` is for messages).
pub fn parse_rank_file_into<S: EventSink>(path: &Path, buf: &[u8]) -> Result<RankTrace<S>> {
    let t: RankTrace<S> = match rank_file_kind(path, buf)? {
        RankFileKind::Stream => stream::parse_stream_into(path, buf)?,
        RankFileKind::Json => parse_rank_trace_into(path, buf)?,
    };
    match t.events.overflow() {
        Some(what) => Err(Error::TooLarge {
            path: path.to_path_buf(),
            rank: t.header.rank,
            what,
        }),
        None => Ok(t),
    }
}

/// Counts lines incrementally, so locating each event costs only the bytes since the
/// previous one.
struct LineCounter {
    pos: usize,
    line: u64,
}

impl LineCounter {
    fn line_at(&mut self, buf: &[u8], pos: usize) -> u64 {
        let pos = pos.min(buf.len());
        if pos >= self.pos {
            self.line += buf[self.pos..pos].iter().filter(|&&b| b == b'\n').count() as u64;
            self.pos = pos;
        }
        self.line
    }
}

/// What is wrong with one value of a per-rank file.
enum Unusable {
    /// This event cannot be used; the rest of the file may.
    Event(String),
    /// The whole file cannot be used.
    File(Error),
}

/// Where the next event may start after an unusable one at `from`: right after it when
/// its brackets close on its line, else the next line that opens an object (the writer
/// puts one event per line).
fn resync(buf: &[u8], from: usize) -> Option<usize> {
    let line_end = buf[from..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(buf.len(), |i| from + i);
    if let Some(end) = skip::value_end(&buf[from..line_end]) {
        return Some(from + end);
    }
    buf[from..]
        .windows(2)
        .position(|w| w == b"\n{")
        .map(|i| from + i + 1)
}

/// Parses the bytes of a per-rank trace file (`path` is for messages).
///
/// An event that cannot be used (corrupt JSON, unknown call, bad args) is reported and
/// skipped: reading goes on at the next line, so everything readable is kept. A file
/// that ends in the middle of an event keeps everything before it.
pub fn parse_rank_trace(path: &Path, buf: &[u8]) -> Result<RankTrace> {
    parse_rank_trace_into(path, buf)
}

/// [`parse_rank_trace`], with the events going into `S`.
pub fn parse_rank_trace_into<S: EventSink>(path: &Path, buf: &[u8]) -> Result<RankTrace<S>> {
    let not_a_trace = |reason: String| Error::NotATrace {
        path: path.to_path_buf(),
        reason,
    };
    let mut pos = skip_whitespace(buf, 0);
    match buf.get(pos) {
        Some(b'[') => pos += 1,
        Some(_) => {
            return Err(not_a_trace(
                "it does not start with '[' (a per-rank trace is a JSON array of events)".into(),
            ))
        }
        None => return Err(not_a_trace("the file is empty".into())),
    }
    let mut lines = LineCounter { pos: 0, line: 1 };
    let mut header: Option<Header> = None;
    let mut threads = BTreeMap::new();
    let mut syncs: Vec<ClockSync> = Vec::new();
    let mut sites: Vec<SourceSite> = Vec::new();
    let mut events = S::default();
    let mut footer: Option<Footer> = None;
    let mut problems: Vec<ReadProblem> = Vec::new();
    let mut index: u64 = 0;
    let mut closed = false;

    loop {
        pos = skip_whitespace(buf, pos);
        if buf.get(pos) == Some(&b',') && index > 0 {
            pos = skip_whitespace(buf, pos + 1);
        }
        match buf.get(pos) {
            None => break,
            Some(b']') => {
                closed = true;
                break;
            }
            Some(_) => {}
        }
        if header.is_some() {
            // The fast path for events laid out as overlap's writer lays them out.
            if let Some((fast, consumed)) = parse_complete(&buf[pos..]) {
                events.push(fast.event);
                pos += consumed;
                index += 1;
                continue;
            }
        }
        let line = lines.line_at(buf, pos);
        let mut stream = serde_json::Deserializer::from_slice(&buf[pos..]).into_iter::<RawEvent>();
        let parsed = match stream.next() {
            Some(Ok(raw)) => Ok(raw),
            Some(Err(e)) if e.is_eof() => {
                problems.push(ReadProblem {
                    event_index: index,
                    place: Place::Line(line),
                    reason: "the file ends in the middle of this event (the writer was cut off)"
                        .into(),
                });
                break;
            }
            Some(Err(e)) if header.is_none() && index == 0 => {
                return Err(not_a_trace(format!(
                    "first value is not a trace event: {e}"
                )));
            }
            Some(Err(e)) => Err(format!("not a valid trace event: {e}")),
            None => break,
        };
        let step: std::result::Result<usize, Unusable> = match parsed {
            Err(reason) => Err(Unusable::Event(reason)),
            Ok(raw) => {
                let consumed = stream.byte_offset();
                let r: std::result::Result<(), String> = (|| {
                    match raw.ph {
                        Phase::Metadata => match MetaName::from_wire_name(&raw.name) {
                            Some(MetaName::Header) => {
                                let h: Header = meta_args(&raw)?;
                                check_header(path, &h).map_err(|e| e.to_string())?;
                                header = Some(h);
                            }
                            Some(MetaName::ThreadName) => {
                                let n: NameArgs = meta_args(&raw)?;
                                threads.insert(raw.tid, n.name);
                            }
                            Some(MetaName::ClockSync) => syncs.push(meta_args(&raw)?),
                            Some(MetaName::Site) => sites.push(meta_args(&raw)?),
                            Some(MetaName::Footer) => footer = Some(meta_args(&raw)?),
                            // Names and sort indexes are rebuilt by the merge; metadata
                            // of other tools is not ours to interpret.
                            _ => {}
                        },
                        Phase::Complete => {
                            if header.is_none() {
                                return Err("event before the overlap_header record".into());
                            }
                            events.push(complete_event(&raw)?);
                        }
                        other => {
                            return Err(format!("unexpected phase {other:?} in a per-rank file"))
                        }
                    }
                    Ok(())
                })();
                match r {
                    Ok(()) => Ok(consumed),
                    // A header that is there but wrong makes the whole file unusable.
                    Err(reason) => {
                        match header.is_none().then(|| header_error(path, &raw)).flatten() {
                            Some(fatal) => Err(Unusable::File(fatal)),
                            None => Err(Unusable::Event(reason)),
                        }
                    }
                }
            }
        };
        match step {
            Ok(consumed) => pos += consumed,
            Err(Unusable::File(e)) => return Err(e),
            Err(Unusable::Event(reason)) => {
                problems.push(ReadProblem {
                    event_index: index,
                    place: Place::Line(line),
                    reason,
                });
                match resync(buf, pos) {
                    Some(next) => pos = next,
                    None => break,
                }
            }
        }
        index += 1;
    }

    let header = header.ok_or_else(|| Error::NoHeader {
        path: path.to_path_buf(),
    })?;
    if closed && footer.is_none() {
        problems.push(ReadProblem {
            event_index: index,
            place: Place::Line(lines.line_at(buf, pos)),
            reason: "the array is closed but has no overlap_footer record".into(),
        });
    }
    Ok(RankTrace {
        path: path.to_path_buf(),
        header,
        threads,
        syncs,
        sites,
        events,
        footer,
        problems,
        notes: Vec::new(),
        in_flight: Vec::new(),
        damaged: false,
        call_counts: None,
        call_paths: Vec::new(),
    })
}

/// The whole-file error a bad header record means, if `raw` is one.
fn header_error(path: &Path, raw: &RawEvent<'_>) -> Option<Error> {
    if raw.ph != Phase::Metadata || MetaName::from_wire_name(&raw.name) != Some(MetaName::Header) {
        return None;
    }
    match meta_args::<Header>(raw) {
        Ok(h) => check_header(path, &h).err(),
        Err(reason) => {
            // Tell a newer or older version apart from a broken header.
            let found = raw
                .args
                .as_ref()
                .and_then(|a| a.get("format_version"))
                .and_then(Value::as_u64);
            Some(match found {
                Some(v) if !u32::try_from(v).is_ok_and(readable_version) => Error::Version {
                    path: path.to_path_buf(),
                    found: u32::try_from(v).unwrap_or(u32::MAX),
                    supported: FORMAT_VERSION,
                },
                _ => Error::NotATrace {
                    path: path.to_path_buf(),
                    reason,
                },
            })
        }
    }
}

/// True for the per-rank file names a trace directory holds: `rank-<N>.ovlp` (binary
/// streams) and `rank-<N>.json` (versions 1 to 3).
pub fn is_rank_file_name(name: &str) -> bool {
    let number = |ext: &str| {
        name.strip_prefix("rank-")
            .and_then(|rest| rest.strip_suffix(ext))
            .and_then(|rest| rest.strip_suffix('.'))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    number(RANK_FILE_EXTENSION) || number(JSON_RANK_FILE_EXTENSION)
}

/// The per-rank files (`rank-<N>.ovlp` or `.json`) of a directory, sorted by name. Other
/// files, such as a merged trace written next to them, are not per-rank files. An entry
/// with a rank file's name that is not a regular file (a fifo, a directory) is listed,
/// so that reading it says why it cannot be used instead of it going missing silently.
pub fn rank_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Io {
        what: "listing",
        path: dir.to_path_buf(),
        cause: source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(is_rank_file_name)
        })
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::is_rank_file_name;

    #[test]
    fn rank_file_names() {
        assert!(is_rank_file_name("rank-0.json"));
        assert!(is_rank_file_name("rank-7.ovlp"));
        assert!(!is_rank_file_name("rank-7ovlp"));
        assert!(!is_rank_file_name("rank-7.ovlp.json"));
        assert!(is_rank_file_name("rank-1023.json"));
        assert!(!is_rank_file_name("rank-.json"));
        assert!(!is_rank_file_name("rank-1.json.bak"));
        assert!(!is_rank_file_name("out.json"));
        assert!(!is_rank_file_name("rank-x.json"));
    }
}
