//! A fixed-size single-producer, single-consumer ring of bytes: the recording thread
//! appends encoded records without locking or allocating, the writer thread copies what
//! was published straight into a page of the file.
//!
//! A call and the records that belong to it (completions, starts, group members, and
//! the definitions of a new name or source line) are published together, so the writer
//! never copies half a group and a page always ends between records.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use overlap_format::stream::codec::Deltas;
use overlap_format::stream::varint::{RecordOut, RECORD_MAX};

use super::encode::ThreadEncoder;
use super::inflight::Slot;

/// The ring. `head` is written only by the owning thread, `tail` only by the writer.
pub(crate) struct Ring {
    bytes: Box<[UnsafeCell<u8>]>,
    mask: usize,
    head: AtomicUsize,
    tail: AtomicUsize,
    /// Times the producer found the ring full and had to wait.
    stalls: AtomicU64,
    /// Calls and compute spans published (producer only; atomic to be read at the end).
    events: AtomicU64,
    /// Set when the producer asked the writer to drain early, cleared by the writer.
    wake_pending: AtomicBool,
    /// Requests this thread has numbered (producer only; atomic just to be `Sync`).
    requests: AtomicU64,
    /// The producer's encoding state (producer only).
    pub(crate) encoder: UnsafeCell<ThreadEncoder>,
    /// The delta state after the last published group (producer only).
    pub(crate) deltas: UnsafeCell<Deltas>,
    /// Index of the thread within the recorder.
    pub(crate) tid: u32,
    /// The thread's name when it registered.
    pub(crate) thread_name: String,
    /// The call the thread is inside (written by the producer, read by the writer).
    pub(crate) in_flight: Slot,
}

// SAFETY: bytes in [tail, head) are only read by the single consumer, bytes outside only
// written by the single producer; `head`/`tail` publish them with Release/Acquire. The
// encoder is only touched by the producer.
unsafe impl Sync for Ring {}
// SAFETY: the ring owns its bytes and its encoder, which hold no thread-bound data.
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

/// A group being appended: records go in one by one, and are published together.
pub(crate) struct Group<'r, W: FnMut() -> bool> {
    ring: &'r Ring,
    at: usize,
    tail: usize,
    wait: W,
    dropped: bool,
}

/// Encodes a record straight into the ring's memory (or a stack buffer, where the
/// ring wraps). Writes past [`RECORD_MAX`] are dropped and spoil the record.
pub(crate) struct Cursor {
    at: *mut u8,
    len: usize,
}

impl RecordOut for Cursor {
    #[inline(always)]
    fn put_u8(&mut self, b: u8) {
        if self.len < RECORD_MAX {
            // SAFETY: `at` points to RECORD_MAX writable bytes the producer owns.
            unsafe { self.at.add(self.len).write(b) };
        }
        self.len += 1;
    }

    /// One bound check per integer rather than per byte: the hot path's records are
    /// a dozen integers, most of one byte.
    #[inline(always)]
    fn put_var(&mut self, mut v: u64) {
        if self.len > RECORD_MAX - VAR_MAX {
            return self.put_var_checked(v);
        }
        // SAFETY: at most VAR_MAX bytes from `len`, inside the RECORD_MAX bytes at `at`.
        unsafe {
            let mut p = self.at.add(self.len);
            while v >= 0x80 {
                p.write(v as u8 | 0x80);
                p = p.add(1);
                v >>= 7;
            }
            p.write(v as u8);
            self.len = p.offset_from(self.at) as usize + 1;
        }
    }
}

/// The most bytes one LEB128 integer takes.
const VAR_MAX: usize = 10;

impl Cursor {
    #[cold]
    fn put_var_checked(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.put_u8(v as u8 | 0x80);
            v >>= 7;
        }
        self.put_u8(v as u8);
    }
}

impl<W: FnMut() -> bool> Group<'_, W> {
    /// Makes room for `n` more bytes, waiting for the writer when the ring is full.
    /// False when the group was dropped.
    #[inline(always)]
    fn room(&mut self, n: usize) -> bool {
        if self.dropped {
            return false;
        }
        let ring = self.ring;
        let end = self.at.wrapping_add(n);
        if end.wrapping_sub(self.tail) > ring.capacity() {
            self.wait_for_room(end);
        }
        !self.dropped
    }

    #[cold]
    fn wait_for_room(&mut self, end: usize) {
        let ring = self.ring;
        self.tail = ring.tail.load(Ordering::Acquire);
        if end.wrapping_sub(self.tail) > ring.capacity() {
            ring.stalls.fetch_add(1, Ordering::Relaxed);
            while end.wrapping_sub(self.tail) > ring.capacity() {
                if !(self.wait)() {
                    self.dropped = true;
                    return;
                }
                self.tail = ring.tail.load(Ordering::Acquire);
            }
        }
    }

    /// Appends one record encoded by `encode` (at most [`RECORD_MAX`] bytes).
    #[inline(always)]
    pub(crate) fn record(&mut self, encode: impl FnOnce(&mut Cursor)) {
        if !self.room(RECORD_MAX) {
            return;
        }
        let ring = self.ring;
        let start = self.at & ring.mask;
        if start + RECORD_MAX <= ring.capacity() {
            // SAFETY: [start, start + RECORD_MAX) is inside the ring and outside
            // [tail, head): `room` checked it.
            let mut c = Cursor {
                at: unsafe { ring.base().add(start) },
                len: 0,
            };
            encode(&mut c);
            self.commit(c.len);
        } else {
            self.record_wrapping(encode);
        }
    }

    #[cold]
    fn record_wrapping(&mut self, encode: impl FnOnce(&mut Cursor)) {
        let mut scratch = [0u8; RECORD_MAX];
        let mut c = Cursor {
            at: scratch.as_mut_ptr(),
            len: 0,
        };
        encode(&mut c);
        if c.len <= RECORD_MAX {
            self.ring.copy_in(self.at, &scratch[..c.len]);
        }
        self.commit(c.len);
    }

    #[inline(always)]
    fn commit(&mut self, len: usize) {
        if len > RECORD_MAX {
            // An encoder bug: never publish a spoilt record.
            self.dropped = true;
        } else {
            self.at = self.at.wrapping_add(len);
        }
    }

    /// Appends raw bytes (a string definition's text), waiting for room as needed. A
    /// group must stay under half the ring.
    #[inline]
    pub(crate) fn put(&mut self, bytes: &[u8]) {
        if self.room(bytes.len()) {
            self.ring.copy_in(self.at, bytes);
            self.at = self.at.wrapping_add(bytes.len());
        }
    }

    /// Publishes the group; returns what happened.
    #[inline]
    pub(crate) fn publish(self, events: u64) -> PushOutcome {
        let ring = self.ring;
        if self.dropped {
            return PushOutcome::Dropped;
        }
        ring.head.store(self.at, Ordering::Release);
        // Release: whoever sees the count sees the bytes it counts.
        ring.events.store(
            ring.events.load(Ordering::Relaxed) + events,
            Ordering::Release,
        );
        if self.at.wrapping_sub(self.tail) * 2 > ring.capacity()
            && !ring.wake_pending.swap(true, Ordering::Relaxed)
        {
            PushOutcome::AppendedWakeWriter
        } else {
            PushOutcome::Appended
        }
    }
}

/// The size of a ring asked to hold `bytes`: a power of two, at least 64 of the largest
/// records.
pub(crate) fn ring_size(bytes: usize) -> usize {
    bytes.max(64 * RECORD_MAX).next_power_of_two()
}

impl Ring {
    /// A ring of at least `capacity` bytes (rounded up to a power of two, at least 64
    /// records of the largest size).
    pub(crate) fn new(capacity: usize, tid: u32, thread_name: String) -> Ring {
        let capacity = ring_size(capacity);
        Ring {
            bytes: (0..capacity).map(|_| UnsafeCell::new(0)).collect(),
            mask: capacity - 1,
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            stalls: AtomicU64::new(0),
            events: AtomicU64::new(0),
            wake_pending: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            encoder: UnsafeCell::new(ThreadEncoder::default()),
            deltas: UnsafeCell::new(Deltas::default()),
            tid,
            thread_name,
            in_flight: Slot::default(),
        }
    }

    /// Bytes it holds.
    pub(crate) fn capacity(&self) -> usize {
        self.mask + 1
    }

    fn base(&self) -> *mut u8 {
        // UnsafeCell<u8> has the layout of u8, so the slice is one run of bytes.
        UnsafeCell::raw_get(self.bytes.as_ptr())
    }

    /// Copies `src` in at position `at` (wrapping). Producer only, outside [tail, head).
    #[inline]
    fn copy_in(&self, at: usize, src: &[u8]) {
        let start = at & self.mask;
        let first = src.len().min(self.capacity() - start);
        // SAFETY: both ranges lie inside the ring's bytes; the producer owns them (they
        // are outside [tail, head), which the caller checked) and `src` is not in the ring.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.base().add(start), first);
            if first < src.len() {
                std::ptr::copy_nonoverlapping(
                    src.as_ptr().add(first),
                    self.base(),
                    src.len() - first,
                );
            }
        }
    }

    /// Starts a group. Only the owning thread may call this; `wait` is called while the
    /// ring is full (it should wake the writer and sleep, and return false to give up).
    #[inline]
    pub(crate) fn group<W: FnMut() -> bool>(&self, wait: W) -> Group<'_, W> {
        let head = self.head.load(Ordering::Relaxed);
        Group {
            ring: self,
            at: head,
            tail: self.tail.load(Ordering::Acquire),
            wait,
            dropped: false,
        }
    }

    /// Hands every published byte to `f` (as one or two slices, oldest first), then frees
    /// them. Only the writer thread may call this. Returns the bytes handed over.
    pub(crate) fn drain(&self, f: impl FnOnce(&[u8], &[u8])) -> usize {
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self.head.load(Ordering::Acquire);
        let n = head.wrapping_sub(tail);
        if n > 0 {
            let start = tail & self.mask;
            let first = n.min(self.capacity() - start);
            // SAFETY: bytes in [tail, head) were written and published by the producer,
            // which does not touch them until `tail` moves past them.
            let (a, b) = unsafe {
                (
                    std::slice::from_raw_parts(self.base().add(start), first),
                    std::slice::from_raw_parts(self.base(), n - first),
                )
            };
            f(a, b);
        }
        self.tail.store(head, Ordering::Release);
        self.wake_pending.store(false, Ordering::Relaxed);
        n
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

    /// Calls and compute spans published.
    pub(crate) fn events(&self) -> u64 {
        self.events.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn push(ring: &Ring, records: &[&[u8]]) -> PushOutcome {
        let mut g = ring.group(|| {
            std::thread::yield_now();
            true
        });
        for r in records {
            g.put(r);
        }
        g.publish(records.len() as u64)
    }

    fn drained(ring: &Ring) -> Vec<u8> {
        let mut out = Vec::new();
        ring.drain(|a, b| {
            out.extend_from_slice(a);
            out.extend_from_slice(b);
        });
        out
    }

    #[test]
    fn groups_survive_wraparound_in_order() {
        let ring = Ring::new(0, 0, "main".into());
        let mut next = 0u8;
        let (mut sent, mut seen) = (Vec::new(), Vec::new());
        for round in 0..5_000usize {
            let records: Vec<Vec<u8>> = (0..1 + round % 7)
                .map(|i| {
                    (0..1 + (round * 31 + i) % 150)
                        .map(|_| {
                            next = next.wrapping_add(1);
                            next
                        })
                        .collect()
                })
                .collect();
            let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
            push(&ring, &refs);
            sent.extend(records.concat());
            if round % 3 == 0 {
                seen.extend(drained(&ring));
            }
        }
        seen.extend(drained(&ring));
        assert_eq!(seen, sent);
        assert_eq!(ring.stalls(), 0);
    }

    #[test]
    fn a_full_ring_waits_for_the_consumer_and_loses_nothing() {
        let ring = Arc::new(Ring::new(0, 0, "main".into()));
        let total = 200_000usize;
        let consumer = {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                // Let the producer fill the ring first.
                std::thread::sleep(std::time::Duration::from_millis(20));
                let mut seen = Vec::new();
                while seen.len() < total {
                    seen.extend(drained(&ring));
                    std::thread::yield_now();
                }
                seen
            })
        };
        let sent: Vec<u8> = (0..total).map(|i| (i % 251) as u8).collect();
        for chunk in sent.chunks(10) {
            assert_ne!(push(&ring, &[chunk]), PushOutcome::Dropped);
        }
        assert_eq!(consumer.join().expect("consumer ok"), sent);
        assert!(ring.stalls() > 0, "the small ring filled up");
    }

    #[test]
    fn a_group_that_gives_up_publishes_nothing() {
        let ring = Ring::new(0, 0, "main".into());
        let fill = vec![1u8; ring.capacity() - 10];
        push(&ring, &[&fill]);
        let mut g = ring.group(|| false);
        g.put(&[2; 5]);
        g.put(&[3; 20]);
        assert_eq!(g.publish(1), PushOutcome::Dropped);
        assert_eq!(drained(&ring), fill);
        assert_eq!(ring.events(), 1);
    }
}
