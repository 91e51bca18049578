//! Compute spans timed by a guard ([`ComputeGuard`]) or by hand ([`DetachedSpan`]).

use super::{BufferAccess, Recorder};
use crate::clock::Stamp;

/// Ends a compute span when dropped.
#[must_use = "the span ends when the guard is dropped"]
pub struct ComputeGuard<'r> {
    pub(super) recorder: &'r Recorder,
    pub(super) name: &'static str,
    pub(super) buffers: Option<BufferAccess>,
    pub(super) start: Stamp,
}

impl Drop for ComputeGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        let end = self.recorder.stamp();
        self.recorder
            .record_compute_with(self.name, self.buffers, self.start, end);
    }
}

/// A compute span started with [`Recorder::start_compute`].
#[must_use = "call finish() to record the span"]
pub struct DetachedSpan {
    pub(super) name: &'static str,
    pub(super) buffers: Option<BufferAccess>,
    pub(super) start: Stamp,
}

impl DetachedSpan {
    /// Ends the span now and records it.
    pub fn finish(self, recorder: &Recorder) {
        recorder.record_compute_with(self.name, self.buffers, self.start, recorder.stamp());
    }
}
