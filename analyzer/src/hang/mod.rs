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
//! Times are ns since the run's start: a call's `start_ns` is when it was entered,
//! `blocked_ns` how long before the dump that was.

pub mod graph;

use serde::Serialize;

use overlap_format::schema::{DumpReason, InFlightCall, InFlightDump, Op, RequestKind};

use crate::model::{Timeline, Trace, What};
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockedCall {
    /// The thread.
    pub tid: u32,
    /// The MPI function.
    pub call: &'static str,
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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

/// The report, when any rank dumped.
pub fn analyze(trace: &Trace, sites: &SiteTable) -> Option<HangReport> {
    let dumps: Vec<(u32, &InFlightDump)> = trace
        .info
        .ranks
        .iter()
        .filter_map(|r| Some((r.rank, r.in_flight.as_ref()?)))
        .collect();
    if dumps.is_empty() {
        return None;
    }
    let world = trace
        .info
        .world_size
        .max(1 + trace.ranks.iter().map(|t| t.rank).max()?);
    let mut ranks: Vec<RankHang> = (0..world)
        .map(|rank| rank_hang(trace, sites, rank, dumps.iter().find(|d| d.0 == rank)))
        .collect();
    collective_waits(trace, &mut ranks);
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

fn rank_hang(
    trace: &Trace,
    sites: &SiteTable,
    rank: u32,
    dump: Option<&(u32, &InFlightDump)>,
) -> RankHang {
    let timeline = trace.ranks.iter().find(|t| t.rank == rank);
    let Some(&(_, dump)) = dump else {
        let finalized = timeline.is_some_and(|t| {
            t.spans
                .iter()
                .any(|s| matches!(s.what, What::Call(Op::Finalize, _)))
        });
        let state = match (timeline, finalized) {
            (None, _) => RankState::NoTrace,
            (Some(_), true) => RankState::Finalized,
            (Some(_), false) => RankState::NoDump,
        };
        return RankHang {
            rank,
            state,
            dump_reason: None,
            dump_ns: None,
            calls: Vec::new(),
        };
    };
    let calls: Vec<BlockedCall> = dump
        .calls
        .iter()
        .map(|c| blocked_call(trace, sites, rank, dump, c))
        .collect();
    let state = if calls.is_empty() {
        RankState::NotInMpi
    } else if calls.iter().all(|c| c.completed_after_dump) {
        RankState::WentOn
    } else if dump.reason == DumpReason::Stalled {
        RankState::Stalled
    } else {
        RankState::InCall
    };
    RankHang {
        rank,
        state,
        dump_reason: Some(dump.reason),
        dump_ns: Some(dump.at_ns),
        calls,
    }
}

/// True when the call `c` of `rank`'s dump was recorded as completed afterwards.
fn completed_later(trace: &Trace, rank: u32, c: &InFlightCall) -> bool {
    trace.rank(rank).is_some_and(|t| completed_in(t, c))
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

fn blocked_call(
    trace: &Trace,
    sites: &SiteTable,
    rank: u32,
    dump: &InFlightDump,
    c: &InFlightCall,
) -> BlockedCall {
    let completed_after_dump = completed_later(trace, rank, c);
    let site = c.site.map(|raw| {
        sites
            .site(rank, raw)
            .map_or_else(|| format!("{raw:#x}"), |s| s.label.clone())
    });
    BlockedCall {
        tid: c.tid,
        call: c.call.mpi_name(),
        site,
        start_ns: c.start_ns,
        blocked_ns: dump.at_ns.saturating_sub(c.start_ns),
        completed_after_dump,
        requests: c.requests,
        root: c.root,
        waits_for: waits_of(trace, rank, c),
    }
}

/// A peer as a rank waited for (`None`: not a rank of the world).
fn peer_rank(peer: i32) -> Option<u32> {
    u32::try_from(peer).ok()
}

fn p2p(kind: WaitedKind, peer: i32, tag: Option<i32>, comm: Option<u32>) -> Waited {
    Waited {
        kind,
        rank: peer_rank(peer),
        any_source: peer == ANY_SOURCE,
        tag,
        comm,
        request: None,
    }
}

/// What the call `c` of `rank` waits for (collectives are filled in later, when every
/// rank's state is known).
fn waits_of(trace: &Trace, rank: u32, c: &InFlightCall) -> Vec<Waited> {
    use overlap_format::schema::OpClass;
    let mut out = Vec::new();
    let is_send = matches!(c.call, Op::Send | Op::Ssend | Op::Bsend | Op::Rsend);
    match c.call {
        Op::Sendrecv | Op::SendrecvReplace => {
            if let Some(p) = c.peer {
                out.push(p2p(WaitedKind::Send, p, c.tag, c.comm));
            }
            if let Some(p) = c.recv_peer {
                out.push(p2p(WaitedKind::Receive, p, c.recv_tag, c.comm));
            }
        }
        _ if c.requests.is_some() => out.extend(pending(trace, rank, c)),
        _ if c.peer.is_some() => {
            let kind = if is_send {
                WaitedKind::Send
            } else {
                WaitedKind::Receive
            };
            out.extend(c.peer.map(|p| p2p(kind, p, c.tag, c.comm)));
        }
        op if op.class() == OpClass::Collective => out.push(Waited {
            kind: WaitedKind::Collective,
            rank: None,
            any_source: false,
            tag: None,
            comm: c.comm,
            request: None,
        }),
        _ => {}
    }
    out.retain(|w| w.rank.is_some() || w.any_source || w.kind == WaitedKind::Collective);
    out
}

/// The rank's requests posted before `c` started and never completed nor freed in the
/// trace.
fn pending(trace: &Trace, rank: u32, c: &InFlightCall) -> Vec<Waited> {
    let Some(t) = trace.ranks.iter().find(|t| t.rank == rank) else {
        return Vec::new();
    };
    trace
        .requests
        .iter()
        .filter(|l| l.rank == rank && l.completion().is_none() && l.freed().is_none())
        .filter(|l| {
            t.spans
                .get(l.post())
                .is_some_and(|s| s.start.0 <= c.start_ns)
        })
        .filter_map(|l| {
            let (_, args) = t.call(l.args())?;
            let kind = match l.kind {
                RequestKind::Recv => WaitedKind::Receive,
                RequestKind::Send => WaitedKind::Send,
                RequestKind::Collective => WaitedKind::Collective,
                RequestKind::OneSided => WaitedKind::OneSided,
            };
            let mut w = match (kind, args.peer()) {
                (WaitedKind::Collective, _) | (_, None) => Waited {
                    kind,
                    rank: None,
                    any_source: false,
                    tag: None,
                    comm: Some(args.comm),
                    request: None,
                },
                (_, Some(p)) => p2p(kind, p, args.tag(), Some(args.comm)),
            };
            w.request = Some(l.request);
            Some(w)
        })
        .collect()
}

/// A blocked collective on `MPI_COMM_WORLD` waits for every rank not blocked in a
/// collective on it; on another communicator, for members the trace cannot list.
fn collective_waits(_trace: &Trace, ranks: &mut [RankHang]) {
    let in_world_collective: Vec<bool> = ranks
        .iter()
        .map(|r| {
            r.state.blocked()
                && r.calls.iter().any(|c| {
                    c.waits_for.iter().any(|w| {
                        w.kind == WaitedKind::Collective && w.comm == Some(0) && w.request.is_none()
                    })
                })
        })
        .collect();
    for r in ranks.iter_mut() {
        for c in &mut r.calls {
            let mut extra = Vec::new();
            for w in &c.waits_for {
                if w.kind == WaitedKind::Collective && w.comm == Some(0) && w.rank.is_none() {
                    extra.extend(
                        in_world_collective
                            .iter()
                            .enumerate()
                            .filter(|&(s, inside)| !inside && s as u32 != r.rank)
                            .map(|(s, _)| Waited {
                                rank: Some(s as u32),
                                ..w.clone()
                            }),
                    );
                }
            }
            c.waits_for.extend(extra);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
