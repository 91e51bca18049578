//! The messages of a rank's blocking point-to-point calls, by operation: what a replay
//! reads to learn what a Send, Recv or Sendrecv waits for.
//!
//! They are kept beside the rank's operations, not inside them, so that linking the run's
//! messages (which needs every rank built) writes into no rank's operations: each rank's
//! operations are final once built, and read only by that rank's own steps.
//!
//! ```text
//!  rank 0 ops   0 Compute   1 Sendrecv   2 Compute   3 Send
//!  sends        (1, m0) (3, m4) (3, m7)        -> sends(3) = m4, m7
//!  recvs        (1, m2)                        -> recvs(1) = m2
//! ```

use super::MessageId;
use crate::model::compact::index_u32;

/// A rank's blocking calls' messages: (operation, message) pairs sorted by operation,
/// each operation's in the order they were added (message order, for a program built
/// from a trace).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockingMessages {
    sends: Vec<(u32, u32)>,
    recvs: Vec<(u32, u32)>,
}

impl BlockingMessages {
    /// The messages given as (operation, message) pairs in any order of operations,
    /// each operation's in its order.
    pub fn new(mut sends: Vec<(u32, u32)>, mut recvs: Vec<(u32, u32)>) -> BlockingMessages {
        // Stable: each operation's messages keep their order.
        sends.sort_by_key(|&(op, _)| op);
        recvs.sort_by_key(|&(op, _)| op);
        sends.shrink_to_fit();
        recvs.shrink_to_fit();
        BlockingMessages { sends, recvs }
    }

    /// Adds message `m`, sent (`sending`) or received by operation `op`, after the
    /// operation's others (a program built by hand; [`BlockingMessages::new`] takes a
    /// whole rank's at once).
    pub fn add(&mut self, op: usize, m: MessageId, sending: bool) {
        let list = if sending {
            &mut self.sends
        } else {
            &mut self.recvs
        };
        let op = index_u32(op);
        let at = list.partition_point(|&(o, _)| o <= op);
        list.insert(at, (op, index_u32(m)));
    }

    /// The messages operation `op` sends.
    pub fn sends(&self, op: usize) -> impl Iterator<Item = MessageId> + Clone + '_ {
        of(&self.sends, op)
    }

    /// The messages operation `op` receives.
    pub fn recvs(&self, op: usize) -> impl Iterator<Item = MessageId> + Clone + '_ {
        of(&self.recvs, op)
    }
}

fn of(list: &[(u32, u32)], op: usize) -> impl Iterator<Item = MessageId> + Clone + '_ {
    let op = index_u32(op);
    let from = list.partition_point(|&(o, _)| o < op);
    list[from..]
        .iter()
        .take_while(move |&&(o, _)| o == op)
        .map(|&(_, m)| m as usize)
}

#[cfg(test)]
mod tests {
    use super::BlockingMessages;

    /// The drawing atop the module: pairs given out of order of operations come back by
    /// operation, each operation's in the order given; one added by hand goes after its
    /// operation's others.
    #[test]
    fn each_operations_messages_in_the_order_given() {
        let mut b = BlockingMessages::new(vec![(3, 4), (1, 0), (3, 7)], vec![(1, 2)]);
        let sends = |b: &BlockingMessages, op| b.sends(op).collect::<Vec<_>>();
        assert_eq!(sends(&b, 3), [4, 7]);
        assert_eq!(sends(&b, 1), [0]);
        assert_eq!(sends(&b, 0), [] as [usize; 0]);
        assert_eq!(b.recvs(1).collect::<Vec<_>>(), [2]);
        assert_eq!(b.recvs(3).count(), 0);
        b.add(1, 9, true);
        b.add(3, 5, true);
        b.add(2, 8, false);
        assert_eq!((sends(&b, 1), sends(&b, 3)), (vec![0, 9], vec![4, 7, 5]));
        assert_eq!(b.recvs(2).collect::<Vec<_>>(), [8]);
        assert_eq!(b.recvs(1).collect::<Vec<_>>(), [2]);
    }
}
