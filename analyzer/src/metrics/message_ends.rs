//! The calls at both ends of a matched message, found once for every figure that reads
//! them: the send, the receive's post, the call that completed the receive, and the
//! call that completed the send (the blocking send itself, or the Wait* of an Isend).
//! The wait states, the eager-limit fit and the clean transfers of the network fit all
//! read a message through these.
//!
//! ```text
//!  rank 0  |Isend→1 (send)|........|Wait (send's completion)|
//!  rank 1  |Irecv←0 (receive post)|....|Wait (receive's completion)|
//! ```

use crate::model::{EventRef, Message, RequestLife, RequestsByPost, Span, Trace};

/// A call of a message's end: where it is, and its span.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct End<'a> {
    /// The call.
    pub at: EventRef,
    /// Its span.
    pub span: &'a Span,
}

/// The calls at the ends of one message.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MessageEnds<'a> {
    /// The sending call (Send, Isend, Sendrecv, a Start...).
    pub send: End<'a>,
    /// The call that posted the receive.
    pub recv_post: End<'a>,
    /// The call that completed the receive, when one did.
    pub recv_done: Option<End<'a>>,
    /// The call that completed the send, when one did: the sending call itself when it
    /// is no post.
    pub send_done: Option<End<'a>>,
}

impl<'a> MessageEnds<'a> {
    /// The ends of `m`, when its send and its receive's post are calls of `trace`.
    pub(crate) fn of(
        trace: &'a Trace,
        by_post: &RequestsByPost,
        m: &Message,
    ) -> Option<MessageEnds<'a>> {
        let end = |at: EventRef| trace.span(at).map(|span| End { at, span });
        let send = end(m.send())?;
        let recv_post = end(m.recv_post())?;
        let send_done = match send.span.op()?.class() {
            overlap_format::schema::OpClass::Post => {
                send_completion(&trace.requests, by_post, m.send()).and_then(|index| {
                    end(EventRef {
                        rank: m.send().rank,
                        index,
                    })
                })
            }
            _ => Some(send),
        };
        Some(MessageEnds {
            send,
            recv_post,
            recv_done: m.completion().and_then(end),
            send_done,
        })
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
    use overlap_format::schema::RequestKind;

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
