//! The run's messages by the rank that sent them and by the rank that received them, so
//! that a part of the run's ranks finds its own in time proportional to them, not to
//! the run: the analysis that reads a run a part at a time would otherwise walk every
//! message for every part (at 1 024 ranks in 32 parts, most of its time).
//!
//! Every message belongs to exactly one part's sends and one part's receives however
//! the ranks are cut ([`MessagesByRank::between`] over consecutive bounds), ranks in no
//! part included.
//!
//! ```text
//!  messages' (sender, receiver)   0: (1, 0)  1: (0, 1)  2: (1, 2)  3: (2, 0)
//!  sent by ranks 0..=1 = [1, 0, 2]   received by ranks 0..=1 = [0, 3, 1]
//! ```

use rayon::slice::ParallelSliceMut;

use super::compact::index_u32;
use super::Message;

/// Message indices grouped by rank, ranks ascending, each rank's in message order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct ByRank {
    /// `(rank, where its messages start in items)`, by rank.
    ranks: Vec<(u32, usize)>,
    items: Vec<u32>,
}

impl ByRank {
    /// The messages grouped by the rank `rank_of` gives each (a counting sort over the
    /// ranks that have any).
    fn of(messages: &[Message], rank_of: impl Fn(&Message) -> u32) -> ByRank {
        let mut ranks: Vec<u32> = messages.iter().map(&rank_of).collect();
        ranks.par_sort_unstable();
        ranks.dedup();
        let at = |r: u32| ranks.binary_search(&r).unwrap_or_default();
        let mut starts = vec![0usize; ranks.len() + 1];
        for m in messages {
            starts[at(rank_of(m)) + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut items = vec![0u32; messages.len()];
        for (mi, m) in messages.iter().enumerate() {
            let k = at(rank_of(m));
            items[next[k]] = index_u32(mi);
            next[k] += 1;
        }
        ByRank {
            ranks: ranks.into_iter().zip(starts).collect(),
            items,
        }
    }

    /// The messages of the ranks `r` with `after < r <= up_to` (`None`: no bound).
    fn between(&self, after: Option<u32>, up_to: Option<u32>) -> &[u32] {
        let from = after.map_or(0, |a| self.ranks.partition_point(|r| r.0 <= a));
        let to = up_to.map_or(self.ranks.len(), |u| {
            self.ranks.partition_point(|r| r.0 <= u)
        });
        let start = |k: usize| self.ranks.get(k).map_or(self.items.len(), |r| r.1);
        &self.items[start(from)..start(to.max(from))]
    }
}

/// The run's messages by sender and by receiver.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessagesByRank {
    sent: ByRank,
    received: ByRank,
}

/// The messages sent and received by some ranks: indices into the run's messages, each
/// rank's in message order, ranks ascending.
#[derive(Clone, Copy, Debug)]
pub struct PartMessages<'a> {
    /// Those whose send is a call of these ranks.
    pub sent: &'a [u32],
    /// Those whose receive was posted on these ranks.
    pub received: &'a [u32],
}

impl MessagesByRank {
    /// The index of `messages`.
    pub fn of(messages: &[Message]) -> MessagesByRank {
        let (sent, received) = rayon::join(
            || ByRank::of(messages, |m| m.send().rank),
            || ByRank::of(messages, |m| m.recv_post().rank),
        );
        MessagesByRank { sent, received }
    }

    /// The messages of the ranks `r` with `after < r <= up_to` (`None`: no bound), sent
    /// and received.
    pub fn between(&self, after: Option<u32>, up_to: Option<u32>) -> PartMessages<'_> {
        PartMessages {
            sent: self.sent.between(after, up_to),
            received: self.received.between(after, up_to),
        }
    }

    /// Every message.
    pub fn all(&self) -> PartMessages<'_> {
        self.between(None, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EventRef;

    /// The example above; the ranks cut anywhere (a bound on no rank's messages, or
    /// between two), each message is in one cut's sends and one's receives.
    #[test]
    fn each_cut_finds_its_own_and_every_message_is_in_one() {
        let at = |rank| EventRef { rank, index: 0 };
        let pairs = [(1, 0), (0, 1), (1, 2), (2, 0)];
        let messages: Vec<Message> = (pairs.iter().enumerate())
            .map(|(i, &(s, r))| Message::new(i as u64, at(s), at(r), None, 0, 8, false))
            .collect();
        let index = MessagesByRank::of(&messages);
        let low = index.between(None, Some(1));
        assert_eq!((low.sent, low.received), (&[1, 0, 2][..], &[0, 3, 1][..]));
        let all = index.all();
        assert_eq!(
            (all.sent, all.received),
            (&[1, 0, 2, 3][..], &[0, 3, 1, 2][..])
        );
        for cuts in [vec![0, 1], vec![0], vec![1], vec![5], vec![0, 3, 7]] {
            let mut bounds: Vec<Option<u32>> = vec![None];
            bounds.extend(cuts.iter().map(|&c| Some(c)));
            bounds.push(None);
            let (mut sent, mut received) = (Vec::new(), Vec::new());
            for w in bounds.windows(2) {
                let part = index.between(w[0], w[1]);
                sent.extend_from_slice(part.sent);
                received.extend_from_slice(part.received);
            }
            sent.sort_unstable();
            received.sort_unstable();
            assert_eq!(
                (sent, received),
                (vec![0, 1, 2, 3], vec![0, 1, 2, 3]),
                "{cuts:?}"
            );
        }
    }
}
