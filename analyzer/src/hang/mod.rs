//! A hung run, explained: from each rank's in-flight dump (the calls its threads were
//! inside when it was told to dump or found itself stalled, see
//! [`overlap_format::schema::InFlightDump`]) and what the trace recorded before it, says
//! where every rank is stuck and on whom it waits:
//!
//! - a blocked Send, Recv, Sendrecv or Probe waits for its peer;
//! - a Wait or Test call waits for the rank's requests posted before it and never
//!   completed in the trace (the dump gives only how many handles the call was given:
//!   the posts are found in the trace, as the requests without a completion);
//! - a collective on `MPI_COMM_WORLD` waits for the ranks not in a collective on it
//!   (the members of other communicators are not in the trace: said, not guessed).
//!
//! The rank-to-rank edges make the wait-for graph; a cycle in it is the deadlock
//! ([`graph`]). Ranks that others wait for but that are not blocked in MPI (computing,
//! finalized, or without a dump) are named too. [`crate::report::hang`] renders it for the report.
//!
//! It is made a part of whole ranks at a time ([`HangFold`]): each rank is judged on its
//! own dump, timeline and requests (`waits`), and only those judgements, a few calls a
//! rank, are kept until the parts are all in; the world collectives' missing members,
//! the graph and the verdict are then made of them.
//!
//! Times are ns since the run's start: a call's `start_ns` is when it was entered,
//! `blocked_ns` how long before the dump that was.

pub mod graph;
mod waits;

use std::collections::BTreeMap;

use serde::Serialize;

use overlap_format::schema::{DumpReason, InFlightCall, InFlightDump, MergedInfo};

use crate::model::{Timeline, Trace};
use crate::sites::SiteTable;

/// MPICH's `MPI_ANY_SOURCE` as the trace records it (world ranks; other negative peers
/// are `MPI_PROC_NULL` or unknown).
pub const ANY_SOURCE: i32 = -2;

/// What the dumps say about the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Some rank found itself stalled (no call completed for the hang timeout while
    /// inside one) and its trace ends inside that call.
    Hung,
    /// Ranks were told to dump (SIGUSR1) while inside calls that the trace never saw
    /// complete (the run was stopped), but none reported a stall.
    StoppedInCalls,
    /// Every call in flight at a dump completed afterwards: the run went on.
    WentOn,
}

/// Where a rank stood at its dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankState {
    /// Stalled inside a call that never completed in the trace.
    Stalled,
    /// Inside a call at a requested dump; the call never completed in the trace.
    InCall,
    /// Inside calls at its dump, all of which completed afterwards.
    WentOn,
    /// Dumped with no thread inside MPI: computing (or between calls).
    NotInMpi,
    /// No dump, and its trace ends with `MPI_Finalize`: it finished.
    Finalized,
    /// No dump, and its trace does not end with `MPI_Finalize`: it exited, was killed,
    /// or could not answer.
    NoDump,
    /// The rank has no trace file.
    NoTrace,
}

impl RankState {
    /// True for a rank stuck in MPI at the end of its trace.
    pub fn blocked(self) -> bool {
        matches!(self, RankState::Stalled | RankState::InCall)
    }
}

/// What a blocked call waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitedKind {
    /// A message to receive (Recv, Probe, Sendrecv's receive, a pending receive).
    Receive,
    /// A send to be received (Send, Ssend, Sendrecv's send, a pending send).
    Send,
    /// The other members of a collective.
    Collective,
    /// A one-sided operation's target.
    OneSided,
}

/// One thing a blocked call waits for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Waited {
    /// What.
    pub kind: WaitedKind,
    /// The rank it waits for; `None` with `any_source` (any rank), or when unknown.
    pub rank: Option<u32>,
    /// A receive from `MPI_ANY_SOURCE`.
    pub any_source: bool,
    /// The tag (negative: `MPI_ANY_TAG`).
    pub tag: Option<i32>,
    /// The communicator.
    pub comm: Option<u32>,
    /// A pending request (Wait and Test calls): its id on the rank.
    pub request: Option<u64>,
}

/// A call a rank was inside at its dump.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct BlockedCall {
    /// The thread.
    pub tid: u32,
    /// The MPI function.
    #[serde(deserialize_with = "crate::static_names::read")]
    pub call: crate::static_names::StaticName,
    /// Where it was called from (`file:line (function)` when symbolized).
    pub site: Option<String>,
    /// When it was entered, ns since the run's start.
    pub start_ns: u64,
    /// How long it had been inside at the dump, ns.
    pub blocked_ns: u64,
    /// True when the trace shows the call completing after the dump.
    pub completed_after_dump: bool,
    /// Wait and Test calls: the request handles the call was given.
    pub requests: Option<u32>,
    /// Rooted collectives: the root (world rank).
    pub root: Option<i32>,
    /// What it waits for.
    pub waits_for: Vec<Waited>,
}

/// One rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RankHang {
    /// The rank.
    pub rank: u32,
    /// Where it stood.
    pub state: RankState,
    /// Why it dumped (absent: no dump).
    pub dump_reason: Option<DumpReason>,
    /// When it dumped, ns since the run's start.
    pub dump_ns: Option<u64>,
    /// The calls its threads were inside.
    pub calls: Vec<BlockedCall>,
}

/// The hung-run part of the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HangReport {
    /// What the dumps say.
    pub verdict: Verdict,
    /// Every rank of the world, by rank.
    pub ranks: Vec<RankHang>,
    /// Rank-to-rank waits of the blocked ranks ([`graph`]).
    pub wait_for: Vec<graph::Edge>,
    /// A wait-for cycle, as ranks in order (the first again at the end); absent when
    /// there is none.
    pub cycle: Option<Vec<u32>>,
    /// Ranks blocked ones wait for that are not blocked in MPI themselves.
    pub waited_not_blocked: Vec<graph::NotBlocked>,
}

/// The report, when any rank dumped: [`HangFold`] given the whole run as one part.
pub fn analyze(trace: &Trace, sites: &SiteTable) -> Option<HangReport> {
    let mut fold = HangFold::new();
    fold.add(trace, sites);
    fold.finish(&trace.info, sites)
}

/// The report made a part of whole ranks at a time: each rank of a part is judged on
/// its own dump, timeline and requests (`waits::rank_hang`), and only that judgement
/// (where it stood, the few calls it was inside) is kept. What needs every rank (the
/// members a world collective waits for, the wait-for graph, the verdict) is made in
/// [`HangFold::finish`], as are the ranks no part held (no trace file).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct HangFold {
    /// The ranks of the parts added, judged, by rank.
    ranks: BTreeMap<u32, RankHang>,
    /// The highest rank of the parts added: the world reported reaches at least it.
    last_rank: Option<u32>,
}

impl HangFold {
    /// A fold of no part yet.
    pub fn new() -> HangFold {
        HangFold::default()
    }

    /// Judges the ranks of `part`, a part trace (its own ranks; the run's requests and
    /// info), parts coming in any order.
    pub fn add(&mut self, part: &Trace, sites: &SiteTable) {
        self.last_rank = self.last_rank.max(part.ranks.iter().map(|t| t.rank).max());
        // Without a dump there is no report: nothing to judge.
        if dump_of(&part.info, None).is_none() {
            return;
        }
        for t in &part.ranks {
            let dump = dump_of(&part.info, Some(t.rank));
            let judged = waits::rank_hang(Some(t), &part.requests, sites, t.rank, dump);
            self.ranks.insert(t.rank, judged);
        }
    }

    /// Adds the fold of other parts: what adding them here gives.
    pub fn merge(&mut self, other: HangFold) {
        self.last_rank = self.last_rank.max(other.last_rank);
        self.ranks.extend(other.ranks);
    }

    /// The report of the parts added, `info` and `sites` the run's; `None` when no rank
    /// dumped (or no part held a rank).
    pub fn finish(self, info: &MergedInfo, sites: &SiteTable) -> Option<HangReport> {
        dump_of(info, None)?;
        let world = info.world_size.max(1 + self.last_rank?);
        let mut judged = self.ranks;
        let mut ranks: Vec<RankHang> = (0..world)
            .map(|rank| {
                judged.remove(&rank).unwrap_or_else(|| {
                    // In no part: the rank has no trace file, at most a dump.
                    waits::rank_hang(None, &[], sites, rank, dump_of(info, Some(rank)))
                })
            })
            .collect();
        waits::collective_waits(&mut ranks);
        let g = graph::WaitFor::build(&ranks, world);
        let verdict = if ranks.iter().any(|r| r.state == RankState::Stalled) {
            Verdict::Hung
        } else if ranks.iter().any(|r| r.state.blocked()) {
            Verdict::StoppedInCalls
        } else {
            Verdict::WentOn
        };
        Some(HangReport {
            verdict,
            cycle: g.cycle(),
            waited_not_blocked: g.waited_not_blocked(&ranks),
            wait_for: g.edges,
            ranks,
        })
    }
}

/// The first in-flight dump of `info` of rank `rank` (of any rank with `None`).
fn dump_of(info: &MergedInfo, rank: Option<u32>) -> Option<&InFlightDump> {
    info.ranks
        .iter()
        .filter(|r| rank.is_none_or(|rank| r.rank == rank))
        .find_map(|r| r.in_flight.as_ref())
}

/// True when the rank's timeline `t` holds call `c` of a dump: it completed after all.
fn completed_in(t: &Timeline, c: &InFlightCall) -> bool {
    // The spans are sorted by start: only those within rounding of the call's start.
    let from = t
        .spans
        .partition_point(|s| s.start.0 < c.start_ns.saturating_sub(SAME_START_NS));
    t.spans[from..]
        .iter()
        .take_while(|s| s.start.0 <= c.start_ns.saturating_add(SAME_START_NS))
        .any(|s| s.tid == c.tid && s.op() == Some(c.call))
}

/// True when a call of the rank's `dump` never completed in its timeline `t` (`None`:
/// the rank has no timeline, so none of its dumped calls is known to have completed).
pub fn stopped_in(t: Option<&Timeline>, dump: &InFlightDump) -> bool {
    dump.calls
        .iter()
        .any(|c| !t.is_some_and(|t| completed_in(t, c)))
}

/// Where the recorded figures stop short of the run: the latest dump of a rank with a
/// call that never completed, and how many ranks had one. `None` when every dumped call
/// completed (or nothing was dumped). The time such calls spent blocked is not in any
/// recorded event, so not in the figures: the summary and the report say so.
pub fn stopped_in_calls(trace: &Trace) -> Option<(u64, usize)> {
    let dumps = trace.info.ranks.iter().filter_map(|r| {
        let dump = r.in_flight.as_ref()?;
        Some((dump.at_ns, stopped_in(trace.rank(r.rank), dump)))
    });
    latest_stopped(dumps)
}

/// [`stopped_in_calls`] from each dumped rank's (dump time, [`stopped_in`]).
pub fn latest_stopped(dumps: impl IntoIterator<Item = (u64, bool)>) -> Option<(u64, usize)> {
    let mut latest = None;
    let mut ranks = 0;
    for (at_ns, stopped) in dumps {
        if stopped {
            ranks += 1;
            latest = latest.max(Some(at_ns));
        }
    }
    Some((latest?, ranks))
}

/// Times on the wire are microseconds with three decimals: a recorded call and the same
/// call in a dump may differ by rounding.
const SAME_START_NS: u64 = 1_000;

#[cfg(test)]
pub(crate) mod tests;
