//! Reading a merged trace for analysis, as a stream (one event per line, so that files
//! far larger than memory's comfort are fine and a missing closing bracket is too, and
//! so is one written on a single line), into compact per-rank timelines that the run
//! loader ([`crate::load`]) matches. An event that cannot be used is skipped alone,
//! reported with its byte offset.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use overlap_format::input::{open_input, Accept};
use overlap_format::schema::wire::{Category, MetaName, NameArgs, Phase};
use overlap_format::schema::{readable_version, MergedInfo, FORMAT_NAME, FORMAT_VERSION};

use super::fastparse::parse_complete;
use super::skip::value_end;
use super::{complete_event, completeness, learned_args, meta_args, RawEvent};
use crate::model::{Place, ReadProblem, Timeline};
use crate::{Error, Result};

/// The opening of a merged file, up to its events.
#[derive(serde::Deserialize)]
struct Opening {
    #[serde(rename = "otherData")]
    other_data: MergedInfo,
}

/// A merged trace read into per-rank timelines, not yet matched (the run loader,
/// [`crate::load`], aligns nothing, for a merged trace is on one timeline, but matches).
#[derive(Clone, Debug)]
pub struct MergedRead {
    /// What `otherData` says of the run, its completeness counted.
    pub info: MergedInfo,
    /// Each rank's events, by rank.
    pub ranks: BTreeMap<u32, Timeline>,
    /// Events that could not be used (skipped), and a cut-off end.
    pub problems: Vec<ReadProblem>,
    /// What the user should know about the file as a whole (a merged file too old to
    /// say whether it is complete).
    pub notes: Vec<String>,
    /// True for a file that ends before the end of its events (no closing bracket).
    pub cut_short: bool,
}

/// Progress of a read: bytes read so far and in all.
pub type ReadProgress<'a> = &'a mut dyn FnMut(u64, u64);

/// Reads a merged trace into per-rank timelines, streaming its events.
pub fn read_merged_timelines(path: &Path, progress: ReadProgress<'_>) -> Result<MergedRead> {
    let bad = |reason: String| Error::BadMerged {
        path: path.to_path_buf(),
        reason,
    };
    let io = |source| Error::Io {
        what: "reading",
        path: path.to_path_buf(),
        cause: source,
    };
    let (file, md) = open_input(path, Accept::File)?;
    let mut file = file;
    super::pftrace::refuse_protobuf(path, &mut file)?;
    let total = md.len();
    let mut reader = BufReader::with_capacity(1 << 20, file);

    // The opening: everything up to `"traceEvents":[`, which overlap writes after
    // `otherData`. A file laid out otherwise is read whole.
    let mut opening: Vec<u8> = Vec::new();
    let mut line_no: u64 = 0;
    let events_at = loop {
        let before = opening.len();
        let n = reader.read_until(b'\n', &mut opening).map_err(io)?;
        line_no += 1;
        if n == 0 {
            if trim_start(&opening).starts_with(b"{\"otherData\"") {
                return Err(bad(format!(
                    "the file ends inside its otherData, {} byte(s) in: it was cut short \
                     before its first event, and nothing of the run can be read (merge the \
                     rank files again)",
                    opening.len()
                )));
            }
            return Err(bad(
                "no \"traceEvents\" array (a merged trace is an object with otherData and \
                 traceEvents)"
                    .into(),
            ));
        }
        if let Some(i) = find(&opening[before.saturating_sub(16)..], b"\"traceEvents\"") {
            break before.saturating_sub(16) + i;
        }
        if opening.len() > 64 << 20 {
            return Err(bad("no \"traceEvents\" array in the first 64 MiB".into()));
        }
    };
    let head = &opening[..events_at];
    let trimmed = trim_end(head);
    let trimmed = trimmed.strip_suffix(b",").unwrap_or(trimmed);
    let mut head_json = trimmed.to_vec();
    head_json.push(b'}');
    let info = match serde_json::from_slice::<Opening>(&head_json) {
        Ok(o) => o.other_data,
        Err(_) => {
            // Not overlap's layout (otherData after the events, or another tool's file):
            // fall back to reading the whole file.
            drop(reader);
            return read_merged_whole(path);
        }
    };
    if info.format != FORMAT_NAME {
        return Err(Error::NotATrace {
            path: path.to_path_buf(),
            reason: format!("format is {:?}, not {FORMAT_NAME:?}", info.format),
        });
    }
    if !readable_version(info.format_version) {
        return Err(Error::Version {
            path: path.to_path_buf(),
            found: info.format_version,
            supported: FORMAT_VERSION,
        });
    }
    if let Some(why) = super::plausible::merged_info(&info) {
        return Err(bad(why));
    }
    let world = info.world_size;
    // The rest of the opening line, after `"traceEvents":`, up to and including `[`.
    let rest = &opening[events_at + b"\"traceEvents\"".len()..];
    let rest = trim_start(rest);
    let rest = rest.strip_prefix(b":").map(trim_start).unwrap_or(rest);
    let Some(rest) = rest.strip_prefix(b"[") else {
        return Err(bad("\"traceEvents\" is not an array".into()));
    };
    let mut pending: Vec<u8> = trim_start(rest).to_vec();

    let mut ranks: BTreeMap<u32, Timeline> = BTreeMap::new();
    let mut problems: Vec<ReadProblem> = Vec::new();
    let mut index: u64 = 0;
    let mut read: u64 = opening.len() as u64;
    let mut line: Vec<u8> = Vec::with_capacity(512);
    let mut last_report = 0u64;
    let mut event_line = line_no + 1;
    let mut ended = false;
    // True when the file ends inside an event (already reported as such).
    let mut ends_mid_event = false;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(io)?;
        read += n as u64;
        if read - last_report > 8 << 20 {
            progress(read, total);
            last_report = read;
        }
        if n == 0 && pending.is_empty() {
            break;
        }
        line_no += 1;
        pending.extend_from_slice(&line);
        // Every event the buffer holds (overlap writes one per line; others may not,
        // and a file may hold all of them on one line).
        let pending_offset = read - pending.len() as u64;
        let mut at = 0usize;
        let mut finished = false;
        loop {
            let rest = &pending[at..];
            let text = trim_start(rest);
            let text = text.strip_prefix(b",").map(trim_start).unwrap_or(text);
            let skipped = rest.len() - text.len();
            match text.first() {
                None => {
                    at = pending.len();
                    break;
                }
                Some(b']') => {
                    finished = true;
                    ended = true;
                    break;
                }
                Some(_) => {}
            }
            let offset = pending_offset + (at + skipped) as u64;
            if let Some((fast, used)) = parse_complete(text) {
                match super::plausible::pid(fast.pid, world) {
                    None => ranks
                        .entry(fast.pid)
                        .or_insert_with(|| Timeline::new(fast.pid))
                        .push(&fast.event),
                    Some(why) => problems.push(ReadProblem {
                        event_index: index,
                        place: Place::Offset(offset),
                        reason: format!("not a possible event, skipped: {why}"),
                    }),
                }
                at += skipped + used;
                index += 1;
                event_line = line_no;
                continue;
            }
            let mut stream = serde_json::Deserializer::from_slice(text).into_iter::<RawEvent>();
            match stream.next() {
                Some(Ok(raw)) => {
                    if let Err(reason) = take_event(&raw, &mut ranks, world) {
                        problems.push(ReadProblem {
                            event_index: index,
                            place: Place::Offset(offset),
                            reason,
                        });
                    }
                    at += skipped + stream.byte_offset();
                    index += 1;
                    event_line = line_no;
                }
                // An event spread over several lines: read on.
                Some(Err(e)) if e.is_eof() && n > 0 => break,
                Some(Err(e)) if e.is_eof() => {
                    problems.push(ReadProblem {
                        event_index: index,
                        place: Place::Line(event_line),
                        reason: "the file ends in the middle of this event".into(),
                    });
                    ends_mid_event = true;
                    finished = true;
                    break;
                }
                Some(Err(e)) => {
                    // Only this event is lost when its brackets close where it ends; else
                    // the rest of its line is, and reading goes on at the next line.
                    let (place, end) = match value_end(text) {
                        Some(end) => (Place::Offset(offset), Some(end)),
                        None => (Place::Line(event_line), None),
                    };
                    problems.push(ReadProblem {
                        event_index: index,
                        place,
                        reason: format!(
                            "not a valid trace event, skipped: {}",
                            without_position(&e)
                        ),
                    });
                    index += 1;
                    match end {
                        Some(end) => {
                            at += skipped + end;
                            event_line = line_no;
                            continue;
                        }
                        None => {
                            at = pending.len();
                            break;
                        }
                    }
                }
                None => {
                    at = pending.len();
                    break;
                }
            }
        }
        pending.drain(..at.min(pending.len()));
        if pending.iter().all(u8::is_ascii_whitespace) {
            pending.clear();
            event_line = line_no + 1;
        }
        if finished || n == 0 {
            break;
        }
    }
    progress(total, total);
    if !ended && !ends_mid_event {
        problems.push(ReadProblem {
            event_index: index,
            place: Place::Line(line_no),
            reason: "the file ends before the end of its events (no closing bracket): it \
                     was cut short"
                .into(),
        });
    }
    let mut info = info;
    let notes = count(path, &mut info, &ranks, ended);
    Ok(MergedRead {
        info,
        ranks,
        problems,
        notes,
        cut_short: !ended,
    })
}

/// Takes one general-path event of a merged file into its rank's timeline.
fn take_event(
    raw: &RawEvent<'_>,
    ranks: &mut BTreeMap<u32, Timeline>,
    world: u32,
) -> std::result::Result<(), String> {
    if let Some(why) = super::plausible::pid(raw.pid, world) {
        return Err(format!("not a possible event, skipped: {why}"));
    }
    match raw.ph {
        // The in-flight slices are rebuilt from `otherData`.
        Phase::Complete if raw.cat == Some(Category::Hang) => {}
        // So are the regions' slices, from the Pcontrol calls.
        Phase::Complete if raw.cat == Some(Category::Region) => {}
        Phase::Complete => {
            let e = complete_event(raw)?;
            ranks
                .entry(raw.pid)
                .or_insert_with(|| Timeline::new(raw.pid))
                .push(&e);
        }
        Phase::Instant if raw.cat == Some(Category::Buffer) => {
            let t = ranks
                .entry(raw.pid)
                .or_insert_with(|| Timeline::new(raw.pid));
            match learned_args(raw)? {
                Ok(l) => t.learned.push(l),
                Err(u) => t.unwatched.push(u),
            }
        }
        // A track of regions is no recording thread.
        Phase::Metadata if overlap_format::region::is_region_tid(raw.tid) => {}
        Phase::Metadata if MetaName::from_wire_name(&raw.name) == Some(MetaName::ThreadName) => {
            let n: NameArgs = meta_args(raw)?;
            ranks
                .entry(raw.pid)
                .or_insert_with(|| Timeline::new(raw.pid))
                .threads
                .insert(raw.tid, n.name);
        }
        // Flows, request slices and the other instants are rebuilt from the calls.
        _ => {}
    }
    Ok(())
}

/// A merged file not laid out as overlap writes it, read whole.
fn read_merged_whole(path: &Path) -> Result<MergedRead> {
    // Read whole: its completeness is already in its info (read_merged applied it).
    let (merged, notes) = super::read_merged_noting(path)?;
    let mut ranks: BTreeMap<u32, Timeline> = BTreeMap::new();
    for (rank, events) in &merged.events {
        let t = ranks.entry(*rank).or_insert_with(|| Timeline::new(*rank));
        for e in events {
            t.push(e);
        }
    }
    for (rank, learned) in merged.learned {
        let t = ranks.entry(rank).or_insert_with(|| Timeline::new(rank));
        t.learned = learned;
    }
    for (rank, unwatched) in merged.unwatched {
        let t = ranks.entry(rank).or_insert_with(|| Timeline::new(rank));
        t.unwatched = unwatched;
    }
    Ok(MergedRead {
        info: merged.info,
        ranks,
        problems: Vec::new(),
        notes,
        cut_short: false,
    })
}

/// Counts each rank's events against what `otherData` declares (see
/// [`completeness`]): what the user should know of it.
fn count(
    path: &Path,
    info: &mut MergedInfo,
    ranks: &BTreeMap<u32, Timeline>,
    ended: bool,
) -> Vec<String> {
    let events: BTreeMap<u32, u64> = ranks
        .iter()
        .map(|(r, t)| (*r, t.event_count() as u64))
        .collect();
    completeness::apply(
        info,
        &completeness::Read {
            path,
            events: &events,
            ended,
        },
    )
}

/// The message of a JSON error without its "at line L column C": the position is in
/// the event's own text, not the file's, so the reader says where the event starts.
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&position) {
        Some(message) => message.to_string(),
        None => text,
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn trim_start(b: &[u8]) -> &[u8] {
    let i = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    &b[i..]
}

fn trim_end(b: &[u8]) -> &[u8] {
    let i = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &b[..i]
}
