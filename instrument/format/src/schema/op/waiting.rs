//! Whether a call waits, asked of [`Op`] once for every reader: the time budget counts
//! a call that waits as waiting time, and the wait states, the false-overlap findings
//! and the GPU findings charge only a call that blocks. Both questions are answers of
//! [`Op::waiting`], so that they cannot drift apart.

use super::{CollectivePattern, Op, OpClass};

/// How a call waits for something that happens elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Waiting {
    /// It does not wait: posting (Isend, Start, Put...), local calls, Init/Finalize, the
    /// data-moving collectives (Allreduce, Bcast...), Win_post and Win_sync.
    Not,
    /// It blocks until another rank or a pending operation lets it go: the blocking
    /// point-to-point calls and Probe, the waiting completion calls (the Wait family), and
    /// the one-sided synchronisation calls that may wait (Win_start, Win_complete,
    /// Win_wait, locks, unlocks, flushes).
    Blocks,
    /// Its job is to wait, but it returns at once: the Test family and Win_test.
    Polls,
    /// A collective whose job is to wait for the other ranks: Barrier, and the
    /// barrier-like window calls (Win_fence, Win_free).
    Synchronizes,
}

impl Op {
    /// How this call waits ([`Waiting`]).
    pub fn waiting(self) -> Waiting {
        match self.class() {
            OpClass::BlockingPointToPoint => Waiting::Blocks,
            OpClass::Completion if self.is_test() => Waiting::Polls,
            OpClass::Completion => Waiting::Blocks,
            OpClass::OneSidedSync => match self {
                Op::WinPost | Op::WinSync => Waiting::Not,
                Op::WinTest => Waiting::Polls,
                _ => Waiting::Blocks,
            },
            _ if self.collective_pattern() == Some(CollectivePattern::Barrier) => {
                Waiting::Synchronizes
            }
            _ => Waiting::Not,
        }
    }

    /// True for calls that block until something happens elsewhere (wait states are
    /// charged to them): [`Waiting::Blocks`]. A Test, a Win_test, a Win_post and a
    /// Win_sync never block.
    pub fn blocks(self) -> bool {
        self.waiting() == Waiting::Blocks
    }

    /// True for calls counted as waiting time: those whose job is to wait for a transfer
    /// or for other ranks, whether they block, poll or synchronize (anything but
    /// [`Waiting::Not`]).
    pub fn is_waiting(self) -> bool {
        self.waiting() != Waiting::Not
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call that blocks is a waiting one; the Test family and Win_test poll, Barrier
    /// and Win_fence synchronize, Wait blocks, a post does not wait.
    #[test]
    fn blocking_calls_are_waiting_ones() {
        for op in Op::ALL {
            assert!(!op.blocks() || op.is_waiting(), "{op:?}");
        }
        assert_eq!(Op::Test.waiting(), Waiting::Polls);
        assert_eq!(Op::WinTest.waiting(), Waiting::Polls);
        assert_eq!(Op::Barrier.waiting(), Waiting::Synchronizes);
        assert_eq!(Op::WinFence.waiting(), Waiting::Synchronizes);
        assert_eq!(Op::Wait.waiting(), Waiting::Blocks);
        assert_eq!(Op::Isend.waiting(), Waiting::Not);
        assert_eq!(Op::WinPost.waiting(), Waiting::Not);
    }
}
