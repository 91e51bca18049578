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
use crate::model::{BySlot, ClockErrors, EventRef, Message, MessagesByRank, PartMessages, Trace};
use rayon::prelude::*;

/// One kind's totals.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
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
    // Each rank's clock error bound (an instance per wait).
    let errors = ClockErrors::of(&trace.info);
    let error = |rank: u32| errors.of_rank(rank);
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
    let mut fold = SummaryFold::new(opts);
    fold.add(waits);
    fold.finish(ranks, descheduled)
}

/// The order of a kind's worst instances: largest first; of equals, by rank and call
/// (each kind has one instance per call), so that the worst are those of one sort of
/// every instance.
fn worst_first(a: &WaitInstance, b: &WaitInstance) -> std::cmp::Ordering {
    let key = |w: &WaitInstance| (std::cmp::Reverse(w.amount_ns), w.rank, w.index);
    key(a).cmp(&key(b))
}

/// [`summarize_of`] of waits given a part at a time (the parts in rank order, each
/// part's instances in their order): of the instances, only each kind's worst so far
/// are held.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct SummaryFold {
    /// How many of each kind's worst are listed.
    worst: usize,
    /// Each kind's totals and worst instances so far, as [`WaitKind::ALL`].
    kinds: Vec<KindSummary>,
    /// Each rank's determinate waits so far, ns.
    per_rank: BTreeMap<u32, u64>,
}

impl SummaryFold {
    /// The summary of no wait yet, listing the worst `opts.worst` of each kind.
    pub fn new(opts: &Options) -> SummaryFold {
        let kind = |kind| KindSummary {
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
        SummaryFold {
            worst: opts.worst,
            kinds: WaitKind::ALL.into_iter().map(kind).collect(),
            per_rank: BTreeMap::new(),
        }
    }

    /// Adds the next part's instances, `waits` (flagged as descheduled already).
    pub fn add(&mut self, waits: &[WaitInstance]) {
        let order = worst_first;
        for k in &mut self.kinds {
            let mut mine: Vec<&WaitInstance> = Vec::new();
            for w in waits.iter().filter(|w| w.kind == k.kind) {
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
                *self.per_rank.entry(w.rank).or_default() += w.amount_ns;
                mine.push(w);
            }
            let kept = std::mem::take(&mut k.worst);
            let new = mine.into_iter();
            k.worst =
                super::worst::smallest_kept(kept, new, self.worst, |w| w, order, |w| w.clone());
        }
    }

    /// Adds the fold of the parts after this one's: what folding them into this one
    /// gives.
    pub fn merge(&mut self, later: SummaryFold) {
        for (k, l) in self.kinds.iter_mut().zip(later.kinds) {
            k.clock_suspect += l.clock_suspect;
            k.indeterminate_count += l.indeterminate_count;
            k.indeterminate_ns += l.indeterminate_ns;
            k.descheduled_count += l.descheduled_count;
            k.descheduled_ns += l.descheduled_ns;
            k.count += l.count;
            k.total_ns += l.total_ns;
            let kept = std::mem::take(&mut k.worst);
            k.worst = super::worst::merged(kept, l.worst, self.worst, worst_first);
        }
        for (rank, ns) in later.per_rank {
            *self.per_rank.entry(rank).or_default() += ns;
        }
    }

    /// The summary of every part added, the ranks being `ranks` (by their extents) and
    /// `descheduled` what [`super::descheduled`] found.
    pub fn finish(self, ranks: &[RankExtent], descheduled: Descheduled) -> WaitStates {
        let sum_wall: u64 = (ranks.iter())
            .filter_map(|r| r.1)
            .map(|(a, b)| b.saturating_sub(a).0)
            .sum();
        let mut per_rank = self.per_rank;
        for r in ranks {
            per_rank.entry(r.0).or_insert(0);
        }
        let mut kinds = self.kinds;
        for k in &mut kinds {
            k.fraction = share_of(k.total_ns, sum_wall);
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
}

#[cfg(test)]
mod tests {
    use super::{summarize_of, Descheduled, Options, RankExtent, SummaryFold};
    use crate::metrics::wait_kind::{WaitInstance, WaitKind};
    use overlap_format::schema::Nanos;

    /// 600 instances over four ranks and three kinds, with amounts that tie often
    /// (seven values) and every seventh indeterminate, eleventh descheduled, thirteenth
    /// clock-suspect: enough of each kind that the worst are chosen several times over.
    fn waits() -> Vec<WaitInstance> {
        let kinds = [
            WaitKind::LateSender,
            WaitKind::WaitAtNxN,
            WaitKind::LateReceiver,
        ];
        (0..600)
            .map(|i: usize| WaitInstance {
                kind: kinds[i % 3],
                rank: (i / 150) as u32,
                index: i,
                call: "MPI_Wait",
                start_ns: i as u64 * 10,
                peer: Some(((i / 150 + 1) % 4) as u32),
                peer_index: Some(i / 2),
                amount_ns: 100 * (i * 5 % 7) as u64,
                error_bound_ns: 0,
                indeterminate: i.is_multiple_of(7),
                descheduled: i.is_multiple_of(11),
                clock_suspect: i.is_multiple_of(13),
                split_from_ns: None,
            })
            .collect()
    }

    /// The summary of the instances given a part at a time (parts of 1, 7, 150 and all)
    /// is the summary of them all at once, worst lists included: totals, counts apart,
    /// each rank's total (a rank without a counted wait at 0) and the shares.
    #[test]
    fn the_summary_of_the_parts_is_the_summary_of_the_whole() {
        let waits = waits();
        let ranks: Vec<RankExtent> = (0..5)
            .map(|r| (r, Some((Nanos(0), Nanos(1_000_000)))))
            .collect();
        let descheduled = Descheduled {
            calls: 3,
            total_ns: 30,
            instances: 2,
            instances_ns: 20,
        };
        for worst in [0, 1, 10, 600] {
            let opts = Options {
                worst,
                ..Options::default()
            };
            let whole = summarize_of(&ranks, &waits, descheduled.clone(), &opts);
            assert_eq!(whole.per_rank_ns.get(&4), Some(&0));
            let listed: usize = whole.kinds.iter().map(|k| k.worst.len()).sum();
            assert_eq!(listed > 0, worst > 0);
            for part in [1, 7, 150, 600] {
                let mut fold = SummaryFold::new(&opts);
                for chunk in waits.chunks(part) {
                    fold.add(chunk);
                }
                let folded = fold.finish(&ranks, descheduled.clone());
                assert_eq!(folded, whole, "worst {worst}, parts of {part}");
                // Each part folded apart, the folds merged in order.
                let mut merged = SummaryFold::new(&opts);
                for chunk in waits.chunks(part) {
                    let mut fold = SummaryFold::new(&opts);
                    fold.add(chunk);
                    merged.merge(fold);
                }
                let merged = merged.finish(&ranks, descheduled.clone());
                assert_eq!(merged, whole, "worst {worst}, parts of {part} merged");
            }
        }
    }
}
