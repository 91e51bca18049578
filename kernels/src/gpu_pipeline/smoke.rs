//! `--smoke`: the pipeline checked on a new system, after the seed's smoke test. Packet
//! sizes 4 KiB, 64 KiB, 1 MiB and 16 MiB (up to `--smoke-max`), every packet of every
//! exchange verified, and each size's bandwidth set against peaks measured here:
//!
//! - D2H and H2D copies: bytes over the copies' summed durations, against the copy
//!   peak, measured with one copy of the whole send (receive) buffer each way, best of
//!   three;
//! - the staged exchange: the bytes a rank sends through MPI per exchange over the
//!   exchange's time (phases 1 to 5: D2H, MPI, H2D), median over exchanges, against
//!   the MPI bandwidth of a ping-pong of the same size between rank pairs (2i, 2i+1)
//!   through the same pinned buffers.
//!
//! Every figure is the slowest rank's. A figure below 50 % of its peak is flagged.

use mpi::collective::SystemOperation;
use serde::Serialize;

use super::device::{GpuError, Stream};
use super::packets::Layout;
use super::phases::{Exchange, Measured, Plan};
use crate::results::{bytes, rate, Table};
use crate::KernelError;

/// The seed's packet sizes.
pub const SIZES: [usize; 4] = [4 << 10, 64 << 10, 1 << 20, 16 << 20];

/// Below this fraction of its peak a figure is flagged.
pub const LOW: f64 = 0.5;

/// Round trips of the ping-pong per size (after one untimed).
const ROUND_TRIPS: u32 = 5;

/// The sizes the smoke test runs, up to `max` (at least the smallest).
pub fn sizes(max: usize) -> Vec<usize> {
    let mut s: Vec<usize> = SIZES.iter().copied().filter(|&b| b <= max).collect();
    if s.is_empty() {
        s.push(SIZES[0]);
    }
    s
}

/// One packet size's figures (bytes per second; `None`: nothing to measure, as MPI on
/// one rank).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SmokeRow {
    /// Bytes per packet.
    pub packet_bytes: usize,
    /// Packets verified, all ranks.
    pub verified: u64,
    /// D2H copy bandwidth.
    pub d2h: Option<f64>,
    /// H2D copy bandwidth.
    pub h2d: Option<f64>,
    /// Staged exchange bandwidth.
    pub staged: Option<f64>,
    /// MPI ping-pong bandwidth at this size.
    pub mpi_peak: Option<f64>,
}

/// What the smoke test measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SmokeReport {
    /// Bytes of the copies measuring the copy peaks.
    pub peak_bytes: usize,
    /// D2H copy peak.
    pub d2h_peak: f64,
    /// H2D copy peak.
    pub h2d_peak: f64,
    /// One row per packet size.
    pub rows: Vec<SmokeRow>,
}

fn gpu(e: GpuError) -> KernelError {
    KernelError::Gpu(e.to_string())
}

impl Exchange<'_, '_> {
    /// The slowest rank's value (`None` everywhere when no rank has one).
    fn slowest(&self, local: Option<f64>) -> Option<f64> {
        let mut out = [0.0f64];
        let mine = [local.unwrap_or(f64::INFINITY)];
        self.comm
            .all_reduce_into(&mine[..], &mut out[..], SystemOperation::min());
        out[0].is_finite().then_some(out[0])
    }

    fn sum(&self, local: u64) -> u64 {
        let mut out = [0u64];
        self.comm
            .all_reduce_into(&[local][..], &mut out[..], SystemOperation::sum());
        out[0]
    }

    /// The best of three whole-buffer copies each way, bytes per second.
    fn copy_peaks(&mut self, all: usize) -> Result<(f64, f64), GpuError> {
        let (mut d2h, mut h2d) = (0.0f64, 0.0f64);
        for _ in 0..3 {
            let (src, dst) = ((self.bufs.send_dev, 0), (self.bufs.send_host, 0));
            let op = self.dev.copy_d2h(Stream::D2H, src, dst, all, None)?;
            self.dev.wait(op)?;
            d2h = d2h.max(rate_of(all as u64, self.dev.times(op)?));
            let (src, dst) = ((self.bufs.recv_host, 0), (self.bufs.recv_dev, 0));
            let op = self.dev.copy_h2d(Stream::H2D, src, dst, all, None)?;
            self.dev.wait(op)?;
            h2d = h2d.max(rate_of(all as u64, self.dev.times(op)?));
            self.dev.release_ops()?;
        }
        Ok((d2h, h2d))
    }

    /// This rank's one-way MPI bandwidth for `size`-byte messages with its partner
    /// (rank ^ 1), through the pinned buffers; `None` without a partner.
    fn pingpong(&mut self, size: usize) -> Option<f64> {
        let (rank, ranks) = (self.comm.rank(), self.comm.size());
        let partner = rank ^ 1;
        if partner >= ranks {
            return None;
        }
        let send_base = self.dev.host_ptr(self.bufs.send_host);
        let recv_base = self.dev.host_ptr(self.bufs.recv_host);
        // SAFETY: the first `size` bytes of the pinned buffers, no device copy pending
        // (every exchange ends with the device idle), used by MPI only here.
        let (out, inn) = unsafe {
            (
                std::slice::from_raw_parts(send_base, size),
                std::slice::from_raw_parts_mut(recv_base, size),
            )
        };
        const TAG: i32 = 499;
        let mut trip = |comm: &overlap_instrument::mpi::TracedComm<'_, _>| {
            if rank % 2 == 0 {
                comm.send(partner, TAG, out);
                comm.recv(partner, TAG, &mut inn[..]);
            } else {
                comm.recv(partner, TAG, &mut inn[..]);
                comm.send(partner, TAG, out);
            }
        };
        trip(self.comm);
        let t0 = self.recorder.now_ns();
        for _ in 0..ROUND_TRIPS {
            trip(self.comm);
        }
        let elapsed = self.recorder.now_ns().saturating_sub(t0);
        let one_way_ns = elapsed as f64 / f64::from(2 * ROUND_TRIPS);
        (one_way_ns > 0.0).then(|| size as f64 / (one_way_ns * 1e-9))
    }

    /// The smoke test (see the module's documentation) with `iterations` exchanges per
    /// size, on the layout `layout_for(size)`.
    pub fn smoke(
        &mut self,
        layout_for: impl Fn(usize) -> Layout,
        plan: &Plan,
        iterations: usize,
        sizes: &[usize],
    ) -> Result<SmokeReport, KernelError> {
        let largest = sizes.iter().copied().max().unwrap_or(SIZES[0]);
        let peak_bytes = layout_for(largest).total_bytes();
        let (d2h, h2d) = self.copy_peaks(peak_bytes).map_err(gpu)?;
        let (d2h_peak, h2d_peak) = (
            self.slowest(Some(d2h)).unwrap_or(0.0),
            self.slowest(Some(h2d)).unwrap_or(0.0),
        );
        let mut rows = Vec::new();
        let mut iteration = 0u64;
        for &size in sizes {
            let layout = layout_for(size);
            let mut runs: Vec<Measured> = Vec::with_capacity(iterations);
            for _ in 0..iterations {
                runs.push(self.run(&layout, plan, iteration)?);
                iteration += 1;
            }
            let total = |f: fn(&Measured) -> (u64, u64)| {
                runs.iter()
                    .map(f)
                    .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
            };
            let (d2h, h2d) = (total(|m| m.d2h), total(|m| m.h2d));
            let mut exchange: Vec<f64> = runs.iter().map(|m| m.exchange_ns as f64).collect();
            let median_ns = crate::stats::median(&mut exchange);
            let mpi_bytes = runs.first().map_or(0, |m| m.mpi_bytes);
            let staged =
                (mpi_bytes > 0 && median_ns > 0.0).then(|| mpi_bytes as f64 / (median_ns * 1e-9));
            let pingpong = self.pingpong(size);
            let verified = runs.iter().map(|m| m.verified).sum();
            rows.push(SmokeRow {
                packet_bytes: size,
                verified: self.sum(verified),
                d2h: self.slowest(ratio(d2h)),
                h2d: self.slowest(ratio(h2d)),
                staged: self.slowest(staged),
                mpi_peak: self.slowest(pingpong),
            });
        }
        Ok(SmokeReport {
            peak_bytes,
            d2h_peak,
            h2d_peak,
            rows,
        })
    }
}

/// Bytes per second of `(bytes, ns)`.
fn ratio((b, ns): (u64, u64)) -> Option<f64> {
    (b > 0 && ns > 0).then(|| b as f64 / (ns as f64 * 1e-9))
}

fn rate_of(bytes: u64, t: Option<overlap_instrument::gpu::Timing>) -> f64 {
    t.and_then(|t| ratio((bytes, t.end_ns.saturating_sub(t.start_ns))))
        .unwrap_or(0.0)
}

/// `figure` against `peak`: the percentage, flagged `!` below [`LOW`]; `-` when either
/// is missing. Returns the cell and whether it is low.
fn against(figure: Option<f64>, peak: Option<f64>) -> (String, bool) {
    match (figure, peak) {
        (Some(f), Some(p)) if p > 0.0 => {
            let low = f / p < LOW;
            let mark = if low { " !" } else { "" };
            (format!("{:.0} %{mark}", 100.0 * f / p), low)
        }
        _ => ("-".into(), false),
    }
}

/// The smoke test's table and its notes.
pub fn table(r: &SmokeReport, ranks: i32, exchanges: usize) -> String {
    let mut t = Table::new(&[
        "packet", "verified", "D2H", "of peak", "H2D", "of peak", "staged", "MPI", "of MPI",
    ]);
    let cell = |v: Option<f64>| v.map_or("-".to_string(), rate);
    let mut low = Vec::new();
    for row in &r.rows {
        let (d, dl) = against(row.d2h, Some(r.d2h_peak));
        let (h, hl) = against(row.h2d, Some(r.h2d_peak));
        let (s, sl) = against(row.staged, row.mpi_peak);
        for (is_low, what) in [(dl, "D2H"), (hl, "H2D"), (sl, "staged")] {
            if is_low {
                low.push(format!("{} {what}", bytes(row.packet_bytes as u64)));
            }
        }
        t.row(vec![
            bytes(row.packet_bytes as u64),
            row.verified.to_string(),
            cell(row.d2h),
            d,
            cell(row.h2d),
            h,
            cell(row.staged),
            cell(row.mpi_peak),
            s,
        ]);
    }
    let verdict = if low.is_empty() {
        "no figure below 50 % of its peak".to_string()
    } else {
        let n = low.len();
        let (count, peak) = match n {
            1 => ("1 figure is".to_string(), "its peak"),
            _ => (format!("{n} figures are"), "their peaks"),
        };
        format!(
            "{count} below 50 % of {peak} (marked !): {}",
            low.join(", ")
        )
    };
    format!(
        "copy peaks (one {} copy each way, best of 3): D2H {}, H2D {}\n{}\
         {exchanges} exchanges per size on {ranks} ranks, every packet's salted checksum \
         verified on the device; D2H/H2D: bytes over the copies' summed durations; staged: \
         bytes a rank sends through MPI per exchange over the exchange (D2H, MPI, H2D), \
         median; MPI: ping-pong of the same size between rank pairs; all the slowest \
         rank's\n{verdict}\n",
        bytes(r.peak_bytes as u64),
        rate(r.d2h_peak),
        rate(r.h2d_peak),
        t.render(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_the_seeds_up_to_the_cap() {
        assert_eq!(sizes(16 << 20), SIZES);
        assert_eq!(sizes(64 << 10), [4 << 10, 64 << 10]);
        assert_eq!(sizes(1), [4 << 10], "at least the smallest");
    }

    #[test]
    fn figures_below_half_their_peak_are_flagged() {
        assert_eq!(against(Some(40.0), Some(100.0)), ("40 % !".into(), true));
        assert_eq!(against(Some(50.0), Some(100.0)), ("50 %".into(), false));
        assert_eq!(against(None, Some(1.0)), ("-".into(), false));
        let r = SmokeReport {
            peak_bytes: 1 << 20,
            d2h_peak: 10e9,
            h2d_peak: 10e9,
            rows: vec![SmokeRow {
                packet_bytes: 4096,
                verified: 12,
                d2h: Some(1e9),
                h2d: Some(9e9),
                staged: None,
                mpi_peak: Some(1e9),
            }],
        };
        let text = table(&r, 2, 3);
        assert!(text.contains("10 % !"), "{text}");
        assert!(
            text.contains("1 figure is below 50 % of its peak (marked !): 4 KiB D2H"),
            "{text}"
        );
    }
}
