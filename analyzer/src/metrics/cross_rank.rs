//! What crosses ranks, found once, each part on its own rank: both ends of every
//! message ([`super::message_ends`]), the members of every collective instance
//! ([`super::collective_ends`]) and the waits of one-sided epochs, matched across
//! ranks ([`super::one_sided`]). The figures that compare ranks (the wait states, the
//! network and collective models, the scheduler's waits, the per-request partner
//! times) read the other ranks here, in columns, not in their timelines: what they
//! read of a rank's own events is all they need of it.

use super::collective_ends::CollectiveEnds;
use super::message_ends::MessageEnds;
use super::wait_kind::Candidate;
use crate::model::{RequestsByPost, Trace};

/// The cross-rank columns of a trace.
pub struct CrossRank {
    /// Both ends of every message, by message.
    pub messages: MessageEnds,
    /// The members of every collective instance.
    pub collectives: CollectiveEnds,
    /// The trace's requests by the call that posted them: what joins a message's calls
    /// to its requests.
    pub requests_by_post: RequestsByPost,
    /// The Late Post, Early Wait and Late Complete candidates of the one-sided epochs.
    pub(crate) one_sided: Vec<Candidate>,
}

impl CrossRank {
    /// The columns of `trace` (the two side by side, each on rayon's threads).
    pub fn of(trace: &Trace) -> CrossRank {
        let _s = tracing::info_span!("cross-rank columns").entered();
        let requests_by_post = RequestsByPost::new(&trace.requests);
        let (messages, (collectives, one_sided)) = rayon::join(
            || MessageEnds::of_indexed(trace, &requests_by_post),
            || {
                let one_sided = super::one_sided::candidates(trace);
                (CollectiveEnds::of(trace), one_sided)
            },
        );
        CrossRank {
            messages,
            collectives,
            requests_by_post,
            one_sided,
        }
    }
}
