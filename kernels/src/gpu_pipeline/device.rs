//! The device the phases are written against: [`Device`], with two backends
//! (`super::host`, `super::cuda`).
//!
//! A device has four streams, numbered as in the trace ([`Stream`]): 0 compute (the
//! pack, checksum, interior and boundary kernels), 1 D2H copies, 2 H2D copies (and the
//! verify kernel after each), 3 D2D copies (packets that stay on the rank, and their
//! verify kernels). Every copy and kernel is enqueued on a stream and returns an
//! [`Op`], whose end can be polled ([`Device::query`], not recorded) or waited for
//! ([`Device::wait`], recorded as a host wait). Buffers are handles into the backend's
//! own tables, allocated once at the start.

use overlap_instrument::gpu::Timing;

/// A device stream, numbered as in the trace (`GPU d stream n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Kernels: pack, checksum, interior, boundary.
    Compute = 0,
    /// Device-to-host copies.
    D2H = 1,
    /// Host-to-device copies, each followed by its packet's verify kernel.
    H2D = 2,
    /// Device-to-device copies of the packets that stay on the rank.
    D2D = 3,
}

impl Stream {
    /// How many streams a device has.
    pub const COUNT: u32 = 4;

    /// Its number in the trace.
    pub fn id(self) -> u32 {
        self as u32
    }
}

/// Which backend runs, as the trace header says it (`backend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// An NVIDIA GPU through the CUDA driver.
    Cuda,
    /// Host threads standing in for streams.
    HostEmulated,
}

impl Backend {
    /// The header's `backend` value.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cuda => "cuda",
            Backend::HostEmulated => "host-emulated",
        }
    }
}

/// A device buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevBuf(pub(crate) usize);

/// A pinned host buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostBuf(pub(crate) usize);

/// An enqueued copy or kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op(pub(crate) usize);

/// A device kernel and its arguments. The host backend runs the Rust definitions
/// (`super::checksum`, [`interior`], [`boundary`]); the cuda backend the same
/// computations in CUDA C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// Fills the payload of `packets` packets of `packet_bytes` lying back to back in
    /// `buf`, as rank `rank` sends them in `iteration` ("pack").
    Pack {
        /// The send packets.
        buf: DevBuf,
        /// How many.
        packets: u32,
        /// Bytes each.
        packet_bytes: usize,
        /// The sender.
        rank: u32,
        /// The iteration.
        iteration: u64,
    },
    /// Writes each packet's salted checksum (`index + 1000 * (tag_base + index)`) into
    /// its trailer ("checksum").
    Checksum {
        /// The send packets.
        buf: DevBuf,
        /// How many.
        packets: u32,
        /// Bytes each.
        packet_bytes: usize,
        /// Tag of packet 0.
        tag_base: i32,
    },
    /// Recomputes packet `packet`'s checksum with its salt and writes
    /// [`super::checksum::verify`]'s result into `status[packet]` ("verify").
    Verify {
        /// The receive packets.
        buf: DevBuf,
        /// Which.
        packet: u32,
        /// Bytes each.
        packet_bytes: usize,
        /// Tag of packet 0.
        tag_base: i32,
        /// One u64 per packet.
        status: DevBuf,
    },
    /// The interior computation: `sweeps` passes over `cells` values ("interior").
    Interior {
        /// The interior values.
        field: DevBuf,
        /// How many.
        cells: usize,
        /// Passes.
        sweeps: u32,
    },
    /// The boundary computation, from every received packet ("boundary").
    Boundary {
        /// The boundary values, one per payload word.
        edge: DevBuf,
        /// The receive packets.
        recv: DevBuf,
        /// How many.
        packets: u32,
        /// Bytes each.
        packet_bytes: usize,
    },
}

impl Launch {
    /// The kernel's name in the trace.
    pub fn name(&self) -> &'static str {
        match self {
            Launch::Pack { .. } => "pack",
            Launch::Checksum { .. } => "checksum",
            Launch::Verify { .. } => "verify",
            Launch::Interior { .. } => "interior",
            Launch::Boundary { .. } => "boundary",
        }
    }

    /// The packet it is about, for the verify kernel.
    pub fn packet(&self) -> Option<u32> {
        match self {
            Launch::Verify { packet, .. } => Some(*packet),
            _ => None,
        }
    }
}

/// One pass of the interior computation over a value (the definition both backends
/// follow).
#[inline]
pub fn interior(v: f64) -> f64 {
    v.mul_add(0.999_9, 1e-4)
}

/// The boundary computation of edge value `e` from the payload words at its position
/// in every packet, `words` (the definition both backends follow).
#[inline]
pub fn boundary(e: f64, words: impl Iterator<Item = u64>) -> f64 {
    let s: f64 = words
        .map(|w| (w >> 44) as f64 * (1.0 / (1u64 << 20) as f64))
        .sum();
    0.5 * e + s
}

/// A device failure, naming what was being done.
#[derive(Debug, thiserror::Error)]
#[error("{backend} device: {what}")]
pub struct GpuError {
    /// `cuda` or `host-emulated`.
    pub backend: &'static str,
    /// What failed, and why.
    pub what: String,
}

impl GpuError {
    /// A failure of the host backend.
    pub fn host(what: impl Into<String>) -> GpuError {
        GpuError {
            backend: Backend::HostEmulated.name(),
            what: what.into(),
        }
    }
}

#[cfg(feature = "cuda")]
impl From<overlap_instrument::gpu::cuda::CudaError> for GpuError {
    fn from(e: overlap_instrument::gpu::cuda::CudaError) -> Self {
        GpuError {
            backend: Backend::Cuda.name(),
            what: e.to_string(),
        }
    }
}

/// What the phases need of a device (see the module's documentation). Copies and
/// launches return at once; their times are recorded once the device has done them.
pub trait Device {
    /// Which backend this is.
    fn backend(&self) -> Backend;
    /// The device's name (for the trace header).
    fn name(&self) -> String;

    /// A zeroed device buffer of `bytes`.
    fn alloc(&mut self, bytes: usize) -> Result<DevBuf, GpuError>;
    /// A pinned host buffer of `bytes` (default flags: cached, not write-combined).
    fn alloc_pinned(&mut self, bytes: usize) -> Result<HostBuf, GpuError>;
    /// The host address of `buf`'s first byte (what MPI is given, plus an offset).
    fn host_ptr(&self, buf: HostBuf) -> *mut u8;

    /// Copies `bytes` from `src` at `src_offset` to `dst` at `dst_offset` on `stream`.
    fn copy_d2h(
        &mut self,
        stream: Stream,
        src: (DevBuf, usize),
        dst: (HostBuf, usize),
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<Op, GpuError>;
    /// Copies host to device.
    fn copy_h2d(
        &mut self,
        stream: Stream,
        src: (HostBuf, usize),
        dst: (DevBuf, usize),
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<Op, GpuError>;
    /// Copies device to device.
    fn copy_d2d(
        &mut self,
        stream: Stream,
        src: (DevBuf, usize),
        dst: (DevBuf, usize),
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<Op, GpuError>;
    /// Launches a kernel on `stream`.
    fn launch(&mut self, stream: Stream, kernel: Launch) -> Result<Op, GpuError>;
    /// Makes `stream` wait on the device for `op` (no host wait).
    fn stream_wait(&mut self, stream: Stream, op: Op) -> Result<(), GpuError>;

    /// True when `op` is done (a poll, not recorded).
    fn query(&mut self, op: Op) -> Result<bool, GpuError>;
    /// Blocks until `op` is done: recorded as a host wait on its stream.
    fn wait(&mut self, op: Op) -> Result<(), GpuError>;
    /// Blocks until `stream` is idle: recorded as a host wait.
    fn sync_stream(&mut self, stream: Stream) -> Result<(), GpuError>;
    /// Blocks until the device is idle: recorded as a host wait on every stream.
    fn sync_device(&mut self) -> Result<(), GpuError>;
    /// When `op` ran on the host clock, once it is done.
    fn times(&mut self, op: Op) -> Result<Option<Timing>, GpuError>;
    /// Copies `dst.len()` bytes from `src` at `offset` into host memory and waits
    /// (both recorded).
    fn download(&mut self, src: DevBuf, offset: usize, dst: &mut [u8]) -> Result<(), GpuError>;
    /// Records every operation done and forgets the handles of all operations; every
    /// one must be done (after a device synchronize).
    fn release_ops(&mut self) -> Result<(), GpuError>;
}
