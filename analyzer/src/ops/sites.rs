//! Where the program made the calls behind a program's operations, and where the
//! instructions that touched its buffers are ([`CallSites`]): the trace a program was
//! built from knows (programs keep no site of their own, 8 bytes an operation), and a
//! symbolized table of its sites names the touches' lines.

use std::num::NonZeroU64;

use super::Operation;

/// Where the program made the calls behind a program's operations (see
/// [`crate::sites`]): the trace it was built from knows, through each operation's
/// `span`. Programs keep no site of their own (8 bytes an operation).
pub trait CallSites {
    /// The site of the call behind `op` of `rank`; none for compute, or when not
    /// recorded.
    fn site(&self, rank: u32, op: &Operation) -> Option<NonZeroU64>;

    /// Where in the source the instruction `ip` of `rank` that touched a buffer is, as a
    /// key: the same for every instruction of one line (of one function, without line
    /// information). None where sites are not symbolized (a trace alone, hand-built
    /// programs): a part of a gap that starts at a touch is then known by the calls
    /// around it and its request alone.
    fn touch_site(&self, _rank: u32, _ip: NonZeroU64) -> Option<u64> {
        None
    }
}

impl CallSites for crate::model::Trace {
    fn site(&self, rank: u32, op: &Operation) -> Option<NonZeroU64> {
        op.call?;
        self.rank(rank)?.call(op.span as usize)?.1.site
    }
}

/// Sites given by a function (hand-built programs).
impl<F: Fn(u32, &Operation) -> Option<NonZeroU64>> CallSites for F {
    fn site(&self, rank: u32, op: &Operation) -> Option<NonZeroU64> {
        self(rank, op)
    }
}
