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

use overlap_format::schema::{CollectivePattern, Op};

use super::collective_ends::{CollectiveEnds, Member};
use super::wait_kind::{Candidate, WaitKind};

/// Every collective wait of the instances `ends`, handed to `keep`.
pub(crate) fn candidates(ends: &CollectiveEnds, keep: &mut impl FnMut(Candidate)) {
    for instance in &ends.blocking {
        waits(instance.op, instance.root, &instance.members, keep);
    }
    for requests in &ends.nonblocking {
        // The first member's that recorded it, of those whose post is a call.
        let calls = || requests.iter().filter_map(|r| r.call);
        let form = calls().find_map(|(op, _, _)| op.blocking_form());
        let root = calls().find_map(|(_, root, _)| root);
        let list: Vec<Member> = (requests.iter())
            .filter(|r| r.call.is_some())
            .filter_map(|r| r.member())
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
