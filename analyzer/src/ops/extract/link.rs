//! Linking the run's messages to the program's operations and requests, once every rank
//! is built: a message's ends are its sender's and receiver's posts (a request's message
//! set) or blocking calls (listed in the rank's [`BlockingMessages`]).
//!
//! The run's messages are read once, in order; given owned ([`RunMessages::Owned`]),
//! their memory goes back a batch at a time as the program's messages grow, so that
//! the two columns are never both whole.
//!
//! A program kept for replays of its measured order does not keep its requests whole
//! while it is built ([`KeptRequests`]): of each, what a replay reads (its
//! [`ReplayRequest`], 12 bytes) and what linking reads besides (its post, peer and tag,
//! 12 bytes), instead of a [`RequestOp`] of 64. Both are linked by the one function,
//! through [`LinkRequests`].

use overlap_format::schema::Op;

use super::posts::RankPosts;
use super::rank::RankPart;
use crate::model::compact::{index_u32, some_i32, some_index, NO_I32};
use crate::model::Message;
use crate::ops::{
    BlockingMessages, MessageId, MessageOp, OpKind, Program, ReplayRequest, RequestOp, RequestRole,
};

/// What linking the run's messages reads of a rank: its operations by span, the
/// program requests of its posts, and each operation's call and whether it is a
/// blocking point-to-point call (kept apart, as the operations may be encoded already).
pub(super) struct Linking {
    /// Span index -> index of the first operation made of it (`NO_INDEX`: none).
    op_of_span: Vec<u32>,
    /// Aligned with the rank's `posted_at`: each trace request's program request.
    posted: Vec<u32>,
    /// Per operation: its call, and whether it is [`OpKind::Blocking`].
    ops: Vec<(Option<Op>, bool)>,
}

impl Linking {
    /// What linking reads of the numbered rank `part` (its spans' operations and its
    /// posts' requests taken from it).
    pub(super) fn take(part: &mut RankPart) -> Linking {
        let ops = (part.program.ops.iter())
            .map(|o| (o.call, matches!(o.kind, OpKind::Blocking { .. })))
            .collect();
        Linking {
            op_of_span: std::mem::take(&mut part.op_of_span),
            posted: std::mem::take(&mut part.posted),
            ops,
        }
    }
}

/// What linking reads and sets of the program's requests, by index, however they are
/// kept.
pub(super) trait LinkRequests {
    /// [`RequestOp::role`].
    fn role(&self, r: usize) -> RequestRole;
    /// [`RequestOp::message`].
    fn message(&self, r: usize) -> Option<MessageId>;
    /// [`RequestOp::peer`].
    fn peer(&self, r: usize) -> Option<i32>;
    /// [`RequestOp::tag`].
    fn tag(&self, r: usize) -> Option<i32>;
    /// [`RequestOp::post`].
    fn post(&self, r: usize) -> usize;
    /// [`RequestOp::set_message`].
    fn set_message(&mut self, r: usize, m: MessageId);
}

impl LinkRequests for [RequestOp] {
    fn role(&self, r: usize) -> RequestRole {
        self[r].role
    }
    fn message(&self, r: usize) -> Option<MessageId> {
        self[r].message()
    }
    fn peer(&self, r: usize) -> Option<i32> {
        self[r].peer()
    }
    fn tag(&self, r: usize) -> Option<i32> {
        self[r].tag()
    }
    fn post(&self, r: usize) -> usize {
        self[r].post()
    }
    fn set_message(&mut self, r: usize, m: MessageId) {
        self[r].set_message(m);
    }
}

/// The requests of a program kept for replays of its measured order, while it is
/// built: what a replay reads of each, and what linking reads besides (dropped once
/// the messages are linked).
#[derive(Default)]
pub(super) struct KeptRequests {
    /// What a replay reads of each request, by index.
    replay: Vec<ReplayRequest>,
    /// Each request's post, peer and tag, by index (sentinels as in [`RequestOp`]).
    keys: Vec<(u32, i32, i32)>,
}

impl KeptRequests {
    /// Keeps what replays and linking read of the next requests, `built`.
    pub(super) fn extend(&mut self, built: &[RequestOp]) {
        self.replay.extend(built.iter().map(ReplayRequest::of));
        self.keys.extend(built.iter().map(|q| {
            let or_none = |v: Option<i32>| v.unwrap_or(NO_I32);
            (index_u32(q.post()), or_none(q.peer()), or_none(q.tag()))
        }));
    }

    /// How many requests are kept.
    pub(super) fn len(&self) -> usize {
        self.replay.len()
    }

    /// What a replay reads of each request, what only linking read dropped.
    pub(super) fn into_replay(self) -> Vec<ReplayRequest> {
        self.replay
    }
}

impl LinkRequests for KeptRequests {
    fn role(&self, r: usize) -> RequestRole {
        self.replay[r].role
    }
    fn message(&self, r: usize) -> Option<MessageId> {
        self.replay[r].message()
    }
    fn peer(&self, r: usize) -> Option<i32> {
        some_i32(self.keys[r].1)
    }
    fn tag(&self, r: usize) -> Option<i32> {
        some_i32(self.keys[r].2)
    }
    fn post(&self, r: usize) -> usize {
        self.keys[r].0 as usize
    }
    fn set_message(&mut self, r: usize, m: MessageId) {
        self.replay[r].set_message(m);
    }
}

/// The run's matched messages, as linking reads them.
pub(crate) enum RunMessages<'m> {
    /// Borrowed from a trace that keeps them.
    Borrowed(&'m [Message]),
    /// Given up: read from the first on, each batch's memory given back once read.
    Owned(Vec<Message>),
}

/// How many messages' memory is given back at once as the run's owned messages are read
/// (48 MB of them).
const GIVEN_BACK: usize = 1 << 20;

impl RunMessages<'_> {
    /// How many messages there are.
    pub(super) fn len(&self) -> usize {
        match self {
            RunMessages::Borrowed(all) => all.len(),
            RunMessages::Owned(all) => all.len(),
        }
    }

    /// Gives each message to `f`, in order.
    fn each(self, f: impl FnMut(&Message)) {
        self.each_giving_back(GIVEN_BACK, f);
    }

    /// [`Self::each`], owned messages' memory given back `batch` messages at a time.
    fn each_giving_back(self, batch: usize, mut f: impl FnMut(&Message)) {
        match self {
            RunMessages::Borrowed(all) => all.iter().for_each(f),
            RunMessages::Owned(mut all) => {
                // Last first, so that those read are taken off the end and the vector
                // shrinks behind them.
                all.reverse();
                while let Some(m) = all.pop() {
                    f(&m);
                    if all.len() % batch == 0 {
                        crate::heap::shrink_behind(&mut all);
                    }
                }
            }
        }
    }
}

/// Links every matched message to the operations that sent and received it: a request's
/// message is set (among `requests`, the program's); a blocking call's is listed in its
/// rank's [`super::RankProgram::blocking`] (no rank's operations are written).
pub(super) fn link_messages<Q: LinkRequests + ?Sized>(
    messages: RunMessages<'_>,
    program: &mut Program,
    requests: &mut Q,
    linking: &[Linking],
    posted_at: &[RankPosts],
) {
    // The program's ranks are the trace's, in its order (sorted by rank).
    let ranks: Vec<u32> = program.ranks.iter().map(|p| p.rank).collect();
    let slot = |rank: u32| crate::model::slot_of_rank(&ranks, rank, |&r| r);
    // The program requests posted by the call at a span of a rank slot.
    let posts = |slot: usize, span: usize| {
        linking[slot].posted[posted_at[slot].at(span)]
            .iter()
            .filter_map(|&rid| some_index(rid))
    };
    let op_at = |slot: usize, span: usize| {
        (linking[slot].op_of_span.get(span)).and_then(|&op| some_index(op))
    };
    // Per rank slot, its blocking calls' (operation, message) pairs, sent and received.
    let mut blocking: Vec<[Vec<(u32, u32)>; 2]> = vec![Default::default(); ranks.len()];
    messages.each(|m| {
        let (Some(ss), Some(rs)) = (slot(m.send().rank), slot(m.recv_post().rank)) else {
            return;
        };
        let (Some(sop), Some(rop)) = (op_at(ss, m.send().index), op_at(rs, m.recv_post().index))
        else {
            return;
        };
        let id = program.messages.len();
        let send_req = posts(ss, m.send().index).find(|&r| {
            requests.role(r) == RequestRole::Send
                && requests.message(r).is_none()
                && requests.peer(r) == Some(m.recv_post().rank as i32)
                && requests.tag(r) == Some(m.tag)
        });
        let recv_req = posts(rs, m.recv_post().index).find(|&r| {
            requests.role(r) == RequestRole::Recv
                && requests.message(r).is_none()
                && (requests.peer(r)).is_none_or(|p| p < 0 || p == m.send().rank as i32)
        });
        let from_op = send_req.map_or(sop, |r| requests.post(r));
        let to_op = recv_req.map_or(rop, |r| requests.post(r));
        // The sending end, then the receiving one: by position, not by operation, as a
        // blocking Sendrecv to itself is both ends of its message.
        for (side, rid, slot, op) in [(0, send_req, ss, sop), (1, recv_req, rs, rop)] {
            match rid {
                Some(r) => requests.set_message(r, id),
                // Ranks are in the trace's order: the slot is the program's too.
                None if linking[slot].ops.get(op).is_some_and(|o| o.1) => {
                    blocking[slot][side].push((index_u32(op), index_u32(id)));
                }
                None => {}
            }
        }
        let send_call = linking[ss].ops.get(from_op).and_then(|o| o.0);
        program.messages.push(MessageOp::new(
            (m.send().rank, from_op),
            (m.recv_post().rank, to_op),
            m.bytes,
            m.tag,
            send_call,
        ));
    });
    for (rank, [sends, recvs]) in program.ranks.iter_mut().zip(blocking) {
        rank.blocking = BlockingMessages::new(sends, recvs);
    }
}

#[cfg(test)]
mod tests {
    use super::RunMessages;
    use crate::model::{EventRef, Message};

    /// Owned messages are read in their order, as borrowed ones are, while their vector
    /// shrinks behind them: here a batch of 3 given back at a time, of 10 messages.
    #[test]
    fn owned_messages_are_read_in_order_as_their_memory_goes_back() {
        let at = |rank: u32, index: usize| EventRef { rank, index };
        let all: Vec<Message> = (0..10u64)
            .map(|i| {
                Message::new(
                    i + 1,
                    at(0, i as usize),
                    at(1, 2 * i as usize),
                    None,
                    7,
                    i,
                    false,
                )
            })
            .collect();
        let mut borrowed = Vec::new();
        RunMessages::Borrowed(&all).each_giving_back(3, |m| borrowed.push(*m));
        let mut owned = Vec::new();
        RunMessages::Owned(all.clone()).each_giving_back(3, |m| owned.push(*m));
        assert_eq!(borrowed, all);
        assert_eq!(owned, all);
    }
}
