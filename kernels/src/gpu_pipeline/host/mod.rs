//! The host backend: the pipeline with host threads standing in for streams, so that
//! everything but the device itself runs (and is tested) on any machine.
//!
//! Each stream is a worker thread taking jobs from a FIFO, in order, as a device stream
//! does. An event is a completion flag with a condition variable, holding the job's
//! start and end (host readings of the recorder's clock, taken on the worker: no clock
//! error). "Device" memory is heap memory; "pinned" memory is page-aligned heap
//! memory; copies are `memcpy` on the stream's thread; kernels are the Rust
//! definitions of `super::checksum` and `super::device`. The trace's header says
//! `backend: host-emulated`. Operations are recorded from the calling thread (the
//! rank's main thread), once done, as the cuda backend does.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use overlap_instrument::gpu::{host_wait, DeviceOp, Pending, Timing};
use overlap_instrument::recorder::Recorder;
use overlap_instrument::schema::{GpuOp, ALL_STREAMS};

mod kernels;

use super::device::{Backend, DevBuf, Device, GpuError, HostBuf, Launch, Op, Stream};
use kernels::host_kernel;

/// The device number the host backend records.
const DEVICE: u32 = 0;

/// A heap block standing in for device or pinned memory.
struct Block {
    ptr: *mut u8,
    layout: Layout,
}

impl Block {
    fn new(bytes: usize, align: usize) -> Result<Block, GpuError> {
        let layout = Layout::from_size_align(bytes.max(1), align)
            .map_err(|e| GpuError::host(format!("allocating {bytes} bytes: {e}")))?;
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(GpuError::host(format!(
                "allocating {bytes} bytes: out of memory"
            )));
        }
        Ok(Block { ptr, layout })
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout, freed once (the workers that used it were
        // joined before: see `HostDevice`'s Drop).
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// A raw pointer handed to a stream thread.
#[derive(Clone, Copy)]
struct Ptr(*mut u8);

// SAFETY: the memory lives until the workers are joined; the stream order (and the
// events the phases wait for) keep its users apart, as on a device.
unsafe impl Send for Ptr {}

impl Ptr {
    fn at(self, offset: usize) -> Ptr {
        Ptr(self.0.wrapping_add(offset))
    }

    /// # Safety
    /// `len` u64 words from here must be allocated, aligned, and used by no one else.
    unsafe fn words<'a>(self, len: usize) -> &'a mut [u64] {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.0.cast::<u64>(), len) }
    }

    /// # Safety
    /// As [`Ptr::words`], for f64 values.
    unsafe fn values<'a>(self, len: usize) -> &'a mut [f64] {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.0.cast::<f64>(), len) }
    }
}

/// An event: set once its job has run, with the job's start and end.
#[derive(Default)]
struct HostEvent {
    done: Mutex<Option<(u64, u64)>>,
    cv: Condvar,
}

impl HostEvent {
    fn complete(&self, start: u64, end: u64) {
        *self.done.lock().unwrap_or_else(PoisonError::into_inner) = Some((start, end));
        self.cv.notify_all();
    }

    fn get(&self) -> Option<(u64, u64)> {
        *self.done.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait(&self) -> (u64, u64) {
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(t) = *done {
                return t;
            }
            done = self.cv.wait(done).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// A stream: a worker thread running its jobs in order.
struct Worker {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// An operation enqueued.
struct Enqueued {
    event: Arc<HostEvent>,
    stream: Stream,
    packet: Option<u32>,
    marked_ns: u64,
}

/// The host-emulated device (see the module's documentation).
pub struct HostDevice {
    recorder: Recorder,
    workers: Vec<Worker>,
    device: Vec<Block>,
    pinned: Vec<Block>,
    ops: Vec<Enqueued>,
    pending: Pending<Arc<HostEvent>>,
    /// The first job that panicked, if one did.
    failure: Arc<Mutex<Option<String>>>,
}

impl HostDevice {
    /// Starts the stream threads, recording on `recorder`.
    pub fn new(recorder: &Recorder) -> Result<HostDevice, GpuError> {
        let mut workers = Vec::new();
        for s in 0..Stream::COUNT {
            let (tx, rx) = channel::<Job>();
            let thread = std::thread::Builder::new()
                .name(format!("host-gpu-stream-{s}"))
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                })
                .map_err(|e| GpuError::host(format!("starting stream {s}'s thread: {e}")))?;
            workers.push(Worker {
                jobs: Some(tx),
                thread: Some(thread),
            });
        }
        Ok(HostDevice {
            recorder: recorder.clone(),
            workers,
            device: Vec::new(),
            pinned: Vec::new(),
            ops: Vec::new(),
            pending: Pending::new(),
            failure: Arc::new(Mutex::new(None)),
        })
    }

    fn check_failure(&self) -> Result<(), GpuError> {
        match &*self.failure.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(what) => Err(GpuError::host(what.clone())),
            None => Ok(()),
        }
    }

    fn send(&self, stream: Stream, job: Job) -> Result<(), GpuError> {
        self.workers
            .get(stream.id() as usize)
            .and_then(|w| w.jobs.as_ref())
            .ok_or_else(|| GpuError::host(format!("stream {} is closed", stream.id())))?
            .send(job)
            .map_err(|_| GpuError::host(format!("stream {}'s thread has ended", stream.id())))
    }

    /// Enqueues `work` as `op` on its stream, timed on the stream's thread.
    fn enqueue(
        &mut self,
        stream: Stream,
        op: DeviceOp,
        work: impl FnOnce() + Send + 'static,
    ) -> Result<Op, GpuError> {
        self.check_failure()?;
        let event = Arc::new(HostEvent::default());
        let (done, rec, failure) = (
            Arc::clone(&event),
            self.recorder.clone(),
            Arc::clone(&self.failure),
        );
        let what = describe(&op);
        let issued = self.recorder.now_ns();
        self.send(
            stream,
            Box::new(move || {
                let start = rec.now_ns();
                let outcome = catch_unwind(AssertUnwindSafe(work));
                let end = rec.now_ns();
                if outcome.is_err() {
                    let mut f = failure.lock().unwrap_or_else(PoisonError::into_inner);
                    f.get_or_insert(format!("{what} failed (panicked) on its stream"));
                }
                done.complete(start, end);
            }),
        )?;
        let marked_ns = self.recorder.now_ns();
        self.pending.push(op.issued(issued), Arc::clone(&event));
        self.ops.push(Enqueued {
            event,
            stream,
            packet: op.packet,
            marked_ns,
        });
        Ok(Op(self.ops.len() - 1))
    }

    fn op(&self, op: Op) -> Result<&Enqueued, GpuError> {
        self.ops
            .get(op.0)
            .ok_or_else(|| GpuError::host(format!("no operation {} (released?)", op.0)))
    }

    fn dev_ptr(&self, (buf, offset): (DevBuf, usize), bytes: usize) -> Result<Ptr, GpuError> {
        in_range(&self.device, buf.0, offset, bytes, "device")
    }

    fn pinned_ptr(&self, (buf, offset): (HostBuf, usize), bytes: usize) -> Result<Ptr, GpuError> {
        in_range(&self.pinned, buf.0, offset, bytes, "pinned")
    }

    /// Records what is done.
    fn collect(&mut self) -> Result<(), GpuError> {
        self.pending
            .record_ready(&self.recorder, |e: &Arc<HostEvent>| {
                Ok::<_, GpuError>(e.get().map(|(start_ns, end_ns)| Timing {
                    start_ns,
                    end_ns,
                    error_ns: 0,
                }))
            })
            .map(|_| ())
    }

    fn copy(
        &mut self,
        op: GpuOp,
        stream: Stream,
        src: Ptr,
        dst: Ptr,
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<Op, GpuError> {
        let record = DeviceOp {
            op,
            device: DEVICE,
            stream: stream.id(),
            bytes: bytes as u64,
            src: src.0 as u64,
            dst: dst.0 as u64,
            packet,
            name: "",
        };
        self.enqueue(stream, record, move || {
            // The whole `Ptr`s are moved in (not their raw fields, which are not Send).
            let (from, to) = (src, dst);
            // SAFETY: both ranges were checked to lie in their blocks; the stream order
            // and the phases' waits keep other users off them meanwhile.
            unsafe { std::ptr::copy_nonoverlapping(from.0, to.0, bytes) }
        })
    }
}

/// `bytes` from `offset` in block `index` of `blocks`, checked.
fn in_range(
    blocks: &[Block],
    index: usize,
    offset: usize,
    bytes: usize,
    what: &str,
) -> Result<Ptr, GpuError> {
    let b = blocks
        .get(index)
        .ok_or_else(|| GpuError::host(format!("no {what} buffer {index}")))?;
    match offset.checked_add(bytes) {
        Some(end) if end <= b.layout.size() => Ok(Ptr(b.ptr).at(offset)),
        _ => Err(GpuError::host(format!(
            "{bytes} bytes at {offset} overrun {what} buffer {index} of {} bytes",
            b.layout.size()
        ))),
    }
}

fn describe(op: &DeviceOp) -> String {
    match (op.op, op.packet) {
        (GpuOp::Kernel, _) => format!("kernel {}", op.name),
        (_, Some(p)) => format!("{} of packet {p}", op.op.label()),
        _ => op.op.label().to_string(),
    }
}

impl Device for HostDevice {
    fn backend(&self) -> Backend {
        Backend::HostEmulated
    }

    fn name(&self) -> String {
        format!("host ({} stream threads)", Stream::COUNT)
    }

    fn alloc(&mut self, bytes: usize) -> Result<DevBuf, GpuError> {
        self.device.push(Block::new(bytes, 64)?);
        Ok(DevBuf(self.device.len() - 1))
    }

    fn alloc_pinned(&mut self, bytes: usize) -> Result<HostBuf, GpuError> {
        self.pinned.push(Block::new(bytes, 4096)?);
        Ok(HostBuf(self.pinned.len() - 1))
    }

    fn host_ptr(&self, buf: HostBuf) -> *mut u8 {
        self.pinned
            .get(buf.0)
            .map_or(std::ptr::null_mut(), |b| b.ptr)
    }

    fn copy_d2h(
        &mut self,
        stream: Stream,
        src: (DevBuf, usize),
        dst: (HostBuf, usize),
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<Op, GpuError> {
        let (s, d) = (self.dev_ptr(src, bytes)?, self.pinned_ptr(dst, bytes)?);
        self.copy(GpuOp::CopyD2H, stream, s, d, bytes, packet)
    }

    fn copy_h2d(
        &mut self,
        stream: Stream,
        src: (HostBuf, usize),
        dst: (DevBuf, usize),
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<Op, GpuError> {
        let (s, d) = (self.pinned_ptr(src, bytes)?, self.dev_ptr(dst, bytes)?);
        self.copy(GpuOp::CopyH2D, stream, s, d, bytes, packet)
    }

    fn copy_d2d(
        &mut self,
        stream: Stream,
        src: (DevBuf, usize),
        dst: (DevBuf, usize),
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<Op, GpuError> {
        let (s, d) = (self.dev_ptr(src, bytes)?, self.dev_ptr(dst, bytes)?);
        self.copy(GpuOp::CopyD2D, stream, s, d, bytes, packet)
    }

    fn launch(&mut self, stream: Stream, kernel: Launch) -> Result<Op, GpuError> {
        let record = DeviceOp {
            op: GpuOp::Kernel,
            device: DEVICE,
            stream: stream.id(),
            bytes: 0,
            src: 0,
            dst: 0,
            packet: kernel.packet(),
            name: kernel.name(),
        };
        let work = host_kernel(self, kernel)?;
        self.enqueue(stream, record, work)
    }

    fn stream_wait(&mut self, stream: Stream, op: Op) -> Result<(), GpuError> {
        let (event, packet) = {
            let e = self.op(op)?;
            (Arc::clone(&e.event), e.packet)
        };
        let wait = DeviceOp {
            op: GpuOp::StreamWait,
            device: DEVICE,
            stream: stream.id(),
            bytes: 0,
            src: 0,
            dst: 0,
            packet,
            name: "",
        };
        self.enqueue(stream, wait, move || {
            event.wait();
        })?;
        Ok(())
    }

    fn query(&mut self, op: Op) -> Result<bool, GpuError> {
        let done = self.op(op)?.event.get().is_some();
        if done {
            self.collect()?;
        }
        self.check_failure()?;
        Ok(done)
    }

    fn wait(&mut self, op: Op) -> Result<(), GpuError> {
        let (event, stream, packet, marked) = {
            let e = self.op(op)?;
            (Arc::clone(&e.event), e.stream, e.packet, e.marked_ns)
        };
        let start = self.recorder.now_ns();
        event.wait();
        let end = self.recorder.now_ns();
        self.recorder
            .record_gpu(&host_wait(DEVICE, stream.id(), marked, start, end, packet));
        self.collect()?;
        self.check_failure()
    }

    fn sync_stream(&mut self, stream: Stream) -> Result<(), GpuError> {
        let start = self.recorder.now_ns();
        let marker = Arc::new(HostEvent::default());
        let done = Arc::clone(&marker);
        self.send(stream, Box::new(move || done.complete(0, 0)))?;
        marker.wait();
        let end = self.recorder.now_ns();
        self.recorder
            .record_gpu(&host_wait(DEVICE, stream.id(), start, start, end, None));
        self.collect()?;
        self.check_failure()
    }

    fn sync_device(&mut self) -> Result<(), GpuError> {
        let start = self.recorder.now_ns();
        let mut markers = Vec::new();
        for s in [Stream::Compute, Stream::D2H, Stream::H2D, Stream::D2D] {
            let marker = Arc::new(HostEvent::default());
            let done = Arc::clone(&marker);
            self.send(s, Box::new(move || done.complete(0, 0)))?;
            markers.push(marker);
        }
        for m in markers {
            m.wait();
        }
        let end = self.recorder.now_ns();
        self.recorder
            .record_gpu(&host_wait(DEVICE, ALL_STREAMS, start, start, end, None));
        self.collect()?;
        self.check_failure()
    }

    fn times(&mut self, op: Op) -> Result<Option<Timing>, GpuError> {
        Ok(self.op(op)?.event.get().map(|(start_ns, end_ns)| Timing {
            start_ns,
            end_ns,
            error_ns: 0,
        }))
    }

    fn download(&mut self, src: DevBuf, offset: usize, dst: &mut [u8]) -> Result<(), GpuError> {
        let bytes = dst.len();
        let s = self.dev_ptr((src, offset), bytes)?;
        let op = self.copy(
            GpuOp::CopyD2H,
            Stream::D2H,
            s,
            Ptr(dst.as_mut_ptr()),
            bytes,
            None,
        )?;
        // `dst` is borrowed until the copy is waited for, here.
        self.wait(op)
    }

    fn release_ops(&mut self) -> Result<(), GpuError> {
        self.collect()?;
        if let Some(i) = self.ops.iter().position(|o| o.event.get().is_none()) {
            return Err(GpuError::host(format!(
                "operation {i} released before it was done"
            )));
        }
        self.ops.clear();
        Ok(())
    }
}

impl Drop for HostDevice {
    fn drop(&mut self) {
        // Close the FIFOs and let the threads finish what they hold, before the memory
        // they use is freed (the fields are dropped after this).
        for w in &mut self.workers {
            w.jobs = None;
        }
        for w in &mut self.workers {
            if let Some(t) = w.thread.take() {
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests;
