//! A window of a run for analysis: `overlap analyze` (and `tui`, `diff`, `check`,
//! `baseline`) `--from T --to T`, `--region NAME[#K]` (a region the program marked with
//! `MPI_Pcontrol`) and `--ranks LIST` analyse a part of the run, as a cut of the loaded
//! [`Trace`] that every analysis then takes as it would a whole run.
//!
//! What the cut keeps, and what it marks:
//!
//! - ranks left out are absent; each rank kept keeps the calls and compute spans that
//!   overlap the window, those that cross an edge cut to it and listed
//!   ([`Cut::clipped`]); its analysed part ([`Timeline::extent`]) is its part of the
//!   run within the window, and its compute is the run's compute there (a gap that
//!   began before the window is compute in it too);
//! - a message or request with every end in the window and on ranks kept is kept; one
//!   with an end outside it or on a rank left out crosses the edge: it is not in the
//!   cut, it is counted by edge ([`WindowReport::messages`], `requests`), and the calls
//!   in the window that waited on it are said ([`WindowReport::unknown_waits`]): their
//!   wait states, and the requests' overlap, cannot be computed in the window and are
//!   unknown, not 0;
//! - a collective instance with a member in the window keeps every member on the ranks
//!   kept: a member call outside the window becomes an instant at the edge it lies
//!   beyond ([`WindowReport::edge_marks`]), so that instances still pair up across ranks
//!   (the k-th collective call of each rank is one instance) and the waits in the
//!   window for a member outside it end at the edge; a non-blocking collective instance
//!   with a member request crossing the edge crosses it whole;
//! - the `MPI_*_init` of a persistent request started in the window, made before it,
//!   stays as an instant at its start: its arguments describe the request (a halo
//!   exchange that inits its requests once and starts them every step keeps them).
//!
//! ```text
//!  run      |--[Isend a]--[Wait]-----[Barrier]------|--[Isend b]---[Wait]--|
//!  window              from |=============================| to
//!  cut                      |[Wait]---[Barrier]------|--[Is]  (cut at its end)
//!                            ^ completes a: a crosses the edge, this Wait's wait is unknown
//! ```

mod links;
mod rank;
#[cfg(test)]
mod tests;

use overlap_format::schema::Nanos;
use serde::{Deserialize, Serialize};

use crate::model::{EventRef, Timeline, Trace};
use crate::regions::{RegionChoice, RunRegions};

/// The part of a run to analyse, as asked (and as a baseline keeps it): times, or a
/// region, and ranks. The default is the whole run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    /// From this time on, ns from the run's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_ns: Option<u64>,
    /// Up to this time, ns from the run's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_ns: Option<u64>,
    /// Instead of times: the part of the run a region covers, `NAME` (every instance)
    /// or `NAME#K` (the K-th), as [`RegionChoice`] reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Only these ranks (sorted, each once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<Vec<u32>>,
}

impl Choice {
    /// True when it asks for the whole run.
    pub fn is_all(&self) -> bool {
        *self == Choice::default()
    }

    /// The choice in words: `150 ms to 300 ms, ranks 0-3`, `region solve#2`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = &self.region {
            parts.push(format!("region {r}"));
        }
        match (self.from_ns, self.to_ns) {
            (None, None) => {}
            (from, to) => parts.push(format!(
                "{} to {}",
                from.map_or("the start".into(), crate::units::duration),
                to.map_or("the end".into(), crate::units::duration)
            )),
        }
        if let Some(r) = &self.ranks {
            parts.push(format!("ranks {}", rank_ranges(r)));
        }
        if parts.is_empty() {
            "the whole run".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Why a window cannot be cut.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    /// It ends before it starts, or where it starts.
    #[error("the window ends ({to} ns) before or where it starts ({from} ns)")]
    Empty {
        /// Its start, ns.
        from: u64,
        /// Its end, ns.
        to: u64,
    },
    /// It starts after the run's last event.
    #[error("the window starts at {from} ns, after the run's last event ({end} ns)")]
    AfterTheRun {
        /// Its start, ns.
        from: u64,
        /// The run's last end, ns.
        end: u64,
    },
    /// The region cannot be found or has no such instance (the message lists the
    /// run's regions).
    #[error("--region {text}: {why}")]
    Region {
        /// The region asked for.
        text: String,
        /// Why it cannot be used.
        why: String,
    },
    /// None of the ranks asked for is in the trace.
    #[error("no rank of {asked} is in the trace (it has ranks {have})")]
    NoRank {
        /// The ranks asked for.
        asked: String,
        /// The ranks it has.
        have: String,
    },
}

/// How many messages or requests cross the window's edges, and where their other end is
/// (one may count under two).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Crossing {
    /// Those crossing an edge.
    pub count: u64,
    /// ... with an end before the window.
    pub before: u64,
    /// ... with an end after it.
    pub after: u64,
    /// ... with an end on a rank left out.
    pub rank_left_out: u64,
}

/// The calls in the window that waited on a message crossing its edge: their wait
/// states cannot be told in the window (they may be larger than counted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UnknownWaits {
    /// Calls.
    pub calls: u64,
    /// Their time in the window, ns.
    pub ns: u64,
}

/// Which window was analysed, and what crosses its edges: the report's `window` (JSON)
/// and its first lines (text).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WindowReport {
    /// As asked.
    pub asked: Choice,
    /// Its start, ns from the run's start.
    pub from_ns: u64,
    /// Its end (the run's last event at most).
    pub to_ns: u64,
    /// Ranks analysed.
    pub ranks: u32,
    /// Ranks of the trace left out.
    pub ranks_left_out: u32,
    /// The ranks' analysed time in it (each rank's part of the run from the end of
    /// MPI_Init to the start of MPI_Finalize, within the window), summed, ns: 0 for a
    /// window that lies in MPI_Init or MPI_Finalize, where nothing is analysed.
    pub rank_time_ns: u64,
    /// For a region: the ranks of the run that never entered the chosen instance(s)
    /// (they are analysed in its time all the same).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub never_entered: Vec<u32>,
    /// Calls cut at an edge.
    pub calls_cut: u64,
    /// Compute spans cut at an edge.
    pub compute_cut: u64,
    /// Calls outside the window kept as an instant at its edge: collective calls, so
    /// that their instances pair up, and persistent requests' inits, which describe
    /// requests started in it.
    pub edge_marks: u64,
    /// Collective instances in the window with members on ranks left out: their waits
    /// count only the members kept (a member left out may have come later).
    pub collectives_partial: u64,
    /// Messages crossing an edge (not in the cut).
    pub messages: Crossing,
    /// Requests crossing an edge (not in the cut): their overlap figures are unknown.
    pub requests: Crossing,
    /// Calls whose wait states are unknown, waiting on messages crossing an edge.
    pub unknown_waits: UnknownWaits,
}

/// Which edge of the window a span was cut at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Edge {
    /// It started before the window.
    Start,
    /// It ended after it.
    End,
    /// Both.
    Both,
    /// It lies wholly outside: a collective call or a persistent init kept as an
    /// instant at the edge.
    Outside,
}

/// A span of the cut that is not whole: where it is in the cut, how, and its times in
/// the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clipped {
    /// The span in the cut trace.
    pub at: EventRef,
    /// Which edge.
    pub edge: Edge,
    /// Its start in the run.
    pub start: Nanos,
    /// Its end in the run.
    pub end: Nanos,
}

/// A run cut to a window.
#[derive(Clone, Debug)]
pub struct Cut {
    /// The part of the run analysed.
    pub trace: Trace,
    /// Which window, and what crosses its edges.
    pub report: WindowReport,
    /// Every span cut at an edge, by rank and index.
    pub clipped: Vec<Clipped>,
}

/// The bounds a choice stands for in one run: times and ranks kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub(crate) from: Nanos,
    pub(crate) to: Nanos,
    /// Sorted; `None`: all.
    pub(crate) ranks: Option<Vec<u32>>,
}

impl Bounds {
    pub(crate) fn has_rank(&self, r: u32) -> bool {
        self.ranks
            .as_ref()
            .is_none_or(|list| list.binary_search(&r).is_ok())
    }
}

/// The run's last end.
fn run_end(trace: &Trace) -> Nanos {
    (trace.ranks.iter())
        .filter_map(|t| t.spans.iter().map(|s| s.end).max())
        .max()
        .unwrap_or_default()
}

/// `trace` cut to `choice`; the whole trace, uncut, when it asks for all of it.
pub fn cut(trace: Trace, choice: &Choice) -> Result<Cut, WindowError> {
    let end = run_end(&trace);
    let mut never_entered = Vec::new();
    let (from, to) = match &choice.region {
        Some(text) => {
            let region = |why: String| WindowError::Region {
                text: text.clone(),
                why,
            };
            let asked = RegionChoice::parse(text).map_err(region)?;
            let w = RunRegions::of_trace(&trace)
                .window(&asked)
                .map_err(region)?;
            never_entered = w.never_entered;
            (w.from, w.to)
        }
        None => (
            Nanos(choice.from_ns.unwrap_or(0)),
            Nanos(choice.to_ns.unwrap_or(u64::MAX)),
        ),
    };
    let to = to.min(end.max(from));
    if choice.to_ns.is_some_and(|t| t <= from.0) {
        return Err(WindowError::Empty {
            from: from.0,
            to: to.0,
        });
    }
    if from > end || (from == end && choice.from_ns.is_some()) {
        return Err(WindowError::AfterTheRun {
            from: from.0,
            end: end.0,
        });
    }
    let ranks = match &choice.ranks {
        None => None,
        Some(asked) => {
            let kept: Vec<u32> = asked
                .iter()
                .copied()
                .filter(|r| trace.slot(*r).is_some())
                .collect();
            if kept.is_empty() {
                let have: Vec<u32> = trace.ranks.iter().map(|t| t.rank).collect();
                return Err(WindowError::NoRank {
                    asked: rank_ranges(asked),
                    have: rank_ranges(&have),
                });
            }
            Some(kept)
        }
    };
    let bounds = Bounds { from, to, ranks };
    let all_ranks = trace.ranks.len() as u32;
    let mut out = links::cut_trace(trace, &bounds);
    out.report.asked = choice.clone();
    out.report.from_ns = from.0;
    out.report.to_ns = to.0;
    out.report.ranks = out.trace.ranks.len() as u32;
    out.report.ranks_left_out = all_ranks - out.report.ranks;
    out.report.rank_time_ns = (out.trace.ranks.iter())
        .filter_map(|t| t.extent())
        .map(|(a, b)| b.0.saturating_sub(a.0))
        .sum();
    out.report.never_entered = never_entered;
    Ok(out)
}

/// `trace` as a [`Cut`] of itself: nothing cut, for the whole run.
pub fn whole(trace: Trace) -> Cut {
    let report = WindowReport {
        to_ns: run_end(&trace).0,
        ranks: trace.ranks.len() as u32,
        rank_time_ns: (trace.ranks.iter())
            .filter_map(|t| t.extent())
            .map(|(a, b)| b.0.saturating_sub(a.0))
            .sum(),
        ..WindowReport::default()
    };
    Cut {
        trace,
        report,
        clipped: Vec::new(),
    }
}

/// The most ranks one range of a rank list may name.
const MAX_RANGE: u32 = 1 << 24;

/// A list of ranks and ranges, `0-15,64` (what `--ranks` and the terminal UI's filter
/// take), in the order given; [`rank_ranges`] writes one.
pub fn parse_rank_list(text: &str) -> Result<Vec<u32>, String> {
    let mut ranks = Vec::new();
    for part in text.split(',').map(str::trim) {
        let rank = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| format!("{t:?} is not a rank (a whole number, 0 or more)"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (rank(a)?, rank(b)?);
                if b < a || b - a >= MAX_RANGE {
                    return Err(format!("{part:?} is not a range of ranks (low-high)"));
                }
                ranks.extend(a..=b);
            }
            None => ranks.push(rank(part)?),
        }
    }
    Ok(ranks)
}

/// Sorted ranks as ranges: `0-3,8,10-11`.
pub fn rank_ranges(ranks: &[u32]) -> String {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", sorted[i], sorted[j])
        } else {
            sorted[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The part of a rank's run a window keeps: its extent in the run within the window.
pub(crate) fn rank_window(t: &Timeline, b: &Bounds) -> (Nanos, Nanos) {
    let (lo, hi) = t.extent().unwrap_or((b.from, b.from));
    let start = lo.max(b.from).min(b.to);
    (start, hi.min(b.to).max(start))
}
