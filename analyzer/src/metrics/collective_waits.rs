//! The collective wait states (Wait at Barrier, Wait at NxN, Late Broadcast, Early
//! Reduce, Early Scan, Wait at Fence / Create / Free), for blocking collectives and for
//! non-blocking and persistent ones alike.
//!
//! A member of an instance enters when it calls the blocking collective, or when it
//! posts (or starts) its request; it waits in the blocking call itself, or in the call
//! that completed its request when that call blocks (a Test never waits). The formulas
//! are Scalasca's, with `E` the member's entry and the waiting call `[S, X]`:
//! `min(E_last, X) - S` when positive. For a blocking collective `S` is its own entry.
//!
//! ```text
//!  rank 0  ........ compute ........|Ibarrier|Wait|    enters (posts) at 6
//!  rank 1  |Ibarrier|Wait --------------------|        its Wait runs from 1 to 7
//!          0        1               6
//!  Wait at Barrier on rank 1, charged to its Wait: min(6, 7) - 1 = 5
//! ```

use overlap_format::schema::{CollectivePattern, Nanos, Op, RequestKind};

use super::wait_kind::{Candidate, WaitKind};
use crate::model::{EventRef, Trace};

/// One member of a collective instance.
#[derive(Clone, Copy, Debug)]
struct Member {
    /// Its rank.
    rank: u32,
    /// The call it joined with: the blocking call, or its post or start.
    call: EventRef,
    /// When it joined: entry into that call.
    entered: Nanos,
    /// The call that waited and its span, when one did.
    waited: Option<(EventRef, Nanos, Nanos)>,
}

/// Every collective wait of `trace`, handed to `keep`.
pub(crate) fn candidates(trace: &Trace, keep: &mut impl FnMut(Candidate)) {
    for members in &super::collectives::instances(trace).members {
        let Some(&first) = members.first() else {
            continue;
        };
        let Some((op, call)) = trace.rank(first.rank).and_then(|t| t.call(first.index)) else {
            continue;
        };
        let list: Vec<Member> = members
            .iter()
            .filter_map(|r| {
                let s = trace.span(*r)?;
                Some(Member {
                    rank: r.rank,
                    call: *r,
                    entered: s.start,
                    waited: Some((*r, s.start, s.end)),
                })
            })
            .collect();
        waits(op, call.root(), &list, keep);
    }
    for requests in &super::collectives::nonblocking(trace) {
        let mut form = None;
        let mut root = None;
        let list: Vec<Member> = requests
            .iter()
            .filter_map(|&i| {
                let r = trace.requests.get(i)?;
                debug_assert_eq!(r.kind, RequestKind::Collective);
                let t = trace.rank(r.rank)?;
                let (op, call) = t.call(r.args())?;
                form = form.or(op.blocking_form());
                root = root.or(call.root());
                let entered = t.spans.get(r.post())?.start;
                let waited = r.completion().and_then(|c| {
                    let s = t.spans.get(c)?;
                    s.op().filter(|op| op.blocks())?;
                    Some((
                        EventRef {
                            rank: r.rank,
                            index: c,
                        },
                        s.start,
                        s.end,
                    ))
                });
                Some(Member {
                    rank: r.rank,
                    call: EventRef {
                        rank: r.rank,
                        index: r.post(),
                    },
                    entered,
                    waited,
                })
            })
            .collect();
        if let Some(op) = form {
            waits(op, root, &list, keep);
        }
    }
}

/// The waits of one instance of collective `op` (its blocking form), members in rank
/// order, `root` the world rank of a rooted collective's root.
fn waits(op: Op, root: Option<i32>, members: &[Member], keep: &mut impl FnMut(Candidate)) {
    if members.len() < 2 {
        return;
    }
    let Some(last) = members.iter().max_by_key(|m| (m.entered, m.rank)) else {
        return;
    };
    let root = root.and_then(|root| {
        members
            .iter()
            .find(|m| i64::from(m.rank) == i64::from(root))
    });
    // `m` waited for `peer` to enter.
    let mut wait = |kind: WaitKind, m: &Member, peer: &Member| {
        if let Some((at, start, end)) = m.waited {
            let to = peer.entered.min(end);
            if to > start {
                keep(Candidate::new(
                    kind,
                    at,
                    peer.call,
                    start,
                    to,
                    peer.entered > end,
                ));
            }
        }
    };
    match (op.collective_pattern(), root) {
        // Who waits for whom depends on the topology, which is not recorded.
        (Some(CollectivePattern::Neighborhood), _) => {}
        (Some(CollectivePattern::Prefix), _) => {
            // Early Scan: rank i waits for the last of the ranks below it.
            let mut latest: Option<&Member> = None;
            for m in members {
                if let Some(peer) = latest {
                    wait(WaitKind::EarlyScan, m, peer);
                }
                if latest.is_none_or(|l| m.entered >= l.entered) {
                    latest = Some(m);
                }
            }
        }
        (Some(CollectivePattern::OneToAll), Some(root)) => {
            // Late Broadcast: a rank that waits before the root entered waits for it.
            for m in members.iter().filter(|m| m.rank != root.rank) {
                wait(WaitKind::LateBroadcast, m, root);
            }
        }
        (Some(CollectivePattern::AllToOne), Some(root)) => {
            // Early Reduce: the root waits for the last of the others to enter.
            let others = members.iter().filter(|m| m.rank != root.rank);
            if let Some(latest) = others.max_by_key(|m| (m.entered, m.rank)) {
                wait(WaitKind::EarlyReduce, root, latest);
            }
        }
        (pattern, _) => {
            // Every member waits for the last to arrive (also the rooted ones whose
            // root was not recorded).
            let kind = match (op, pattern) {
                (Op::WinFence, _) => WaitKind::WaitAtFence,
                (Op::WinFree, _) => WaitKind::WaitAtFree,
                (
                    Op::WinCreate | Op::WinAllocate | Op::WinAllocateShared | Op::WinCreateDynamic,
                    _,
                ) => WaitKind::WaitAtCreate,
                (_, Some(CollectivePattern::Barrier)) => WaitKind::WaitAtBarrier,
                _ => WaitKind::WaitAtNxN,
            };
            for m in members {
                wait(kind, m, last);
            }
        }
    }
}
