//! Clean transfers: the messages whose observed time is the network's and nothing else's.
//! The network fit ([`super::transfer`]) uses only these.
//!
//! A message's calls: `S` the send, `R` the receive's post, `C` the call that completed
//! the receive (`C = R` for a blocking receive), `SC` the call that completed the send
//! (`SC = S` for a blocking send). A transfer is clean when both ends were ready, one of
//! two ways:
//!
//! - **the receiver was ready** when the send was posted. An eager message leaves at
//!   the send: its receiver must already be inside its blocking completion,
//!   `E(C) + ε <= E(S)`. A rendezvous message moves once both sides asked for it and
//!   while both are in MPI: its receive was posted before the send
//!   (`E(R) + ε <= E(S)`), its receiver entered its blocking completion before the send
//!   or shortly after it, and the sender stayed inside MPI from the send (a blocking
//!   send, or a blocking completion after a short time outside MPI calls); "shortly" and
//!   "short" are [`ready`]'s. Either way nothing else `C` completed had its partner
//!   arrive after `E(S)`. Observed: `X(C) - E(S)`, never less than the transfer (the
//!   data leaves at the send).
//! - **the sender waited** (rendezvous, shown by the message itself): `SC` blocks,
//!   completed this send only, was entered before the receive was posted
//!   (`E(SC) + ε <= E(R)`) and left after it (so the send waited for its receiver: an
//!   eager one would have completed); the receiver stayed inside MPI from `E(R)` (a
//!   blocking receive, or its blocking completion after a short time outside MPI); nothing else `C`
//!   completed had its partner arrive after `E(R)`. Observed: `X(C) - E(R)`.
//!
//! `ε` is the two ranks' clock error bounds (0 on one clock). Left out: clock-suspect
//! messages and messages a rank sends itself (a copy, not a transfer). Everything else
//! measures something besides the transfer: an eager message received after it
//! arrived is observed short (the receive only copies it out), one whose receiver came
//! late or whose other requests came later is observed long.
//!
//! ```text
//!  the receiver was ready (eager: already in its Wait):
//!  rank 0  |c 0-10          |Send 10-11|
//!  rank 1  |Irecv 0-1|Wait 1 --------- 14|     clean: X(C) - E(S) = 14 - 10 = 4
//!  the receiver was ready (rendezvous: its Irecv first, its Wait soon after the Isend):
//!  rank 0  |c 0-10          |Isend 10-11|Wait 11 ----- 50|
//!  rank 1  |Irecv 0-1|c 1-10 |Wait 10.5 -------------- 52|   clean: 52 - 10 = 42
//!  the sender waited (rendezvous):
//!  rank 0  |Isend 0-1|Wait 1 ---------------- 14|
//!  rank 1  |c 0-8        |Recv 8 ------------- 13|   clean: X(C) - E(R) = 13 - 8 = 5
//!  neither (receiver late, eager): not clean
//!  rank 0  |Isend 0-1|Wait 1-2|
//!  rank 1  |c 0-8        |Irecv 8-9|Wait 9-10|   observed 10 - 8 = 2: only the copy out
//! ```

use std::borrow::Cow;

use overlap_format::schema::Nanos;
use rayon::prelude::*;

use super::eager::{EagerFit, Protocol};
use super::message_ends::{Done, Ends, MessageEnds};
use crate::model::{ClockErrors, EventRef, Trace};

/// The time outside MPI calls a rank may always spend between its post and the call
/// that completes it and still count as ready: a few calls' worth of tracing overhead
/// (the preload's debug build takes a few µs between a post and the next call), far
/// below any compute a program would place there.
pub const READY_GAP: Nanos = Nanos(1_000);

/// Beyond [`READY_GAP`], the share of the observed transfer that a rank's time away
/// (outside MPI, or not yet in its completion) may reach: a rendezvous transfer stalls
/// at most that long while a rank is away, so the observation is at most this much too
/// long.
pub const READY_SHARE: f64 = 0.05;

/// One clean transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CleanTransfer {
    /// Message bytes.
    pub bytes: u64,
    /// Its protocol.
    pub protocol: Protocol,
    /// Its observed transfer, ns.
    pub ns: u64,
}

/// For each call that completed messages' receives or sends: the latest partner of
/// anything it completed (a receive's send, a send's receive post), sorted by call (the
/// call packed in 8 bytes: its rank above its index).
pub(crate) struct LatestPartners(Vec<(u64, Nanos)>);

/// A call as [`LatestPartners`] keys it.
fn packed(call: EventRef) -> u64 {
    (u64::from(call.rank) << 32) | u64::from(crate::model::compact::index_u32(call.index))
}

/// Keeps the last entry of each call of `sorted` (sorted by call), in place, and gives
/// back the rest: a column of them made beside the entries was the models' peak.
fn keep_last_of_each(sorted: &mut Vec<(u64, Nanos)>) {
    let mut kept = 0;
    for i in 0..sorted.len() {
        if sorted.get(i + 1).is_none_or(|next| next.0 != sorted[i].0) {
            sorted[kept] = sorted[i];
            kept += 1;
        }
    }
    sorted.truncate(kept);
    sorted.shrink_to_fit();
}

impl LatestPartners {
    /// The latest partners of every completing call of `trace`, whose messages' ends
    /// are `ends`.
    pub(crate) fn of(trace: &Trace, ends: &MessageEnds) -> LatestPartners {
        // Two entries per message, made and sorted on rayon's threads; an end that
        // completed nothing is `NONE`, which no call packs to (an index is below
        // `u32::MAX`), so that it sorts last and is cut off.
        const NONE: (u64, Nanos) = (u64::MAX, Nanos(u64::MAX));
        let mut all: Vec<(u64, Nanos)> = vec![NONE; trace.messages.len() * 2];
        let messages = trace.messages.par_iter().enumerate();
        all.par_chunks_mut(2)
            .zip(messages)
            .for_each(|(two, (mi, m))| {
                if let Some(e) = ends.ends(mi, m) {
                    let received = e.recv_done.map(|c| (packed(c.at), e.send_start));
                    let sent = e.send_done.map(|c| (packed(c.at), e.recv_post_start));
                    two[0] = received.unwrap_or(NONE);
                    two[1] = sent.unwrap_or(NONE);
                }
            });
        all.par_sort_unstable();
        all.truncate(all.partition_point(|e| e.0 != NONE.0));
        // The last of each call's entries is its latest partner.
        keep_last_of_each(&mut all);
        LatestPartners(all)
    }

    /// The latest partner of anything `call` completed.
    pub(crate) fn of_call(&self, call: EventRef) -> Option<Nanos> {
        let i = self.0.binary_search_by_key(&packed(call), |e| e.0).ok()?;
        Some(self.0[i].1)
    }
}

/// What classifying messages needs of the whole run.
pub struct Cleaner<'a> {
    trace: &'a Trace,
    ends: Cow<'a, MessageEnds>,
    partners: LatestPartners,
    eager: EagerFit,
    /// Each rank's clock error bound (a lookup per message).
    errors: ClockErrors,
}

impl<'a> Cleaner<'a> {
    /// The classifier of `trace`'s messages, `eager` saying which are rendezvous.
    pub fn new(trace: &'a Trace, eager: EagerFit) -> Cleaner<'a> {
        Cleaner::of_ends(trace, Cow::Owned(MessageEnds::of(trace)), eager)
    }

    /// [`Cleaner::new`], with the ends of `trace`'s messages already found.
    pub(crate) fn with_ends(
        trace: &'a Trace,
        ends: &'a MessageEnds,
        eager: EagerFit,
    ) -> Cleaner<'a> {
        Cleaner::of_ends(trace, Cow::Borrowed(ends), eager)
    }

    fn of_ends(trace: &'a Trace, ends: Cow<'a, MessageEnds>, eager: EagerFit) -> Cleaner<'a> {
        let partners = LatestPartners::of(trace, &ends);
        let errors = ClockErrors::of(&trace.info);
        Cleaner {
            trace,
            ends,
            partners,
            eager,
            errors,
        }
    }

    /// The clean transfer message `mi` of the trace is, if it is one.
    pub fn clean(&self, mi: usize) -> Option<CleanTransfer> {
        let trace = self.trace;
        let m = trace.messages.get(mi)?;
        if m.clock_suspect || m.send().rank == m.recv_post().rank {
            return None;
        }
        let ends = self.ends.ends(mi, m)?;
        let done = ends.recv_done.filter(|c| c.blocks)?;
        let epsilon = self.errors.of_rank(m.send().rank) + self.errors.of_rank(m.recv_post().rank);
        let protocol = self.eager.protocol(m.bytes);
        let (from, away) = if let Some(away) = self.receiver_ready(&ends, done, epsilon, protocol) {
            (ends.send_start, away)
        } else if let Some(away) = self.sender_waited(&ends, done, epsilon) {
            (ends.recv_post_start, away)
        } else {
            return None;
        };
        let ns = done.end.saturating_sub(from).0;
        ready(away, ns).then_some(CleanTransfer {
            bytes: m.bytes,
            protocol,
            ns,
        })
    }

    /// The receiver was ready when the send was posted, and the message is the last
    /// thing its completion waited for: for an eager message, the receiver was inside
    /// its completion already (the data leaves at the send); for a rendezvous one, the
    /// receive was posted before the send and the receiver entered its completion at
    /// most shortly after it, and the sender stayed in MPI. The time either side was
    /// then away (0 for an eager message).
    fn receiver_ready(
        &self,
        ends: &Ends,
        done: Done,
        epsilon: Nanos,
        protocol: Protocol,
    ) -> Option<Nanos> {
        let sent = ends.send_start;
        if !self.last_partner(done, sent) {
            return None;
        }
        match protocol {
            Protocol::Eager => (done.start + epsilon <= sent).then_some(Nanos::ZERO),
            Protocol::Rendezvous => {
                if ends.recv_post_start + epsilon > sent {
                    return None;
                }
                let receiver_late = done.start.saturating_sub(sent);
                let sender_away = ends.send_away?;
                Some(receiver_late + sender_away)
            }
        }
    }

    /// The sender's completion, for this send alone, was entered before the receive was
    /// posted and left after it: the time the receiver then spent outside MPI before
    /// its completion, if it went to a blocking one.
    fn sender_waited(&self, ends: &Ends, done: Done, epsilon: Nanos) -> Option<Nanos> {
        let posted = ends.recv_post_start;
        let send_done = ends.send_done?;
        let waited = ends.send_done_alone
            && send_done.blocks
            && send_done.start + epsilon <= posted
            && send_done.end > posted
            && self.last_partner(done, posted);
        waited.then_some(ends.recv_away).flatten()
    }

    /// Nothing `call` completed had its partner arrive after `at`.
    fn last_partner(&self, call: Done, at: Nanos) -> bool {
        self.partners.of_call(call.at).is_none_or(|p| p <= at)
    }
}

/// The ranks were ready for a transfer of `ns` that they were `away` ns from: at most
/// [`READY_GAP`], or [`READY_SHARE`] of the transfer.
fn ready(away: Nanos, ns: u64) -> bool {
    away <= READY_GAP || away.0 as f64 <= READY_SHARE * ns as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each call keeps its last entry, the latest; a call of one entry keeps it; none
    /// stays none.
    #[test]
    fn each_call_keeps_its_latest_partner() {
        let at = |call: u64, t: u64| (call, Nanos(t));
        let mut sorted = vec![at(1, 5), at(1, 7), at(2, 3), at(3, 1), at(3, 2), at(3, 9)];
        keep_last_of_each(&mut sorted);
        assert_eq!(sorted, vec![at(1, 7), at(2, 3), at(3, 9)]);
        let mut none = Vec::new();
        keep_last_of_each(&mut none);
        assert!(none.is_empty());
    }
}
