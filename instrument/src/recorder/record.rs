//! The form of an event as it sits in a thread's ring: no heap data, so appending it is
//! a memcpy.

use super::site::SiteWord;
use crate::clock::Stamp;
use crate::recorder::CallData;
use crate::schema::{ClockSync, Completion, Op, Started};

/// Group members one [`Record::Members`] carries (a record is no larger for it).
pub(crate) const MEMBERS_PER_RECORD: usize = 16;

/// One slot of a ring.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Record {
    /// An MPI call; `follow` completion or start records come right after it in the
    /// same group.
    Call {
        op: Op,
        start: Stamp,
        end: Stamp,
        site: SiteWord,
        data: CallData,
        follow: u32,
    },
    /// A completion belonging to the call before it.
    Completed(Completion),
    /// A persistent request started by the call before it.
    Started(Started),
    /// Up to [`MEMBERS_PER_RECORD`] world ranks of the group of the call before it
    /// (Win_start, Win_post), in group order.
    Members {
        ranks: [i32; MEMBERS_PER_RECORD],
        len: u8,
    },
    /// A compute span.
    Compute {
        name: &'static str,
        start: Stamp,
        end: Stamp,
    },
    /// A clock synchronisation result.
    Sync(ClockSync),
}
