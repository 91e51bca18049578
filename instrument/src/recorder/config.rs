//! How a recorder buffers and flushes, and what finishing one reports.

use std::time::Duration;

use crate::clock::ClockSource;

/// How a recorder buffers and flushes.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct RecorderConfig {
    /// Bytes of each thread's ring (rounded up to a power of two, at least 12 KiB): the
    /// bound on a thread's buffering. A call takes 10 to 20 bytes, a completion 3 to 10.
    pub ring_bytes: usize,
    /// How often the writer drains the rings and flushes to the file: the most a rank
    /// that dies can lose.
    pub flush_interval: Duration,
    /// The clock events are stamped with.
    pub clock: ClockSource,
    /// Run the writer thread at nice 19 (Linux): it copies and writes on CPU time nobody
    /// else wants, so ranks spinning in MPI on every core are barely slowed by it. A
    /// thread that finds its buffer full sleeps briefly so that the writer runs.
    pub idle_writer: bool,
    /// Dump the calls in flight (and mark the rank `stalled`) when no record reached any
    /// ring for this long while a thread was inside a call (see `inflight`).
    pub hang_timeout: Option<Duration>,
}

impl Default for RecorderConfig {
    fn default() -> Self {
        RecorderConfig {
            ring_bytes: 1 << 20,
            flush_interval: Duration::from_millis(50),
            clock: ClockSource::Auto,
            idle_writer: false,
            hang_timeout: None,
        }
    }
}

/// What finishing a recorder reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FinishReport {
    /// Call and compute events written.
    pub events: u64,
    /// Threads that recorded.
    pub threads: u32,
    /// Times a thread waited for room in its ring.
    pub buffer_stalls: u64,
}
