//! What each recording thread is inside, and the in-flight dump that tells it.
//!
//! A call's record is written when the call returns, so a rank stuck in a call leaves no
//! trace of it. Each thread's ring therefore carries a [`Slot`]: on entering a wrapped
//! call the thread publishes the op, its start stamp, its site and what it waits on
//! (peer and tag, communicator, root, the number of requests) with a few relaxed stores
//! under a sequence number, and clears it on return. The writer thread reads the slots
//! without locking (a read torn by the owner is seen through the sequence number and
//! taken again) and writes them as an `InFlight` frame when the rank is told to dump
//! ([`request_dump`], async-signal-safe, for a SIGUSR1 handler) or, with a hang timeout,
//! when no record reached any ring for that long while a thread was inside a call. After
//! a dump it creates the marker `rank-N.dump` beside the rank file (write, then rename),
//! holding `signal <unix_ns>` or `stalled <unix_ns>`; a `stalled` marker is removed when
//! records flow again. `overlap trace` watches these markers (docs/trace-format.md).

use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use overlap_format::stream::inflight::{fields, RawCall, RawDump};

use super::ring::Ring;
use super::site::SiteWord;
use super::Recorder;
use crate::clock::Stamp;
use crate::identity::realtime_now_ns;
use crate::schema::{marker, DumpReason, Op};

/// Set by [`request_dump`]; taken by the writer of any recorder.
static DUMP_REQUESTED: AtomicBool = AtomicBool::new(false);

/// Asks the rank's recorder for an in-flight dump at its writer's next wake-up (within
/// one flush interval). Async-signal-safe: one atomic store.
pub fn request_dump() {
    DUMP_REQUESTED.store(true, Ordering::Relaxed);
}

/// What a call waits on as it starts, named as its record names it (world ranks,
/// communicator ids). Fields a call does not have stay `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitsOn {
    /// Communicator id.
    pub comm: Option<u32>,
    /// Peer (destination of a send, source of a receive) and tag.
    pub peer: Option<(i32, i32)>,
    /// Sendrecv's receive half: source and tag.
    pub recv: Option<(i32, i32)>,
    /// Root of a rooted collective.
    pub root: Option<i32>,
    /// Request handles given to a Wait or Test.
    pub requests: Option<u32>,
}

impl Recorder {
    /// Publishes that the calling thread entered `op` at `start`, from the caller's
    /// source line, waiting on `waits` (read by an in-flight dump until
    /// [`Recorder::leave`]). For the Rust layer; the preload goes through its
    /// [`super::ThreadRecorder`].
    #[inline]
    #[track_caller]
    pub fn enter(&self, op: Op, start: Stamp, waits: &WaitsOn) {
        let site = SiteWord::source(std::panic::Location::caller()).word();
        self.with_ring(|ring| ring.in_flight.enter(op, start.raw(), site, waits));
    }

    /// The calling thread left the call it entered.
    #[inline]
    pub fn leave(&self) {
        self.with_ring(|ring| ring.in_flight.leave());
    }
}

/// A thread's in-flight call. `seq` counts by four per call: `4k` idle, `4k + 1` being
/// filled, `4k + 2` inside the call described by the other words.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    seq: AtomicU64,
    /// op code | fields << 16 | root << 32.
    op: AtomicU64,
    start: AtomicU64,
    site: AtomicU64,
    /// peer | tag << 32.
    peer: AtomicU64,
    /// recv_peer | recv_tag << 32.
    recv: AtomicU64,
    /// comm | requests << 32.
    comm: AtomicU64,
}

fn pair(a: i32, b: i32) -> u64 {
    u64::from(a as u32) | (u64::from(b as u32) << 32)
}

fn halves(w: u64) -> (u32, u32) {
    (w as u32, (w >> 32) as u32)
}

impl Slot {
    /// The owning thread enters a call. Owner only.
    #[inline(always)]
    pub(crate) fn enter(&self, op: Op, start: u64, site: u64, w: &WaitsOn) {
        let s = self.seq.load(Ordering::Relaxed) & !3;
        self.seq.store(s + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        let mut f = 0u16;
        let mut bit = |set: bool, b: u16| f |= if set { b } else { 0 };
        bit(w.comm.is_some(), fields::COMM);
        bit(w.peer.is_some(), fields::PEER);
        bit(w.recv.is_some(), fields::RECV);
        bit(w.root.is_some(), fields::ROOT);
        bit(w.requests.is_some(), fields::REQUESTS);
        let root = w.root.unwrap_or(0) as u32;
        let op_word = u64::from(op.code()) | (u64::from(f) << 16) | (u64::from(root) << 32);
        self.op.store(op_word, Ordering::Relaxed);
        self.start.store(start, Ordering::Relaxed);
        self.site.store(site, Ordering::Relaxed);
        let (peer, tag) = w.peer.unwrap_or_default();
        self.peer.store(pair(peer, tag), Ordering::Relaxed);
        let (rpeer, rtag) = w.recv.unwrap_or_default();
        self.recv.store(pair(rpeer, rtag), Ordering::Relaxed);
        let comm = w.comm.unwrap_or(0);
        let requests = w.requests.unwrap_or(0);
        self.comm.store(
            u64::from(comm) | (u64::from(requests) << 32),
            Ordering::Relaxed,
        );
        self.seq.store(s + 2, Ordering::Release);
    }

    /// The owning thread left its call. Owner only.
    #[inline(always)]
    pub(crate) fn leave(&self) {
        let s = self.seq.load(Ordering::Relaxed) & !3;
        self.seq.store(s + 4, Ordering::Release);
    }

    /// True when the owner is inside a call (or entering one).
    pub(crate) fn busy(&self) -> bool {
        self.seq.load(Ordering::Acquire) & 3 != 0
    }

    /// The owner's call, if it is inside one, read consistently (any thread).
    pub(crate) fn read(&self, tid: u32) -> Option<RawCall> {
        for _ in 0..1000 {
            let s1 = self.seq.load(Ordering::Acquire);
            match s1 & 3 {
                0 => return None,
                2 => {}
                _ => {
                    std::hint::spin_loop();
                    continue;
                }
            }
            let op = self.op.load(Ordering::Relaxed);
            let start = self.start.load(Ordering::Relaxed);
            let site = self.site.load(Ordering::Relaxed);
            let peer = halves(self.peer.load(Ordering::Relaxed));
            let recv = halves(self.recv.load(Ordering::Relaxed));
            let comm = halves(self.comm.load(Ordering::Relaxed));
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) != s1 {
                continue;
            }
            return Some(RawCall {
                tid,
                op: op as u16,
                fields: (op >> 16) as u16,
                start,
                site,
                comm: comm.0,
                peer: peer.0 as i32,
                tag: peer.1 as i32,
                recv_peer: recv.0 as i32,
                recv_tag: recv.1 as i32,
                root: (op >> 32) as u32 as i32,
                requests: comm.1,
            });
        }
        None
    }
}

/// The writer's watch: when a dump is due, and the marker it leaves.
pub(crate) struct Watch {
    timeout: Option<Duration>,
    marker: Option<PathBuf>,
    /// Asked of this recorder alone (see `Recorder::request_dump`).
    asked: Arc<AtomicBool>,
    last_events: u64,
    last_change: Instant,
    /// A stalled dump was written for the current stall.
    stall_dumped: bool,
    /// The marker on disk says `stalled`.
    marker_stalled: bool,
}

impl Watch {
    pub(crate) fn new(
        timeout: Option<Duration>,
        marker: Option<PathBuf>,
        asked: Arc<AtomicBool>,
    ) -> Watch {
        Watch {
            timeout,
            marker,
            asked,
            last_events: 0,
            last_change: Instant::now(),
            stall_dumped: false,
            marker_stalled: false,
        }
    }

    /// How long the writer may sleep between looks: at most half the timeout.
    pub(crate) fn interval(&self, flush: Duration) -> Duration {
        match self.timeout {
            Some(t) => flush.min(t / 2).max(Duration::from_millis(1)),
            None => flush,
        }
    }

    /// Whether a dump is due now, given the rings; notes progress (and removes a
    /// `stalled` marker once records flow again).
    pub(crate) fn due(&mut self, rings: &[Arc<Ring>]) -> Option<DumpReason> {
        let now = Instant::now();
        let events: u64 = rings.iter().map(|r| r.events()).sum();
        let progressed = events != self.last_events;
        if progressed {
            self.last_events = events;
            self.last_change = now;
            self.stall_dumped = false;
            self.unmark_stalled();
        }
        let asked = self.asked.swap(false, Ordering::Relaxed);
        if DUMP_REQUESTED.swap(false, Ordering::Relaxed) || asked {
            return Some(DumpReason::Signal);
        }
        let timeout = self.timeout?;
        if !rings.iter().any(|r| r.in_flight.busy()) {
            // Computing, not waiting: the clock starts when a call is entered.
            self.last_change = now;
            return None;
        }
        if !self.stall_dumped && now.duration_since(self.last_change) >= timeout {
            self.stall_dumped = true;
            return Some(DumpReason::Stalled);
        }
        None
    }

    /// Removes a `stalled` marker (records flow again, or recording is over: it no
    /// longer says anything true).
    pub(crate) fn unmark_stalled(&mut self) {
        if self.marker_stalled {
            self.marker_stalled = false;
            if let Some(m) = &self.marker {
                let _ = std::fs::remove_file(m);
            }
        }
    }

    /// The marker after a dump was written and flushed (errors are ignored: the dump in
    /// the rank file is what counts; the marker only tells the launcher).
    pub(crate) fn mark(&mut self, reason: DumpReason, unix_ns: u64) {
        if let Some(m) = &self.marker {
            if write_marker(m, reason, unix_ns).is_ok() {
                self.marker_stalled = reason == DumpReason::Stalled;
            }
        }
    }
}

/// The dump of `rings` now.
pub(crate) fn snapshot(rings: &[Arc<Ring>], reason: DumpReason, at: u64) -> RawDump {
    RawDump {
        reason,
        at,
        unix_ns: realtime_now_ns(),
        threads: rings.len() as u32,
        calls: rings
            .iter()
            .filter_map(|r| r.in_flight.read(r.tid))
            .collect(),
    }
}

/// Writes the marker whole: a temporary file renamed over it.
fn write_marker(path: &Path, reason: DumpReason, unix_ns: u64) -> std::io::Result<()> {
    let tmp = marker::marker_temp_path(path);
    std::fs::write(&tmp, marker::marker_line(reason, unix_ns))?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_reads_the_call_it_is_inside_and_nothing_after() {
        let slot = Slot::default();
        assert_eq!(slot.read(3), None);
        let w = WaitsOn {
            comm: Some(2),
            peer: Some((-2, 7)),
            ..WaitsOn::default()
        };
        slot.enter(Op::Recv, 1234, 0x4010, &w);
        assert!(slot.busy());
        let c = slot.read(3).expect("inside a call");
        assert_eq!(
            (c.tid, c.op, c.start, c.site, c.comm, c.peer, c.tag),
            (3, Op::Recv.code(), 1234, 0x4010, 2, -2, 7)
        );
        assert_eq!(c.fields, fields::COMM | fields::PEER);
        slot.leave();
        assert!(!slot.busy());
        assert_eq!(slot.read(3), None);
        let w = WaitsOn {
            root: Some(-1),
            requests: Some(4),
            ..WaitsOn::default()
        };
        slot.enter(Op::Waitall, 99, 0, &w);
        let c = slot.read(3).expect("inside again");
        assert_eq!(
            (c.root, c.requests, c.fields),
            (-1, 4, fields::ROOT | fields::REQUESTS)
        );
    }

    #[test]
    fn a_reader_never_sees_a_call_torn_between_two() {
        let slot = Arc::new(Slot::default());
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (slot, stop) = (Arc::clone(&slot), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut seen = 0u64;
                while !stop.load(Ordering::Relaxed) || seen == 0 {
                    if let Some(c) = slot.read(0) {
                        // Every word of one call was written from the same i.
                        assert_eq!(c.site, c.start * 2, "{c:?}");
                        assert_eq!(i64::from(c.tag), c.start as i64 % 1000, "{c:?}");
                        seen += 1;
                    }
                }
                seen
            })
        };
        for i in 0..200_000u64 {
            let w = WaitsOn {
                peer: Some((1, (i % 1000) as i32)),
                ..WaitsOn::default()
            };
            slot.enter(Op::Send, i, i * 2, &w);
            slot.leave();
        }
        // Left inside a last call, so that the reader sees at least one.
        let last = WaitsOn {
            peer: Some((1, 7)),
            ..WaitsOn::default()
        };
        slot.enter(Op::Send, 7, 14, &last);
        stop.store(true, Ordering::Relaxed);
        reader.join().expect("no torn read");
    }
}
