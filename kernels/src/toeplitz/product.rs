//! The local product of a symmetric band Toeplitz matrix with `m` vectors, directly or
//! by FFT, on one segment of rows. No MPI here: the kernel hands it a segment whose
//! halo rows are already in place.
//!
//! A segment holds `rows_in` rows of `m` values each, row after row (row-major, the
//! `m_rowwise` layout: the `lambda` rows at either end of a block are contiguous, so a
//! halo is sent and received in place). The product keeps the rows whose whole band lies
//! in the segment:
//!
//! ```text
//! out[i][k] = sum_{d=-lambda..lambda} t[|d|] * seg[i + lambda + d][k],   i in 0..rows_in - 2*lambda
//! ```
//!
//! By FFT (overlap-save, as MIDAPACK does for large lambda): blocks of `L` rows are
//! transformed, multiplied by the transform of the band, and transformed back; the last
//! `L - 2*lambda` entries of each block are the product. Two real vectors go through
//! one complex transform (one as the real part, one as the imaginary part), since the
//! band is real.

use std::sync::Arc;

use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};

use crate::options::toeplitz::Method;

/// The band `t[0..=lambda]` and what each method prepared for it.
pub struct BandProduct {
    t: Vec<f64>,
    m: usize,
    fft: Option<FftPlan>,
}

struct FftPlan {
    len: usize,
    forward: Arc<dyn Fft<f64>>,
    inverse: Arc<dyn Fft<f64>>,
    /// Transform of the band laid out as `t[lambda], .., t[0], .., t[lambda]`, zero
    /// padded, already divided by `len` (the inverse transform is unnormalised).
    band_hat: Vec<Complex<f64>>,
    buf: Vec<Complex<f64>>,
    scratch: Vec<Complex<f64>>,
}

/// The FFT length for half-bandwidth `lambda` on segments of at most `max_rows` rows: a
/// power of two of 8 times the band's width, so that most of each block is output, but
/// no longer than one block holding the whole segment, and at least twice the band.
pub fn fft_len(lambda: usize, max_rows: usize) -> usize {
    let band = 2 * lambda + 1;
    let wanted = (8 * band).next_power_of_two();
    let whole = max_rows.next_power_of_two();
    wanted
        .min(whole)
        .max((2 * band).next_power_of_two())
        .max(64)
}

impl BandProduct {
    /// A product with band `t` (`t[d]` for `d` in `0..=lambda`) on `m` vectors, for
    /// segments of at most `max_rows` rows.
    pub fn new(t: Vec<f64>, m: usize, method: Method, max_rows: usize) -> BandProduct {
        let fft = (method == Method::Fft).then(|| FftPlan::new(&t, max_rows));
        BandProduct { t, m, fft }
    }

    /// The FFT length, when the product is by FFT.
    pub fn fft_len(&self) -> Option<usize> {
        self.fft.as_ref().map(|f| f.len)
    }

    /// Half-bandwidth.
    pub fn lambda(&self) -> usize {
        self.t.len() - 1
    }

    /// The method in use.
    pub fn method(&self) -> Method {
        if self.fft.is_some() {
            Method::Fft
        } else {
            Method::Direct
        }
    }

    /// Computes `out` (`rows_in - 2*lambda` rows) from `seg` (`rows_in` rows).
    pub fn apply(&mut self, seg: &[f64], out: &mut [f64]) {
        let m = self.m;
        let lambda = self.lambda();
        assert_eq!(seg.len() % m, 0, "whole rows");
        assert_eq!(
            out.len() + 2 * lambda * m,
            seg.len(),
            "the output is the input less lambda rows at each end"
        );
        match &mut self.fft {
            None => direct(&self.t, m, seg, out),
            Some(plan) => plan.apply(lambda, m, seg, out),
        }
    }
}

/// Rows per chunk of the direct product: a chunk of output and its band of input stay
/// in cache while every diagonal passes over them.
const CHUNK_ROWS: usize = 256;

/// Direct band sums, folding the symmetric band: `t0*x[i] + sum_d t[d]*(x[i-d] + x[i+d])`,
/// one diagonal at a time over a chunk of rows (contiguous, so the loops vectorise).
fn direct(t: &[f64], m: usize, seg: &[f64], out: &mut [f64]) {
    let lambda = t.len() - 1;
    for (c, chunk) in out.chunks_mut(CHUNK_ROWS * m).enumerate() {
        let base = c * CHUNK_ROWS * m;
        let len = chunk.len();
        let centre = &seg[base + lambda * m..][..len];
        for (y, x) in chunk.iter_mut().zip(centre) {
            *y = t[0] * x;
        }
        for (d, &td) in t.iter().enumerate().skip(1) {
            let below = &seg[base + (lambda - d) * m..][..len];
            let above = &seg[base + (lambda + d) * m..][..len];
            for ((y, a), b) in chunk.iter_mut().zip(below).zip(above) {
                *y += td * (a + b);
            }
        }
    }
}

impl FftPlan {
    fn new(t: &[f64], max_rows: usize) -> FftPlan {
        let lambda = t.len() - 1;
        let len = fft_len(lambda, max_rows);
        let mut planner = FftPlanner::new();
        let forward = planner.plan_fft_forward(len);
        let inverse = planner.plan_fft_inverse(len);
        let scale = 1.0 / len as f64;
        let mut band_hat = vec![Complex::new(0.0, 0.0); len];
        for (j, b) in band_hat.iter_mut().take(2 * lambda + 1).enumerate() {
            b.re = t[j.abs_diff(lambda)] * scale;
        }
        let scratch_len = forward
            .get_inplace_scratch_len()
            .max(inverse.get_inplace_scratch_len());
        let mut scratch = vec![Complex::new(0.0, 0.0); scratch_len];
        forward.process_with_scratch(&mut band_hat, &mut scratch);
        FftPlan {
            len,
            forward,
            inverse,
            band_hat,
            buf: vec![Complex::new(0.0, 0.0); len],
            scratch,
        }
    }

    fn apply(&mut self, lambda: usize, m: usize, seg: &[f64], out: &mut [f64]) {
        let rows_in = seg.len() / m;
        let rows_out = out.len() / m;
        let step = self.len - 2 * lambda;
        // Vectors two at a time: k as the real part, k + 1 as the imaginary part.
        for k in (0..m).step_by(2) {
            let pair = k + 1 < m;
            let mut start = 0;
            while start < rows_out {
                for (q, c) in self.buf.iter_mut().enumerate() {
                    let row = start + q;
                    *c = if row < rows_in {
                        let re = seg[row * m + k];
                        let im = if pair { seg[row * m + k + 1] } else { 0.0 };
                        Complex::new(re, im)
                    } else {
                        Complex::new(0.0, 0.0)
                    };
                }
                self.forward
                    .process_with_scratch(&mut self.buf, &mut self.scratch);
                for (c, b) in self.buf.iter_mut().zip(&self.band_hat) {
                    *c *= b;
                }
                self.inverse
                    .process_with_scratch(&mut self.buf, &mut self.scratch);
                let count = step.min(rows_out - start);
                for q in 0..count {
                    let c = self.buf[q + 2 * lambda];
                    let row = (start + q) * m;
                    out[row + k] = c.re;
                    if pair {
                        out[row + k + 1] = c.im;
                    }
                }
                start += step;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The band sums written out over the whole segment, the slow obvious way.
    fn naive(t: &[f64], m: usize, seg: &[f64]) -> Vec<f64> {
        let lambda = t.len() - 1;
        let rows_out = seg.len() / m - 2 * lambda;
        let mut out = vec![0.0; rows_out * m];
        for i in 0..rows_out {
            for k in 0..m {
                for j in 0..=2 * lambda {
                    out[i * m + k] += t[j.abs_diff(lambda)] * seg[(i + j) * m + k];
                }
            }
        }
        out
    }

    fn band(lambda: usize) -> Vec<f64> {
        (0..=lambda).map(|d| 1.0 / (1.0 + d as f64)).collect()
    }

    fn segment(rows: usize, m: usize) -> Vec<f64> {
        (0..rows * m)
            .map(|i| 1.0 + 0.5 * (i as f64 * 0.37).sin())
            .collect()
    }

    fn max_relative_difference(a: &[f64], b: &[f64]) -> f64 {
        let scale = b.iter().fold(0.0f64, |s, x| s.max(x.abs()));
        a.iter()
            .zip(b)
            .fold(0.0f64, |s, (x, y)| s.max((x - y).abs()))
            / scale
    }

    #[test]
    fn direct_and_fft_agree_with_the_band_sums() {
        // Odd and even vector counts, a segment shorter than one FFT block and one
        // spanning several, and the narrowest band.
        for (lambda, m, rows_out) in [(1, 1, 5), (3, 2, 40), (5, 3, 700), (16, 4, 2000)] {
            let t = band(lambda);
            let seg = segment(rows_out + 2 * lambda, m);
            let expected = naive(&t, m, &seg);
            for method in [Method::Direct, Method::Fft] {
                let mut p = BandProduct::new(t.clone(), m, method, seg.len() / m);
                assert_eq!(p.method(), method);
                let mut out = vec![f64::NAN; rows_out * m];
                p.apply(&seg, &mut out);
                let err = max_relative_difference(&out, &expected);
                assert!(
                    err < 1e-13,
                    "{} lambda {lambda} m {m}: {err:e}",
                    method.name()
                );
            }
        }
    }

    #[test]
    fn fft_blocks_leave_room_for_the_band() {
        assert_eq!(fft_len(1, 1 << 20), 64);
        assert_eq!(fft_len(100, 1 << 20), 2048);
        // A short segment needs no longer block than itself...
        assert_eq!(fft_len(100, 500), 512);
        // ... but a block always holds twice the band, so that it makes progress.
        assert_eq!(fft_len(1000, 3000), 4096);
        for lambda in [1, 7, 64, 1000] {
            assert!(fft_len(lambda, 1 << 30) >= 8 * (2 * lambda + 1));
            assert!(fft_len(lambda, 3 * lambda) > 2 * lambda);
        }
    }

    #[test]
    fn an_empty_output_is_fine() {
        let mut p = BandProduct::new(band(2), 2, Method::Fft, 4);
        p.apply(&segment(4, 2), &mut []);
    }
}
