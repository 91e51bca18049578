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

use super::matching::suspect_between;
use crate::fxhash::FxHashMap;
use crate::model::{EventRef, Message};

/// What names a message on both of its ranks: (source, destination, tag, communicator,
/// the send's and the receive's number on that key).
type Key = (u32, u32, i32, u32, u32);

/// A send, as the join needs it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendEnd {
    key: Key,
    /// The sending call (or the Start that started a persistent send).
    index: usize,
    bytes: u64,
    /// Its start on the run's timeline.
    start: Nanos,
}

/// A receive, as the join needs it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecvEnd {
    key: Key,
    /// The call that posted it.
    post: usize,
    /// The call that completed it, when one did.
    completion: Option<usize>,
    /// The end of that call on the run's timeline.
    completed_at: Nanos,
}

/// One rank's ends, numbered per key.
#[derive(Debug, Default)]
pub(crate) struct RankEnds {
    rank: u32,
    sends: Vec<SendEnd>,
    receives: Vec<RecvEnd>,
    /// Receives whose source or tag is unknown: never matched, always counted.
    unmatchable_receives: u64,
    /// Per-key counters while the rank is numbered.
    send_seq: FxHashMap<(u32, i32, u32), u32>,
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
            index,
            bytes,
            start,
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
            post,
            completion: completion.map(|c| c.0),
            completed_at: completion.map_or(Nanos::ZERO, |c| c.1),
        });
    }

    /// A receive whose source or tag is unknown.
    pub(crate) fn unmatchable_receive(&mut self) {
        self.unmatchable_receives += 1;
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

fn next(counters: &mut FxHashMap<(u32, i32, u32), u32>, key: (u32, i32, u32)) -> u32 {
    let n = counters.entry(key).or_insert(0);
    *n += 1;
    *n - 1
}

/// Messages matched, and what was left over.
pub(crate) struct Matched {
    /// In order of their sends' starts (then rank, call), ids from 1 in that order.
    pub(crate) messages: Vec<Message>,
    pub(crate) unmatched_sends: u64,
    pub(crate) unmatched_receives: u64,
    /// The clock-suspect messages' records, in the order of `messages`.
    pub(crate) suspects: Vec<SuspectMessage>,
}

/// Pairs every rank's sends with receives by `(key, seq)`.
pub(crate) fn join(ranks: Vec<RankEnds>) -> Matched {
    use rayon::prelude::*;
    let mut unmatched_receives: u64 = ranks.iter().map(|r| r.unmatchable_receives).sum();
    let mut sends = Vec::with_capacity(ranks.iter().map(|r| r.sends.len()).sum());
    let mut receives = Vec::with_capacity(ranks.iter().map(|r| r.receives.len()).sum());
    for r in ranks {
        sends.extend(r.sends);
        receives.extend(r.receives);
    }
    sends.par_sort_unstable_by_key(|s| s.key);
    receives.par_sort_unstable_by_key(|r| r.key);
    let mut paired: Vec<(SendEnd, RecvEnd)> = Vec::with_capacity(sends.len().min(receives.len()));
    let mut unmatched_sends = 0u64;
    let (mut s, mut r) = (sends.iter().peekable(), receives.iter().peekable());
    loop {
        match (s.peek(), r.peek()) {
            (Some(a), Some(b)) if a.key == b.key => {
                paired.push((**a, **b));
                s.next();
                r.next();
            }
            (Some(a), Some(b)) if a.key < b.key => {
                unmatched_sends += 1;
                s.next();
            }
            (Some(_), None) => {
                unmatched_sends += 1;
                s.next();
            }
            (_, Some(_)) => {
                unmatched_receives += 1;
                r.next();
            }
            (None, None) => break,
        }
    }
    drop((sends, receives));
    // Stable: a Startall's sends share its start and index, and keep their key order.
    paired.par_sort_by_key(|(s, _)| (s.start, s.key.0, s.index));
    let mut suspects = Vec::new();
    let messages = paired
        .iter()
        .enumerate()
        .map(|(i, (send, recv))| {
            let (src, dst) = (send.key.0, send.key.1);
            let m = Message {
                id: i as u64 + 1,
                send: EventRef {
                    rank: src,
                    index: send.index,
                },
                recv_post: EventRef {
                    rank: dst,
                    index: recv.post,
                },
                completion: recv.completion.map(|index| EventRef { rank: dst, index }),
                tag: send.key.2,
                bytes: send.bytes,
                clock_suspect: recv.completion.is_some() && recv.completed_at < send.start,
            };
            if m.clock_suspect {
                suspects.push(suspect_between(&m, send.start, recv.completed_at));
            }
            m
        })
        .collect();
    Matched {
        messages,
        unmatched_sends,
        unmatched_receives,
        suspects,
    }
}
