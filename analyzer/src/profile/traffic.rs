//! Who sent how much to whom, and in what sizes: the matched point-to-point messages
//! summed per (sender, receiver) pair of world ranks and per communicator, and counted
//! in log2 size classes per sending MPI function. Collectives and one-sided transfers
//! are not messages here (their time is in the tables by function).
//!
//! Both are made a part of the run at a time ([`Fold`]: whole ranks, in rank order): a
//! message counts once, in the part of its sender, whose call says its communicator and
//! sending function.
//!
//! ```text
//!  rank 0 --8 B--> rank 1      pairs: 0→1 2 messages 72 B, 1→0 1 message 4 KiB
//!  rank 0 --64 B-> rank 1      sizes (MPI_Isend): [8, 16) 1, [64, 128) 1
//!  rank 1 <-4 KiB- rank 0 ...  sizes (MPI_Send): [4096, 8192) 1
//! ```

use std::collections::{BTreeMap, BTreeSet};

use overlap_format::schema::Op;
use serde::Serialize;

use crate::model::{Message, MessagesByRank, Timeline, Trace};

/// The messages of one ordered pair of world ranks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PairTraffic {
    /// Sender.
    pub from: u32,
    /// Receiver.
    pub to: u32,
    /// Messages.
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// The messages sent on one communicator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CommTraffic {
    /// Communicator id, as recorded (the same on every member).
    pub comm: u32,
    /// Messages.
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Ordered pairs of ranks that exchanged them.
    pub pairs: u32,
}

/// The communication matrix: every pair that exchanged a message, by sender then
/// receiver, and the same per communicator.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CommMatrix {
    /// Ranks of the run (the matrix's side).
    pub ranks: u32,
    /// Pairs with at least one message, by sender then receiver.
    pub pairs: Vec<PairTraffic>,
    /// Communicators with at least one message, by id.
    pub by_comm: Vec<CommTraffic>,
}

/// One size class: messages of `min_bytes` to `max_bytes`, both included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SizeClass {
    /// Smallest size of the class.
    pub min_bytes: u64,
    /// Largest size of the class.
    pub max_bytes: u64,
    /// Messages.
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// The size classes of the messages one MPI function sent, smallest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SizeClasses {
    /// The sending MPI function.
    pub call: &'static str,
    /// Classes with at least one message: 0 bytes, then [2^k, 2^(k+1) - 1].
    pub classes: Vec<SizeClass>,
}

/// The size class of `bytes`: 0 for empty messages, else 1 + floor(log2(bytes)).
fn class_of(bytes: u64) -> u32 {
    if bytes == 0 {
        0
    } else {
        64 - bytes.leading_zeros()
    }
}

/// The smallest and largest size of class `c`.
fn class_bounds(c: u32) -> (u64, u64) {
    match c {
        0 => (0, 0),
        64 => (1 << 63, u64::MAX),
        _ => (1 << (c - 1), (1 << c) - 1),
    }
}

/// Messages, bytes and the pairs that exchanged them, of one communicator.
type CommSum = (u64, u64, BTreeSet<(u32, u32)>);

/// Messages and their bytes, per ordered (sender, receiver) pair of world ranks.
type PairSums = BTreeMap<(u32, u32), (u64, u64)>;

/// The run's communication matrix (the whole trace as one part of a [`Fold`]).
pub fn matrix(trace: &Trace) -> CommMatrix {
    let mut fold = Fold::new();
    fold.add(trace, MessagesByRank::of(&trace.messages).all().sent);
    fold.finish().0
}

/// The messages' sizes per sending function, functions by name (the whole trace as
/// one part of a [`Fold`]).
pub fn sizes(trace: &Trace) -> Vec<SizeClasses> {
    let mut fold = Fold::new();
    fold.add(trace, MessagesByRank::of(&trace.messages).all().sent);
    fold.finish().1
}

/// The matrix and the sizes, made a part of the run at a time: each part trace (whole
/// ranks, in rank order, with the whole run's messages) counts the messages its ranks
/// sent, reading the sending call's communicator and function there. Every figure is a
/// sum (or a set of pairs) kept by key, so it does not depend on where the parts are
/// cut.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Fold {
    /// Ranks of the parts added so far.
    ranks: u32,
    /// The run's world size, as its description says.
    world_size: u32,
    pairs: PairSums,
    comms: BTreeMap<u32, CommSum>,
    #[serde(deserialize_with = "read_sizes")]
    sizes: BTreeMap<&'static str, SizeSums>,
}

/// Messages and bytes by size class.
type SizeSums = BTreeMap<u32, (u64, u64)>;

/// Reads the sizes of a [`Fold`] written by another worker.
fn read_sizes<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<&'static str, SizeSums>, D::Error> {
    use serde::Deserialize;
    let written = BTreeMap::<String, SizeSums>::deserialize(d)?;
    let name = |call: String| crate::static_names::intern(&call);
    Ok(written.into_iter().map(|(c, s)| (name(c), s)).collect())
}

impl Fold {
    /// No part yet.
    pub(crate) fn new() -> Fold {
        Fold {
            ranks: 0,
            world_size: 0,
            pairs: PairSums::new(),
            comms: BTreeMap::new(),
            sizes: BTreeMap::new(),
        }
    }

    /// Counts the messages `sent` (those whose sender is among `part`'s ranks, or a rank
    /// of no part between them and the previous part's: each message is in one part's
    /// list, [`crate::model::MessagesByRank`]). A message whose sender is a rank of no
    /// part still counts in its pair, which needs no call of the sender.
    pub(crate) fn add(&mut self, part: &Trace, sent: &[u32]) {
        self.ranks += part.ranks.len() as u32;
        self.world_size = self.world_size.max(part.info.world_size);
        for &mi in sent {
            let m = &part.messages[mi as usize];
            let pair = (m.send().rank, m.recv_post().rank);
            add_pair(&mut self.pairs, pair, m.bytes);
            if let Some(sender) = part.rank(pair.0) {
                self.count_send(m, sender, pair);
            }
        }
    }

    /// Adds the fold of the ranks after this one's: what adding their parts here gives.
    pub(crate) fn merge(&mut self, later: Fold) {
        self.ranks += later.ranks;
        self.world_size = self.world_size.max(later.world_size);
        for (pair, (messages, bytes)) in later.pairs {
            let p = self.pairs.entry(pair).or_default();
            p.0 += messages;
            p.1 += bytes;
        }
        for (comm, (messages, bytes, pairs)) in later.comms {
            let c = self.comms.entry(comm).or_default();
            c.0 += messages;
            c.1 += bytes;
            c.2.extend(pairs);
        }
        for (call, classes) in later.sizes {
            let by_class = self.sizes.entry(call).or_default();
            for (class, (messages, bytes)) in classes {
                let c = by_class.entry(class).or_default();
                c.0 += messages;
                c.1 += bytes;
            }
        }
    }

    /// Counts message `m`, sent by a call of `sender`'s, by its communicator (when that
    /// call's arguments can be read) and by its sending function (when the call can).
    fn count_send(&mut self, m: &Message, sender: &Timeline, pair: (u32, u32)) {
        let send = m.send().index;
        if let Some((_, call)) = sender.call(send) {
            let c = self.comms.entry(call.comm).or_default();
            c.0 += 1;
            c.1 += m.bytes;
            c.2.insert(pair);
        }
        let Some(op) = sender.spans.get(send).and_then(|s| s.op()) else {
            return;
        };
        let c = self
            .sizes
            .entry(Op::mpi_name(op))
            .or_default()
            .entry(class_of(m.bytes))
            .or_default();
        c.0 += 1;
        c.1 += m.bytes;
    }

    /// The matrix and the sizes of every part added.
    pub(crate) fn finish(self) -> (CommMatrix, Vec<SizeClasses>) {
        let pairs = self.pairs;
        let matrix = CommMatrix {
            ranks: self.world_size.max(self.ranks),
            pairs: pairs
                .into_iter()
                .map(|((from, to), (messages, bytes))| PairTraffic {
                    from,
                    to,
                    messages,
                    bytes,
                })
                .collect(),
            by_comm: self
                .comms
                .into_iter()
                .map(|(comm, (messages, bytes, pairs))| CommTraffic {
                    comm,
                    messages,
                    bytes,
                    pairs: pairs.len() as u32,
                })
                .collect(),
        };
        let sizes = self
            .sizes
            .into_iter()
            .map(|(call, classes)| SizeClasses {
                call,
                classes: classes
                    .into_iter()
                    .map(|(c, (messages, bytes))| {
                        let (min_bytes, max_bytes) = class_bounds(c);
                        SizeClass {
                            min_bytes,
                            max_bytes,
                            messages,
                            bytes,
                        }
                    })
                    .collect(),
            })
            .collect();
        (matrix, sizes)
    }
}

/// Adds a message of `bytes` to `pair` in `pairs`.
fn add_pair(pairs: &mut PairSums, pair: (u32, u32), bytes: u64) {
    let p = pairs.entry(pair).or_default();
    p.0 += 1;
    p.1 += bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_are_powers_of_two_with_empty_messages_apart() {
        assert_eq!(class_of(0), 0);
        assert_eq!(class_bounds(0), (0, 0));
        for (bytes, bounds) in [
            (1, (1, 1)),
            (2, (2, 3)),
            (3, (2, 3)),
            (8, (8, 15)),
            (4095, (2048, 4095)),
            (4096, (4096, 8191)),
            (u64::MAX, (1 << 63, u64::MAX)),
        ] {
            assert_eq!(class_bounds(class_of(bytes)), bounds, "{bytes}");
        }
    }
}
