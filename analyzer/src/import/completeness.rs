//! Whether a merged file holds every event it was written with, rank by rank.
//!
//! From format version 5 the merge writes how many events each rank has
//! ([`RankClock::events`]) and whether the rank's own file was complete. A reader that
//! finds fewer events holds a file cut short (a full disk, a copy interrupted): the rank
//! is listed in `incomplete` ("merged file cut short: 1234 of 5000 events"), or in
//! `missing_ranks` when none of its events is left. Older merged files have no counts:
//! the events are written rank after rank, so when such a file is cut, the last rank
//! with events is cut short and those after it are missing; otherwise its completeness
//! is unknown and said so.

use std::collections::BTreeMap;
use std::path::Path;

use overlap_format::schema::{IncompleteRank, MergedInfo, RankClock};

/// Completeness found by reading the file.
pub(crate) struct Read<'a> {
    /// The merged file.
    pub(crate) path: &'a Path,
    /// Complete events read, by rank.
    pub(crate) events: &'a BTreeMap<u32, u64>,
    /// Whether the event array was closed (the file's end is there).
    pub(crate) ended: bool,
}

/// Puts the ranks `read` shows incomplete or missing into `info`; returns what the
/// user should know that is not a rank's problem (a version without counts).
pub(crate) fn apply(info: &mut MergedInfo, read: &Read<'_>) -> Vec<String> {
    let mut notes = Vec::new();
    let file = read.path.display().to_string();
    let count = |rank: u32| read.events.get(&rank).copied().unwrap_or(0);
    let ranks: Vec<RankClock> = info.ranks.clone();
    if info.completeness_known() {
        for r in &ranks {
            let got = count(r.rank);
            if got == 0 && r.events > 0 {
                missing(info, r.rank);
            } else if got < r.events {
                let what = if read.ended {
                    "merged file damaged: only"
                } else {
                    "merged file cut short:"
                };
                incomplete(
                    info,
                    r.rank,
                    &file,
                    got,
                    format!("{what} {got} of {} events", r.events),
                );
            } else if got > r.events {
                incomplete(
                    info,
                    r.rank,
                    &file,
                    got,
                    format!(
                        "the merged file holds {got} events of this rank, but says it was \
                         written with {}: not the file overlap wrote",
                        r.events
                    ),
                );
            }
            if !r.complete && !info.incomplete.iter().any(|i| i.rank == r.rank) {
                incomplete(
                    info,
                    r.rank,
                    &file,
                    got,
                    "its rank file was incomplete when merged".into(),
                );
            }
        }
        if !read.ended && info.incomplete.is_empty() {
            notes.push(format!(
                "{file}: the file ends before its closing bracket, after every rank's events \
                 (message arrows and request slices, rebuilt from the calls, are not needed)"
            ));
        }
        return notes;
    }
    notes.push(format!(
        "{file}: a merged file of format version {} does not say how many events each rank \
         has: whether it is complete is unknown (merge the rank files again with this \
         overlap to know)",
        info.format_version
    ));
    if !read.ended {
        // Written rank after rank: the last rank with events was cut, the later ones lost.
        let last = ranks
            .iter()
            .rev()
            .find(|r| count(r.rank) > 0)
            .map(|r| r.rank);
        for r in &ranks {
            match last {
                Some(l) if r.rank == l => incomplete(
                    info,
                    r.rank,
                    &file,
                    count(r.rank),
                    "merged file cut short (no event counts in this version: how much is \
                     lost is unknown)"
                        .into(),
                ),
                Some(l) if r.rank < l => {}
                _ => missing(info, r.rank),
            }
        }
    }
    notes
}

fn missing(info: &mut MergedInfo, rank: u32) {
    info.incomplete.retain(|i| i.rank != rank);
    if !info.missing_ranks.contains(&rank) {
        info.missing_ranks.push(rank);
        info.missing_ranks.sort_unstable();
    }
}

fn incomplete(info: &mut MergedInfo, rank: u32, file: &str, read: u64, reason: String) {
    match info.incomplete.iter_mut().find(|i| i.rank == rank) {
        Some(known) => {
            known.reason = format!("{reason}; {}", known.reason);
            known.events_read = read;
        }
        None => {
            info.incomplete.push(IncompleteRank {
                rank,
                file: file.to_string(),
                reason,
                events_read: read,
            });
            info.incomplete.sort_by_key(|i| i.rank);
        }
    }
}
