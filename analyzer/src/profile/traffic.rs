//! Who sent how much to whom, and in what sizes: the matched point-to-point messages
//! summed per (sender, receiver) pair of world ranks and per communicator, and counted
//! in log2 size classes per sending MPI function. Collectives and one-sided transfers
//! are not messages here (their time is in the tables by function).
//!
//! ```text
//!  rank 0 --8 B--> rank 1      pairs: 0→1 2 messages 72 B, 1→0 1 message 4 KiB
//!  rank 0 --64 B-> rank 1      sizes (MPI_Isend): [8, 16) 1, [64, 128) 1
//!  rank 1 <-4 KiB- rank 0 ...  sizes (MPI_Send): [4096, 8192) 1
//! ```

use std::collections::{BTreeMap, BTreeSet};

use overlap_format::schema::Op;
use serde::Serialize;

use crate::model::Trace;

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

/// The run's communication matrix.
pub fn matrix(trace: &Trace) -> CommMatrix {
    let mut pairs: BTreeMap<(u32, u32), (u64, u64)> = BTreeMap::new();
    let mut comms: BTreeMap<u32, CommSum> = BTreeMap::new();
    for m in &trace.messages {
        let (from, to) = (m.send().rank, m.recv_post().rank);
        let p = pairs.entry((from, to)).or_default();
        p.0 += 1;
        p.1 += m.bytes;
        let comm = trace
            .rank(from)
            .and_then(|t| t.call(m.send().index))
            .map(|(_, c)| c.comm);
        if let Some(comm) = comm {
            let c = comms.entry(comm).or_default();
            c.0 += 1;
            c.1 += m.bytes;
            c.2.insert((from, to));
        }
    }
    CommMatrix {
        ranks: trace.info.world_size.max(trace.ranks.len() as u32),
        pairs: pairs
            .into_iter()
            .map(|((from, to), (messages, bytes))| PairTraffic {
                from,
                to,
                messages,
                bytes,
            })
            .collect(),
        by_comm: comms
            .into_iter()
            .map(|(comm, (messages, bytes, pairs))| CommTraffic {
                comm,
                messages,
                bytes,
                pairs: pairs.len() as u32,
            })
            .collect(),
    }
}

/// The messages' sizes per sending function, functions by name.
pub fn sizes(trace: &Trace) -> Vec<SizeClasses> {
    let mut by_op: BTreeMap<&'static str, BTreeMap<u32, (u64, u64)>> = BTreeMap::new();
    for m in &trace.messages {
        let send = m.send();
        let Some(op) = trace.span(send).and_then(|s| s.op()) else {
            continue;
        };
        let c = by_op
            .entry(Op::mpi_name(op))
            .or_default()
            .entry(class_of(m.bytes))
            .or_default();
        c.0 += 1;
        c.1 += m.bytes;
    }
    by_op
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
        .collect()
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
