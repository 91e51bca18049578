//! The recorder: per-thread rings, span guards, and the streaming writer.
//!
//! Recording an event costs two clock reads and the encoding of a record (a few bytes,
//! see `overlap_format::stream::codec`) into the calling thread's ring: no allocation,
//! lock or formatting (a thread's first event registers its ring, once). A background
//! thread copies what the rings hold into pages of the rank's binary stream every flush
//! interval, so a rank that dies leaves everything up to the last flush. Memory is
//! bounded: each thread's ring has a fixed size, and a thread that fills its ring waits
//! for the writer (counted as a stall in the footer) rather than drop events or grow.

mod append;
mod buffers;
mod config;
mod encode;
mod gpu_work;
mod inflight;
mod ring;
mod signal;
mod sink;
mod site;
mod span;
mod thread;
mod writer;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

pub use buffers::{BufferAccess, BufferNameError};
pub use config::{FinishReport, RecorderConfig};
pub use gpu_work::GpuWork;
pub use inflight::{request_dump, WaitsOn};
pub use overlap_format::call_data::{Access, CallData, Collective, Transfer};
pub use overlap_format::stream::counts::payload as call_counts_payload;
pub use overlap_format::stream::learned::{push_unwatched, push_watch};
pub use overlap_format::stream::paths::{payload as call_paths_payload, CALL_PATH_TAG};
pub use overlap_format::stream::FrameKind;
pub use signal::{
    hang_timeout_from_env, install_dump_handler, sigusr1_is_default, HANG_TIMEOUT_ENV,
};
pub use sink::{MemorySink, NullSink, RankFileSink, Recorded, Sink};
pub use site::{CallSite, NamedSite};
pub use span::{ComputeGuard, DetachedSpan};
pub use thread::ThreadRecorder;

use overlap_format::stream::codec::{
    encode_completion, encode_compute, encode_compute_buffers, encode_gpu, encode_sync, GpuRecord,
};

use crate::clock::{monotonic_now_ns, Stamp, Timebase};
use crate::schema::{ClockSync, Completion, Footer, Op, RequestId};
use crate::{Error, Result};
use ring::Ring;

/// Environment variable that turns the preload's buffer watch on (`1`): set by
/// `overlap trace --buffers`; the learned uses go to [`Recorder::record_learned`].
pub const BUFFERS_ENV: &str = "OVERLAP_BUFFERS";

/// The variable `overlap trace --callpath N` sets: the preload records N frames of each
/// call's stack (its call path) rather than the one call site.
pub const CALLPATH_ENV: &str = "OVERLAP_CALLPATH";

/// The most bytes a record that follows a call takes (a full members record).
const FOLLOW_MAX: usize = 96;

/// State shared by the recording threads and the writer thread.
pub(crate) struct Shared {
    id: u64,
    epoch_ns: u64,
    timebase: Timebase,
    ring_bytes: usize,
    /// The most records that may follow a call: what half a ring holds.
    max_follow: usize,
    rings: Mutex<Vec<Arc<Ring>>>,
    /// Set when the recorder finishes: new records are refused (dropped), a thread
    /// waiting for room gives up, and the writer stops after one more full drain.
    finished: AtomicBool,
    writer_thread: OnceLock<Thread>,
    /// An in-flight dump asked of this recorder.
    dump_asked: Arc<AtomicBool>,
    /// Buffer bindings not written yet: a bindings frame's payload.
    bindings: Mutex<Vec<u8>>,
    /// Learned buffer uses not written yet: a learned-uses frame's payload.
    learned: Mutex<Vec<u8>>,
    /// Rank-level frames the writer asks for at each drain ([`Recorder::write_frames_from`]).
    frame_sources: Mutex<Vec<(FrameKind, FrameSource)>>,
}

/// Gives the payload of a rank-level frame (the preload's call counts, its call paths)
/// when there is something new to write since it last gave one; `None` otherwise.
pub type FrameSource = fn() -> Option<Vec<u8>>;

impl Shared {
    fn lock_rings(&self) -> MutexGuard<'_, Vec<Arc<Ring>>> {
        self.rings.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn rings_snapshot(&self) -> Vec<Arc<Ring>> {
        self.lock_rings().clone()
    }

    fn wake_writer(&self) {
        if let Some(t) = self.writer_thread.get() {
            t.unpark();
        }
    }

    /// A thread whose ring is full waits for the writer to make room: wakes it and
    /// sleeps a little (rather than yield: an idle-priority writer runs only when this
    /// thread really gives its core up). False once the recorder finished.
    fn wait_for_room(&self) -> bool {
        self.wake_writer();
        std::thread::sleep(Duration::from_micros(20));
        !self.finished.load(Ordering::Acquire)
    }
}

struct Inner {
    shared: Arc<Shared>,
    writer: Mutex<Option<JoinHandle<writer::WriterOutcome>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Err(e) = finish_inner(self) {
            if !matches!(e, Error::AlreadyFinished) {
                crate::stderr_line!("overlap: finishing the trace: {e}");
            }
        }
    }
}

/// Records calls and compute spans of one rank. Cheap to clone: clones share the rings
/// and the writer. Dropping the last clone finishes the recording.
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Inner>,
}

static NEXT_RECORDER_ID: AtomicU64 = AtomicU64::new(1);

impl Recorder {
    /// Starts a recorder whose writer thread streams to `sink`. The epoch is now.
    pub fn new(sink: impl Sink, config: RecorderConfig) -> Result<Recorder> {
        Recorder::with_epoch(sink, config, monotonic_now_ns())
    }

    /// Starts a recorder with a given epoch (absolute `CLOCK_MONOTONIC` ns), e.g. the one
    /// written in the trace header.
    pub fn with_epoch(sink: impl Sink, config: RecorderConfig, epoch_ns: u64) -> Result<Recorder> {
        Recorder::with_timebase(
            sink,
            config,
            Timebase::new(config.clock, epoch_ns),
            epoch_ns,
        )
    }

    /// Starts a recorder stamping with `timebase`, made for `epoch_ns` beforehand so that
    /// stamps taken before the recorder existed (an `MPI_Init` in progress) can still be
    /// recorded. `config.clock` is not used.
    pub fn with_timebase(
        sink: impl Sink,
        config: RecorderConfig,
        timebase: Timebase,
        epoch_ns: u64,
    ) -> Result<Recorder> {
        let shared = Arc::new(Shared {
            id: NEXT_RECORDER_ID.fetch_add(1, Ordering::Relaxed),
            epoch_ns,
            timebase,
            ring_bytes: ring::ring_size(config.ring_bytes),
            max_follow: ring::ring_size(config.ring_bytes) / 2 / FOLLOW_MAX,
            rings: Mutex::new(Vec::new()),
            finished: AtomicBool::new(false),
            writer_thread: OnceLock::new(),
            dump_asked: Arc::new(AtomicBool::new(false)),
            bindings: Mutex::new(Vec::new()),
            learned: Mutex::new(Vec::new()),
            frame_sources: Mutex::new(Vec::new()),
        });
        let for_writer = Arc::clone(&shared);
        let interval = config.flush_interval;
        let idle_writer = config.idle_writer;
        let hang_timeout = config.hang_timeout;
        let handle = std::thread::Builder::new()
            .name("overlap-writer".into())
            .spawn(move || {
                if idle_writer {
                    writer::lower_priority();
                }
                writer::run(sink, timebase, for_writer, interval, hang_timeout)
            })
            .map_err(|cause| Error::Thread { cause })?;
        let _ = shared.writer_thread.set(handle.thread().clone());
        Ok(Recorder {
            inner: Arc::new(Inner {
                shared,
                writer: Mutex::new(Some(handle)),
            }),
        })
    }

    fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// Absolute `CLOCK_MONOTONIC` ns at which this recorder's time is zero.
    pub fn epoch_ns(&self) -> u64 {
        self.shared().epoch_ns
    }

    /// Now, as a stamp of this recorder's clock (converted to nanoseconds by the writer).
    #[inline]
    pub fn stamp(&self) -> Stamp {
        self.shared().timebase.stamp()
    }

    /// True when this recorder stamps with the TSC.
    pub fn uses_tsc(&self) -> bool {
        matches!(self.shared().timebase, Timebase::Tsc)
    }

    /// A fresh request id, unique within this recorder: the first recording thread
    /// numbers its requests 1, 2, 3...; thread `t` numbers them from `t << 40`. Taken
    /// from the calling thread's ring, so it costs no atomic read-modify-write.
    #[inline]
    pub fn next_request_id(&self) -> RequestId {
        let mut id = RequestId(0);
        self.with_ring(|ring| id = RequestId(ring.next_request_id()));
        id
    }

    /// A handle on the calling thread's ring, for a caller that keeps one per thread in
    /// a place it reaches faster than this crate's thread-local lookup (the preload's
    /// initial-exec thread slot). Use it on this thread only.
    pub fn for_this_thread(&self) -> ThreadRecorder {
        ThreadRecorder::new(self.clone(), self.register_thread())
    }

    /// Records an MPI call with the requests or statuses it completed (at most half a
    /// ring's worth), made from the caller's source line (`#[track_caller]`, which a
    /// `#[track_caller]` caller passes on, as [`crate::mpi::TracedComm`]'s methods do).
    #[inline]
    #[track_caller]
    pub fn record_call(
        &self,
        op: Op,
        start: Stamp,
        end: Stamp,
        data: CallData,
        completed: &[Completion],
    ) {
        self.record_call_with(op, start, end, data, completed.len(), |i| completed[i]);
    }

    /// Like [`Recorder::record_call`], with the completions produced by `completion(i)`
    /// for `i` in `0..count`, so callers need not build a slice.
    #[inline]
    #[track_caller]
    pub fn record_call_with(
        &self,
        op: Op,
        start: Stamp,
        end: Stamp,
        data: CallData,
        count: usize,
        mut completion: impl FnMut(usize) -> Completion,
    ) {
        let site = site::SiteWord::source(std::panic::Location::caller());
        self.push_call(None, op, start, end, site, data, count, |i, buf, d| {
            encode_completion(buf, d, &completion(i));
        });
    }

    /// Records a compute span that has already happened.
    #[inline]
    pub fn record_compute(&self, name: &'static str, start: Stamp, end: Stamp) {
        self.record_compute_with(name, None, start, end);
    }

    /// Records a compute span that has already happened, with the buffers it read and
    /// wrote when it says (see [`BufferAccess`]).
    #[inline]
    pub fn record_compute_with(
        &self,
        name: &'static str,
        buffers: Option<BufferAccess>,
        start: Stamp,
        end: Stamp,
    ) {
        self.push(None, 1, |encoder, deltas, group, defs| {
            let id = encoder.name(name, group, defs);
            let (start, end) = (start.raw(), end.raw());
            match buffers {
                None => group.record(|c| encode_compute(c, deltas, id, start, end)),
                Some(b) => {
                    encoder.buffers(b, group, defs);
                    group.record(|c| encode_compute_buffers(c, deltas, id, start, end, b.id()));
                }
            }
        });
    }

    /// Starts a compute span that ends when the guard is dropped.
    #[inline]
    pub fn compute(&self, name: &'static str) -> ComputeGuard<'_> {
        ComputeGuard {
            recorder: self,
            name,
            buffers: None,
            start: self.stamp(),
        }
    }

    /// Starts a compute span that ends with [`DetachedSpan::finish`], for spans that do
    /// not fit one lexical scope.
    #[inline]
    pub fn start_compute(&self, name: &'static str) -> DetachedSpan {
        DetachedSpan {
            name,
            buffers: None,
            start: self.stamp(),
        }
    }

    /// Records GPU work that has happened (see [`crate::gpu`]): times are nanoseconds of
    /// `CLOCK_MONOTONIC` since [`Recorder::epoch_ns`], whatever the stamps count.
    pub fn record_gpu(&self, work: &GpuWork) {
        self.push(None, 1, |encoder, _, group, defs| {
            let name = match work.name {
                "" => 0,
                n => encoder.name(n, group, defs),
            };
            let record = GpuRecord {
                op: work.op,
                device: work.device,
                stream: work.stream,
                issued: work.issued_ns,
                start: work.start_ns,
                end: work.end_ns.max(work.start_ns),
                bytes: work.bytes,
                src: work.src,
                dst: work.dst,
                packet: work.packet.map_or(0, |p| p.saturating_add(1)),
                name,
                clock_error: work.clock_error_ns,
            };
            group.record(|c| encode_gpu(c, &record));
        });
    }

    /// Nanoseconds of `CLOCK_MONOTONIC` since the epoch: the clock GPU work is recorded
    /// in.
    pub fn now_ns(&self) -> u64 {
        monotonic_now_ns().saturating_sub(self.shared().epoch_ns)
    }

    /// Records a clock synchronisation result.
    pub fn record_clock_sync(&self, sync: ClockSync) {
        self.push(None, 0, |_, _, group, _| {
            group.record(|c| encode_sync(c, &sync));
        });
    }

    /// Records what the program did with completed requests' buffers (`overlap trace
    /// --buffers`): `push` appends records to a learned-uses frame's payload with
    /// [`push_watch`] and [`push_unwatched`], times as
    /// stamps of this recorder. Written at the writer's next drain. Takes a lock: called
    /// when a watch ends, not on every call.
    pub fn record_learned(&self, push: impl FnOnce(&mut Vec<u8>)) {
        let shared = self.shared();
        if shared.finished.load(Ordering::Relaxed) {
            return;
        }
        push(
            &mut shared
                .learned
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
    }

    /// Has the writer ask `source` at each drain (the last one, when the recorder
    /// finishes, included) for a frame of `kind`, and write it when it gives one.
    pub fn write_frames_from(&self, kind: FrameKind, source: FrameSource) {
        self.shared()
            .frame_sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((kind, source));
    }

    /// Asks for an in-flight dump at the writer's next wake-up (which this hastens).
    pub fn request_dump(&self) {
        self.shared().dump_asked.store(true, Ordering::Relaxed);
        self.shared().wake_writer();
    }

    /// Stops recording, writes everything still buffered, the footer, and closes the
    /// sink. Later records are dropped. Fails if called twice.
    pub fn finish(&self) -> Result<FinishReport> {
        finish_inner(&self.inner)
    }
}

fn finish_inner(inner: &Inner) -> Result<FinishReport> {
    let handle = inner
        .writer
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .ok_or(Error::AlreadyFinished)?;
    // Refuse new records first, so that the writer's last drain holds everything the
    // footer counts (see the writer).
    inner.shared.finished.store(true, Ordering::Release);
    inner.shared.wake_writer();
    let outcome = handle.join().map_err(|_| Error::WriterPanicked)?;
    if let Some(cause) = outcome.error {
        return Err(Error::Write { cause });
    }
    let Footer {
        events,
        threads,
        buffer_stalls,
    } = outcome.footer;
    Ok(FinishReport {
        events,
        threads,
        buffer_stalls,
    })
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Recorder>();
};

#[cfg(test)]
mod tests;
