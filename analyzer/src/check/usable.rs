//! Whether a trace can be gated at all: every reason a `check` (or a baseline) refuses
//! to pass judgement, found before any metric is compared.
//!
//! Lost data reads as an improvement (fewer events, fewer findings), so a trace missing a
//! rank, cut short, or partly unreadable is never compared; neither is a trace of other
//! ranks, another program or other parameters than its baseline, unless the user says
//! so (`--allow-different`).

use std::collections::BTreeSet;
use std::fmt;

use overlap_format::schema::Op;
use serde::{Deserialize, Serialize};

use crate::load::Loaded;
use crate::model::Trace;

/// The work of one traced rank, as a baseline records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankWork {
    /// The rank.
    pub rank: u32,
    /// Events traced (MPI calls and compute spans).
    pub events: u64,
    /// MPI calls traced.
    pub mpi_calls: u64,
    /// Of those, polls (`MPI_Test*`, `MPI_Iprobe`, `MPI_Win_test`): how many a program
    /// makes depends on timing, so they do not count as work.
    pub polls: u64,
}

impl RankWork {
    /// MPI calls that are not polls: the same for every run of a deterministic program.
    pub fn work_calls(&self) -> u64 {
        self.mpi_calls.saturating_sub(self.polls)
    }
}

/// True for calls that only ask whether something happened.
fn is_poll(op: Op) -> bool {
    op.is_test() || matches!(op, Op::Iprobe | Op::WinTest)
}

/// The work of every traced rank.
pub fn work(trace: &Trace) -> Vec<RankWork> {
    trace
        .ranks
        .iter()
        .map(|t| {
            let ops = t.spans.iter().filter_map(|s| s.op());
            let (calls, polls) = ops.fold((0, 0), |(c, p), op| (c + 1, p + u64::from(is_poll(op))));
            RankWork {
                rank: t.rank,
                events: t.spans.len() as u64,
                mpi_calls: calls,
                polls,
            }
        })
        .collect()
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
    let info = &trace.info;
    let source = trace.source.display().to_string();
    let mut out: Vec<Problem> = Vec::new();
    for u in &loaded.unreadable {
        out.push(Problem::Unreadable {
            file: u.path.display().to_string(),
            reason: u.reason.clone(),
        });
    }
    for p in &loaded.problems {
        out.push(Problem::Damaged {
            file: source.clone(),
            place: format!("event {} at {}", p.event_index, p.place),
            reason: p.reason.clone(),
        });
    }
    if loaded.cut_short && loaded.problems.is_empty() {
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
    let with_events = |r: u32| trace.rank(r).is_some_and(|t| !t.spans.is_empty());
    let mut missing: BTreeSet<u32> = info.missing_ranks.iter().copied().collect();
    missing.extend(
        (0..info.world_size)
            .filter(|&r| !with_events(r))
            .take(LISTED + 1),
    );
    let present = trace
        .ranks
        .iter()
        .filter(|t| t.rank < info.world_size && !t.spans.is_empty())
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
    for t in &trace.ranks {
        if !t.complete && cut.insert(t.rank) && !missing.contains(&t.rank) {
            out.push(Problem::CutShort {
                rank: t.rank,
                file: source.clone(),
                reason: "its data ends early".into(),
            });
        }
    }
    if trace.ranks.iter().all(|t| t.spans.is_empty()) {
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
