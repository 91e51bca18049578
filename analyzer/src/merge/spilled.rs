//! The join of [`super::ends`] with its records on disk ([`super::spill`]), for the
//! merge that holds one rank at a time: what it keeps in memory is one rank's ends or
//! messages and a buffer per rank, not a record per message of the run.
//!
//! 1. Each rank's sends and receives are sorted by key and set aside ([`SpilledEnds`]).
//! 2. The sends are walked in key order (rank after rank: a send's key starts with its
//!    rank) beside the receives, merged across ranks in key order; each sender's pairs
//!    are sorted into message order and set aside.
//! 3. The pairs are merged across ranks in message order, which numbers the messages;
//!    each is set aside twice, with what its sender sent and what its receiver
//!    received ([`SpilledMessages::of`]).
//!
//! ```text
//!  ends     | 0: sends  receives | 1: sends  receives | ...      (each sorted by key)
//!  pairs    | sent by 0 | sent by 1 | ...                  (each in message order)
//!  messages | 0: sent  received | 1: sent  received | ...  (ids, in message order)
//! ```
//!
//! The messages, their ids and the counts are [`super::ends::join`]'s, exactly.

use std::io;
use std::path::Path;

use overlap_format::schema::Nanos;

use super::ends::{pair, Key, MatchCounts, Paired, Received, RecvEnd, SendEnd, SortedEnds};
use super::links::RankMessages;
use super::spill::{merged, Filler, Record, Segment, Spill};

/// Every rank's ends, set aside.
pub(crate) struct SpilledEnds {
    spill: Spill,
    /// (rank, its sends, its receives).
    ranks: Vec<(u32, Segment, Segment)>,
    unmatchable_receives: u64,
}

/// The run's messages, set aside by rank.
pub(crate) struct SpilledMessages {
    spill: Spill,
    /// (rank, what it sent, what it received), by rank.
    ranks: Vec<(u32, Segment, Segment)>,
    /// How many, what was left over, the clock-suspect messages.
    pub(crate) counts: MatchCounts,
}

impl SpilledEnds {
    /// Ends to be set aside in a temporary file in `dir`.
    pub(crate) fn new_in(dir: &Path) -> io::Result<Self> {
        Ok(SpilledEnds {
            spill: Spill::new_in(dir)?,
            ranks: Vec::new(),
            unmatchable_receives: 0,
        })
    }

    /// Sets a rank's ends aside.
    pub(crate) fn add(&mut self, ends: SortedEnds) -> io::Result<()> {
        let sends = self.spill.append(&ends.sends)?;
        let receives = self.spill.append(&ends.receives)?;
        self.ranks.push((ends.rank, sends, receives));
        self.unmatchable_receives += ends.unmatchable_receives;
        Ok(())
    }

    /// Pairs the sends with the receives and numbers the messages.
    pub(crate) fn join(mut self) -> io::Result<SpilledMessages> {
        self.ranks.sort_by_key(|r| r.0);
        let spill = self.spill;
        let ranks = self.ranks;
        let position = |rank: u32| {
            ranks
                .binary_search_by_key(&rank, |r| r.0)
                .map_err(|_| io::Error::other(format!("a message to rank {rank}, not read")))
        };
        // 2. Pairs, by sender, each sender's in message order.
        let sends = ranks.iter().flat_map(|r| spill.cursor::<SendEnd>(r.1));
        let receive_segments: Vec<Segment> = ranks.iter().map(|r| r.2).collect();
        let receives = merged(&spill, &receive_segments, |r: &RecvEnd| r.key);
        let mut pairs: Vec<Segment> = vec![Segment::default(); ranks.len()];
        let mut received = vec![0u64; ranks.len()];
        let mut group: Vec<Paired> = Vec::new();
        let mut set_aside = |group: &mut Vec<Paired>| -> io::Result<()> {
            let Some(sender) = group.first().map(Paired::sender) else {
                return Ok(());
            };
            group.sort_unstable_by_key(Paired::order);
            pairs[position(sender)?] = spill.append(group)?;
            group.clear();
            Ok(())
        };
        let (sent, walked_receives) = pair(sends, receives, |p| {
            if group.first().is_some_and(|g| g.sender() != p.sender()) {
                set_aside(&mut group)?;
            }
            received[position(p.receiver())?] += 1;
            group.push(p);
            Ok(())
        })?;
        set_aside(&mut group)?;
        // 3. Messages, numbered in message order, by sender and by receiver.
        let mut fill: Vec<(Filler<Numbered>, Filler<Numbered>)> = Vec::new();
        let mut by_rank = Vec::with_capacity(ranks.len());
        for (i, r) in ranks.iter().enumerate() {
            let sent = spill.reserve::<Numbered>(pairs[i].count());
            let got = spill.reserve::<Numbered>(received[i]);
            fill.push((Filler::new(sent), Filler::new(got)));
            by_rank.push((r.0, sent, got));
        }
        let mut counts = MatchCounts::default();
        for p in merged(&spill, &pairs, Paired::order) {
            let p = p?;
            let n = Numbered {
                id: counts.messages + 1,
                pair: p,
            };
            counts.count(p.message(n.id).1);
            fill[position(p.sender())?].0.push(&spill, &n)?;
            fill[position(p.receiver())?].1.push(&spill, &n)?;
        }
        for (sent, got) in &mut fill {
            sent.flush(&spill)?;
            got.flush(&spill)?;
        }
        counts.unmatched_sends = sent - counts.messages;
        counts.unmatched_receives = self.unmatchable_receives + walked_receives - counts.messages;
        Ok(SpilledMessages {
            spill,
            ranks: by_rank,
            counts,
        })
    }
}

impl SpilledMessages {
    /// What `rank` sent and received, read back.
    pub(crate) fn of(&self, rank: u32) -> io::Result<RankMessages> {
        let Ok(i) = self.ranks.binary_search_by_key(&rank, |r| r.0) else {
            return Ok(RankMessages::default());
        };
        let (_, sent, got) = self.ranks[i];
        let message = |n: &Numbered| n.pair.message(n.id);
        let times = |n: &Numbered| {
            let done = (n.pair.recv.completion != super::ends::NO_CALL)
                .then_some(n.pair.recv.completed_at);
            (n.pair.send.start, done)
        };
        let (sent, got) = (self.spill.read(sent)?, self.spill.read(got)?);
        Ok(RankMessages {
            sent: sent.iter().map(|n| message(n).0).collect(),
            received: got.iter().map(message).collect(),
            sent_at: sent.iter().map(times).collect(),
            received_at: got.iter().map(times).collect(),
        })
    }
}

/// A pair with its message's id.
#[derive(Clone, Copy)]
struct Numbered {
    id: u64,
    pair: Paired,
}

/// Little-endian fields, one after another.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn u32(&mut self) -> u32 {
        let (v, rest) = self.0.split_at(4);
        self.0 = rest;
        u32::from_le_bytes([v[0], v[1], v[2], v[3]])
    }

    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | u64::from(self.u32()) << 32
    }

    fn key(&mut self) -> Key {
        let (src, dst) = (self.u32(), self.u32());
        (src, dst, self.u32() as i32, self.u32(), self.u32())
    }
}

fn put_key(k: &Key, out: &mut Vec<u8>) {
    for v in [k.0, k.1, k.2 as u32, k.3, k.4] {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn put_u64(v: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(&v.to_le_bytes());
}

impl Record for SendEnd {
    const SIZE: usize = 20 + 4 + 8 + 8;

    fn put(&self, out: &mut Vec<u8>) {
        put_key(&self.key, out);
        out.extend_from_slice(&self.index.to_le_bytes());
        put_u64(self.start.0, out);
        put_u64(self.bytes, out);
    }

    fn get(bytes: &[u8]) -> Self {
        let mut f = Fields(bytes);
        SendEnd {
            key: f.key(),
            index: f.u32(),
            start: Nanos(f.u64()),
            bytes: f.u64(),
        }
    }
}

impl Record for Received {
    const SIZE: usize = 4 + 4 + 8;

    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.post.to_le_bytes());
        out.extend_from_slice(&self.completion.to_le_bytes());
        put_u64(self.completed_at.0, out);
    }

    fn get(bytes: &[u8]) -> Self {
        let mut f = Fields(bytes);
        Received {
            post: f.u32(),
            completion: f.u32(),
            completed_at: Nanos(f.u64()),
        }
    }
}

impl Record for RecvEnd {
    const SIZE: usize = 20 + Received::SIZE;

    fn put(&self, out: &mut Vec<u8>) {
        put_key(&self.key, out);
        self.got.put(out);
    }

    fn get(bytes: &[u8]) -> Self {
        let (key, got) = bytes.split_at(20);
        RecvEnd {
            key: Fields(key).key(),
            got: Received::get(got),
        }
    }
}

impl Record for Paired {
    const SIZE: usize = SendEnd::SIZE + Received::SIZE;

    fn put(&self, out: &mut Vec<u8>) {
        self.send.put(out);
        self.recv.put(out);
    }

    fn get(bytes: &[u8]) -> Self {
        let (send, recv) = bytes.split_at(SendEnd::SIZE);
        Paired {
            send: SendEnd::get(send),
            recv: Received::get(recv),
        }
    }
}

impl Record for Numbered {
    const SIZE: usize = 8 + Paired::SIZE;

    fn put(&self, out: &mut Vec<u8>) {
        put_u64(self.id, out);
        self.pair.put(out);
    }

    fn get(bytes: &[u8]) -> Self {
        let (id, pair) = bytes.split_at(8);
        Numbered {
            id: Fields(id).u64(),
            pair: Paired::get(pair),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::ends::{join, RankEnds};

    /// Five ranks' ends from a fixed pseudo-random pattern: every rank sends to every
    /// other on two tags, some sends never received, some receives never sent or never
    /// completed, some completed before their send began (clock-suspect), wildcards
    /// left unmatchable. The spilled join gives `join`'s messages, ids, suspects and
    /// counts, rank by rank.
    #[test]
    fn the_spilled_join_is_the_join() {
        let ranks = 5u32;
        let mut seed = 0x9e37_79b9_u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % n
        };
        let mut ends: Vec<RankEnds> = (0..ranks).map(RankEnds::new).collect();
        for round in 0..40u64 {
            for src in 0..ranks {
                for dst in (0..ranks).filter(|d| *d != src) {
                    let tag = (round % 2) as i32;
                    let start = Nanos(round * 100 + next(50));
                    let (index, post) = (next(1000) as usize, next(1000) as usize);
                    if next(10) != 0 {
                        ends[src as usize].send(dst, tag, 0, index, 8 + next(4), start);
                    }
                    let done = match next(8) {
                        0 => None,
                        1 => Some((post + 1, Nanos(start.0.saturating_sub(30)))),
                        _ => Some((post + 1, Nanos(start.0 + 40))),
                    };
                    if next(12) != 0 {
                        ends[dst as usize].receive(src, tag, 0, post, done);
                    }
                    if next(30) == 0 {
                        ends[dst as usize].unmatchable_receive();
                    }
                }
            }
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let mut spilled = SpilledEnds::new_in(dir.path()).expect("spill");
        // Ranks set aside in any order.
        for e in ends.iter().rev() {
            spilled.add(e.clone().into_sorted()).expect("set aside");
        }
        let want = join(ends.into_iter().map(RankEnds::finish).collect());
        let got = spilled.join().expect("joined");
        let (w, g) = (&want.counts, &got.counts);
        assert!(w.messages > 100 && w.unmatched_sends > 0 && w.unmatched_receives > 0);
        assert!(!w.suspects.is_empty());
        assert_eq!(
            (g.messages, g.unmatched_sends, g.unmatched_receives),
            (w.messages, w.unmatched_sends, w.unmatched_receives)
        );
        assert_eq!(g.suspects, w.suspects);
        for rank in 0..ranks {
            let of = got.of(rank).expect("read back");
            let sent = want.messages.iter().filter(|m| m.send().rank == rank);
            assert_eq!(
                of.sent,
                sent.copied().collect::<Vec<_>>(),
                "rank {rank} sent"
            );
            let mut suspects = w.suspects.iter();
            let received: Vec<_> = want
                .messages
                .iter()
                .map(|m| {
                    (
                        m,
                        m.clock_suspect.then(|| suspects.next().cloned()).flatten(),
                    )
                })
                .filter(|(m, _)| m.recv_post().rank == rank)
                .map(|(m, s)| (*m, s))
                .collect();
            assert_eq!(of.received, received, "rank {rank} received");
        }
        assert!(got.of(ranks + 7).expect("no such rank").sent.is_empty());
    }
}
