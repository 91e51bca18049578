//! The GPU pipeline: halo packets staged through pinned host memory between GPUs, in
//! the seed's seven phases (`pipelined`: each packet's Isend as soon as its own D2H copy
//! is done, each H2D as soon as its receive is) or the common naive order (`bulk`),
//! every packet checksummed on the device before it leaves and after it arrives.
//!
//! - [`packets`]: which packets a rank exchanges (the faces of a 3-D halo on
//!   `halo3d`'s periodic grid, each split into `--chunks` packets), their tags and
//!   where they lie;
//! - [`checksum`]: what a packet holds and its salted checksum;
//! - [`device`]: the [`device::Device`] the phases are written against, and its
//!   streams; `host` and `cuda` (feature `cuda`) are its backends, [`select`] picks one;
//! - [`phases`]: one exchange, pipelined or bulk; `verify` reads its checks back;
//! - [`smoke`]: `--smoke`, the checks and bandwidth figures for a new system.
//!
//! Every copy and kernel is recorded on its device stream's track (device 0 for the
//! host backend, the CUDA ordinal otherwise), every blocking wait of the host on the
//! device as a host wait; the header says the backend (`cuda` or `host-emulated`).

pub mod checksum;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod device;
mod host;
pub mod packets;
pub mod phases;
pub mod select;
pub mod smoke;
mod verify;

use mpi::collective::SystemOperation;
use overlap_instrument::schema::{ParamValue, Params, GPU_BACKEND_PARAM};
use serde::Serialize;

pub use crate::options::gpu_pipeline::{BackendChoice, Options, Variant};
use crate::{Kernel, KernelContext, KernelError};
use device::{Backend, Device, GpuError};
use packets::{check_packet_bytes, Layout};
use phases::{Buffers, Exchange, Plan};
use select::Selection;
use smoke::SmokeReport;

impl Options {
    /// Why these options cannot run on `ranks` ranks, naming the option.
    pub fn check(&self, ranks: i32) -> Result<(), String> {
        if !self.smoke {
            check_packet_bytes(self.packet_bytes)?;
        }
        if !(1..=64).contains(&self.chunks) {
            return Err(format!("--chunks: {} is not from 1 to 64", self.chunks));
        }
        if self.iterations == 0 {
            return Err("--iters must be at least 1".into());
        }
        if self.interior_cells == 0 {
            return Err("--interior-cells must be at least 1".into());
        }
        if self.inject_swap && ranks < 2 {
            return Err("--inject-swap needs at least 2 ranks (packets through MPI)".into());
        }
        Ok(())
    }

    /// The packet sizes to run: the smoke test's, or `--packet-bytes`.
    pub fn sizes(&self) -> Vec<usize> {
        if self.smoke {
            smoke::sizes(self.smoke_max)
        } else {
            vec![self.packet_bytes]
        }
    }
}

/// The kernel, its backend chosen.
#[derive(Clone, Debug)]
pub struct GpuPipeline {
    /// Its options.
    pub options: Options,
    /// The backend that runs it.
    pub selection: Selection,
}

impl GpuPipeline {
    /// The kernel with `options`, on the backend they choose for a rank that is
    /// `local_rank` on its node; `Err` says why `--backend cuda` cannot run.
    pub fn new(options: Options, local_rank: usize) -> Result<GpuPipeline, String> {
        let selection = select::select(options.backend, local_rank)?;
        Ok(GpuPipeline { options, selection })
    }
}

/// What a run reports (the same on every rank).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuReport {
    /// `cuda` or `host-emulated`.
    pub backend: &'static str,
    /// The device (rank 0's).
    pub device: String,
    /// Why this backend (rank 0's): the device found, or why `auto` fell back to the
    /// host.
    pub why: String,
    /// The grid of ranks.
    pub grid: [i32; 3],
    /// Packets per rank per exchange.
    pub packets: usize,
    /// Of which through MPI (rank 0's).
    pub remote: usize,
    /// Packets verified, all ranks and exchanges.
    pub verified: u64,
    /// Per exchange, the slowest rank's time from phase 1 to the end of phase 5, ns.
    pub exchange_ns: Vec<u64>,
    /// D2H and H2D copy bandwidth (bytes over the copies' summed durations), slowest
    /// rank.
    pub copy_rates: (f64, f64),
    /// The smoke test's figures, with `--smoke`.
    pub smoke: Option<SmokeReport>,
}

fn gpu(e: GpuError) -> KernelError {
    KernelError::Gpu(e.to_string())
}

/// The backend's device.
fn open(sel: &Selection, ctx: &KernelContext<'_>) -> Result<Box<dyn Device>, GpuError> {
    match sel.backend {
        Backend::HostEmulated => Ok(Box::new(host::HostDevice::new(ctx.recorder)?)),
        #[cfg(feature = "cuda")]
        Backend::Cuda => Ok(Box::new(cuda::CudaDevice::new(
            ctx.recorder,
            sel.ordinal,
            sel.device.clone(),
        )?)),
        #[cfg(not(feature = "cuda"))]
        Backend::Cuda => Err(GpuError {
            backend: Backend::Cuda.name(),
            what: "built without the `cuda` feature".into(),
        }),
    }
}

impl Kernel for GpuPipeline {
    type Output = GpuReport;

    fn name(&self) -> &'static str {
        "gpu-pipeline"
    }

    fn params(&self) -> Params {
        let o = &self.options;
        let mut p = Params::new();
        let text = |s: &str| ParamValue::Text(s.to_string());
        p.insert("kernel".into(), text(self.name()));
        p.insert("variant".into(), text(o.variant.name()));
        p.insert(
            GPU_BACKEND_PARAM.into(),
            text(self.selection.backend.name()),
        );
        p.insert("device".into(), text(&self.selection.device));
        p.insert("backend_reason".into(), text(&self.selection.why));
        p.insert("chunks".into(), ParamValue::Int(i64::from(o.chunks)));
        p.insert("iterations".into(), ParamValue::Int(o.iterations as i64));
        let sizes: Vec<String> = o.sizes().iter().map(usize::to_string).collect();
        p.insert("packet_bytes".into(), text(&sizes.join(",")));
        p.insert("smoke".into(), text(if o.smoke { "yes" } else { "no" }));
        p
    }

    fn run(&self, ctx: &KernelContext<'_>) -> Result<GpuReport, KernelError> {
        let o = &self.options;
        let (rank, ranks) = (ctx.comm.rank(), ctx.comm.size());
        o.check(ranks).map_err(KernelError::InvalidOption)?;
        let sizes = o.sizes();
        let largest = sizes.iter().copied().max().unwrap_or(o.packet_bytes);
        let layout_for = |bytes: usize| Layout::new(rank, ranks, o.chunks, bytes);
        let layout = layout_for(largest);
        let mut dev = open(&self.selection, ctx).map_err(gpu)?;
        let bufs = Buffers::new(&mut *dev, layout.packets.len(), largest, o.interior_cells)
            .map_err(gpu)?;
        // The corruption test: the last rank swaps its first two packets through MPI.
        let swap = match layout.remote().take(2).map(|p| p.index).collect::<Vec<_>>()[..] {
            [a, b] if o.inject_swap && rank == ranks - 1 => Some((a, b)),
            _ => None,
        };
        let plan = Plan {
            variant: o.variant,
            cells: o.interior_cells,
            sweeps: o.interior_sweeps,
            swap,
        };
        let mut x = Exchange {
            comm: &ctx.comm,
            recorder: ctx.recorder,
            dev: &mut *dev,
            bufs,
        };
        let mut report = GpuReport {
            backend: self.selection.backend.name(),
            device: self.selection.device.clone(),
            why: self.selection.why.clone(),
            grid: layout.dims,
            packets: layout.packets.len(),
            remote: layout.remote().count(),
            verified: 0,
            exchange_ns: Vec::new(),
            copy_rates: (0.0, 0.0),
            smoke: None,
        };
        if o.smoke {
            let s = x.smoke(layout_for, &plan, o.iterations, &sizes)?;
            report.verified = s.rows.iter().map(|r| r.verified).sum();
            report.smoke = Some(s);
        } else {
            let mut verified = 0;
            let (mut d2h, mut h2d) = ((0u64, 0u64), (0u64, 0u64));
            let mut times = Vec::with_capacity(o.iterations);
            for it in 0..o.iterations {
                let m = x.run(&layout, &plan, it as u64)?;
                verified += m.verified;
                d2h = (d2h.0 + m.d2h.0, d2h.1 + m.d2h.1);
                h2d = (h2d.0 + m.h2d.0, h2d.1 + m.h2d.1);
                times.push(m.exchange_ns);
            }
            let mut slowest = vec![0u64; times.len()];
            ctx.comm
                .all_reduce_into(&times[..], &mut slowest[..], SystemOperation::max());
            let mut total = [0u64];
            ctx.comm
                .all_reduce_into(&[verified][..], &mut total[..], SystemOperation::sum());
            let rate = |(b, ns): (u64, u64)| {
                if ns == 0 {
                    f64::INFINITY
                } else {
                    b as f64 / (ns as f64 * 1e-9)
                }
            };
            let mut rates = [0.0f64; 2];
            ctx.comm.all_reduce_into(
                &[rate(d2h), rate(h2d)][..],
                &mut rates[..],
                SystemOperation::min(),
            );
            report.verified = total[0];
            report.exchange_ns = slowest;
            report.copy_rates = (rates[0], rates[1]);
        }
        // Everything done and recorded before the recording ends.
        x.dev.sync_device().map_err(gpu)?;
        x.dev.release_ops().map_err(gpu)?;
        Ok(report)
    }
}

/// What rank 0 prints after a run.
pub fn summary(k: &GpuPipeline, ranks: i32, r: &GpuReport) -> String {
    use crate::results::{bytes, rate, seconds};
    let o = &k.options;
    let head = format!(
        "gpu-pipeline ({}, {} backend on {}: {}): {ranks} ranks, grid {}x{}x{}, {} packets \
         per rank per exchange ({} through MPI on rank 0, the rest device-to-device)",
        o.variant.name(),
        r.backend,
        r.device,
        r.why,
        r.grid[0],
        r.grid[1],
        r.grid[2],
        r.packets,
        r.remote,
    );
    if let Some(s) = &r.smoke {
        return format!(
            "{head}\nsmoke test: {} packets verified\n{}",
            r.verified,
            smoke::table(s, ranks, o.iterations)
        );
    }
    let mut times: Vec<f64> = r.exchange_ns.iter().map(|&n| n as f64 * 1e-9).collect();
    let min = times.iter().copied().fold(f64::INFINITY, f64::min);
    let median = crate::stats::median(&mut times);
    let shown = |v: f64| if v.is_finite() { rate(v) } else { "-".into() };
    format!(
        "{head}\n\
         \x20 {} exchanges of {} packets: exchange (phases 1 to 5, slowest rank) median {}, \
         min {}\n\
         \x20 copies (bytes over their summed durations, slowest rank): D2H {}, H2D {}\n\
         \x20 every packet verified on the device: {} packets, salted checksums \
         (packet_index + 1000 * tag)",
        o.iterations,
        bytes(o.packet_bytes as u64),
        seconds(median),
        seconds(min),
        shown(r.copy_rates.0),
        shown(r.copy_rates.1),
        r.verified,
    )
}
