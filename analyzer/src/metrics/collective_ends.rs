//! The members of every collective instance, each found on its own rank, for every
//! figure that compares the members of an instance: the collective wait states, the
//! non-blocking collectives' model and the per-request partner times read an instance
//! here, never a call of another rank.
//!
//! A member of a blocking instance is its call (entered and left); a member of a
//! non-blocking one is its request: its post (or start), its call's operation, root
//! and size, and the call that completed it. Which calls form an instance is
//! [`super::collectives`]' rule (the k-th collective of each rank on one communicator
//! or window); what each member did is read from its own rank's timeline.
//!
//! ```text
//!  rank 0  |Ibarrier 0-1|.... compute ....|Wait 6-7|   member: posted 0, waited 6-7
//!  rank 1  ...... compute ......|Ibarrier 5-6|Wait 6-7|  member: posted 5, waited 6-7
//! ```

use overlap_format::schema::{Nanos, Op, RequestKind};
use rayon::prelude::*;

use super::collectives::{instances, nonblocking};
use super::message_ends::Done;
use crate::model::{EventRef, RequestLife, Timeline, Trace};

/// One member of a collective instance, as the wait states compare them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Member {
    /// Its rank.
    pub rank: u32,
    /// The call it joined with: the blocking call, or its post or start.
    pub call: EventRef,
    /// When it joined: entry into that call.
    pub entered: Nanos,
    /// The call that waited and its span, when one did.
    pub waited: Option<(EventRef, Nanos, Nanos)>,
}

/// A blocking instance: the first member's operation and root, and every member whose
/// call is in the trace, in rank order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Blocking {
    /// The operation (the first member's).
    pub op: Op,
    /// The root's world rank, of a rooted collective whose first member recorded it.
    pub root: Option<i32>,
    /// The members.
    pub members: Vec<Member>,
}

/// A member of a non-blocking instance: its request, as its rank recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Request {
    /// The request (its index in the trace's requests).
    pub request: usize,
    /// Its rank.
    pub rank: u32,
    /// Its post (or start), when that call is in the trace: the call and its entry.
    pub posted: Option<(EventRef, Nanos)>,
    /// The posting call's operation, root and size (none when it is not a call).
    pub call: Option<(Op, Option<i32>, Option<u64>)>,
    /// The call that completed it, when one did.
    pub done: Option<Done>,
}

impl Request {
    /// The member as the wait states compare it, when its post is known: it waited in
    /// its completion when that call blocks.
    pub(crate) fn member(&self) -> Option<Member> {
        let (call, entered) = self.posted?;
        Some(Member {
            rank: self.rank,
            call,
            entered,
            waited: (self.done)
                .filter(|d| d.blocks)
                .map(|d| (d.at, d.start, d.end)),
        })
    }
}

/// Every collective instance of a trace, its members read on their own ranks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CollectiveEnds {
    /// The blocking instances whose first member is a call.
    pub(crate) blocking: Vec<Blocking>,
    /// The non-blocking instances, members in rank order.
    pub(crate) nonblocking: Vec<Vec<Request>>,
}

impl CollectiveEnds {
    /// The instances of `trace` (the instances on rayon's threads).
    pub fn of(trace: &Trace) -> CollectiveEnds {
        let blocking = instances(trace)
            .members
            .par_iter()
            .filter_map(|members| {
                let first = members.first()?;
                let (op, call) = trace.rank(first.rank)?.call(first.index)?;
                let members = (members.iter())
                    .filter_map(|&at| blocking_member(trace.rank(at.rank)?, at))
                    .collect();
                Some(Blocking {
                    op,
                    root: call.root(),
                    members,
                })
            })
            .collect();
        let nonblocking = nonblocking(trace)
            .par_iter()
            .map(|requests| {
                (requests.iter())
                    .filter_map(|&i| {
                        let r = trace.requests.get(i)?;
                        debug_assert_eq!(r.kind, RequestKind::Collective);
                        Some(request_member(trace.rank(r.rank)?, i, r))
                    })
                    .collect()
            })
            .collect();
        CollectiveEnds {
            blocking,
            nonblocking,
        }
    }
}

/// The member of a blocking instance whose call is `at`, of the rank whose timeline is
/// `t`: it joins and waits in that call.
pub(crate) fn blocking_member(t: &Timeline, at: EventRef) -> Option<Member> {
    let s = t.spans.get(at.index)?;
    Some(Member {
        rank: at.rank,
        call: at,
        entered: s.start,
        waited: Some((at, s.start, s.end)),
    })
}

/// The member of a non-blocking instance that request `r` (index `request`) is, of the
/// rank whose timeline is `t`.
pub(crate) fn request_member(t: &Timeline, request: usize, r: &RequestLife) -> Request {
    let at = |index| EventRef {
        rank: r.rank,
        index,
    };
    Request {
        request,
        rank: r.rank,
        posted: t.spans.get(r.post()).map(|s| (at(r.post()), s.start)),
        call: t
            .call(r.args())
            .map(|(op, call)| (op, call.root(), call.bytes())),
        done: r.completion().and_then(|c| {
            let s = t.spans.get(c)?;
            Some(Done {
                at: at(c),
                start: s.start,
                end: s.end,
                blocks: s.op().is_some_and(|op| op.blocks()),
            })
        }),
    }
}
