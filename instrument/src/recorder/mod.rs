//! The recorder: per-thread rings, span guards, and the streaming writer.
//!
//! Recording an event costs two clock reads and the encoding of a record (a few bytes,
//! see `overlap_format::stream::codec`) into the calling thread's ring: no allocation,
//! lock or formatting (a thread's first event registers its ring, once). A background
//! thread copies what the rings hold into pages of the rank's binary stream every flush
//! interval, so a rank that dies leaves everything up to the last flush. Memory is
//! bounded: each thread's ring has a fixed size, and a thread that fills its ring waits
//! for the writer (counted as a stall in the footer) rather than drop events or grow.

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

use std::cell::{Cell, RefCell};
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
    encode_call, encode_completion, encode_compute, encode_compute_buffers, encode_gpu,
    encode_sync, Deltas, GpuRecord,
};

use crate::clock::{monotonic_now_ns, Stamp, Timebase};
use crate::schema::{ClockSync, Completion, Footer, Op, RequestId};
use crate::{Error, Result};
use encode::{NewDefs, ThreadEncoder};
use ring::{Cursor, Group, PushOutcome, Ring};

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

thread_local! {
    /// This thread's rings, one per live recorder, most recently used first.
    static LOCAL_RINGS: RefCell<Vec<(u64, Arc<Ring>)>> = const { RefCell::new(Vec::new()) };
    /// The ring last used on this thread and its recorder's id (0: none): the hot path's
    /// one-compare lookup.
    static LAST_RING: Cell<(u64, *const Ring)> = const { Cell::new((0, std::ptr::null())) };
}

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

    /// Runs `f` with this thread's ring, registering it on first use.
    #[inline]
    fn with_ring(&self, f: impl FnOnce(&Ring)) {
        let (id, ring) = LAST_RING.get();
        if id == self.shared().id {
            // SAFETY: recorder ids are never reused, so the ring belongs to this
            // recorder, whose registry holds it (an Arc) for as long as `self` lives.
            return f(unsafe { &*ring });
        }
        let ring = self.register_thread();
        LAST_RING.set((self.shared().id, Arc::as_ptr(&ring)));
        f(&ring)
    }

    #[cold]
    fn register_thread(&self) -> Arc<Ring> {
        let shared = self.shared();
        let cached = LOCAL_RINGS.try_with(|cell| {
            let mut rings = cell.borrow_mut();
            if let Some(pos) = rings.iter().position(|(id, _)| *id == shared.id) {
                let entry = rings.remove(pos);
                rings.insert(0, entry);
            } else {
                let name = std::thread::current().name().map(str::to_string);
                let ring = self.new_ring(name);
                // Forget rings of recorders that have finished.
                rings.retain(|(_, r)| Arc::strong_count(r) > 1);
                rings.insert(0, (shared.id, ring));
            }
            Arc::clone(&rings[0].1)
        });
        // A call made while this thread's locals are being destroyed (an MPI call from a
        // pthread key destructor or an atexit handler): its ring cannot be cached, but the
        // recorder keeps it, so the call is still recorded.
        cached.unwrap_or_else(|_| self.new_ring(None))
    }

    /// A new ring for the calling thread, registered with the writer.
    fn new_ring(&self, name: Option<String>) -> Arc<Ring> {
        let shared = self.shared();
        let mut all = shared.lock_rings();
        let tid = all.len() as u32;
        let name = name.unwrap_or_else(|| format!("thread {tid}"));
        let ring = Arc::new(Ring::new(shared.ring_bytes, tid, name));
        all.push(Arc::clone(&ring));
        ring
    }

    /// Runs `f` with `ring` when the caller has it (a [`ThreadRecorder`]), else with
    /// this thread's ring.
    #[inline(always)]
    fn on_ring(&self, ring: Option<&Ring>, f: impl FnOnce(&Ring)) {
        match ring {
            Some(r) => f(r),
            None => self.with_ring(f),
        }
    }

    /// Appends one group to this thread's ring (`ring`, or the one looked up): `body`
    /// encodes its records (with the thread's encoder for definitions, and a copy of its
    /// deltas that is kept only if the group is published). `events` is how many calls
    /// and spans the group holds.
    #[inline]
    fn push(
        &self,
        ring: Option<&Ring>,
        events: u64,
        body: impl FnOnce(
            &ThreadEncoder,
            &mut Deltas,
            &mut Group<'_, &mut dyn FnMut() -> bool>,
            &mut NewDefs,
        ),
    ) {
        let shared = self.shared();
        if shared.finished.load(Ordering::Relaxed) {
            return;
        }
        self.on_ring(ring, |ring| {
            // SAFETY: only the thread that owns the ring touches its encoder, and rings
            // are only handed to their own thread.
            let encoder = unsafe { &mut *ring.encoder.get() };
            // SAFETY: as for the encoder. The deltas are encoded against in place (a copy
            // updated field by field and then copied back whole would stall the store
            // buffer). A group is dropped only once the recorder is finishing, when
            // `finished` is already set: nothing is published after it, so the deltas it
            // changed are never used.
            let deltas = unsafe { &mut *ring.deltas.get() };
            let mut defs = NewDefs::default();
            let mut wait = || {
                shared.wake_writer();
                // Sleep rather than yield: an idle-priority writer runs only when this
                // thread really gives its core up.
                std::thread::sleep(Duration::from_micros(20));
                !shared.finished.load(Ordering::Acquire)
            };
            let mut group = ring.group(&mut wait as &mut dyn FnMut() -> bool);
            body(encoder, deltas, &mut group, &mut defs);
            match group.publish(events) {
                PushOutcome::Dropped => {}
                outcome => {
                    encoder.commit(&defs);
                    if outcome == PushOutcome::AppendedWakeWriter {
                        shared.wake_writer();
                    }
                }
            }
        });
    }

    /// [`Recorder::push`] of one call whose group defines nothing (its site is a code
    /// address): no definitions to look up, collect or commit.
    #[inline(always)]
    fn push_lean(
        &self,
        ring: Option<&Ring>,
        body: impl FnOnce(&mut Deltas, &mut Group<'_, &mut dyn FnMut() -> bool>),
    ) {
        let shared = self.shared();
        if shared.finished.load(Ordering::Relaxed) {
            return;
        }
        self.on_ring(ring, |ring| {
            // SAFETY: as in `push`: the owning thread's deltas, encoded against in place.
            let deltas = unsafe { &mut *ring.deltas.get() };
            let mut wait = || {
                shared.wake_writer();
                std::thread::sleep(Duration::from_micros(20));
                !shared.finished.load(Ordering::Acquire)
            };
            let mut group = ring.group(&mut wait as &mut dyn FnMut() -> bool);
            body(deltas, &mut group);
            if group.publish(1) == PushOutcome::AppendedWakeWriter {
                shared.wake_writer();
            }
        });
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

    /// Appends a call and the `count` records that follow it (at most what half a ring
    /// holds), `follow(i, buf, deltas)` encoding the i-th: the one body of every call
    /// record, this thread's ring looked up (`ring` None) or given (a [`ThreadRecorder`]).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_call(
        &self,
        ring: Option<&Ring>,
        op: Op,
        start: Stamp,
        end: Stamp,
        site: impl Into<site::SiteWord>,
        data: CallData,
        count: usize,
        mut follow: impl FnMut(usize, &mut Cursor, &mut Deltas),
    ) {
        let max_follow = self.shared().max_follow;
        let (count, site) = (count.min(max_follow), site.into());
        if !site.is_source() {
            // A code address (every call the preload records) defines nothing: the
            // group is the call and what follows it, without the encoder's definitions.
            self.push_lean(ring, |deltas, group| {
                group.record(|c| {
                    encode_call(
                        c,
                        deltas,
                        op,
                        start.raw(),
                        end.raw(),
                        site.word(),
                        &data,
                        count as u32,
                    )
                });
                for i in 0..count {
                    group.record(|c| follow(i, c, deltas));
                }
            });
            return;
        }
        self.push(ring, 1, |encoder, deltas, group, defs| {
            encoder.site(site, group, defs);
            group.record(|c| {
                encode_call(
                    c,
                    deltas,
                    op,
                    start.raw(),
                    end.raw(),
                    site.word(),
                    &data,
                    count as u32,
                )
            });
            for i in 0..count {
                group.record(|c| follow(i, c, deltas));
            }
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
