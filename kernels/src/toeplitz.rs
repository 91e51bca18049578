//! MIDAPACK's halo exchange for a distributed symmetric band Toeplitz product.
//!
//! The matrix `T` is `n x n` with `T[i][j] = t[|i - j|]` for `|i - j| <= lambda` and zero
//! elsewhere; it multiplies `m` vectors (an `n x m` matrix `X`, `m_rowwise` in MIDAPACK).
//! Rows are distributed by blocks over the ranks. To compute its rows of `T X`, a rank
//! needs the `lambda` rows just before its block (from its left neighbour) and the
//! `lambda` just after (from its right neighbour); the first and last ranks have no
//! neighbour on one side and talk to `MPI_PROC_NULL` there, as MIDAPACK does.
//!
//! - `blocking`: `MPI_Sendrecv` to the left, then to the right (MIDAPACK with
//!   `FLAG_BLOCKINGCOMM`).
//! - `nonblocking`: `MPI_Irecv`/`MPI_Isend` to the left and to the right, then the four
//!   `MPI_Wait`s, then the product (MIDAPACK's default). Nothing runs between the posts
//!   and the waits: the overlap is false. The product is computed, and recorded, as two
//!   spans: the interior rows (whose band lies in the local block: they read only the
//!   local rows), then the `lambda` rows at each end (they read the halos and the edge
//!   rows), so that a trace shows which part could move before the waits.
//! - `overlapped`: the same posts, then the interior rows are computed, then the four
//!   waits, then the `lambda` rows at each end: the same two spans, the interior moved
//!   between the posts and the waits.
//!
//! ```text
//!  blocking:     Sendrecv(left) Sendrecv(right) | product
//!  nonblocking:  Irecv Isend Irecv Isend | Wait Wait Wait Wait | interior | boundary
//!  overlapped:   Irecv Isend Irecv Isend | interior | Wait Wait Wait Wait | boundary
//! ```
//!
//! (A block of fewer than `2 * lambda` rows has no interior: both non-blocking variants
//! then compute one `product` after the waits.) Every compute span names the buffers it
//! reads and writes: `halo_l` and `halo_r` (the halos, where the receives land),
//! `local` (the local rows; the sends read their first and last `lambda`), `edge_l` and
//! `edge_r` (the `2 * lambda` local rows at each end, which the boundary reads), `y`
//! and its parts `y_head`, `y_interior`, `y_tail` (the product), and `first` (the first
//! iteration's product, which later ones are checked against).
//!
//! Every run checks its result: the first iteration's rows against a serial product of
//! the same data (computed from the formulas that generate `t` and `X`, over global
//! indices, without any halo), to a relative error of [`TOLERANCE`]; every later
//! iteration, which multiplies the same data, must reproduce the first bit for bit.
//! Halos are filled with NaN before every exchange, so a halo that was not received
//! cannot go unnoticed.

mod product;
mod verify;

use std::ops::Range;
use std::time::Instant;

use mpi::collective::SystemOperation;
use mpi::request::scope;
use overlap_instrument::mpi::proc_null;
use overlap_instrument::recorder::{BufferAccess, Recorder};
use overlap_instrument::schema::{ParamValue, Params};

pub use product::{fft_len, BandProduct};
pub use verify::{deviation, serial_rows, Deviation};

use crate::{access, Kernel, KernelContext, KernelError};

/// Largest relative error (max norm) of the product against the serial product.
pub const TOLERANCE: f64 = 1e-12;
/// `auto` computes the product by FFT from this half-bandwidth on.
pub const FFT_FROM_LAMBDA: usize = 32;
/// The tag of every halo message (`MPI_USER_TAG` in MIDAPACK).
const TAG: i32 = 555;

pub use crate::options::toeplitz::{Method, Options, ProductChoice, Variant};

impl ProductChoice {
    /// The method for half-bandwidth `lambda`.
    pub fn method(self, lambda: usize) -> Method {
        match self {
            ProductChoice::Fixed(m) => m,
            ProductChoice::Auto if lambda >= FFT_FROM_LAMBDA => Method::Fft,
            ProductChoice::Auto => Method::Direct,
        }
    }
}

impl Options {
    /// Why these options cannot run on `ranks` ranks, naming the option.
    pub fn check(&self, ranks: usize) -> Result<(), String> {
        if self.lambda == 0 {
            return Err("--lambda must be at least 1".into());
        }
        if self.vectors == 0 {
            return Err("--vectors must be at least 1".into());
        }
        if self.iterations == 0 {
            return Err("--iters must be at least 1".into());
        }
        if self.size <= self.lambda {
            return Err(format!(
                "--size ({}) must be larger than --lambda ({})",
                self.size, self.lambda
            ));
        }
        let smallest = self.size / ranks;
        if ranks > 1 && smallest < self.lambda {
            return Err(format!(
                "--lambda ({}) is larger than the smallest block of rows ({} = {} rows / {} \
                 ranks): each rank must hold at least lambda rows, so that a halo comes from \
                 one neighbour",
                self.lambda, smallest, self.size, ranks
            ));
        }
        Ok(())
    }
}

/// The band: `t[d]` for `d` in `0..=lambda`, positive and decreasing (like the noise
/// correlations MIDAPACK works with).
pub fn coefficient(d: usize) -> f64 {
    1.0 / (1.0 + d as f64)
}

/// Entry `(row, vector)` of `X`: between 0.5 and 1.5.
pub fn value(row: usize, vector: usize) -> f64 {
    1.0 + 0.5 * (row as f64 * 0.618_033_988_75 + vector as f64 * 0.75).sin()
}

/// The rows of `rank` among `ranks` for `n` rows: blocks of `n / ranks`, the first
/// `n % ranks` ranks one row more.
pub fn block(n: usize, ranks: usize, rank: usize) -> Range<usize> {
    let base = n / ranks;
    let extra = n % ranks;
    let start = rank * base + rank.min(extra);
    start..start + base + usize::from(rank < extra)
}

/// What a run of the Toeplitz kernel reports (the same on every rank).
#[derive(Clone, Debug, PartialEq)]
pub struct ToeplitzReport {
    /// The product used.
    pub method: Method,
    /// Its FFT length on this rank (blocks are sized to the rank's rows), when by FFT.
    pub fft_len: Option<usize>,
    /// Per iteration, the slowest rank's time, seconds.
    pub iteration_s: Vec<f64>,
    /// Mean time per iteration inside the exchange's MPI calls, slowest rank, seconds.
    pub exchange_s: f64,
    /// Mean time per iteration in the product, slowest rank, seconds.
    pub compute_s: f64,
    /// `max |y - y_ref| / max |y_ref|` over all ranks.
    pub relative_error: f64,
    /// Halo messages received, all ranks and iterations.
    pub messages: u64,
    /// Halo bytes received, all ranks and iterations.
    pub bytes: u64,
}

/// The kernel.
#[derive(Clone, Debug, Default)]
pub struct Toeplitz {
    /// Its options.
    pub options: Options,
}

/// One rank's share: its rows, and the `(n_local + 2*lambda) x m` extended block with
/// the halos at either end.
struct Block {
    rows: Range<usize>,
    lambda: usize,
    m: usize,
    ext: Vec<f64>,
    left: Option<i32>,
    right: Option<i32>,
}

impl Block {
    fn local_rows(&self) -> usize {
        self.rows.len()
    }

    /// Splits the extended block into (left halo, local rows, right halo); a halo with
    /// no neighbour is empty, so nothing is received into it.
    fn split(&mut self) -> (&mut [f64], &mut [f64], &mut [f64]) {
        let halo = self.lambda * self.m;
        let local = self.local_rows() * self.m;
        let (left, rest) = self.ext.split_at_mut(halo);
        let (mid, right) = rest.split_at_mut(local);
        let left = if self.left.is_some() {
            left
        } else {
            &mut left[..0]
        };
        let right = if self.right.is_some() {
            right
        } else {
            &mut right[..0]
        };
        (left, mid, right)
    }

    /// Fills the halos that have a neighbour with NaN.
    fn poison_halos(&mut self) {
        let (left, _, right) = self.split();
        left.fill(f64::NAN);
        right.fill(f64::NAN);
    }

    /// What goes to each side: the first and the last `lambda` local rows, or nothing
    /// where there is no neighbour.
    fn outgoing(local: &[f64], halo: usize, left: bool, right: bool) -> (&[f64], &[f64]) {
        let to_left = if left { &local[..halo] } else { &[][..] };
        let to_right = if right {
            &local[local.len() - halo..]
        } else {
            &[][..]
        };
        (to_left, to_right)
    }
}

/// The products a rank applies: to its whole block (or interior), and to the `3*lambda`
/// rows around each end of it (the overlapped variant's boundary), each with FFT blocks
/// sized for its segments.
struct Products {
    whole: BandProduct,
    boundary: BandProduct,
}

/// Where the time of one iteration went on this rank.
#[derive(Clone, Copy, Default)]
struct IterationTime {
    exchange: f64,
    compute: f64,
}

impl Toeplitz {
    fn exchange_blocking(&self, ctx: &KernelContext<'_>, b: &mut Block) {
        let comm = &ctx.comm;
        let (left, right) = (
            b.left.unwrap_or(proc_null()),
            b.right.unwrap_or(proc_null()),
        );
        let (has_left, has_right) = (b.left.is_some(), b.right.is_some());
        let halo = b.lambda * b.m;
        let (left_halo, local, right_halo) = b.split();
        let (to_left, to_right) = Block::outgoing(local, halo, has_left, has_right);
        // To the left: send my first rows left, receive my right halo from the right.
        comm.sendrecv(left, TAG, to_left, right, TAG, right_halo);
        // To the right: send my last rows right, receive my left halo from the left.
        comm.sendrecv(right, TAG, to_right, left, TAG, left_halo);
    }

    /// The non-blocking exchange; `between` runs after the posts, before the waits, with
    /// the local rows (the overlapped variant computes the interior there).
    fn exchange_nonblocking(
        &self,
        ctx: &KernelContext<'_>,
        b: &mut Block,
        between: impl FnOnce(&[f64]),
    ) {
        let comm = &ctx.comm;
        let (left, right) = (
            b.left.unwrap_or(proc_null()),
            b.right.unwrap_or(proc_null()),
        );
        let (has_left, has_right) = (b.left.is_some(), b.right.is_some());
        let halo = b.lambda * b.m;
        let (left_halo, local, right_halo) = b.split();
        let local: &[f64] = local;
        let (to_left, to_right) = Block::outgoing(local, halo, has_left, has_right);
        scope(|s| {
            // The seed's order: to the left (Irecv from right, Isend to left), then to
            // the right (Irecv from left, Isend to right).
            let left_r = comm.irecv(s, right, TAG, right_halo);
            let left_s = comm.isend(s, left, TAG, to_left);
            let right_r = comm.irecv(s, left, TAG, left_halo);
            let right_s = comm.isend(s, right, TAG, to_right);
            between(local);
            comm.wait(left_r);
            comm.wait(left_s);
            comm.wait(right_r);
            comm.wait(right_s);
        });
    }

    /// Testing aid: corrupts the first received halo value.
    fn inject_fault(&self, ctx: &KernelContext<'_>, b: &mut Block) {
        if self.options.fault_rank != Some(ctx.comm.rank()) {
            return;
        }
        let (left, _, right) = b.split();
        if let Some(v) = left.first_mut().or(right.first_mut()) {
            *v += 1.0;
        }
    }

    /// One iteration: exchange and product into `y`.
    fn iteration(
        &self,
        ctx: &KernelContext<'_>,
        b: &mut Block,
        products: &mut Products,
        y: &mut [f64],
        spans: &Spans,
    ) -> IterationTime {
        let rec = ctx.recorder;
        let (lambda, m, nl) = (b.lambda, b.m, b.local_rows());
        let split = nl >= 2 * lambda;
        b.poison_halos();
        let t0 = Instant::now();
        let mut interior_s = 0.0;
        match self.options.variant {
            Variant::Blocking => self.exchange_blocking(ctx, b),
            Variant::Nonblocking => self.exchange_nonblocking(ctx, b, |_| {}),
            Variant::Overlapped if split => {
                let interior = &mut y[lambda * m..(nl - lambda) * m];
                self.exchange_nonblocking(ctx, b, |local| {
                    let t = Instant::now();
                    let _g = rec.compute_with("interior", spans.interior);
                    products.whole.apply(local, interior);
                    interior_s = t.elapsed().as_secs_f64();
                });
            }
            // Blocks under 2*lambda rows have no interior: all of it waits for the halo.
            Variant::Overlapped => self.exchange_nonblocking(ctx, b, |_| {}),
        }
        let exchanged = t0.elapsed().as_secs_f64();
        self.inject_fault(ctx, b);
        let t1 = Instant::now();
        match self.options.variant {
            Variant::Nonblocking | Variant::Overlapped if split => {
                if self.options.variant == Variant::Nonblocking {
                    // What the overlapped variant computes between the posts and the
                    // waits, computed here after them.
                    let _g = rec.compute_with("interior", spans.interior);
                    let local = &b.ext[lambda * m..(lambda + nl) * m];
                    products
                        .whole
                        .apply(local, &mut y[lambda * m..(nl - lambda) * m]);
                }
                let _g = rec.compute_with("boundary", spans.boundary);
                let (head, rest) = y.split_at_mut(lambda * m);
                let tail = &mut rest[(nl - 2 * lambda) * m..];
                products.boundary.apply(&b.ext[..3 * lambda * m], head);
                products.boundary.apply(&b.ext[(nl - lambda) * m..], tail);
            }
            _ => {
                let _g = rec.compute_with("product", spans.product);
                products.whole.apply(&b.ext, y);
            }
        }
        let compute = t1.elapsed().as_secs_f64();
        IterationTime {
            exchange: exchanged - interior_s,
            compute: compute + interior_s,
        }
    }
}

/// What each compute span reads and writes (see the module's documentation).
struct Spans {
    interior: BufferAccess,
    boundary: BufferAccess,
    product: BufferAccess,
    check: BufferAccess,
    verify: BufferAccess,
}

impl Spans {
    fn new() -> Result<Spans, KernelError> {
        Ok(Spans {
            interior: access(&["local"], &["y_interior"])?,
            boundary: access(
                &["halo_l", "edge_l", "edge_r", "halo_r"],
                &["y_head", "y_tail"],
            )?,
            product: access(&["halo_l", "local", "halo_r"], &["y"])?,
            check: access(&["y", "first"], &["first"])?,
            verify: access(&["first"], &[])?,
        })
    }

    /// Binds the names to the block's halos and rows, the product and its first copy.
    fn bind(rec: &Recorder, b: &Block, y: &[f64], first: &Vec<f64>) {
        let (lambda, m, nl) = (b.lambda, b.m, b.local_rows());
        let rows = |from: usize, to: usize| &b.ext[from * m..to * m];
        rec.bind_slice("halo_l", rows(0, lambda));
        rec.bind_slice("local", rows(lambda, lambda + nl));
        rec.bind_slice("halo_r", rows(lambda + nl, nl + 2 * lambda));
        let edge = (2 * lambda).min(nl);
        rec.bind_slice("edge_l", rows(lambda, lambda + edge));
        rec.bind_slice("edge_r", rows(lambda + nl - edge, lambda + nl));
        rec.bind_slice("y", y);
        let head = (lambda * m).min(y.len());
        let tail = y.len().saturating_sub(lambda * m).max(head);
        rec.bind_slice("y_head", &y[..head]);
        rec.bind_slice("y_interior", &y[head..tail]);
        rec.bind_slice("y_tail", &y[tail..]);
        rec.bind_vec("first", first);
    }
}

impl Kernel for Toeplitz {
    type Output = ToeplitzReport;

    fn name(&self) -> &'static str {
        "toeplitz"
    }

    fn params(&self) -> Params {
        let o = &self.options;
        let mut p = Params::new();
        p.insert("kernel".into(), ParamValue::Text(self.name().into()));
        p.insert("variant".into(), ParamValue::Text(o.variant.name().into()));
        p.insert("size".into(), ParamValue::Int(o.size as i64));
        p.insert("lambda".into(), ParamValue::Int(o.lambda as i64));
        p.insert("vectors".into(), ParamValue::Int(o.vectors as i64));
        p.insert("iterations".into(), ParamValue::Int(o.iterations as i64));
        let method = o.product.method(o.lambda).name();
        p.insert("product".into(), ParamValue::Text(method.into()));
        p
    }

    fn run(&self, ctx: &KernelContext<'_>) -> Result<ToeplitzReport, KernelError> {
        let o = &self.options;
        let comm = &ctx.comm;
        let (rank, ranks) = (comm.rank(), comm.size());
        o.check(ranks as usize)
            .map_err(KernelError::InvalidOption)?;
        let (lambda, m) = (o.lambda, o.vectors);
        let rows = block(o.size, ranks as usize, rank as usize);
        let nl = rows.len();
        let mut b = Block {
            rows: rows.clone(),
            lambda,
            m,
            ext: vec![0.0; (nl + 2 * lambda) * m],
            left: (rank > 0).then(|| rank - 1),
            right: (rank + 1 < ranks).then(|| rank + 1),
        };
        for (i, row) in b.ext.chunks_exact_mut(m).skip(lambda).take(nl).enumerate() {
            for (k, x) in row.iter_mut().enumerate() {
                *x = value(rows.start + i, k);
            }
        }
        let method = o.product.method(lambda);
        let band: Vec<f64> = (0..=lambda).map(coefficient).collect();
        let mut products = Products {
            whole: BandProduct::new(band.clone(), m, method, nl + 2 * lambda),
            boundary: BandProduct::new(band, m, method, 3 * lambda),
        };
        let mut y = vec![0.0; nl * m];
        // Room for the copy up front, so that making it moves nothing already bound.
        let mut first = Vec::with_capacity(y.len());
        let spans = Spans::new()?;
        Spans::bind(ctx.recorder, &b, &y, &first);
        let mut times = Vec::with_capacity(o.iterations);
        comm.barrier();
        for iteration in 0..o.iterations {
            times.push(self.iteration(ctx, &mut b, &mut products, &mut y, &spans));
            let _g = ctx.recorder.compute_with("check", spans.check);
            if iteration == 0 {
                first.clone_from(&y);
            } else if let Some(i) = (0..y.len()).find(|&i| y[i].to_bits() != first[i].to_bits()) {
                return Err(KernelError::Inconsistent {
                    iteration,
                    row: rows.start + i / m,
                    vector: i % m,
                });
            }
        }
        let local = {
            let _g = ctx.recorder.compute_with("verify", spans.verify);
            deviation(&first, &serial_rows(o.size, lambda, m, rows.clone()), m)
        };
        let received = u64::from(b.left.is_some()) + u64::from(b.right.is_some());
        let per_iteration =
            |f: fn(&IterationTime) -> f64| times.iter().map(f).sum::<f64>() / times.len() as f64;
        let mut wide = vec![
            local.max_difference,
            local.max_reference,
            per_iteration(|t| t.exchange),
            per_iteration(|t| t.compute),
        ];
        wide.extend(times.iter().map(|t| t.exchange + t.compute));
        let mut slowest = vec![0.0; wide.len()];
        comm.all_reduce_into(&wide[..], &mut slowest[..], SystemOperation::max());
        let counts = [received * o.iterations as u64];
        let mut messages = [0u64];
        comm.all_reduce_into(&counts[..], &mut messages[..], SystemOperation::sum());
        let relative_error = slowest[0] / slowest[1];
        // A NaN error (a NaN in the reference) fails too.
        if relative_error.is_nan() || relative_error > TOLERANCE {
            let (row, vector) = local.worst;
            return Err(KernelError::Verification {
                relative_error,
                limit: TOLERANCE,
                local_row: rows.start + row,
                vector,
                local_difference: local.max_difference,
            });
        }
        Ok(ToeplitzReport {
            method,
            fft_len: products.whole.fft_len(),
            iteration_s: slowest[4..].to_vec(),
            exchange_s: slowest[2],
            compute_s: slowest[3],
            relative_error,
            messages: messages[0],
            bytes: messages[0] * (lambda * m * 8) as u64,
        })
    }
}

#[cfg(test)]
mod tests;
