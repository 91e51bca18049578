//! Compute spans timed by a guard ([`ComputeGuard`]) or by hand ([`DetachedSpan`]).

use super::Recorder;
use crate::clock::Stamp;

/// Ends a compute span when dropped.
#[must_use = "the span ends when the guard is dropped"]
pub struct ComputeGuard<'r> {
    pub(super) recorder: &'r Recorder,
    pub(super) name: &'static str,
    pub(super) start: Stamp,
}

impl Drop for ComputeGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        let end = self.recorder.stamp();
        self.recorder.record_compute(self.name, self.start, end);
    }
}

/// A compute span started with [`Recorder::start_compute`].
#[must_use = "call finish() to record the span"]
pub struct DetachedSpan {
    pub(super) name: &'static str,
    pub(super) start: Stamp,
}

impl DetachedSpan {
    /// Ends the span now and records it.
    pub fn finish(self, recorder: &Recorder) {
        recorder.record_compute(self.name, self.start, recorder.stamp());
    }
}
