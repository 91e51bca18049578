//! Reading OTF2 archives (`traces.otf2`, the anchor file, with its `.def` and one
//! `.evt` per location): Score-P's, Scalasca's, and those `overlap merge --format
//! otf2` writes. Through the OTF2 C library ([`overlap_otf2`]); each rank comes out
//! as a [`RankTrace`] in its own clock, as if read from its rank file, so that a run
//! loaded from an archive is aligned and matched by the very code that loads a
//! directory of rank files.
//!
//! Clocks: an archive's ticks (of its timer resolution) become nanoseconds; the
//! offsets its locations measured (Score-P's, at initialisation and finalisation)
//! become the rank's clock synchronisations, the largest standard deviation of them
//! all the error bound; offsets measured in between bend the alignment into a
//! piecewise-linear one ([`clocks`]).
//! An overlap archive keeps each rank's header, synchronisations and footer as
//! properties of its process, and a call's arguments OTF2 has no field for as
//! attributes; another writer's archive has neither, and what its records do not carry
//! (buffers, a receive's requested source and tag, the requests a Test found not done)
//! stays unknown.

mod calls;
mod clocks;
mod layout;
mod rma;
pub mod vocabulary;

use std::collections::BTreeMap;
use std::path::Path;

use overlap_format::schema::{CallCounts, ClockSync, Footer, SyncPhase};
use overlap_otf2::{Archive, Property};
use serde::de::DeserializeOwned;

use self::calls::{RankEvents, Thread};
use self::clocks::{spread, Bend};
use self::layout::Layout;
use self::vocabulary as v;
use super::EventSink;
use crate::model::{Place, RankTrace, ReadProblem};
use crate::{Error, Result};

/// True when `path` is named as an OTF2 anchor file (`*.otf2`).
pub fn is_anchor(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(overlap_otf2::ANCHOR_EXTENSION))
}

fn bad(path: &Path, reason: impl Into<String>) -> Error {
    Error::NotATrace {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Reads every rank of the archive whose anchor file is `anchor`, its events into `S`,
/// sorted by rank.
pub fn read_archive_into<S: EventSink>(anchor: &Path) -> Result<Vec<RankTrace<S>>> {
    let _span = tracing::info_span!("read otf2", path = %anchor.display()).entered();
    let mut archive = Archive::open(anchor)?;
    let program = anchor
        .parent()
        .and_then(|d| d.file_name())
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let layout =
        Layout::of(archive.definitions(), archive.creator(), &program).map_err(|reason| {
            bad(
                anchor,
                format!("not an archive of MPI ranks overlap can read: {reason}"),
            )
        })?;
    if layout.ranks.is_empty() {
        return Err(bad(
            anchor,
            "its definitions name no MPI process (no location group of processes)",
        ));
    }
    let mut by_rank: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for (l, (rank, _)) in &layout.threads {
        by_rank.entry(*rank).or_default().push(*l);
    }
    let mut traces = Vec::with_capacity(layout.ranks.len());
    for (rank, def) in &layout.ranks {
        let epoch = if layout.ours {
            def.header.epoch_ns
        } else {
            archive.definitions().clock.global_offset
        };
        let mut events = RankEvents::new(*rank);
        let declared: Vec<overlap_format::schema::SpanBuffers> =
            kept(anchor, &def.props, v::SPAN_BUFFERS)?.unwrap_or_default();
        events.span_buffers = declared.into_iter().map(std::sync::Arc::new).collect();
        events.groups = kept(anchor, &def.props, v::GROUPS)?.unwrap_or_default();
        events.regions = kept(anchor, &def.props, v::REGIONS)?.unwrap_or_default();
        let mut threads = BTreeMap::new();
        for l in by_rank.get(rank).into_iter().flatten() {
            let (_, tid) = layout.threads[l];
            if let Some(d) = archive.definitions().locations.get(l) {
                threads.insert(tid, d.name.clone());
            }
            let bend = archive
                .definitions()
                .clock_offsets
                .get(l)
                .and_then(|o| Bend::of(o));
            let mut thread = Thread::new(&layout, &mut events, tid, epoch, bend);
            archive.read_events(*l, &mut |t, r, a| {
                thread.record(t, r, a);
                Ok(())
            })?;
            thread.finish();
        }
        traces.push(rank_trace::<S>(
            anchor,
            &layout,
            archive.definitions(),
            *rank,
            events,
            threads,
        )?);
    }
    Ok(traces)
}

/// A property of the rank kept as JSON, read (absent: `None`).
fn kept<T: DeserializeOwned>(
    anchor: &Path,
    props: &BTreeMap<String, Property>,
    name: &str,
) -> Result<Option<T>> {
    match props.get(name) {
        Some(Property::Text(json)) => serde_json::from_str(json)
            .map(Some)
            .map_err(|e| bad(anchor, format!("its {name} is unreadable: {e}"))),
        _ => Ok(None),
    }
}

fn rank_trace<S: EventSink>(
    anchor: &Path,
    layout: &Layout,
    defs: &overlap_otf2::Definitions,
    rank: u32,
    read: RankEvents,
    names: BTreeMap<u32, String>,
) -> Result<RankTrace<S>> {
    let def = &layout.ranks[&rank];
    let p = &def.props;
    let mut problems = Vec::new();
    if read.unbalanced > 0 {
        problems.push(ReadProblem {
            event_index: read.events.len() as u64,
            place: Place::Offset(0),
            reason: format!(
                "{} region(s) entered and never left, or left out of order: the archive ends \
                 inside them (a cut-short measurement); what they held is not used",
                read.unbalanced
            ),
        });
    }
    let syncs = match kept::<Vec<ClockSync>>(anchor, p, v::CLOCK_SYNCS)? {
        Some(s) => s,
        None => measured_syncs(layout, defs, def.group),
    };
    let threads = match kept(anchor, p, v::THREADS)? {
        Some(t) => t,
        None if layout.ours => BTreeMap::new(),
        None => names,
    };
    let event_count = read.events.len() as u64;
    let footer = if layout.ours {
        kept::<Footer>(anchor, p, v::FOOTER)?
    } else {
        // Another writer's archive is whole once its definitions are there.
        Some(Footer {
            events: event_count,
            threads: threads.len() as u32,
            buffer_stalls: 0,
        })
    };
    let call_counts = match kept::<CallCounts>(anchor, p, v::CALL_COUNTS)? {
        Some(c) => Some(c),
        None if !layout.ours => Some(CallCounts {
            unrecorded: read.unrecorded,
            unseen_completions: 0,
        }),
        None => None,
    };
    let mut events = S::default();
    events.extend(read.events);
    Ok(RankTrace {
        path: anchor.to_path_buf(),
        header: def.header.clone(),
        threads,
        syncs,
        sites: kept(anchor, p, v::SITES)?.unwrap_or(read.sites),
        events,
        footer,
        problems,
        in_flight: kept(anchor, p, v::IN_FLIGHT)?.unwrap_or_default(),
        notes: Vec::new(),
        damaged: matches!(p.get(v::DAMAGED), Some(Property::Text(t)) if t == "true"),
        call_counts,
        call_paths: kept(anchor, p, v::CALL_PATHS)?.unwrap_or_default(),
    })
}

/// The clock offsets the archive's writer measured for the rank's first thread, as
/// synchronisations: the first at initialisation, the last at finalisation (those in
/// between bend each time read, [`clocks`]), each with the largest standard deviation
/// of them all as its error bound. OTF2's offset is global minus local; overlap's is
/// local minus the reference.
fn measured_syncs(layout: &Layout, defs: &overlap_otf2::Definitions, group: u32) -> Vec<ClockSync> {
    let Some(offsets) = defs
        .locations
        .iter()
        .filter(|(_, d)| d.group == group)
        .find_map(|(l, _)| defs.clock_offsets.get(l))
    else {
        return Vec::new();
    };
    let epoch_ticks = defs.clock.global_offset;
    let error = layout
        .ns_signed(spread(offsets).round() as i64)
        .unsigned_abs();
    let sync = |o: &overlap_otf2::ClockOffset, phase| ClockSync {
        phase,
        local_ns: layout.ns(o.time, epoch_ticks),
        offset_ns: -layout.ns_signed(o.offset),
        error_ns: error,
        rtt_ns: 2 * error,
        rounds: 0,
    };
    let mut syncs = Vec::new();
    if let Some(first) = offsets.first() {
        syncs.push(sync(first, SyncPhase::Init));
    }
    if offsets.len() > 1 {
        if let Some(last) = offsets.last() {
            syncs.push(sync(last, SyncPhase::Final));
        }
    }
    syncs
}
