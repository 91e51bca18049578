//! A fixed-size single-producer, single-consumer ring of records: the recording thread
//! appends without locking or allocating, the writer thread drains.
//!
//! A call and the completion records that belong to it are published together, so the
//! writer never sees half a group.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::record::Record;

/// The ring. `head` is written only by the owning thread, `tail` only by the writer.
pub(crate) struct Ring {
    slots: Box<[UnsafeCell<MaybeUninit<Record>>]>,
    mask: usize,
    head: AtomicUsize,
    tail: AtomicUsize,
    /// Times the producer found the ring full and had to wait.
    stalls: AtomicU64,
    /// Set when the producer asked the writer to drain early, cleared by the writer.
    wake_pending: AtomicBool,
    /// Requests this thread has numbered (producer only; atomic just to be `Sync`).
    requests: AtomicU64,
    /// Index of the thread within the recorder.
    pub(crate) tid: u32,
    /// The thread's name when it registered.
    pub(crate) thread_name: String,
}

// SAFETY: slots in [tail, head) are only read by the single consumer, slots outside only
// written by the single producer; `head`/`tail` publish them with Release/Acquire.
unsafe impl Sync for Ring {}
// SAFETY: `Record` is `Send`, and the ring owns its slots.
unsafe impl Send for Ring {}

/// What a push did, so the caller can wake the writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PushOutcome {
    /// Appended; the ring has room.
    Appended,
    /// Appended; the ring is more than half full and the writer should drain soon.
    AppendedWakeWriter,
    /// Not appended: the ring was full and `wait` gave up (the recorder is finishing).
    Dropped,
}

impl Ring {
    /// A ring holding at least `capacity` records (rounded up to a power of two, at least 64).
    pub(crate) fn new(capacity: usize, tid: u32, thread_name: String) -> Ring {
        let capacity = capacity.max(64).next_power_of_two();
        let slots = (0..capacity)
            .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
            .collect();
        Ring {
            slots,
            mask: capacity - 1,
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            stalls: AtomicU64::new(0),
            wake_pending: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            tid,
            thread_name,
        }
    }

    /// Number of slots.
    pub(crate) fn capacity(&self) -> usize {
        self.mask + 1
    }

    /// Appends `n` records made by `make(i)` as one group. Only the owning thread may call
    /// this. When the ring lacks room, calls `wait` (which should wake the writer and
    /// yield, and return false to give up) until it has room. `n` must not exceed the
    /// capacity.
    #[inline]
    pub(crate) fn push_group(
        &self,
        n: usize,
        mut make: impl FnMut(usize) -> Record,
        mut wait: impl FnMut() -> bool,
    ) -> PushOutcome {
        debug_assert!(n <= self.capacity());
        let head = self.head.load(Ordering::Relaxed);
        let mut tail = self.tail.load(Ordering::Acquire);
        if head.wrapping_sub(tail) + n > self.capacity() {
            self.stalls.fetch_add(1, Ordering::Relaxed);
            while head.wrapping_sub(tail) + n > self.capacity() {
                if !wait() {
                    return PushOutcome::Dropped;
                }
                tail = self.tail.load(Ordering::Acquire);
            }
        }
        for i in 0..n {
            let slot = &self.slots[head.wrapping_add(i) & self.mask];
            // SAFETY: the slot is outside [tail, head): the consumer does not touch it.
            unsafe { (*slot.get()).write(make(i)) };
        }
        let new_head = head.wrapping_add(n);
        self.head.store(new_head, Ordering::Release);
        if new_head.wrapping_sub(tail) * 2 > self.capacity()
            && !self.wake_pending.swap(true, Ordering::Relaxed)
        {
            PushOutcome::AppendedWakeWriter
        } else {
            PushOutcome::Appended
        }
    }

    /// Hands every published record to `f`, oldest first, then frees their slots.
    /// Only the writer thread may call this.
    pub(crate) fn drain(&self, mut f: impl FnMut(&Record)) {
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self.head.load(Ordering::Acquire);
        let n = head.wrapping_sub(tail);
        for i in 0..n {
            let slot = &self.slots[tail.wrapping_add(i) & self.mask];
            // SAFETY: slots in [tail, head) were initialised and published by the producer.
            f(unsafe { (*slot.get()).assume_init_ref() });
        }
        self.tail.store(head, Ordering::Release);
        self.wake_pending.store(false, Ordering::Relaxed);
    }

    /// The next request id of this thread: `(tid << 40) + n` for its n-th request
    /// (from 1). Only the owning thread may call this.
    #[inline]
    pub(crate) fn next_request_id(&self) -> u64 {
        let n = self.requests.load(Ordering::Relaxed) + 1;
        self.requests.store(n, Ordering::Relaxed);
        (u64::from(self.tid) << 40) + n
    }

    /// Times the producer waited for room.
    pub(crate) fn stalls(&self) -> u64 {
        self.stalls.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Stamp;
    use crate::schema::Nanos;
    use std::sync::Arc;

    fn compute(i: u64) -> Record {
        Record::Compute {
            name: "x",
            start: Stamp::from_nanos(Nanos(i)),
            end: Stamp::from_nanos(Nanos(i + 1)),
        }
    }

    fn start_of(r: &Record) -> Stamp {
        match r {
            Record::Compute { start, .. } => *start,
            _ => unreachable!("only compute records pushed"),
        }
    }

    #[test]
    fn groups_survive_wraparound_in_order() {
        let ring = Ring::new(64, 0, "main".into());
        let mut next = 0u64;
        let mut seen = Vec::new();
        for round in 0..50 {
            let n = 1 + round % 7;
            ring.push_group(n, |i| compute(next + i as u64), || panic!("never full"));
            next += n as u64;
            if round % 3 == 0 {
                ring.drain(|r| seen.push(start_of(r)));
            }
        }
        ring.drain(|r| seen.push(start_of(r)));
        let expected: Vec<Stamp> = (0..next).map(|i| Stamp::from_nanos(Nanos(i))).collect();
        assert_eq!(seen, expected);
        assert_eq!(ring.stalls(), 0);
    }

    #[test]
    fn full_ring_waits_for_the_consumer_and_loses_nothing() {
        let ring = Arc::new(Ring::new(64, 0, "main".into()));
        let consumer = {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                while seen.len() < 10_000 {
                    ring.drain(|r| seen.push(start_of(r)));
                    std::thread::yield_now();
                }
                seen
            })
        };
        for i in 0..10_000u64 {
            ring.push_group(
                1,
                |_| compute(i),
                || {
                    std::thread::yield_now();
                    true
                },
            );
        }
        let seen = consumer.join().expect("consumer ok");
        let expected: Vec<Stamp> = (0..10_000).map(|i| Stamp::from_nanos(Nanos(i))).collect();
        assert_eq!(seen, expected);
    }
}
