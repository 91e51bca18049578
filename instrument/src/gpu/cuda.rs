//! Traced CUDA work over cudarc (feature `cuda`): [`CudaTracer`] enqueues copies and
//! kernels on its streams between two timing events each, records them once the device
//! has finished them (their times put on the host clock by a [`DeviceClock`]), and
//! records every blocking wait of the host on them.
//!
//! The driver library is loaded at run time: without it every driver call panics, so
//! [`driver_present`] must be asked first (it loads nothing but the library itself).
//!
//! Pinned host buffers are page-locked with default flags (cached, not write-combined:
//! MPI reads and writes them from the CPU).

use std::sync::Arc;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUdeviceptr, CUevent_flags};
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, PinnedHostSlice};

use super::{host_wait, Anchor, ClockPolicy, DeviceClock, DeviceOp, Pending, Timing};
use crate::recorder::Recorder;
use crate::schema::{GpuOp, ALL_STREAMS};

/// A CUDA failure, naming what was being done.
#[derive(Debug, thiserror::Error)]
#[error("CUDA: {what}: {cause}")]
pub struct CudaError {
    /// What was being done.
    pub what: &'static str,
    /// The driver's error, with its name and description.
    pub cause: String,
}

fn driver(what: &'static str) -> impl FnOnce(DriverError) -> CudaError {
    move |e| CudaError {
        what,
        cause: format!("{e:?}"),
    }
}

/// True when the CUDA driver library (`libcuda.so`) can be loaded: the one check that
/// may be made before any driver call.
pub fn driver_present() -> bool {
    // SAFETY: only tries to load the library; no driver function is called.
    unsafe { sys::is_culib_present() }
}

/// True when NVRTC (`libnvrtc.so`), which compiles the device code at run time, can be
/// loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: as for `driver_present`.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The CUDA devices: `Ok(0)` when the driver is absent (nothing is called then).
pub fn device_count() -> Result<usize, CudaError> {
    if !driver_present() {
        return Ok(0);
    }
    result::init().map_err(driver("initialising the driver"))?;
    let n = result::device::get_count().map_err(driver("counting devices"))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Device `ordinal`'s name; the driver must be present ([`driver_present`]).
pub fn device_name(ordinal: usize) -> Result<String, CudaError> {
    result::init().map_err(driver("initialising the driver"))?;
    let dev = result::device::get(ordinal as i32).map_err(driver("opening the device"))?;
    result::device::get_name(dev).map_err(driver("reading the device name"))
}

/// A page-locked host buffer (default flags), allocated once and kept.
pub struct PinnedBuffer {
    slice: PinnedHostSlice<u8>,
    ptr: *mut u8,
}

// SAFETY: the buffer is plain host memory; `ptr` points into `slice`, which it owns.
unsafe impl Send for PinnedBuffer {}

impl PinnedBuffer {
    /// The host address: what MPI and the copies are given.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Its length, bytes.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// True for an empty buffer.
    pub fn is_empty(&self) -> bool {
        self.slice.is_empty()
    }
}

/// A reference event and its place on the host clock.
struct Reference {
    anchor: Anchor,
    event: CudaEvent,
}

/// What tells a pending operation's times: its events and the reference it is timed
/// against.
struct OpTiming {
    reference: Arc<Reference>,
    start: CudaEvent,
    end: CudaEvent,
}

impl OpTiming {
    /// The op's times once its end event is done, `None` before.
    fn times(&self, clock: &DeviceClock) -> Result<Option<Timing>, CudaError> {
        if !self
            .end
            .try_is_complete()
            .map_err(driver("querying an event"))?
        {
            return Ok(None);
        }
        let r = &self.reference;
        let start = r
            .event
            .elapsed_ms(&self.start)
            .map_err(driver("timing an operation"))?;
        let end = r
            .event
            .elapsed_ms(&self.end)
            .map_err(driver("timing an operation"))?;
        let (s, e) = (
            clock.place_ms(&r.anchor, start),
            clock.place_ms(&r.anchor, end),
        );
        Ok(Some(Timing {
            start_ns: s.ns,
            end_ns: e.ns,
            error_ns: s.error_ns.max(e.error_ns),
        }))
    }
}

/// A device operation enqueued: wait for it or poll it with the tracer.
#[derive(Clone)]
pub struct OpHandle {
    timing: Arc<OpTiming>,
    stream: u32,
    packet: Option<u32>,
    /// Host ns the end event was recorded.
    marked_ns: u64,
}

impl OpHandle {
    /// The stream it was enqueued on.
    pub fn stream(&self) -> u32 {
        self.stream
    }

    /// The event marking its end, for a stream to wait on.
    pub fn event(&self) -> &CudaEvent {
        &self.timing.end
    }
}

/// One device's traced streams (see the module's documentation).
pub struct CudaTracer {
    ctx: Arc<CudaContext>,
    recorder: Recorder,
    device: u32,
    streams: Vec<Arc<CudaStream>>,
    /// An idle stream for reference events only.
    anchor_stream: Arc<CudaStream>,
    clock: DeviceClock,
    reference: Option<Arc<Reference>>,
    pending: Pending<Arc<OpTiming>>,
}

impl CudaTracer {
    /// Opens device `ordinal` with `streams` streams (numbered from 0 in the trace),
    /// recording on `recorder`. Streams synchronise only as the caller says: cudarc's
    /// automatic event tracking is off.
    pub fn new(recorder: Recorder, ordinal: usize, streams: u32) -> Result<CudaTracer, CudaError> {
        if !driver_present() {
            return Err(CudaError {
                what: "opening the device",
                cause: "the CUDA driver library (libcuda.so) is not present".into(),
            });
        }
        let ctx = CudaContext::new(ordinal).map_err(driver("creating the context"))?;
        // SAFETY: the tracer's users order their streams with events themselves; no
        // buffer was allocated yet.
        unsafe { ctx.disable_event_tracking() };
        let streams = (0..streams)
            .map(|_| ctx.new_stream())
            .collect::<Result<Vec<_>, _>>()
            .map_err(driver("creating a stream"))?;
        let anchor_stream = ctx.new_stream().map_err(driver("creating a stream"))?;
        Ok(CudaTracer {
            ctx,
            recorder,
            device: ordinal as u32,
            streams,
            anchor_stream,
            clock: DeviceClock::new(ClockPolicy::CUDA),
            reference: None,
            pending: Pending::new(),
        })
    }

    /// The context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The device ordinal, as recorded.
    pub fn device(&self) -> u32 {
        self.device
    }

    /// Stream `s` (as numbered in the trace).
    pub fn stream(&self, s: u32) -> Result<&Arc<CudaStream>, CudaError> {
        self.streams.get(s as usize).ok_or(CudaError {
            what: "choosing a stream",
            cause: format!("stream {s} does not exist ({} streams)", self.streams.len()),
        })
    }

    /// A page-locked host buffer of `bytes`, with default flags (not write-combined).
    pub fn pinned(&self, bytes: usize) -> Result<PinnedBuffer, CudaError> {
        // SAFETY: the memory is uninitialised; callers write before they read.
        let mut slice = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(bytes, 0) }
            .map_err(driver("allocating pinned host memory"))?;
        // The slice's own event was never recorded: this does not wait.
        let ptr = slice
            .as_mut_ptr()
            .map_err(driver("allocating pinned host memory"))?;
        Ok(PinnedBuffer { slice, ptr })
    }

    fn timing_event(&self) -> Result<CudaEvent, CudaError> {
        self.ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver("creating an event"))
    }

    /// Anchors the device clock again when it is due: a reference event on the idle
    /// anchor stream, waited for (not recorded as a host wait: it is the tracer's own).
    fn anchor_if_due(&mut self) -> Result<(), CudaError> {
        if !self.clock.needs_anchor(self.recorder.now_ns()) {
            return Ok(());
        }
        let event = self.timing_event()?;
        let before = self.recorder.now_ns();
        event
            .record(&self.anchor_stream)
            .map_err(driver("recording a reference event"))?;
        event
            .synchronize()
            .map_err(driver("waiting for a reference event"))?;
        let after = self.recorder.now_ns();
        let since_previous = match &self.reference {
            Some(prev) => Some(
                f64::from(
                    prev.event
                        .elapsed_ms(&event)
                        .map_err(driver("timing reference events"))?,
                ) * 1e6,
            ),
            None => None,
        };
        let anchor = self.clock.anchor(before, after, since_previous);
        self.reference = Some(Arc::new(Reference { anchor, event }));
        Ok(())
    }

    /// Enqueues `op` on its stream with `enqueue`, between two timing events; it is
    /// recorded once the device has done it.
    pub fn issue(
        &mut self,
        op: DeviceOp,
        enqueue: impl FnOnce(&CudaStream) -> Result<(), DriverError>,
    ) -> Result<OpHandle, CudaError> {
        self.anchor_if_due()?;
        let reference = match &self.reference {
            Some(r) => Arc::clone(r),
            None => {
                return Err(CudaError {
                    what: "timing an operation",
                    cause: "no reference event".into(),
                })
            }
        };
        let stream = Arc::clone(self.stream(op.stream)?);
        let start = self.timing_event()?;
        let end = self.timing_event()?;
        start
            .record(&stream)
            .map_err(driver("recording a start event"))?;
        let issued = self.recorder.now_ns();
        enqueue(&stream).map_err(driver(match op.op {
            GpuOp::CopyD2H => "enqueueing a device-to-host copy",
            GpuOp::CopyH2D => "enqueueing a host-to-device copy",
            GpuOp::CopyD2D => "enqueueing a device-to-device copy",
            GpuOp::StreamWait => "making a stream wait for an event",
            _ => "launching a kernel",
        }))?;
        end.record(&stream)
            .map_err(driver("recording an end event"))?;
        let marked_ns = self.recorder.now_ns();
        self.clock.note_op();
        let timing = Arc::new(OpTiming {
            reference,
            start,
            end,
        });
        self.pending.push(op.issued(issued), Arc::clone(&timing));
        Ok(OpHandle {
            timing,
            stream: op.stream,
            packet: op.packet,
            marked_ns,
        })
    }

    /// Copies `bytes` from device address `src` into host memory at `dst` on `stream`.
    ///
    /// # Safety
    /// `src` must be a device allocation of this context with `bytes` readable, `dst`
    /// page-locked host memory with `bytes` writable, left alone by the host until the
    /// copy is known done.
    pub unsafe fn copy_d2h(
        &mut self,
        stream: u32,
        src: CUdeviceptr,
        dst: *mut u8,
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<OpHandle, CudaError> {
        let op = self.copy_op(GpuOp::CopyD2H, stream, src, dst as u64, bytes, packet);
        self.issue(op, |s| {
            // SAFETY: the caller's contract.
            let host = unsafe { std::slice::from_raw_parts_mut(dst, bytes) };
            // SAFETY: as above.
            unsafe { result::memcpy_dtoh_async(host, src, s.cu_stream()) }
        })
    }

    /// Copies `bytes` from host memory at `src` to device address `dst` on `stream`.
    ///
    /// # Safety
    /// As [`CudaTracer::copy_d2h`], the other way round: `src` must stay unchanged until
    /// the copy is known done.
    pub unsafe fn copy_h2d(
        &mut self,
        stream: u32,
        src: *const u8,
        dst: CUdeviceptr,
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<OpHandle, CudaError> {
        let op = self.copy_op(GpuOp::CopyH2D, stream, src as u64, dst, bytes, packet);
        self.issue(op, |s| {
            // SAFETY: the caller's contract.
            let host = unsafe { std::slice::from_raw_parts(src, bytes) };
            // SAFETY: as above.
            unsafe { result::memcpy_htod_async(dst, host, s.cu_stream()) }
        })
    }

    /// Copies `bytes` between two device addresses of this context on `stream`.
    ///
    /// # Safety
    /// Both must be device allocations of this context with `bytes` in range.
    pub unsafe fn copy_d2d(
        &mut self,
        stream: u32,
        src: CUdeviceptr,
        dst: CUdeviceptr,
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<OpHandle, CudaError> {
        let op = self.copy_op(GpuOp::CopyD2D, stream, src, dst, bytes, packet);
        // SAFETY: the caller's contract.
        self.issue(op, |s| unsafe {
            result::memcpy_dtod_async(dst, src, bytes, s.cu_stream())
        })
    }

    fn copy_op(
        &self,
        op: GpuOp,
        stream: u32,
        src: u64,
        dst: u64,
        bytes: usize,
        packet: Option<u32>,
    ) -> DeviceOp {
        DeviceOp {
            op,
            device: self.device,
            stream,
            bytes: bytes as u64,
            src,
            dst,
            packet,
            name: "",
        }
    }

    /// Makes `stream` wait (on the device) for `on`: no host wait. The wait is timed like
    /// any operation and recorded on the waiting stream (`stream_wait`, with `on`'s
    /// packet): how long the stream was held.
    pub fn stream_wait(&mut self, stream: u32, on: &OpHandle) -> Result<(), CudaError> {
        let wait = DeviceOp {
            op: GpuOp::StreamWait,
            device: self.device,
            stream,
            bytes: 0,
            src: 0,
            dst: 0,
            packet: on.packet,
            name: "",
        };
        let timing = Arc::clone(&on.timing);
        self.issue(wait, move |s| s.wait(&timing.end))?;
        Ok(())
    }

    /// True when `op` is done (a poll: not recorded); records what is done meanwhile.
    pub fn query(&mut self, op: &OpHandle) -> Result<bool, CudaError> {
        let done = op
            .timing
            .end
            .try_is_complete()
            .map_err(driver("querying an event"))?;
        if done {
            self.collect()?;
        }
        Ok(done)
    }

    /// Blocks until `op` is done, recorded as a host wait on its stream for its packet.
    pub fn wait(&mut self, op: &OpHandle) -> Result<(), CudaError> {
        let start = self.recorder.now_ns();
        op.timing
            .end
            .synchronize()
            .map_err(driver("waiting for an event"))?;
        let end = self.recorder.now_ns();
        self.recorder.record_gpu(&host_wait(
            self.device,
            op.stream,
            op.marked_ns,
            start,
            end,
            op.packet,
        ));
        self.collect().map(|_| ())
    }

    /// Blocks until everything enqueued on `stream` is done, recorded as a host wait.
    pub fn sync_stream(&mut self, stream: u32) -> Result<(), CudaError> {
        let s = Arc::clone(self.stream(stream)?);
        let start = self.recorder.now_ns();
        s.synchronize().map_err(driver("synchronising a stream"))?;
        let end = self.recorder.now_ns();
        self.recorder
            .record_gpu(&host_wait(self.device, stream, start, start, end, None));
        self.collect().map(|_| ())
    }

    /// Blocks until the whole device is idle, recorded as a host wait on every stream.
    pub fn sync_device(&mut self) -> Result<(), CudaError> {
        let start = self.recorder.now_ns();
        self.ctx
            .synchronize()
            .map_err(driver("synchronising the device"))?;
        let end = self.recorder.now_ns();
        self.recorder.record_gpu(&host_wait(
            self.device,
            ALL_STREAMS,
            start,
            start,
            end,
            None,
        ));
        self.collect().map(|_| ())
    }

    /// The host-clock times of `op`, once it is done (`None` before).
    pub fn times(&self, op: &OpHandle) -> Result<Option<Timing>, CudaError> {
        op.timing.times(&self.clock)
    }

    /// Records every pending operation the device has finished; returns how many.
    pub fn collect(&mut self) -> Result<usize, CudaError> {
        let clock = &self.clock;
        self.pending
            .record_ready(&self.recorder, |t| t.times(clock))
    }

    /// Operations enqueued and not recorded yet.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}
