//! A rank's ends of its messages, numbered on that rank alone, and the join that pairs
//! them: what lets a merge match messages without holding every rank at once.
//!
//! MPI's non-overtaking rule pairs the i-th send from `s` to `d` with tag `t` on
//! communicator `c` with the i-th receive posted on `d` for that key (its status's
//! source and tag). Every send of key `(s, d, t, c)` is on rank `s`, every receive of it
//! on rank `d`: each side can number its own ends, the sender its sends per key in post
//! order, the receiver its receives per key in post order. `(key, seq)` then names the
//! message on both sides, and a sort of each side's records by it pairs them.
//!
//! ```text
//!  rank 0  Isend(to 1, t=5) #0   Isend(to 1, t=5) #1   Isend(to 1, t=7) #0
//!  rank 1  Irecv(from 0, t=5) #0 Irecv(ANY, ANY)->(0, 7) #0   Irecv(0, 5) #1
//!          (0,1,5,c,#0)-(0,1,5,c,#0)   (0,1,5,c,#1)-(0,1,5,c,#1)   (0,1,7,c,#0)-...
//! ```

use overlap_format::schema::{Nanos, SuspectMessage};

use crate::fxhash::FxHashMap;
use crate::model::compact::index_u32;
use crate::model::{EventRef, Message};

/// What names a message on both of its ranks: (source, destination, tag, communicator,
/// the send's and the receive's number on that key).
pub(super) type Key = (u32, u32, i32, u32, u32);

/// A send, as the join needs it (40 B: the merge holds one per message).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct SendEnd {
    pub(super) key: Key,
    /// The sending call (or the Start that started a persistent send): a span index of
    /// its rank.
    pub(super) index: u32,
    /// Its start on the run's timeline.
    pub(super) start: Nanos,
    pub(super) bytes: u64,
}

/// What a receive's side of a message says: which call posted it, which completed it
/// and when (16 B).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Received {
    /// The call that posted it.
    pub(super) post: u32,
    /// The call that completed it ([`NO_CALL`] when none did).
    pub(super) completion: u32,
    /// The end of that call on the run's timeline.
    pub(super) completed_at: Nanos,
}

/// A receive, as the join needs it (40 B).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct RecvEnd {
    pub(super) key: Key,
    pub(super) got: Received,
}

/// A send paired with its receive: what makes a message (56 B; the key once).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Paired {
    pub(super) send: SendEnd,
    pub(super) recv: Received,
}

// The merge holds one of each per message.
const _: () = assert!(std::mem::size_of::<SendEnd>() == 40);
const _: () = assert!(std::mem::size_of::<RecvEnd>() == 40);
const _: () = assert!(std::mem::size_of::<Received>() == 16);
const _: () = assert!(std::mem::size_of::<Paired>() == 56);

/// No such call.
pub(crate) const NO_CALL: u32 = u32::MAX;

/// How many pairs the join makes between two returns of the sends it has freed to the
/// system (about 40 MiB of them), and takes between two shrinkings of the pairs.
const RELEASE_EVERY: usize = 1 << 20;

/// One rank's ends, numbered per key.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct RankEnds {
    rank: u32,
    sends: Vec<SendEnd>,
    receives: Vec<RecvEnd>,
    /// Receives whose source or tag is unknown: never matched, always counted.
    unmatchable_receives: u64,
    /// Per-key counters while the rank is numbered.
    #[serde(skip)]
    send_seq: FxHashMap<(u32, i32, u32), u32>,
    #[serde(skip)]
    recv_seq: FxHashMap<(u32, i32, u32), u32>,
}

impl RankEnds {
    /// Ends of `rank`, to be given in post order.
    pub(crate) fn new(rank: u32) -> Self {
        RankEnds {
            rank,
            ..RankEnds::default()
        }
    }

    /// The rank's next send (in post order) to `dst` with `tag` on `comm`.
    pub(crate) fn send(
        &mut self,
        dst: u32,
        tag: i32,
        comm: u32,
        index: usize,
        bytes: u64,
        start: Nanos,
    ) {
        let seq = next(&mut self.send_seq, (dst, tag, comm));
        self.sends.push(SendEnd {
            key: (self.rank, dst, tag, comm, seq),
            index: index_u32(index),
            start,
            bytes,
        });
    }

    /// The rank's next receive (in post order), from `src` with `tag` on `comm`.
    pub(crate) fn receive(
        &mut self,
        src: u32,
        tag: i32,
        comm: u32,
        post: usize,
        completion: Option<(usize, Nanos)>,
    ) {
        let seq = next(&mut self.recv_seq, (src, tag, comm));
        self.receives.push(RecvEnd {
            key: (src, self.rank, tag, comm, seq),
            got: Received {
                post: index_u32(post),
                completion: completion.map_or(NO_CALL, |c| index_u32(c.0)),
                completed_at: completion.map_or(Nanos::ZERO, |c| c.1),
            },
        });
    }

    /// A receive whose source or tag is unknown.
    pub(crate) fn unmatchable_receive(&mut self) {
        self.unmatchable_receives += 1;
    }

    /// The calls of its sends (a Startall's once per send it started), in post order.
    pub(crate) fn send_calls(&self) -> impl Iterator<Item = u32> + '_ {
        self.sends.iter().map(|s| s.index)
    }

    /// The (posting, completing) calls of its receives ([`NO_CALL`] for a receive no call
    /// completed), in post order.
    pub(crate) fn receive_calls(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.receives.iter().map(|r| (r.got.post, r.got.completion))
    }

    /// Its ends, each side sorted by key.
    pub(crate) fn into_sorted(mut self) -> SortedEnds {
        // Keys are unique on each side (the seq numbers them): unstable sorts are exact.
        self.sends.sort_unstable_by_key(|s| s.key);
        self.receives.sort_unstable_by_key(|r| r.key);
        SortedEnds {
            rank: self.rank,
            sends: self.sends,
            receives: self.receives,
            unmatchable_receives: self.unmatchable_receives,
        }
    }

    /// Done numbering: the counters go, the records are trimmed.
    pub(crate) fn finish(mut self) -> Self {
        self.send_seq = FxHashMap::default();
        self.recv_seq = FxHashMap::default();
        self.sends.shrink_to_fit();
        self.receives.shrink_to_fit();
        self
    }
}

/// One rank's ends, each side sorted by key ([`RankEnds::into_sorted`]).
pub(crate) struct SortedEnds {
    pub(super) rank: u32,
    pub(super) sends: Vec<SendEnd>,
    pub(super) receives: Vec<RecvEnd>,
    pub(super) unmatchable_receives: u64,
}

fn next(counters: &mut FxHashMap<(u32, i32, u32), u32>, key: (u32, i32, u32)) -> u32 {
    let n = counters.entry(key).or_insert(0);
    *n += 1;
    *n - 1
}

/// Messages matched, and what was left over.
pub(crate) struct Matched {
    /// In order of their sends' starts (then rank, call), ids from 1 in that order.
    pub(crate) messages: Vec<Message>,
    /// How many, what was left over, and the clock-suspect messages.
    pub(crate) counts: MatchCounts,
}

/// What a join found, messages apart.
#[derive(Clone, Debug, Default)]
pub(crate) struct MatchCounts {
    pub(crate) messages: u64,
    pub(crate) unmatched_sends: u64,
    pub(crate) unmatched_receives: u64,
    /// The clock-suspect messages' records, in message order.
    pub(crate) suspects: Vec<SuspectMessage>,
}

impl MatchCounts {
    /// Counts one more message, with its record when it is clock-suspect.
    pub(super) fn count(&mut self, suspect: Option<SuspectMessage>) {
        self.messages += 1;
        self.suspects.extend(suspect);
    }
}

/// Walks `sends` and `receives`, each in key order, and calls `paired` with every send
/// whose key a receive has. Returns how many sends and receives were walked.
pub(crate) fn pair<E>(
    sends: impl Iterator<Item = Result<SendEnd, E>>,
    receives: impl Iterator<Item = Result<RecvEnd, E>>,
    mut paired: impl FnMut(Paired) -> Result<(), E>,
) -> Result<(u64, u64), E> {
    let mut receives = receives.peekable();
    let (mut sent, mut received) = (0u64, 0u64);
    for send in sends {
        let send = send?;
        sent += 1;
        while let Some(r) = receives.next_if(|r| r.as_ref().map_or(true, |r| r.key <= send.key)) {
            let r = r?;
            received += 1;
            if r.key == send.key {
                paired(Paired { send, recv: r.got })?;
                break;
            }
        }
    }
    for r in receives {
        r?;
        received += 1;
    }
    Ok((sent, received))
}

impl Paired {
    /// The sending rank.
    pub(crate) fn sender(&self) -> u32 {
        self.send.key.0
    }

    /// The receiving rank.
    pub(crate) fn receiver(&self) -> u32 {
        self.send.key.1
    }

    /// Where it stands in message order: by the send's start, rank and call; a
    /// Startall's sends share all three and keep their key order.
    pub(crate) fn order(&self) -> (Nanos, u32, u32, Key) {
        let s = &self.send;
        (s.start, s.key.0, s.index, s.key)
    }

    /// The message it makes with id `id`, and the message's clock-suspect record when
    /// its receive completed before its send began.
    pub(crate) fn message(&self, id: u64) -> (Message, Option<SuspectMessage>) {
        let (src, dst) = (self.send.key.0, self.send.key.1);
        let r = &self.recv;
        let completed = r.completion != NO_CALL;
        let m = Message::new(
            id,
            EventRef {
                rank: src,
                index: self.send.index as usize,
            },
            EventRef {
                rank: dst,
                index: r.post as usize,
            },
            completed.then_some(r.completion as usize),
            self.send.key.2,
            self.send.bytes,
            completed && r.completed_at < self.send.start,
        );
        let suspect = m
            .clock_suspect
            .then(|| suspect_between(&m, self.send.start, r.completed_at));
        (m, suspect)
    }
}

/// Pairs every rank's sends with receives by `(key, seq)`: each rank's sides sorted by
/// key in place, walked side by side (a rank's sends are all of one source, so rank
/// after rank they are in key order; the receives are merged across ranks), then the
/// pairs sorted into message order, so that the messages come out in order with no sort
/// of their own. Memory: 80 B per send and receive, then 56 B per pair as each rank's
/// sends (and, once walked past, its receives) are freed, then 48 B per message as the
/// pairs are freed.
pub(crate) fn join(mut ranks: Vec<RankEnds>) -> Matched {
    use rayon::prelude::*;
    let unmatchable: u64 = ranks.iter().map(|r| r.unmatchable_receives).sum();
    ranks.sort_by_key(|r| r.rank);
    // One run has each rank once (the loaders refuse a rank twice). Ends given twice
    // for a rank are taken together, so the sends stay in key order; which of two
    // equal keys pairs first is then unspecified, as it was.
    ranks.dedup_by(|later, kept| {
        let same = later.rank == kept.rank;
        if same {
            kept.sends.append(&mut later.sends);
            kept.receives.append(&mut later.receives);
        }
        same
    });
    // Keys are unique on each side (the seq numbers them), so unstable sorts are exact.
    ranks.par_iter_mut().for_each(|r| {
        r.sends.sort_unstable_by_key(|s| s.key);
        r.receives.sort_unstable_by_key(|r| r.key);
    });
    // No more pairs than sends or receives: reserved once, not grown by doubling (which
    // would hold up to twice the pairs while the ends are still held).
    let send_count: usize = ranks.iter().map(|r| r.sends.len()).sum();
    let receive_count: usize = ranks.iter().map(|r| r.receives.len()).sum();
    let mut pairs = Vec::with_capacity(send_count.min(receive_count));
    // Each rank's sends are freed once walked, as the pairs grow, and so are its
    // receives once the walk is past their last source (at once for halo traffic).
    let sends: Vec<Vec<SendEnd>> = (ranks.iter_mut())
        .map(|r| std::mem::take(&mut r.sends))
        .collect();
    let receives: Vec<Vec<RecvEnd>> = (ranks.iter_mut())
        .map(|r| std::mem::take(&mut r.receives))
        .collect();
    let walked = pair(
        (sends.into_iter().flatten()).map(Ok::<_, std::convert::Infallible>),
        merged(receives, |r| r.key).map(Ok),
        |p| {
            pairs.push(p);
            // The sends walked are freed, but a rank's are small blocks of the heap
            // when ranks are many, which the heap would keep: given back as the pairs
            // grow.
            if pairs.len() % RELEASE_EVERY == 0 {
                crate::heap::release_free();
            }
            Ok(())
        },
    );
    let Ok((sent, received)) = walked;
    drop(ranks);
    // Sorted last to first, the pairs are taken from the end in message order, and the
    // pairs' column shrinks as the messages' grows: never both whole (at 10^8 events,
    // 1.8 GB of pairs beside 1.5 GB of messages were the join's peak).
    pairs.par_sort_unstable_by_key(|p| std::cmp::Reverse(p.order()));
    let mut counts = MatchCounts::default();
    let mut messages = Vec::with_capacity(pairs.len());
    while let Some(p) = pairs.pop() {
        let (m, suspect) = p.message(counts.messages + 1);
        counts.count(suspect);
        messages.push(m);
        if pairs.len() % RELEASE_EVERY == 0 {
            crate::heap::shrink_behind(&mut pairs);
        }
    }
    counts.unmatched_sends = sent - counts.messages;
    counts.unmatched_receives = unmatchable + received - counts.messages;
    Matched { messages, counts }
}

/// The items of `sides`, each sorted by `key`, in key order (ties: the earlier side's
/// first): a k-way merge, one heap entry per side, each side freed once walked.
fn merged<T: Copy, K: Ord + Copy>(
    mut sides: Vec<Vec<T>>,
    key: impl Fn(&T) -> K,
) -> impl Iterator<Item = T> {
    use std::cmp::Reverse;
    use std::collections::binary_heap::{BinaryHeap, PeekMut};
    let mut heap: BinaryHeap<Reverse<(K, usize)>> = sides
        .iter()
        .enumerate()
        .filter_map(|(i, side)| Some(Reverse((key(side.first()?), i))))
        .collect();
    let mut next = vec![0usize; sides.len()];
    std::iter::from_fn(move || {
        let mut top = heap.peek_mut()?;
        let Reverse((_, i)) = *top;
        let item = sides[i][next[i]];
        next[i] += 1;
        match sides[i].get(next[i]) {
            Some(after) => *top = Reverse((key(after), i)),
            None => {
                PeekMut::pop(top);
                sides[i] = Vec::new();
            }
        }
        Some(item)
    })
}

/// The record of a clock-suspect message whose send started at `send` and whose receive
/// completed at `recv_complete`.
fn suspect_between(m: &Message, send: Nanos, recv_complete: Nanos) -> SuspectMessage {
    SuspectMessage {
        send_rank: m.send().rank,
        recv_rank: m.completion().map_or(m.recv_post().rank, |c| c.rank),
        tag: m.tag,
        send_ns: send.0,
        recv_complete_ns: recv_complete.0,
        backwards_ns: send.0.saturating_sub(recv_complete.0),
    }
}

#[cfg(test)]
#[path = "ends_tests.rs"]
mod tests;
