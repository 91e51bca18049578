//! The calls at both ends of every matched message, found once for every figure that
//! reads them: the send, the receive's post, the call that completed the receive, and
//! the call that completed the send (the blocking send itself, or the Wait* of an
//! Isend). The wait states, the eager-limit fit, the clean transfers of the network fit,
//! the scheduler's waits and the per-request partner times all read a message here,
//! never a call of another rank.
//!
//! Each end is found on its own rank: the send side (the send's entry, its completion,
//! whether that completion completed this send alone) from the sender's timeline and
//! requests, the receive side (the post's entry, its completion) from the receiver's.
//! What crosses ranks is then this column, 48 B a message ([`super::side`]), not the ranks' timelines:
//! the figures above can be made from one rank's events and the column.
//!
//! ```text
//!  rank 0  |Isend→1 (send)|........|Wait (send's completion)|
//!  rank 1  |Irecv←0 (receive post)|....|Wait (receive's completion)|
//! ```

use overlap_format::schema::{Nanos, OpClass};

use super::side::{Selected, Side, Sides, ALONE, CALL, KNOWN};
use crate::model::{EventRef, Message, RequestLife, RequestsByPost, Timeline, Trace};

pub(crate) use super::side::Done;

/// The ends of one message, both known: what the figures that need both read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ends {
    /// The send (Send, Isend, Sendrecv, a Start...).
    pub send: EventRef,
    /// Its entry.
    pub send_start: Nanos,
    /// The call that posted the receive.
    pub recv_post: EventRef,
    /// Its entry.
    pub recv_post_start: Nanos,
    /// The call that completed the receive, when one did.
    pub recv_done: Option<Done>,
    /// The call that completed the send, when one did: the send itself when it is no
    /// post.
    pub send_done: Option<Done>,
    /// True when the send's completion completed this send alone: a blocking send that
    /// is no Sendrecv, or a Wait* of this one request.
    pub send_done_alone: bool,
    /// The time the sender's thread spent outside MPI from the send to its blocking
    /// completion, when known.
    pub send_away: Option<Nanos>,
    /// The time the receiver's thread spent outside MPI from the post to its blocking
    /// completion, when known.
    pub recv_away: Option<Nanos>,
}

/// Both ends of every message of a trace, by message (the trace's order).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MessageEnds {
    sends: Sides<()>,
    recvs: Sides<()>,
}

/// The ends of some messages, written as [`MessageEnds`] is ([`MessageEnds::select`]).
#[derive(serde::Serialize)]
#[serde(rename = "MessageEnds")]
struct SelectedEnds<'e> {
    sends: Selected<'e>,
    recvs: Selected<'e>,
}

impl MessageEnds {
    /// The ends of every message of `trace`, each side found on its own rank (the
    /// messages on rayon's threads).
    pub fn of(trace: &Trace) -> MessageEnds {
        let by_post = RequestsByPost::new(&trace.requests);
        Self::of_indexed(trace, &by_post)
    }

    /// [`MessageEnds::of`], with `trace`'s requests already indexed by post.
    pub(crate) fn of_indexed(trace: &Trace, by_post: &RequestsByPost) -> MessageEnds {
        // Each column allocated once at its size and filled in place: no pieces
        // gathered and copied (they would be freed into the heap, and held there).
        let send = |mi: usize| {
            let m = &trace.messages[mi];
            match trace.rank(m.send().rank) {
                Some(t) => send_side(t, &trace.requests, by_post, m.send().index),
                None => Side::NONE,
            }
        };
        let recv = |mi: usize| {
            let m = &trace.messages[mi];
            match trace.rank(m.recv_post().rank) {
                Some(t) => recv_side(t, m.recv_post().index, m.completion().map(|d| d.index)),
                None => Side::NONE,
            }
        };
        let len = trace.messages.len();
        let (sends, recvs) = rayon::join(|| Sides::fill(len, send), || Sides::fill(len, recv));
        MessageEnds { sends, recvs }
    }

    /// The columns of sides found elsewhere, by message (`sends[i]` and `recvs[i]` are
    /// message `i`'s): what a pass that reads one rank at a time joins.
    pub(crate) fn from_sides(sends: Sides<()>, recvs: Sides<()>) -> MessageEnds {
        debug_assert_eq!(sends.len(), recvs.len());
        MessageEnds { sends, recvs }
    }

    /// The ends of the messages `which` (indices of this column's), in that order, to be
    /// written: read back, the column of a block's messages. Each side is written from
    /// this column as it goes, none copied beside it.
    pub(crate) fn select<'e>(&'e self, which: &'e [u32]) -> impl serde::Serialize + 'e {
        SelectedEnds {
            sends: self.sends.selected(which),
            recvs: self.recvs.selected(which),
        }
    }

    /// The send side of message `mi`.
    pub(crate) fn send(&self, mi: usize) -> Side {
        self.sends.get(mi)
    }

    /// The receive side of message `mi`.
    pub(crate) fn recv(&self, mi: usize) -> Side {
        self.recvs.get(mi)
    }

    /// The call that completed the send of message `mi` (`m`).
    pub(crate) fn send_done(&self, mi: usize, m: &Message) -> Option<Done> {
        self.send(mi).done(m.send().rank)
    }

    /// The call that completed the receive of message `mi` (`m`).
    pub(crate) fn recv_done(&self, mi: usize, m: &Message) -> Option<Done> {
        self.recv(mi).done(m.recv_post().rank)
    }

    /// Both ends of message `mi` (`m`), when its send is a call of the trace and its
    /// receive's post is in it.
    pub(crate) fn ends(&self, mi: usize, m: &Message) -> Option<Ends> {
        let (send, recv) = (self.send(mi), self.recv(mi));
        if !send.is_call() {
            return None;
        }
        Some(Ends {
            send: m.send(),
            send_start: send.start()?,
            recv_post: m.recv_post(),
            recv_post_start: recv.start()?,
            recv_done: recv.done(m.recv_post().rank),
            send_done: send.done(m.send().rank),
            send_done_alone: send.done_alone(),
            send_away: send.away(),
            recv_away: recv.away(),
        })
    }
}

/// The send side of a message sent by the call at `send` of the sender's timeline `t`,
/// from `t` and the requests `by_post` indexes (the sender's, or the run's): the send's
/// entry, and the call that completed it (the send itself when it posts no request).
pub(crate) fn send_side(
    t: &Timeline,
    requests: &[RequestLife],
    by_post: &RequestsByPost,
    send: usize,
) -> Side {
    let Some(span) = t.spans.get(send) else {
        return Side::NONE;
    };
    let Some(op) = span.op() else {
        return Side::at(span.start, KNOWN);
    };
    let side = Side::at(span.start, KNOWN | CALL);
    let done = match op.class() {
        OpClass::Post => send_completion(
            requests,
            by_post,
            EventRef {
                rank: t.rank,
                index: send,
            },
        ),
        _ => Some(send),
    };
    let Some(done) = done else { return side };
    let side = side.with_done(t, send, done);
    match alone(t, done) {
        true => side.with_flags(ALONE),
        false => side,
    }
}

/// The receive side of a message whose receive the call at `post` of the receiver's
/// timeline `t` posted and the call at `done` completed (none: no call did): the post's
/// entry, and the completing call.
pub(crate) fn recv_side(t: &Timeline, post: usize, done: Option<usize>) -> Side {
    let side = match t.spans.get(post) {
        Some(span) => Side::at(span.start, KNOWN),
        None => Side::NONE,
    };
    match done {
        Some(done) => side.with_done(t, post, done),
        None => side,
    }
}

/// The call at `index` of `t` completes what it completes for one request alone: a
/// blocking point-to-point call that is no Sendrecv, or a completion call of one
/// request.
fn alone(t: &Timeline, index: usize) -> bool {
    let op = t.spans.get(index).and_then(|s| s.op());
    match (op, t.call(index)) {
        (Some(op), _) if op.is_sendrecv() => false,
        (Some(op), Some((_, call))) if op.class() == OpClass::Completion => {
            t.completions(call).len() == 1
        }
        (Some(op), _) => op.class() == OpClass::BlockingPointToPoint,
        _ => false,
    }
}

/// Which call completed the request posted at `post`: where one call posted several
/// (Startall), the last of them in the requests' order that completed counts.
pub(crate) fn send_completion(
    requests: &[RequestLife],
    by_post: &RequestsByPost,
    post: EventRef,
) -> Option<usize> {
    by_post
        .at(post)
        .rev()
        .find_map(|r| requests[r].completion())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hang::tests::{p2p, rank};
    use overlap_format::schema::{CallArgs, Completion, Op, RequestKind};
    use overlap_format::testing::call;

    fn done(request: u64, source: Option<i32>, tag: i32) -> Completion {
        Completion {
            request: Some(request),
            source,
            tag: source.map(|_| tag),
            bytes: source.map(|_| 8),
        }
    }

    /// Each side of three messages (tags 1, 2, 3), from its own rank:
    ///
    /// ```text
    ///  rank 0  |Isend 1 (r1) 0-1|Isend 2 (r2) 1-2|..|Waitall r1 r2 5 ----- 20|..|Send 3 25-26|
    ///  rank 1  |..|Irecv 1 (r7) 3-4|..|Recv 2 10-15|Test r7 16-17|..|Recv 3 22 ----- 30|
    /// ```
    ///
    /// The Isends' completion is the Waitall (blocking, not theirs alone); the blocking
    /// Send completes itself, alone. Message 1's receive was completed by a Test (which
    /// does not block), the blocking Recvs by themselves.
    #[test]
    fn each_side_is_read_on_its_own_rank() {
        let with_request = |r| p2p(1, 0, Some(r));
        let r0 = vec![
            call(
                Op::Isend,
                0,
                1,
                CallArgs {
                    tag: Some(1),
                    ..with_request(1)
                },
            ),
            call(
                Op::Isend,
                1,
                2,
                CallArgs {
                    tag: Some(2),
                    ..with_request(2)
                },
            ),
            call(
                Op::Waitall,
                5,
                20,
                CallArgs {
                    completed: vec![done(1, None, 0), done(2, None, 0)],
                    ..CallArgs::default()
                },
            ),
            call(Op::Send, 25, 26, p2p(1, 3, None)),
        ];
        let r1 = vec![
            call(Op::Irecv, 3, 4, p2p(0, 1, Some(7))),
            call(
                Op::Recv,
                10,
                15,
                CallArgs {
                    completed: vec![Completion {
                        request: None,
                        ..done(0, Some(0), 2)
                    }],
                    ..p2p(0, 2, None)
                },
            ),
            call(
                Op::Test,
                16,
                17,
                CallArgs {
                    completed: vec![done(7, Some(0), 1)],
                    ..CallArgs::default()
                },
            ),
            call(
                Op::Recv,
                22,
                30,
                CallArgs {
                    completed: vec![Completion {
                        request: None,
                        ..done(0, Some(0), 3)
                    }],
                    ..p2p(0, 3, None)
                },
            ),
        ];
        let trace = crate::merge::merge(vec![rank(0, 2, r0, None), rank(1, 2, r1, None)])
            .to_trace(std::path::Path::new("hand-built.json"));
        let ends = MessageEnds::of(&trace);
        let at = |rank, index| EventRef { rank, index };
        let d = |at, start, end, blocks| Done {
            at,
            start: Nanos(start),
            end: Nanos(end),
            blocks,
        };
        let mut seen: Vec<(i32, Ends)> = (trace.messages.iter().enumerate())
            .map(|(mi, m)| (m.tag, ends.ends(mi, m).expect("both ends are calls")))
            .collect();
        seen.sort_by_key(|e| e.0);
        // The time each side was away from MPI before its blocking completion: message
        // 1's sender from its Isend's exit (1) to the Waitall (5), less the second
        // Isend's time (1-2, its own thread's call); message 2's from 2 to 5; a blocking
        // call that completed itself, none; a Test that does not block, unknown.
        let away = [(Some(3), None), (Some(3), Some(0)), (Some(0), Some(0))];
        let expected0 = |send, sent, post, posted, recv_done, send_done, alone| Ends {
            send,
            send_start: Nanos(sent),
            recv_post: post,
            recv_post_start: Nanos(posted),
            recv_done: Some(recv_done),
            send_done: Some(send_done),
            send_done_alone: alone,
            send_away: None,
            recv_away: None,
        };
        let expected = |tag: usize, ends: Ends| Ends {
            send_away: away[tag - 1].0.map(Nanos),
            recv_away: away[tag - 1].1.map(Nanos),
            ..ends
        };
        assert_eq!(
            seen,
            vec![
                (
                    1,
                    expected(
                        1,
                        expected0(
                            at(0, 0),
                            0,
                            at(1, 0),
                            3,
                            d(at(1, 2), 16, 17, false),
                            d(at(0, 2), 5, 20, true),
                            false
                        )
                    )
                ),
                (
                    2,
                    expected(
                        2,
                        expected0(
                            at(0, 1),
                            1,
                            at(1, 1),
                            10,
                            d(at(1, 1), 10, 15, true),
                            d(at(0, 2), 5, 20, true),
                            false
                        )
                    )
                ),
                (
                    3,
                    expected(
                        3,
                        expected0(
                            at(0, 3),
                            25,
                            at(1, 3),
                            22,
                            d(at(1, 3), 22, 30, true),
                            d(at(0, 3), 25, 26, true),
                            true
                        )
                    )
                ),
            ]
        );
    }

    /// Requests by (rank, post): rank 0 posts at 3 and completes at 9; a Startall at 5
    /// starts three, of which the first and second complete (at 11 and 12), the third
    /// never; rank 1 posts at 2, never completed, and at 4, completed at 6. For the
    /// Startall, the last that completed counts (12); nothing for a post with no
    /// completion or no request. The same requests in another order (a retimed trace's:
    /// rank 1 first, the Startall's own order kept) give the same answers.
    #[test]
    fn send_completions_are_found_by_post_in_any_order() {
        let life = |rank, post, done| {
            RequestLife::new(rank, post as u64, RequestKind::Send, post, post, done, None)
        };
        let requests = vec![
            life(0, 3, Some(9)),
            life(0, 5, Some(11)),
            life(0, 5, Some(12)),
            life(0, 5, None),
            life(1, 2, None),
            life(1, 4, Some(6)),
        ];
        let moved: Vec<RequestLife> = [5, 4, 1, 0, 2, 3].iter().map(|&i| requests[i]).collect();
        let (by_sorted, by_moved) = (RequestsByPost::new(&requests), RequestsByPost::new(&moved));
        for rank in 0..3 {
            for index in 0..8 {
                let at = EventRef { rank, index };
                assert_eq!(
                    send_completion(&requests, &by_sorted, at),
                    send_completion(&moved, &by_moved, at),
                    "{at:?}"
                );
            }
        }
        let at = |rank, index| send_completion(&requests, &by_sorted, EventRef { rank, index });
        assert_eq!(
            (at(0, 3), at(0, 5), at(1, 2), at(1, 4), at(2, 0)),
            (Some(9), Some(12), None, Some(6), None)
        );
    }
}
