//! The eager limit the trace shows: the one split of messages into eager and rendezvous
//! that the network fit ([`super::transfer`]) and the replay ([`crate::replay`]) share.
//!
//! A send that completed before its receive was posted went eagerly (the library
//! buffered it); a send whose completion was entered before the receive was posted and
//! left after it waited for the receiver (rendezvous). The limit is the largest message
//! seen eager; the smallest larger one seen waiting is reported beside it. When no
//! message was seen eager the limit is the user's (`--eager-limit`) or
//! [`DEFAULT_EAGER_LIMIT`].
//!
//! ```text
//!  r0 |Isend 64K|Wait|..........          eager: the Wait ended (2) before the
//!  r1 |c 0 ------------ 5|Irecv|Wait|     Irecv was posted (5): 64 KiB <= limit
//! ```

use rayon::prelude::*;
use serde::Serialize;

use super::message_ends::MessageEnds;
use crate::model::{Message, Trace};

/// The eager limit assumed when neither the trace nor the user says: 64 KiB, the order
/// of MPICH's eager thresholds (ch3 switches to rendezvous above 128 KiB, its
/// shared-memory paths lower). Figures that assumed it say so.
pub const DEFAULT_EAGER_LIMIT: u64 = 64 * 1024;

/// How a message travels.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// Buffered by the library: the send completes without the receiver.
    Eager,
    /// Sent once the receiver has asked for it: the send waits for the receive.
    Rendezvous,
}

/// What the trace's messages show of the eager limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct EagerFit {
    /// The largest message whose send completed before its receive was posted, bytes;
    /// none when no message was seen eager.
    pub largest_eager: Option<u64>,
    /// The smallest message larger than that whose send's completion was entered before
    /// its receive was posted and left after it (it waited for the receiver), bytes.
    pub smallest_rendezvous: Option<u64>,
}

impl Protocol {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Eager => "eager",
            Protocol::Rendezvous => "rendezvous",
        }
    }
}

impl EagerFit {
    /// The limit of `trace`'s messages.
    pub fn of(trace: &Trace) -> EagerFit {
        EagerFit::of_ends(trace, &MessageEnds::of(trace))
    }

    /// [`EagerFit::of`], the ends of `trace`'s messages already found.
    pub(crate) fn of_ends(trace: &Trace, ends: &MessageEnds) -> EagerFit {
        // Each message's send completion against its receive's post, on rayon's
        // threads: the largest message that completed before it was posted, then the
        // smallest larger one whose send waited into its post.
        let sent_done = |(mi, m): (usize, &Message)| {
            let e = ends.ends(mi, m)?;
            Some((m.bytes, e.send_done?, e.recv_post_start))
        };
        let messages = || trace.messages.par_iter().enumerate().filter_map(sent_done);
        let largest_eager = messages()
            .filter(|(_, done, posted)| done.end < *posted)
            .map(|(bytes, _, _)| bytes)
            .max();
        let smallest_rendezvous = largest_eager.and_then(|largest| {
            messages()
                .filter(|(bytes, done, posted)| {
                    done.end >= *posted && done.start < *posted && *bytes > largest
                })
                .map(|(bytes, _, _)| bytes)
                .min()
        });
        EagerFit {
            largest_eager,
            smallest_rendezvous,
        }
    }

    /// The limit: the largest message seen eager, else [`DEFAULT_EAGER_LIMIT`].
    pub fn limit(&self) -> u64 {
        self.largest_eager.unwrap_or(DEFAULT_EAGER_LIMIT)
    }

    /// The protocol of a message of `bytes` under [`Self::limit`].
    pub fn protocol(&self, bytes: u64) -> Protocol {
        if bytes <= self.limit() {
            Protocol::Eager
        } else {
            Protocol::Rendezvous
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_the_largest_eager_message_or_the_default() {
        let seen = EagerFit {
            largest_eager: Some(4096),
            smallest_rendezvous: Some(65536),
        };
        assert_eq!(seen.limit(), 4096);
        assert_eq!(seen.protocol(4096), Protocol::Eager);
        assert_eq!(seen.protocol(4097), Protocol::Rendezvous);
        let none = EagerFit::default();
        assert_eq!(none.limit(), DEFAULT_EAGER_LIMIT);
        assert_eq!(none.protocol(DEFAULT_EAGER_LIMIT + 1), Protocol::Rendezvous);
    }
}
