//! Waits the scheduler made, on hosts with more ranks than CPUs
//! ([`super::oversubscription`]). There a rank may sit inside a blocking call long after
//! everything it waited for arrived (it was not running to see it, or its partner was
//! not running to move a rendezvous transfer), and its partner, waiting for its next
//! message, then waits for the scheduler, not for a late sender. Both are counted apart
//! from the wait states they would otherwise be (docs/metrics.md, 3.8).
//!
//! A blocking call `c` that completes point-to-point transfers, of a rank on such a
//! host, has **descheduled time** `[max(E(c), P(c)) + 4 × T(c), X(c))` when that is not
//! empty: `P(c)` is the latest partner of what it completed (a receive's send, a send's
//! receive post), `T(c)` the slow end of the network model's transfer time for the
//! largest message it completed ([`super::transfer::TransferModel::pure_range`]; none
//! known, none flagged), and 4 the ceiling of [`super::progress::CEILING`]: a wait far
//! longer than any transfer and any partner's lateness.
//!
//! A wait-state instance is **descheduled** when its peer spent more than half of the
//! instance's interval in descheduled time: the peer was late because it sat in an
//! earlier call the scheduler held.
//!
//! ```text
//!  2 ranks on 1 CPU, t_pure(8 B) 10 (slow end 10): allowance 40
//!  rank 0 |Recv←1 100 ----------------------- 300|Send→1 300-301|
//!  rank 1 |Send→0 110-111|Recv←0 120 ------------------------- 320|
//!  rank 0's Recv: its sender came at 110: descheduled [150, 300) = 150 ns
//!  rank 1's Late Sender [120, 300) = 180: rank 0 descheduled for 150 of it: descheduled
//!  rank 0's Late Sender [100, 110) = 10: stays a Late Sender
//! ```

use overlap_format::schema::Nanos;
use serde::Serialize;

use super::message_ends::{Done, MessageEnds};
use super::oversubscription::Oversubscription;
use super::progress::CEILING;
use super::transfer::TransferModel;
use super::WaitInstance;
use crate::model::{EventRef, Trace};

/// The descheduled time of the run, counted apart from the wait states.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Descheduled {
    /// Blocking calls with descheduled time.
    pub calls: u64,
    /// Their descheduled time, summed, ns.
    pub total_ns: u64,
    /// Wait-state instances found descheduled (counted apart in their kinds).
    pub instances: u64,
    /// Their amounts, summed, ns.
    pub instances_ns: u64,
}

impl Descheduled {
    /// Adds what was found of other calls and instances.
    pub fn merge(&mut self, other: &Descheduled) {
        self.calls += other.calls;
        self.total_ns += other.total_ns;
        self.instances += other.instances;
        self.instances_ns += other.instances_ns;
    }
}

/// The descheduled time of every blocking call on an oversubscribed host, by call.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct DescheduledTime(Vec<(EventRef, Nanos, Nanos)>);

impl DescheduledTime {
    /// The descheduled intervals of `trace`'s calls on the hosts `hosts` says have more
    /// ranks than CPUs, with the transfer times of `model`.
    pub(crate) fn of(
        trace: &Trace,
        message_ends: &MessageEnds,
        hosts: &Oversubscription,
        model: &TransferModel,
    ) -> DescheduledTime {
        let mut crowded: Vec<u32> = hosts.ranks().collect();
        crowded.sort_unstable();
        if crowded.is_empty() {
            return DescheduledTime(Vec::new());
        }
        // (call, partner, slow-end transfer; none when unknown) of each message's
        // completions on a crowded rank: the call as its side of the message holds it,
        // so that no rank's events are read.
        let mut ends: Vec<(Done, Nanos, Option<Nanos>)> = Vec::new();
        for (mi, m) in trace.messages.iter().enumerate() {
            let Some(e) = message_ends.ends(mi, m) else {
                continue;
            };
            let slow = model.pure_range(m.bytes).map(|r| r.1);
            let done = [
                (e.recv_done, e.send_start),
                (e.send_done, e.recv_post_start),
            ];
            for (call, partner) in done {
                if let Some(c) = call.filter(|c| crowded.binary_search(&c.at.rank).is_ok()) {
                    ends.push((c, partner, slow));
                }
            }
        }
        ends.sort_unstable_by_key(|e| e.0.at);
        let mut out = Vec::new();
        for same in ends.chunk_by(|a, b| a.0.at == b.0.at) {
            let span = same[0].0;
            if !span.blocks {
                continue;
            }
            let at = span.at;
            let Some(slow) = same.iter().map(|e| e.2).collect::<Option<Vec<Nanos>>>() else {
                continue;
            };
            let partner = same.iter().map(|e| e.1).max().unwrap_or(Nanos::ZERO);
            let transfer = slow.into_iter().max().unwrap_or(Nanos::ZERO);
            let allowance = Nanos((CEILING * transfer.0 as f64).round() as u64);
            let from = span.start.max(partner) + allowance;
            if from < span.end {
                out.push((at, from, span.end));
            }
        }
        DescheduledTime(out)
    }

    /// The descheduled time of the calls of the ranks `keep` keeps: all a block's waits
    /// read are those of the ranks they wait on.
    pub(crate) fn of_ranks(&self, keep: impl Fn(u32) -> bool) -> DescheduledTime {
        DescheduledTime(self.0.iter().filter(|e| keep(e.0.rank)).copied().collect())
    }

    /// How much of `[from, to)` rank `rank` spent in descheduled time.
    fn within(&self, rank: u32, from: Nanos, to: Nanos) -> Nanos {
        let first = self.0.partition_point(|e| e.0.rank < rank);
        let mut covered = Nanos::ZERO;
        for &(_, a, b) in self.0[first..].iter().take_while(|e| e.0.rank == rank) {
            let (a, b) = (a.max(from), b.min(to));
            covered = covered + b.saturating_sub(a);
        }
        covered
    }

    /// Flags the instances of `waits` whose peer spent more than half of them in
    /// descheduled time, and says what it found.
    pub(crate) fn flag(&self, waits: &mut [WaitInstance]) -> Descheduled {
        let mut found = self.calls();
        self.flag_more(waits, &mut found);
        found
    }

    /// The descheduled calls and their time, no instance flagged yet.
    pub(crate) fn calls(&self) -> Descheduled {
        Descheduled {
            calls: self.0.len() as u64,
            total_ns: self.0.iter().map(|e| (e.2 - e.1).0).sum(),
            ..Descheduled::default()
        }
    }

    /// [`Self::flag`] of more instances (those of another part of the run), counted
    /// into `found`.
    pub(crate) fn flag_more(&self, waits: &mut [WaitInstance], found: &mut Descheduled) {
        if self.0.is_empty() {
            return;
        }
        for w in waits.iter_mut() {
            let Some(peer) = w.peer else { continue };
            let whole = w.split_from_ns.unwrap_or(w.amount_ns);
            let (from, to) = (Nanos(w.start_ns), Nanos(w.start_ns + whole));
            if 2 * self.within(peer, from, to).0 > whole {
                w.descheduled = true;
                found.instances += 1;
                found.instances_ns += w.amount_ns;
            }
        }
    }
}
