//! The messages of a rank's blocking point-to-point calls, by operation: what a replay
//! reads to learn what a Send, Recv or Sendrecv waits for.
//!
//! They are kept beside the rank's operations, not inside them, so that linking the run's
//! messages (which needs every rank built) writes into no rank's operations: each rank's
//! operations are final once built, and read only by that rank's own steps. A replay
//! finds a call's messages by searching from where it found the last call's
//! ([`BlockingMessages::locate`]): a step or two, as it runs in about program order.
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
        self.sends_at(self.locate(op, BlockingAt::default()))
    }

    /// The messages operation `op` receives.
    pub fn recvs(&self, op: usize) -> impl Iterator<Item = MessageId> + Clone + '_ {
        self.recvs_at(self.locate(op, BlockingAt::default()))
    }

    /// Where operation `op`'s messages are, searched from `near`: where another
    /// operation's were. A replay looks its rank's operations up in about program order,
    /// so the search gallops from there (a step or two) instead of halving the lists.
    pub fn locate(&self, op: usize, near: BlockingAt) -> BlockingAt {
        let op = index_u32(op);
        BlockingAt {
            sends: find(&self.sends, op, near.sends.0),
            recvs: find(&self.recvs, op, near.recvs.0),
        }
    }

    /// The messages sent by the operation located at `at`.
    pub fn sends_at(&self, at: BlockingAt) -> impl Iterator<Item = MessageId> + Clone + '_ {
        messages(&self.sends, at.sends)
    }

    /// The messages received by the operation located at `at`.
    pub fn recvs_at(&self, at: BlockingAt) -> impl Iterator<Item = MessageId> + Clone + '_ {
        messages(&self.recvs, at.recvs)
    }
}

/// Where an operation's messages are in its rank's [`BlockingMessages`]: a range of each
/// list ([`BlockingMessages::locate`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockingAt {
    sends: (u32, u32),
    recvs: (u32, u32),
}

fn messages(
    list: &[(u32, u32)],
    (from, to): (u32, u32),
) -> impl Iterator<Item = MessageId> + Clone + '_ {
    list[from as usize..to as usize]
        .iter()
        .map(|&(_, m)| m as usize)
}

/// The range of `list` (sorted by operation) holding operation `op`'s pairs, searched by
/// galloping from index `near`: `(k, k)` where it would be when it has none.
fn find(list: &[(u32, u32)], op: u32, near: u32) -> (u32, u32) {
    let near = (near as usize).min(list.len());
    // The first pair at or past `op` is in `lo..=hi` (`hi` itself when none before is).
    let (lo, hi) = if near < list.len() && list[near].0 < op {
        // Forward: 1, 2, 4... pairs past `near`; every pair before `lo` is before `op`.
        let (mut lo, mut step) = (near + 1, 1);
        while lo + step <= list.len() && list[lo + step - 1].0 < op {
            lo += step;
            step *= 2;
        }
        (lo, (lo + step).min(list.len()))
    } else if near > 0 && list[near - 1].0 >= op {
        // Backward likewise; the pair at `hi` is at or past `op`.
        let (mut hi, mut step) = (near - 1, 1);
        while hi >= step && list[hi - step].0 >= op {
            hi -= step;
            step *= 2;
        }
        (hi.saturating_sub(step), hi)
    } else {
        (near, near)
    };
    let from = lo + list[lo..hi].partition_point(|&(o, _)| o < op);
    let to = from + list[from..].iter().take_while(|&&(o, _)| o == op).count();
    (index_u32(from), index_u32(to))
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

    /// Searched from anywhere, before or after, on an operation or between two: the
    /// range found is the one halving the list finds.
    #[test]
    fn the_search_finds_the_same_from_every_start() {
        // Operations 1, 3 (three messages), 4, 8, 9 (two), 20.
        let ops = [1u32, 3, 3, 3, 4, 8, 9, 9, 20];
        let list: Vec<(u32, u32)> = ops
            .iter()
            .enumerate()
            .map(|(m, &o)| (o, m as u32))
            .collect();
        for op in 0..=22 {
            let from = list.partition_point(|&(o, _)| o < op) as u32;
            let to = list.partition_point(|&(o, _)| o <= op) as u32;
            for near in 0..=list.len() as u32 + 2 {
                assert_eq!(
                    super::find(&list, op, near),
                    (from, to),
                    "op {op} from {near}"
                );
            }
        }
        assert_eq!(super::find(&[], 3, 0), (0, 0));
    }
}
