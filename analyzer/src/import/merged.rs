//! Reading a merged trace whole, for files not laid out as `overlap merge` writes them
//! (`otherData` after the events, another tool's layout): [`load`](super::load) streams
//! overlap's own layout instead.

use std::collections::BTreeMap;
use std::path::Path;

use overlap_format::input::{read_input, UNCAPPED};
use overlap_format::schema::wire::{Category, MetaName, NameArgs, Phase, WireEvent};
use overlap_format::schema::{
    readable_version, Event, LearnedUse, MergedInfo, Unwatched, FORMAT_NAME, FORMAT_VERSION,
};
use serde_json::Value;

use super::{complete_event, completeness, learned_args, meta_args, plausible};
use crate::model::{Flow, MergedTrace, Point, RequestSpan};
use crate::{Error, Result};

/// `otherData` plus events, as a merged file holds them.
#[derive(serde::Deserialize)]
struct MergedFile<'a> {
    #[serde(rename = "otherData")]
    other_data: MergedInfo,
    #[serde(rename = "traceEvents", borrow)]
    trace_events: Vec<WireEvent<'a, Value>>,
}

/// Reads a merged trace written by `overlap merge`. A rank with fewer events than the
/// file says it was written with is listed in `info.incomplete` (or, with none left,
/// `info.missing_ranks`).
pub fn read_merged(path: &Path) -> Result<MergedTrace> {
    read_merged_noting(path).map(|(t, _)| t)
}

/// [`read_merged`], with what the user should know of the file's completeness that is
/// not a rank's problem (see [`completeness::apply`]).
pub(crate) fn read_merged_noting(path: &Path) -> Result<(MergedTrace, Vec<String>)> {
    let buf = read_input(path, UNCAPPED, "trace")?;
    let bad = |reason: String| Error::BadMerged {
        path: path.to_path_buf(),
        reason,
    };
    let file: MergedFile = serde_json::from_slice(&buf).map_err(|e| bad(e.to_string()))?;
    if file.other_data.format != FORMAT_NAME {
        return Err(bad(format!("format is {:?}", file.other_data.format)));
    }
    if !readable_version(file.other_data.format_version) {
        return Err(Error::Version {
            path: path.to_path_buf(),
            found: file.other_data.format_version,
            supported: FORMAT_VERSION,
        });
    }
    if let Some(why) = plausible::merged_info(&file.other_data) {
        return Err(bad(why));
    }
    let world = file.other_data.world_size;
    let mut events: BTreeMap<u32, Vec<Event>> = BTreeMap::new();
    let mut process_names = BTreeMap::new();
    let mut flows: BTreeMap<u64, Flow> = BTreeMap::new();
    let mut flow_ends: BTreeMap<u64, (usize, Option<Point>)> = BTreeMap::new();
    let mut requests: BTreeMap<u64, RequestSpan> = BTreeMap::new();
    let mut learned: BTreeMap<u32, Vec<LearnedUse>> = BTreeMap::new();
    let mut unwatched: BTreeMap<u32, Vec<Unwatched>> = BTreeMap::new();
    for (index, raw) in file.trace_events.iter().enumerate() {
        let at = |reason: String| bad(format!("event {index}: {reason}"));
        if let Some(why) = plausible::pid(raw.pid, world) {
            return Err(at(why));
        }
        let ns = raw.ts.map(|t| t.0 .0);
        let point = || {
            Some(Point {
                rank: raw.pid,
                tid: raw.tid,
                ns: ns?,
            })
        };
        match raw.ph {
            // The in-flight slices are rebuilt from `otherData`.
            Phase::Complete if raw.cat == Some(Category::Hang) => {}
            // The regions' slices, from the Pcontrol calls.
            Phase::Complete if raw.cat == Some(Category::Region) => {}
            Phase::Complete => events
                .entry(raw.pid)
                .or_default()
                .push(complete_event(raw).map_err(at)?),
            Phase::Instant if raw.cat == Some(Category::Buffer) => {
                match learned_args(raw).map_err(at)? {
                    Ok(l) => learned.entry(raw.pid).or_default().push(l),
                    Err(u) => unwatched.entry(raw.pid).or_default().push(u),
                }
            }
            Phase::Metadata
                if MetaName::from_wire_name(&raw.name) == Some(MetaName::ProcessName) =>
            {
                let n: NameArgs = meta_args(raw).map_err(at)?;
                process_names.insert(raw.pid, n.name);
            }
            Phase::FlowStart => {
                let id = raw.id.ok_or_else(|| at("flow without id".into()))?;
                let from = point().ok_or_else(|| at("flow without ts".into()))?;
                flows.insert(id, Flow { id, from, to: None });
            }
            // A flow's end may come before its start: each is written in its own
            // rank's section of the file.
            Phase::FlowEnd => {
                let id = raw.id.ok_or_else(|| at("flow without id".into()))?;
                flow_ends.insert(id, (index, point()));
            }
            Phase::AsyncBegin => {
                let id = raw.id.ok_or_else(|| at("async slice without id".into()))?;
                let begin_ns = ns.ok_or_else(|| at("async slice without ts".into()))?;
                requests.insert(
                    id,
                    RequestSpan {
                        id,
                        name: raw.name.to_string(),
                        rank: raw.pid,
                        begin_ns,
                        end_ns: None,
                    },
                );
            }
            Phase::AsyncEnd => {
                let id = raw.id.ok_or_else(|| at("async slice without id".into()))?;
                if let Some(r) = requests.get_mut(&id) {
                    r.end_ns = ns;
                }
            }
            _ => {}
        }
    }
    for (id, (index, to)) in flow_ends {
        let flow = flows
            .get_mut(&id)
            .ok_or_else(|| bad(format!("event {index}: flow end {id} without a start")))?;
        flow.to = to;
    }
    let mut info = file.other_data;
    let counts: BTreeMap<u32, u64> = events.iter().map(|(r, e)| (*r, e.len() as u64)).collect();
    // Read whole, so its end is there; the counts still tell a file that lost events.
    let notes = completeness::apply(
        &mut info,
        &completeness::Read {
            path,
            events: &counts,
            ended: true,
        },
    );
    let merged = MergedTrace {
        path: path.to_path_buf(),
        info,
        events,
        process_names,
        flows: flows.into_values().collect(),
        requests: requests.into_values().collect(),
        learned,
        unwatched,
    };
    Ok((merged, notes))
}
