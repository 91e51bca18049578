//! One span of a rank's timeline ([`Span`]): an MPI call or a compute span, and which
//! ([`What`]). The leaf every room that walks a timeline reads.

use std::num::NonZeroU32;

use overlap_format::schema::{Nanos, Op};

/// What a span of a [`super::Timeline`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    /// A compute span; the name is `names[.0]` of its timeline.
    Compute(u32),
    /// An MPI call; its arguments are `calls[.1]` of its timeline.
    Call(Op, u32),
}

/// A call or compute span, ns since the run's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Start.
    pub start: Nanos,
    /// End (never before the start).
    pub end: Nanos,
    /// Recording thread.
    pub tid: u32,
    /// For a compute span that declared its buffers, their entry in its timeline
    /// ([`super::Timeline::access`]).
    pub access: Option<NonZeroU32>,
    /// What it is.
    pub what: What,
}

// Traces hold tens of millions of spans: naming a compute span's buffers costs no byte.
const _: () = assert!(std::mem::size_of::<Span>() == 32);

impl Span {
    /// Its duration.
    pub fn duration(&self) -> Nanos {
        self.end - self.start
    }

    /// The MPI call, if it is one.
    pub fn op(&self) -> Option<Op> {
        match self.what {
            What::Call(op, _) => Some(op),
            What::Compute(_) => None,
        }
    }
}
