//! The join's tests: hand-built ends whose pairs are drawn, and the join against the
//! non-overtaking rule on any traffic.

use super::*;

/// A message as (id, send index, receive post, completion, tag, bytes, suspect).
type Row = (u64, usize, usize, Option<usize>, i32, u64, bool);

fn at(ns: u64) -> Nanos {
    Nanos(ns)
}

/// ```text
///  rank 0  Isend(1,t5)@10 #0   Isend(1,t5)@20 #1   Isend(1,t7)@30 #0   Isend(2,t1)@40
///              |                   \___________          |             (no receive)
///  rank 1  Irecv(0,t5) #0 done@15   Irecv(0,t7) #0 done@35   Irecv(0,t5) #1 done@12
///          Irecv(3,t1) (no send)    Irecv(ANY, ANY) never completed (unmatchable)
/// ```
/// The second t5 message completed at 12, before its send began at 20: clock-suspect.
#[test]
fn ends_numbered_per_rank_pair_by_key_and_seq() {
    let mut r0 = RankEnds::new(0);
    r0.send(1, 5, 0, 0, 8, at(10));
    r0.send(1, 5, 0, 1, 16, at(20));
    r0.send(1, 7, 0, 2, 24, at(30));
    r0.send(2, 1, 0, 3, 32, at(40));
    let mut r1 = RankEnds::new(1);
    r1.receive(0, 5, 0, 0, Some((5, at(15))));
    r1.receive(0, 7, 0, 1, Some((6, at(35))));
    r1.receive(0, 5, 0, 2, Some((7, at(12))));
    r1.receive(3, 1, 0, 3, None);
    r1.unmatchable_receive();
    // Ranks in any order: the join does not depend on it.
    let m = join(vec![r1.finish(), r0.finish()]);
    let got: Vec<Row> = m
        .messages
        .iter()
        .map(|m| {
            let done = m.completion().map(|c| c.index);
            (
                m.id,
                m.send().index,
                m.recv_post().index,
                done,
                m.tag,
                m.bytes,
                m.clock_suspect,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (1, 0, 0, Some(5), 5, 8, false),
            (2, 1, 2, Some(7), 5, 16, true),
            (3, 2, 1, Some(6), 7, 24, false),
        ]
    );
    let c = &m.counts;
    assert_eq!(
        (c.messages, c.unmatched_sends, c.unmatched_receives),
        (3, 1, 2)
    );
    assert_eq!(c.suspects.len(), 1);
    assert_eq!(
        (c.suspects[0].send_ns, c.suspects[0].recv_complete_ns),
        (20, 12)
    );
    assert_eq!(c.suspects[0].backwards_ns, 8);
}

/// A Startall starting two persistent sends: one call, one start, two messages,
/// in key order (destination 2 before 3).
#[test]
fn sends_of_one_call_keep_their_key_order() {
    let mut r0 = RankEnds::new(0);
    r0.send(3, 0, 0, 4, 1, at(50));
    r0.send(2, 0, 0, 4, 1, at(50));
    let mut r2 = RankEnds::new(2);
    r2.receive(0, 0, 0, 9, Some((10, at(60))));
    let mut r3 = RankEnds::new(3);
    r3.receive(0, 0, 0, 7, Some((8, at(60))));
    let m = join(vec![r0.finish(), r2.finish(), r3.finish()]);
    let to: Vec<(u64, u32)> = m
        .messages
        .iter()
        .map(|m| (m.id, m.recv_post().rank))
        .collect();
    assert_eq!(to, vec![(1, 2), (2, 3)]);
    assert_eq!(
        (m.counts.unmatched_sends, m.counts.unmatched_receives),
        (0, 0)
    );
}

proptest::proptest! {
    /// The join pairs the i-th send from s to d of a tag with the i-th receive
    /// posted on d from s of that tag, whatever the ranks' order and traffic (a
    /// rank sent to that recorded nothing, a source that never sent), and gives the
    /// messages in send order.
    #[test]
    fn the_join_pairs_as_the_non_overtaking_rule_says(
        ranks in proptest::collection::vec(
            proptest::collection::vec((proptest::bool::ANY, 0u32..5, 0i32..2), 0..12),
            1..5,
        ),
    ) {
        // The ranks past those listed (rank 4 always) record nothing: sends to them and
        // receives from them match nothing.
        let mut ends = Vec::new();
        let mut sends: Vec<(u32, u32, i32, usize)> = Vec::new();
        let mut receives: Vec<(u32, u32, i32, usize)> = Vec::new();
        for (rank, ops) in ranks.iter().enumerate() {
            let rank = rank as u32;
            let mut e = RankEnds::new(rank);
            for (post, &(is_send, peer, tag)) in ops.iter().enumerate() {
                let start = at(post as u64 * 10 + u64::from(rank));
                if is_send {
                    e.send(peer, tag, 0, post, 8, start);
                    sends.push((rank, peer, tag, post));
                } else {
                    e.receive(peer, tag, 0, post, Some((post + 1, at(1_000))));
                    receives.push((peer, rank, tag, post));
                }
            }
            ends.push(e.finish());
        }
        ends.reverse();
        // The i-th of each (source, destination, tag) on both sides.
        let mut expected = Vec::new();
        let mut matched_receives = 0;
        for &(src, dst, tag, post) in &sends {
            let nth = sends.iter().filter(|s| (s.0, s.1, s.2) == (src, dst, tag) && s.3 < post).count();
            let to = receives.iter().filter(|r| (r.0, r.1, r.2) == (src, dst, tag)).nth(nth);
            if let Some(r) = to {
                expected.push((src, post, dst, r.3));
                matched_receives += 1;
            }
        }
        expected.sort_by_key(|&(src, post, _, _)| (post as u64 * 10 + u64::from(src), src, post));
        let m = join(ends);
        let got: Vec<(u32, usize, u32, usize)> = (m.messages.iter())
            .map(|m| (m.send().rank, m.send().index, m.recv_post().rank, m.recv_post().index))
            .collect();
        proptest::prop_assert_eq!(&got, &expected);
        proptest::prop_assert_eq!(m.counts.unmatched_sends, (sends.len() - got.len()) as u64);
        proptest::prop_assert_eq!(
            m.counts.unmatched_receives,
            (receives.len() - matched_receives) as u64
        );
    }
}
