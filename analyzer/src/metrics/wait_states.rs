//! Wait states, after Scalasca's pattern catalogue (`E` = enter, `X` = exit of a call):
//!
//! - Late Sender, charged to the receiver: `min(E(send), X(recv)) - E(recv)`, where
//!   `recv` is the blocking receive or the Wait* that completed the Irecv. A call that
//!   completed several receives counts its largest wait once.
//! - Late Receiver, charged to the sender: `E(recv post) - E(send completion)`, when the
//!   send's completion (blocking send, or the Wait* that completed the Isend) began
//!   before the receive was posted and ended after it: it had to wait for the receiver.
//!   A send completion that ended before the receive was posted went eagerly and
//!   waited for no one.
//! - Wait at Barrier and Wait at NxN (Allreduce and the other all-to-all collectives):
//!   `min(max_j E_j, X_self) - E_self` over the members of one collective instance (the
//!   k-th collective call of each rank on one communicator).
//!
//! - Early Scan (Scan, Exscan): rank i waits for the last of the ranks below it; Wait
//!   at Fence / Create / Free: the window calls' barrier-like waits; none for the
//!   neighbourhood collectives (the topology is not recorded). The collective patterns
//!   apply to non-blocking and persistent collectives too, charged to the call that
//!   waited for the request: [`super::collective_waits`].
//! - Late Post, Early Wait, Late Complete: [`super::one_sided`].
//!
//! Waits that overlap in time on one rank share that time ([`super::split`]): several
//! kinds on one call, or calls of several threads waiting at once. None counts twice,
//! so a rank's waits never add up to more than its wall time. Only positive waits count. A remote time after the local exit (clock error) is
//! clipped to the exit and the instance is flagged clock-suspect. An instance no longer
//! than the clock error bound of the ranks involved is indeterminate: kept apart, not
//! in the totals; so is one whose peer the scheduler held, on a host with more ranks
//! than CPUs ([`super::descheduled`]).
//!
//! ```text
//!  rank 0        |Isend|.............................
//!  rank 1  |Recv ------------- 5 -------|             Late Sender: E(send) - E(recv) = 5
//!          ^E(recv)=0    ^E(send)=5     ^X(recv)=8
//! ```

use std::collections::BTreeMap;

use crate::fxhash::FxHashMap;

use overlap_format::schema::Nanos;
use serde::Serialize;

use super::budget::share_of;
use super::cross_rank::CrossRank;
use super::descheduled::Descheduled;
use super::message_ends::MessageEnds;
use super::wait_kind::WaitKind;
use super::wait_kind::{Candidate, WaitInstance};
use super::{CallRef, Options};
use crate::model::{BySlot, EventRef, Message, MessagesByRank, PartMessages, Trace};
use rayon::prelude::*;

/// One kind's totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindSummary {
    /// Kind.
    pub kind: WaitKind,
    /// Total wait, ns (determinate instances).
    pub total_ns: u64,
    /// Instances (determinate).
    pub count: u64,
    /// Share of the ranks' summed wall time (0..1); `None` when that time is 0.
    pub fraction: Option<f64>,
    /// Instances within the clock error bound.
    pub indeterminate_count: u64,
    /// Their total, ns.
    pub indeterminate_ns: u64,
    /// Instances the scheduler explains (their peer descheduled), not counted above.
    pub descheduled_count: u64,
    /// Their total, ns.
    pub descheduled_ns: u64,
    /// Clock-suspect instances.
    pub clock_suspect: u64,
    /// The largest instances, largest first.
    pub worst: Vec<WaitInstance>,
}

/// Every kind's totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WaitStates {
    /// Sum of every determinate wait, ns.
    pub total_ns: u64,
    /// Share of the ranks' summed wall time (0..1); `None` (null in JSON) when that
    /// time is 0, as in a trace without any event: no share to state, not a share of 0.
    pub fraction: Option<f64>,
    /// Per kind, in [`WaitKind::ALL`] order.
    pub kinds: Vec<KindSummary>,
    /// Per rank: determinate wait charged to it, ns.
    pub per_rank_ns: BTreeMap<u32, u64>,
    /// The scheduler's waits on hosts with more ranks than CPUs, counted apart
    /// ([`super::descheduled`]).
    pub descheduled: Descheduled,
}

/// Every wait-state instance of the trace, sorted by rank and time.
pub fn instances(trace: &Trace) -> Vec<WaitInstance> {
    instances_with(trace, &CrossRank::of(trace))
}

/// [`instances`], what crosses ranks already found: each rank's part made on its own
/// (the ranks on rayon's threads) from its events and the columns. A rank's
/// point-to-point waits are its receives' Late Senders (the sends' entries read in the
/// column) and its sends' Late Receivers (the receives' posts likewise); the
/// collectives' and one-sided epochs' waits are found instance by instance, then put
/// by the rank they are charged to.
pub fn instances_with(trace: &Trace, cross: &CrossRank) -> Vec<WaitInstance> {
    let index = MessagesByRank::of(&trace.messages);
    instances_of(
        trace,
        &cross.messages,
        &shared_candidates(cross),
        index.all(),
    )
}

/// The collectives' and one-sided epochs' wait candidates of the run, found instance by
/// instance in the columns `cross`, sorted by the rank they are charged to (each rank's
/// in the order found).
pub(crate) fn shared_candidates(cross: &CrossRank) -> Vec<Candidate> {
    let mut shared: Vec<Candidate> = Vec::new();
    super::collective_waits::candidates(&cross.collectives, &mut |c| shared.push(c));
    shared.extend(cross.one_sided.iter().copied());
    // Stable: each rank's keep the order they were found in.
    shared.sort_by_key(|c| c.at.rank);
    shared
}

/// [`instances_with`] of the ranks of `trace` (the whole run, or a part of it: each
/// rank's instances are its own), the messages' ends being `ends`, the shared
/// candidates `shared` ([`shared_candidates`]), and the messages its ranks sent and
/// received among `part` (others are left out).
pub(crate) fn instances_of(
    trace: &Trace,
    ends: &MessageEnds,
    shared: &[Candidate],
    part: PartMessages,
) -> Vec<WaitInstance> {
    let messages = &trace.messages;
    let receiver = |m: u32| messages[m as usize].recv_post().rank;
    let received = BySlot::of_listed(trace, part.received, receiver);
    let sender = |m: u32| messages[m as usize].send().rank;
    let sent = BySlot::of_listed(trace, part.sent, sender);
    // Each rank's clock error bound, looked up once (`Trace::clock_error` scans the
    // ranks, and there is an instance per wait: 1 024 ranks made it quadratic).
    let errors: crate::fxhash::FxHashMap<u32, Nanos> = trace
        .ranks
        .iter()
        .map(|t| (t.rank, trace.clock_error(t.rank)))
        .collect();
    let error = |rank: u32| {
        errors
            .get(&rank)
            .copied()
            .unwrap_or_else(|| trace.clock_error(rank))
    };
    let per_rank: Vec<Vec<WaitInstance>> = (0..trace.ranks.len())
        .into_par_iter()
        .map(|slot| {
            let rank = trace.ranks[slot].rank;
            // The largest candidate of each (call, kind); of equals, the first found.
            let mut best: FxHashMap<(EventRef, WaitKind), Candidate> = FxHashMap::default();
            let mut keep = |c: Candidate| {
                let key = (c.at, c.kind);
                match best.get(&key) {
                    Some(b) if b.amount() >= c.amount() => {}
                    _ => {
                        best.insert(key, c);
                    }
                }
            };
            let message = |mi: &u32| (*mi as usize, &messages[*mi as usize]);
            let late_senders = (received.of_slot(slot).iter().map(message))
                .filter_map(|(mi, m)| late_sender(ends, mi, m));
            let late_receivers = (sent.of_slot(slot).iter().map(message))
                .filter_map(|(mi, m)| late_receiver(ends, mi, m));
            let first = shared.partition_point(|c| c.at.rank < rank);
            let last = shared.partition_point(|c| c.at.rank <= rank);
            (late_senders.chain(late_receivers))
                .chain(shared[first..last].iter().copied())
                .for_each(&mut keep);
            let mut found: Vec<Candidate> = best.into_values().collect();
            found.sort_by_key(|c| (c.at, c.kind));
            rank_instances(trace, &found, &error)
        })
        .collect();
    let mut out: Vec<WaitInstance> = per_rank.into_iter().flatten().collect();
    out.sort_by_key(|w| (w.rank, w.index, w.kind));
    out
}

/// The wait instances of one rank from its candidates `found`, sorted by (call,
/// kind): waits that overlap in time share it ([`super::split`]); each is
/// indeterminate within the two ranks' clock error bounds (`error`).
fn rank_instances(
    trace: &Trace,
    found: &[Candidate],
    error: &(impl Fn(u32) -> Nanos + Sync),
) -> Vec<WaitInstance> {
    let intervals: Vec<(Nanos, Nanos)> = found.iter().map(|c| (c.from, c.to)).collect();
    let amounts = super::split::split(&intervals);
    let mut out: Vec<WaitInstance> = Vec::with_capacity(found.len());
    for (c, amount) in found.iter().zip(amounts) {
        if amount == Nanos::ZERO {
            continue;
        }
        let Some(call) = CallRef::of(trace, c.at.rank, c.at.index) else {
            continue;
        };
        let bound = error(c.at.rank) + error(c.cause.rank);
        out.push(WaitInstance {
            kind: c.kind,
            rank: c.at.rank,
            index: c.at.index,
            call: call.call,
            start_ns: call.start_ns,
            peer: Some(c.cause.rank),
            peer_index: Some(c.cause.index),
            amount_ns: amount.0,
            error_bound_ns: bound.0,
            indeterminate: amount <= bound,
            descheduled: false,
            clock_suspect: c.suspect,
            split_from_ns: (amount != c.amount()).then_some(c.amount().0),
        });
    }
    out
}

/// The Late Sender candidate of message `mi` (`m`), charged to its receiver: the
/// receive's blocking completion waited for the send's entry, which the column of
/// ends holds.
fn late_sender(ends: &MessageEnds, mi: usize, m: &Message) -> Option<Candidate> {
    let remote = ends.send(mi).start()?;
    let recv = ends.recv_done(mi, m).filter(|d| d.blocks)?;
    let to = remote.min(recv.end);
    (to > recv.start).then(|| {
        Candidate::new(
            WaitKind::LateSender,
            recv.at,
            m.send(),
            recv.start,
            to,
            remote > recv.end,
        )
    })
}

/// The Late Receiver candidate of message `mi` (`m`), charged to its sender: the
/// send's blocking completion began before the receive was posted (the column's
/// entry) and ended after it.
fn late_receiver(ends: &MessageEnds, mi: usize, m: &Message) -> Option<Candidate> {
    let done = ends.send_done(mi, m)?;
    let posted = ends.recv(mi).start()?;
    (done.blocks && done.start < posted && done.end >= posted).then(|| {
        Candidate::new(
            WaitKind::LateReceiver,
            done.at,
            m.recv_post(),
            done.start,
            posted,
            false,
        )
    })
}

/// Totals per kind and per rank, with the worst instances; `descheduled` is what
/// [`super::descheduled`] found (its instances are flagged in `waits`).
pub fn summarize(
    trace: &Trace,
    waits: &[WaitInstance],
    descheduled: Descheduled,
    opts: &Options,
) -> WaitStates {
    let ranks: Vec<RankExtent> = trace.ranks.iter().map(|t| (t.rank, t.extent())).collect();
    summarize_of(&ranks, waits, descheduled, opts)
}

/// A rank and the part of the run it analyses ([`crate::model::Timeline::extent`]).
pub type RankExtent = (u32, Option<(Nanos, Nanos)>);

/// [`summarize`], the trace's ranks given by their extents.
pub fn summarize_of(
    ranks: &[RankExtent],
    waits: &[WaitInstance],
    descheduled: Descheduled,
    opts: &Options,
) -> WaitStates {
    let sum_wall: u64 = (ranks.iter())
        .filter_map(|r| r.1)
        .map(|(a, b)| b.saturating_sub(a).0)
        .sum();
    let mut per_rank: BTreeMap<u32, u64> = ranks.iter().map(|r| (r.0, 0)).collect();
    let mut kinds = Vec::new();
    for kind in WaitKind::ALL {
        let mut k = KindSummary {
            kind,
            total_ns: 0,
            count: 0,
            fraction: None,
            indeterminate_count: 0,
            indeterminate_ns: 0,
            descheduled_count: 0,
            descheduled_ns: 0,
            clock_suspect: 0,
            worst: Vec::new(),
        };
        let mut mine: Vec<&WaitInstance> = Vec::new();
        for w in waits.iter().filter(|w| w.kind == kind) {
            if w.clock_suspect {
                k.clock_suspect += 1;
            }
            if w.indeterminate {
                k.indeterminate_count += 1;
                k.indeterminate_ns += w.amount_ns;
                continue;
            }
            if w.descheduled {
                k.descheduled_count += 1;
                k.descheduled_ns += w.amount_ns;
                continue;
            }
            k.count += 1;
            k.total_ns += w.amount_ns;
            *per_rank.entry(w.rank).or_default() += w.amount_ns;
            mine.push(w);
        }
        mine.sort_by_key(|w| (std::cmp::Reverse(w.amount_ns), w.rank, w.index));
        k.worst = mine.into_iter().take(opts.worst).cloned().collect();
        k.fraction = share_of(k.total_ns, sum_wall);
        kinds.push(k);
    }
    let total: u64 = kinds.iter().map(|k| k.total_ns).sum();
    WaitStates {
        total_ns: total,
        fraction: share_of(total, sum_wall),
        kinds,
        per_rank_ns: per_rank,
        descheduled,
    }
}
