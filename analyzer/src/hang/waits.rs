//! What one rank's dump says: where the rank stood, the calls its threads were inside
//! and what each waits for, judged on that rank's own timeline and requests alone
//! ([`rank_hang`]), so that a part of the run can be judged without the others. Only a
//! collective on `MPI_COMM_WORLD` needs every rank's state: [`collective_waits`] names
//! its missing members once all ranks are judged.

use overlap_format::schema::{DumpReason, InFlightCall, InFlightDump, Op, RequestKind};

use super::{completed_in, BlockedCall, RankHang, RankState, Waited, WaitedKind, ANY_SOURCE};
use crate::model::{RequestLife, Timeline, What};
use crate::sites::SiteTable;

/// Where `rank` stood, from its `dump` (none: it never dumped) and its timeline `t`
/// (none: it has no trace file). `requests` are the run's, or at least the rank's.
pub(super) fn rank_hang(
    t: Option<&Timeline>,
    requests: &[RequestLife],
    sites: &SiteTable,
    rank: u32,
    dump: Option<&InFlightDump>,
) -> RankHang {
    let Some(dump) = dump else {
        let finalized = t.is_some_and(|t| {
            t.spans
                .iter()
                .any(|s| matches!(s.what, What::Call(Op::Finalize, _)))
        });
        let state = match (t, finalized) {
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
        .map(|c| blocked_call(t, requests, sites, rank, dump, c))
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

fn blocked_call(
    t: Option<&Timeline>,
    requests: &[RequestLife],
    sites: &SiteTable,
    rank: u32,
    dump: &InFlightDump,
    c: &InFlightCall,
) -> BlockedCall {
    // Without a timeline, no dumped call is known to have completed.
    let completed_after_dump = t.is_some_and(|t| completed_in(t, c));
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
        waits_for: waits_of(t, requests, rank, c),
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
fn waits_of(
    t: Option<&Timeline>,
    requests: &[RequestLife],
    rank: u32,
    c: &InFlightCall,
) -> Vec<Waited> {
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
        _ if c.requests.is_some() => {
            // A rank without a timeline has no posts to name.
            if let Some(t) = t {
                out.extend(pending(t, requests, rank, c));
            }
        }
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

/// The requests of `rank` (timeline `t`) posted before `c` started and never completed
/// nor freed in the trace.
fn pending(t: &Timeline, requests: &[RequestLife], rank: u32, c: &InFlightCall) -> Vec<Waited> {
    requests
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
            w.request = Some(l.request());
            Some(w)
        })
        .collect()
}

/// A blocked collective on `MPI_COMM_WORLD` waits for every rank not blocked in a
/// collective on it; on another communicator, for members the trace cannot list.
/// `ranks` are every rank of the world, by rank: this is the step that needs them all.
pub(super) fn collective_waits(ranks: &mut [RankHang]) {
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
