//! The cuda backend (feature `cuda`): the pipeline on an NVIDIA GPU, through
//! `overlap_instrument::gpu::cuda::CudaTracer` (traced streams, copies and events over
//! cudarc, the driver loaded at run time), with the device code compiled at run time
//! by NVRTC from [`device_source`], which is generated from the checksum's constants
//! (`super::checksum`) so that host and device compute the same thing.
//!
//! Device buffers are raw allocations of the context (cudarc's slices, with its
//! automatic event tracking off: the phases order the streams with events); pinned
//! buffers are page-locked with default flags.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule, CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
use overlap_instrument::gpu::cuda::{CudaTracer, OpHandle, PinnedBuffer};
use overlap_instrument::gpu::{DeviceOp, Timing};
use overlap_instrument::recorder::Recorder;
use overlap_instrument::schema::GpuOp;

use super::checksum::{FNV_OFFSET, FNV_PRIME, K_POS, K_SALT};
use super::device::{Backend, DevBuf, Device, GpuError, HostBuf, Launch, Op, Stream};

/// Threads per block of every kernel.
const THREADS: u32 = 256;

/// The device code: the kernels of [`Launch`], mirroring the Rust definitions.
pub fn device_source() -> String {
    format!(
        r#"
typedef unsigned long long u64;
#define K_SALT {K_SALT:#x}ULL
#define K_POS {K_POS:#x}ULL
#define FNV_PRIME {FNV_PRIME:#x}ULL
#define FNV_OFFSET {FNV_OFFSET:#x}ULL

__device__ u64 rotl(u64 x, int r) {{ return (x << r) | (x >> (64 - r)); }}
__device__ u64 mix(u64 w, u64 i, u64 salt) {{
    u64 x = (w ^ (salt * K_SALT) ^ (i * K_POS)) * FNV_PRIME;
    return rotl(x, 31) ^ (x >> 29);
}}
__device__ u64 finish(u64 sum, u64 salt) {{
    u64 h = (sum ^ FNV_OFFSET ^ salt) * FNV_PRIME;
    return h ^ (h >> 32);
}}
__device__ u64 splitmix64(u64 z) {{
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}}
__device__ u64 salt_of(unsigned p, int tag_base) {{
    return (u64)p + 1000ULL * (u64)(long long)(tag_base + (int)p);
}}
/* The block's sum of mix() over words [0, n) of `w`, in thread 0. */
__device__ u64 block_sum(const u64 *w, u64 n, u64 salt) {{
    __shared__ u64 part[{THREADS}];
    u64 acc = 0;
    for (u64 i = threadIdx.x; i < n; i += blockDim.x) acc += mix(w[i], i, salt);
    part[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {{
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }}
    return part[0];
}}

extern "C" __global__ void pack(u64 *buf, unsigned packets, u64 words,
                                unsigned rank, u64 iteration) {{
    u64 total = (u64)packets * words;
    for (u64 k = blockIdx.x * (u64)blockDim.x + threadIdx.x; k < total;
         k += (u64)gridDim.x * blockDim.x) {{
        u64 p = k / words, i = k % words;
        if (i + 1 == words) continue; /* the trailer */
        u64 seed = ((u64)rank << 40) ^ (p << 24) ^ (iteration * K_POS);
        buf[k] = splitmix64(seed ^ (i * K_SALT));
    }}
}}

/* One block per packet. */
extern "C" __global__ void checksum(u64 *buf, u64 words, int tag_base) {{
    unsigned p = blockIdx.x;
    u64 *w = buf + (u64)p * words;
    u64 salt = salt_of(p, tag_base);
    u64 sum = block_sum(w, words - 1, salt);
    if (threadIdx.x == 0) w[words - 1] = finish(sum, salt);
}}

/* One block, for packet `p`. */
extern "C" __global__ void verify(const u64 *buf, unsigned p, u64 words, int tag_base,
                                  u64 *status) {{
    const u64 *w = buf + (u64)p * words;
    u64 salt = salt_of(p, tag_base);
    u64 sum = block_sum(w, words - 1, salt);
    if (threadIdx.x == 0) status[p] = finish(sum, salt) ^ w[words - 1];
}}

extern "C" __global__ void interior(double *field, u64 cells, unsigned sweeps) {{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < cells;
         i += (u64)gridDim.x * blockDim.x) {{
        double x = field[i];
        for (unsigned s = 0; s < sweeps; ++s) x = fma(x, 0.9999, 1e-4);
        field[i] = x;
    }}
}}

extern "C" __global__ void boundary(double *edge, const u64 *recv, unsigned packets,
                                    u64 words) {{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i + 1 < words;
         i += (u64)gridDim.x * blockDim.x) {{
        double s = 0.0;
        for (unsigned p = 0; p < packets; ++p)
            s += (double)(recv[(u64)p * words + i] >> 44) * (1.0 / 1048576.0);
        edge[i] = 0.5 * edge[i] + s;
    }}
}}
"#
    )
}

/// NVRTC's options: no contraction of a multiply and an add into an fma (NVRTC's
/// default), which can round differently from the Rust definitions (the interior's
/// one fma is explicit on both sides).
fn compile_options() -> CompileOptions {
    CompileOptions {
        name: Some("gpu_pipeline.cu".into()),
        fmad: Some(false),
        ..Default::default()
    }
}

/// The compiled kernels.
struct Kernels {
    _module: Arc<CudaModule>,
    pack: CudaFunction,
    checksum: CudaFunction,
    verify: CudaFunction,
    interior: CudaFunction,
    boundary: CudaFunction,
}

/// The cuda device (see the module's documentation).
pub struct CudaDevice {
    tracer: CudaTracer,
    kernels: Kernels,
    name: String,
    device: Vec<CudaSlice<u8>>,
    pinned: Vec<PinnedBuffer>,
    ops: Vec<OpHandle>,
}

fn nvrtc(e: impl std::fmt::Debug) -> GpuError {
    GpuError {
        backend: Backend::Cuda.name(),
        what: format!("compiling the device code with NVRTC: {e:?}"),
    }
}

fn cuda(what: &str, e: impl std::fmt::Debug) -> GpuError {
    GpuError {
        backend: Backend::Cuda.name(),
        what: format!("{what}: {e:?}"),
    }
}

impl CudaDevice {
    /// Opens device `ordinal`, compiles the kernels, and records on `recorder`.
    pub fn new(recorder: &Recorder, ordinal: usize, name: String) -> Result<CudaDevice, GpuError> {
        let tracer = CudaTracer::new(recorder.clone(), ordinal, Stream::COUNT)?;
        let ptx = compile_ptx_with_opts(device_source(), compile_options()).map_err(nvrtc)?;
        let module = tracer
            .context()
            .load_module(ptx)
            .map_err(|e| cuda("loading the compiled kernels", e))?;
        let f = |n: &str| {
            module
                .load_function(n)
                .map_err(|e| cuda("finding a compiled kernel", e))
        };
        let kernels = Kernels {
            pack: f("pack")?,
            checksum: f("checksum")?,
            verify: f("verify")?,
            interior: f("interior")?,
            boundary: f("boundary")?,
            _module: module,
        };
        Ok(CudaDevice {
            tracer,
            kernels,
            name,
            device: Vec::new(),
            pinned: Vec::new(),
            ops: Vec::new(),
        })
    }

    fn addr(&self, (buf, offset): (DevBuf, usize), bytes: usize) -> Result<u64, GpuError> {
        let s = self
            .device
            .get(buf.0)
            .ok_or_else(|| cuda("no such device buffer", buf.0))?;
        if offset.checked_add(bytes).is_none_or(|end| end > s.len()) {
            return Err(cuda(
                "a device range overruns its buffer",
                (offset, bytes, s.len()),
            ));
        }
        let stream = self.tracer.stream(Stream::Compute.id())?;
        let (ptr, _sync) = s.device_ptr(stream);
        Ok(ptr + offset as u64)
    }

    fn host(&self, (buf, offset): (HostBuf, usize), bytes: usize) -> Result<*mut u8, GpuError> {
        let b = self
            .pinned
            .get(buf.0)
            .ok_or_else(|| cuda("no such pinned buffer", buf.0))?;
        if offset.checked_add(bytes).is_none_or(|end| end > b.len()) {
            return Err(cuda(
                "a host range overruns its buffer",
                (offset, bytes, b.len()),
            ));
        }
        Ok(b.as_mut_ptr().wrapping_add(offset))
    }

    fn push(&mut self, h: OpHandle) -> Op {
        self.ops.push(h);
        Op(self.ops.len() - 1)
    }

    fn op(&self, op: Op) -> Result<&OpHandle, GpuError> {
        self.ops
            .get(op.0)
            .ok_or_else(|| cuda("no such operation (released?)", op.0))
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // Event tracking is off, so cudarc frees a device buffer on its own (compute)
        // stream without waiting for the other streams, and a pinned buffer at once:
        // an exchange left by an error may still have copies and kernels in flight on
        // them. Let the device finish first (an error here has nowhere to go).
        let _ = self.tracer.context().synchronize();
    }
}

/// A grid of blocks covering `n` items, capped (kernels loop over the rest).
fn grid(n: u64) -> LaunchConfig {
    let blocks = n.div_ceil(u64::from(THREADS)).clamp(1, 4096) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// One block per item.
fn blocks(n: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.max(1), 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl Device for CudaDevice {
    fn backend(&self) -> Backend {
        Backend::Cuda
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn alloc(&mut self, bytes: usize) -> Result<DevBuf, GpuError> {
        let stream = self.tracer.stream(Stream::Compute.id())?;
        let slice = stream
            .alloc_zeros::<u8>(bytes.max(8))
            .map_err(|e| cuda("allocating device memory", e))?;
        // The allocation and its zeroing are ordered on the compute stream: make them
        // visible to every stream before use.
        stream
            .synchronize()
            .map_err(|e| cuda("allocating device memory", e))?;
        self.device.push(slice);
        Ok(DevBuf(self.device.len() - 1))
    }

    fn alloc_pinned(&mut self, bytes: usize) -> Result<HostBuf, GpuError> {
        self.pinned.push(self.tracer.pinned(bytes.max(8))?);
        Ok(HostBuf(self.pinned.len() - 1))
    }

    fn host_ptr(&self, buf: HostBuf) -> *mut u8 {
        self.pinned
            .get(buf.0)
            .map_or(std::ptr::null_mut(), PinnedBuffer::as_mut_ptr)
    }

    fn copy_d2h(
        &mut self,
        stream: Stream,
        src: (DevBuf, usize),
        dst: (HostBuf, usize),
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<Op, GpuError> {
        let (s, d) = (self.addr(src, bytes)?, self.host(dst, bytes)?);
        // SAFETY: both ranges checked to lie in live allocations of this context; the
        // phases leave the host range alone until the copy's event is done.
        let h = unsafe { self.tracer.copy_d2h(stream.id(), s, d, bytes, packet)? };
        Ok(self.push(h))
    }

    fn copy_h2d(
        &mut self,
        stream: Stream,
        src: (HostBuf, usize),
        dst: (DevBuf, usize),
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<Op, GpuError> {
        let (s, d) = (self.host(src, bytes)?, self.addr(dst, bytes)?);
        // SAFETY: as for copy_d2h.
        let h = unsafe { self.tracer.copy_h2d(stream.id(), s, d, bytes, packet)? };
        Ok(self.push(h))
    }

    fn copy_d2d(
        &mut self,
        stream: Stream,
        src: (DevBuf, usize),
        dst: (DevBuf, usize),
        bytes: usize,
        packet: Option<u32>,
    ) -> Result<Op, GpuError> {
        let (s, d) = (self.addr(src, bytes)?, self.addr(dst, bytes)?);
        // SAFETY: as for copy_d2h.
        let h = unsafe { self.tracer.copy_d2d(stream.id(), s, d, bytes, packet)? };
        Ok(self.push(h))
    }

    fn launch(&mut self, stream: Stream, kernel: Launch) -> Result<Op, GpuError> {
        let op = DeviceOp {
            op: GpuOp::Kernel,
            device: self.tracer.device(),
            stream: stream.id(),
            bytes: 0,
            src: 0,
            dst: 0,
            packet: kernel.packet(),
            name: kernel.name(),
        };
        let k = &self.kernels;
        let h = match kernel {
            Launch::Pack {
                buf,
                packets,
                packet_bytes,
                rank,
                iteration,
            } => {
                let ptr = self.addr((buf, 0), packets as usize * packet_bytes)?;
                let words = (packet_bytes / 8) as u64;
                let cfg = grid(u64::from(packets) * words);
                self.tracer.issue(op, |s| {
                    let mut b = s.launch_builder(&k.pack);
                    b.arg(&ptr)
                        .arg(&packets)
                        .arg(&words)
                        .arg(&rank)
                        .arg(&iteration);
                    // SAFETY: the arguments match `pack`'s parameters; the range is
                    // checked.
                    unsafe { b.launch(cfg) }.map(|_| ())
                })?
            }
            Launch::Checksum {
                buf,
                packets,
                packet_bytes,
                tag_base,
            } => {
                let ptr = self.addr((buf, 0), packets as usize * packet_bytes)?;
                let words = (packet_bytes / 8) as u64;
                self.tracer.issue(op, |s| {
                    let mut b = s.launch_builder(&k.checksum);
                    b.arg(&ptr).arg(&words).arg(&tag_base);
                    // SAFETY: as for pack.
                    unsafe { b.launch(blocks(packets)) }.map(|_| ())
                })?
            }
            Launch::Verify {
                buf,
                packet,
                packet_bytes,
                tag_base,
                status,
            } => {
                let ptr = self.addr((buf, 0), (packet as usize + 1) * packet_bytes)?;
                let st = self.addr((status, 0), (packet as usize + 1) * 8)?;
                let words = (packet_bytes / 8) as u64;
                self.tracer.issue(op, |s| {
                    let mut b = s.launch_builder(&k.verify);
                    b.arg(&ptr).arg(&packet).arg(&words).arg(&tag_base).arg(&st);
                    // SAFETY: as for pack.
                    unsafe { b.launch(blocks(1)) }.map(|_| ())
                })?
            }
            Launch::Interior {
                field,
                cells,
                sweeps,
            } => {
                let ptr = self.addr((field, 0), cells * 8)?;
                let n = cells as u64;
                self.tracer.issue(op, |s| {
                    let mut b = s.launch_builder(&k.interior);
                    b.arg(&ptr).arg(&n).arg(&sweeps);
                    // SAFETY: as for pack.
                    unsafe { b.launch(grid(n)) }.map(|_| ())
                })?
            }
            Launch::Boundary {
                edge,
                recv,
                packets,
                packet_bytes,
            } => {
                let words = (packet_bytes / 8) as u64;
                let e = self.addr((edge, 0), packet_bytes.saturating_sub(8))?;
                let r = self.addr((recv, 0), packets as usize * packet_bytes)?;
                self.tracer.issue(op, |s| {
                    let mut b = s.launch_builder(&k.boundary);
                    b.arg(&e).arg(&r).arg(&packets).arg(&words);
                    // SAFETY: as for pack.
                    unsafe { b.launch(grid(words)) }.map(|_| ())
                })?
            }
        };
        Ok(self.push(h))
    }

    fn stream_wait(&mut self, stream: Stream, op: Op) -> Result<(), GpuError> {
        let h = self.op(op)?.clone();
        Ok(self.tracer.stream_wait(stream.id(), &h)?)
    }

    fn query(&mut self, op: Op) -> Result<bool, GpuError> {
        let h = self.op(op)?.clone();
        Ok(self.tracer.query(&h)?)
    }

    fn wait(&mut self, op: Op) -> Result<(), GpuError> {
        let h = self.op(op)?.clone();
        Ok(self.tracer.wait(&h)?)
    }

    fn sync_stream(&mut self, stream: Stream) -> Result<(), GpuError> {
        Ok(self.tracer.sync_stream(stream.id())?)
    }

    fn sync_device(&mut self) -> Result<(), GpuError> {
        Ok(self.tracer.sync_device()?)
    }

    fn times(&mut self, op: Op) -> Result<Option<Timing>, GpuError> {
        let h = self.op(op)?.clone();
        Ok(self.tracer.times(&h)?)
    }

    fn download(&mut self, src: DevBuf, offset: usize, dst: &mut [u8]) -> Result<(), GpuError> {
        let s = self.addr((src, offset), dst.len())?;
        // SAFETY: the device range is checked; `dst` is borrowed until the copy is
        // waited for, below (pageable memory: the driver stages it).
        let h = unsafe {
            self.tracer
                .copy_d2h(Stream::D2H.id(), s, dst.as_mut_ptr(), dst.len(), None)?
        };
        Ok(self.tracer.wait(&h)?)
    }

    fn release_ops(&mut self) -> Result<(), GpuError> {
        self.tracer.collect()?;
        if self.tracer.pending() != 0 {
            return Err(cuda(
                "operations released before they were done",
                self.tracer.pending(),
            ));
        }
        self.ops.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_code_carries_the_checksums_constants() {
        let src = device_source();
        assert!(src.contains(&format!("#define K_SALT {K_SALT:#x}ULL")));
        assert!(src.contains(&format!("#define FNV_PRIME {FNV_PRIME:#x}ULL")));
        for k in ["pack", "checksum", "verify", "interior", "boundary"] {
            assert!(src.contains(&format!("__global__ void {k}(")), "{k}");
        }
        assert!(src.contains("__shared__ u64 part[256]"));
    }

    #[test]
    fn the_device_code_compiles_where_nvrtc_is_present() {
        // NVRTC needs no GPU: where it loads, the source must compile and define every
        // kernel the backend loads by name (unmangled).
        if !overlap_instrument::gpu::cuda::nvrtc_present() {
            return;
        }
        let ptx = compile_ptx_with_opts(device_source(), compile_options());
        let ptx = match ptx {
            Ok(p) => p.to_src(),
            Err(e) => panic!("NVRTC: {e:?}"),
        };
        for k in ["pack", "checksum", "verify", "interior", "boundary"] {
            assert!(ptx.contains(&format!(".entry {k}(")), "{k}");
        }
    }
}
