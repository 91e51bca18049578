//! Whether a trace can be gated at all: every reason a `check` (or a baseline) refuses
//! to pass judgement, found before any metric is compared.
//!
//! Lost data reads as an improvement (fewer events, fewer findings), so a trace missing a
//! rank, cut short, or partly unreadable is never compared; neither is a trace of other
//! ranks, another program or other parameters than its baseline, unless the user says
//! so (`--allow-different`).

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use overlap_format::schema::MergedInfo;

use crate::load::Loaded;
use crate::merge::Unreadable;
pub use crate::model::RankWork;
use crate::model::{ReadProblem, Trace};

/// The work of every traced rank.
pub fn work(trace: &Trace) -> Vec<RankWork> {
    trace.ranks.iter().map(RankWork::of).collect()
}

/// Why a trace cannot be gated (or, with `--allow-different`, what differs).
#[derive(Clone, Debug, PartialEq)]
pub enum Problem {
    /// A per-rank file that could not be used at all.
    Unreadable {
        /// The file.
        file: String,
        /// Why.
        reason: String,
    },
    /// Events of a merged file that could not be used, or its end missing.
    Damaged {
        /// The file.
        file: String,
        /// Where.
        place: String,
        /// Why.
        reason: String,
    },
    /// A merged file that does not end where its events end (cut after the last event of
    /// every rank, so no rank is short of events, but the file is not whole).
    FileCut {
        /// The file.
        file: String,
    },
    /// A merged file written by an overlap too old to count each rank's events: whether a
    /// rank is complete cannot be known.
    CompletenessUnknown {
        /// The file.
        file: String,
    },
    /// A rank of `MPI_COMM_WORLD` with no event in the trace.
    MissingRank {
        /// The rank.
        rank: u32,
    },
    /// A rank whose data ends early.
    CutShort {
        /// The rank.
        rank: u32,
        /// The file its events came from.
        file: String,
        /// Why, as the reader said it.
        reason: String,
    },
    /// More ranks missing than are listed one by one.
    MoreMissing {
        /// How many more.
        count: u64,
    },
    /// Nothing at all was traced.
    NoEvents,
    /// A rank completed requests no recorded call posted: its transfers are missing.
    UnseenRequests(crate::unrecorded::UnseenRequests),
    /// Another program or other parameters than the baseline's.
    OtherProgram {
        /// The baseline's program and parameters.
        baseline: String,
        /// The trace's.
        current: String,
    },
    /// Another `MPI_COMM_WORLD` size.
    OtherWorld {
        /// The baseline's.
        baseline: u32,
        /// The trace's.
        current: u32,
    },
    /// Other ranks traced.
    OtherRanks {
        /// Traced in the baseline only.
        only_baseline: Vec<u32>,
        /// Traced now only.
        only_current: Vec<u32>,
    },
    /// Ranks whose MPI calls (polls aside) differ from the baseline's beyond the tolerance.
    OtherWork {
        /// `(rank, baseline calls, calls now)`.
        ranks: Vec<(u32, u64, u64)>,
        /// The tolerance, percent.
        tolerance_pct: f64,
    },
}

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unreadable { file, reason } => write!(f, "{file}: unreadable: {reason}"),
            Problem::Damaged {
                file,
                place,
                reason,
            } => write!(f, "{file}: {place}: {reason}"),
            Problem::FileCut { file } => write!(
                f,
                "{file}: the file is cut short (it ends before its closing bracket)"
            ),
            Problem::CompletenessUnknown { file } => write!(
                f,
                "{file}: merged by an older overlap that did not count each rank's events: \
                 whether every rank is complete cannot be known (merge the rank files again)"
            ),
            Problem::MissingRank { rank } => {
                write!(f, "rank {rank}: missing (no event of it in the trace)")
            }
            Problem::CutShort { rank, file, reason } => {
                write!(f, "rank {rank}: cut short ({file}): {reason}")
            }
            Problem::MoreMissing { count } => {
                write!(f, "{count} more rank(s) of MPI_COMM_WORLD missing")
            }
            Problem::NoEvents => write!(f, "the trace holds no event"),
            Problem::UnseenRequests(u) => write!(f, "{u}"),
            Problem::OtherProgram { baseline, current } => write!(
                f,
                "the baseline was made from {baseline}, this trace is {current}"
            ),
            Problem::OtherWorld { baseline, current } => write!(
                f,
                "the baseline's run had {baseline} rank(s) in MPI_COMM_WORLD, this one {current}"
            ),
            Problem::OtherRanks {
                only_baseline,
                only_current,
            } => {
                write!(f, "other ranks traced than in the baseline:")?;
                if !only_baseline.is_empty() {
                    write!(f, " only the baseline has rank(s) {}", list(only_baseline))?;
                }
                if !only_current.is_empty() {
                    let sep = if only_baseline.is_empty() { "" } else { ";" };
                    write!(
                        f,
                        "{sep} only this trace has rank(s) {}",
                        list(only_current)
                    )?;
                }
                Ok(())
            }
            Problem::OtherWork {
                ranks,
                tolerance_pct,
            } => {
                write!(
                    f,
                    "the traced work differs from the baseline's by more than {tolerance_pct}% \
                     (MPI calls, polls aside):"
                )?;
                for (i, (rank, b, c)) in ranks.iter().enumerate() {
                    let sep = if i == 0 { "" } else { "," };
                    write!(f, "{sep} rank {rank} {c} (baseline {b})")?;
                }
                Ok(())
            }
        }
    }
}

/// Everything that makes `loaded` an incomplete trace: unreadable rank files, damaged
/// events of a merged file, ranks missing or cut short, no events at all.
pub fn completeness(loaded: &Loaded) -> Vec<Problem> {
    let trace = &loaded.trace;
    let ends_early: Vec<u32> = (trace.ranks.iter())
        .filter(|t| !t.complete)
        .map(|t| t.rank)
        .collect();
    completeness_of(&Read {
        source: &trace.source,
        info: &trace.info,
        unreadable: &loaded.unreadable,
        problems: &loaded.problems,
        cut_short: loaded.cut_short,
        work: &work(trace),
        ends_early: &ends_early,
    })
}

/// What a run's completeness is judged on, however it was read: loaded whole
/// ([`completeness`]) or a part of its ranks at a time
/// (`crate::analysis::DirAnalysis`).
pub struct Read<'a> {
    /// The merged file or the directory of rank files.
    pub source: &'a Path,
    /// The run's description.
    pub info: &'a MergedInfo,
    /// Per-rank files of a directory that could not be used at all.
    pub unreadable: &'a [Unreadable],
    /// Events of a merged file that could not be used.
    pub problems: &'a [ReadProblem],
    /// True for a merged file that ends before the end of its events.
    pub cut_short: bool,
    /// The work of every rank read, in rank order.
    pub work: &'a [RankWork],
    /// The ranks read whose data ends early, in rank order.
    pub ends_early: &'a [u32],
}

/// [`completeness`] of a run read as `read` says.
pub fn completeness_of(read: &Read<'_>) -> Vec<Problem> {
    let info = read.info;
    let source = read.source.display().to_string();
    let mut out: Vec<Problem> = Vec::new();
    for u in read.unreadable {
        out.push(Problem::Unreadable {
            file: u.path.display().to_string(),
            reason: u.reason.clone(),
        });
    }
    for p in read.problems {
        out.push(Problem::Damaged {
            file: source.clone(),
            place: format!("event {} at {}", p.event_index, p.place),
            reason: p.reason.clone(),
        });
    }
    if read.cut_short && read.problems.is_empty() {
        out.push(Problem::FileCut {
            file: source.clone(),
        });
    }
    if !info.completeness_known() {
        out.push(Problem::CompletenessUnknown {
            file: source.clone(),
        });
    }
    // Missing: what the trace says, and any rank of the world with no event at all,
    // listed one by one up to LISTED (a world size may be huge), then counted.
    const LISTED: usize = 16;
    let with_events: BTreeSet<u32> = (read.work.iter())
        .filter(|w| w.events > 0)
        .map(|w| w.rank)
        .collect();
    let mut missing: BTreeSet<u32> = info.missing_ranks.iter().copied().collect();
    missing.extend(
        (0..info.world_size)
            .filter(|r| !with_events.contains(r))
            .take(LISTED + 1),
    );
    let present = (with_events.iter())
        .filter(|&&r| r < info.world_size)
        .count() as u64;
    let missing_count = (u64::from(info.world_size) - present).max(missing.len() as u64);
    out.extend(
        missing
            .iter()
            .take(LISTED)
            .map(|&rank| Problem::MissingRank { rank }),
    );
    let listed = missing.len().min(LISTED) as u64;
    if missing_count > listed {
        out.push(Problem::MoreMissing {
            count: missing_count - listed,
        });
    }
    let mut cut: BTreeSet<u32> = BTreeSet::new();
    for inc in &info.incomplete {
        if cut.insert(inc.rank) && !missing.contains(&inc.rank) {
            out.push(Problem::CutShort {
                rank: inc.rank,
                file: inc.file.clone(),
                reason: inc.reason.clone(),
            });
        }
    }
    for &rank in read.ends_early {
        if cut.insert(rank) && !missing.contains(&rank) {
            out.push(Problem::CutShort {
                rank,
                file: source.clone(),
                reason: "its data ends early".into(),
            });
        }
    }
    if with_events.is_empty() {
        out.push(Problem::NoEvents);
    }
    out.extend(
        crate::unrecorded::unseen_requests(info)
            .into_iter()
            .map(Problem::UnseenRequests),
    );
    out
}

/// What the trace covers, to be compared with a baseline's.
pub struct Coverage<'a> {
    /// Program and parameters, as text (`name {json params}`).
    pub program: String,
    /// `MPI_COMM_WORLD` size.
    pub world_size: u32,
    /// Per traced rank.
    pub work: &'a [RankWork],
}

/// The differences between what a baseline was made from and what a trace covers.
pub fn differences(base: &Coverage<'_>, now: &Coverage<'_>, tolerance_pct: f64) -> Vec<Problem> {
    let mut out = Vec::new();
    if base.program != now.program {
        out.push(Problem::OtherProgram {
            baseline: base.program.clone(),
            current: now.program.clone(),
        });
    }
    if base.world_size != now.world_size {
        out.push(Problem::OtherWorld {
            baseline: base.world_size,
            current: now.world_size,
        });
    }
    let ranks = |w: &[RankWork]| -> BTreeSet<u32> { w.iter().map(|r| r.rank).collect() };
    let (b, c) = (ranks(base.work), ranks(now.work));
    if b != c {
        out.push(Problem::OtherRanks {
            only_baseline: b.difference(&c).copied().collect(),
            only_current: c.difference(&b).copied().collect(),
        });
    }
    let mut changed = Vec::new();
    for bw in base.work {
        let Some(cw) = now.work.iter().find(|w| w.rank == bw.rank) else {
            continue;
        };
        let (x, y) = (bw.work_calls(), cw.work_calls());
        if x.abs_diff(y) as f64 > tolerance_pct / 100.0 * x as f64 {
            changed.push((bw.rank, x, y));
        }
    }
    if !changed.is_empty() {
        out.push(Problem::OtherWork {
            ranks: changed,
            tolerance_pct,
        });
    }
    out
}

/// A program and its parameters as one line of text.
pub fn program_text(
    program: &str,
    params: &std::collections::BTreeMap<String, overlap_format::schema::ParamValue>,
) -> String {
    let p = serde_json::to_string(params).unwrap_or_else(|e| format!("<{e}>"));
    format!("{program} {p}")
}
