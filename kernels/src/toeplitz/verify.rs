//! The serial reference of the Toeplitz kernel, and how far a result is from it.
//!
//! The reference is computed from the formulas that generate the band and the vectors,
//! over global row indices, with the matrix's ends handled by truncating the band: it
//! uses neither halos nor the distributed product's code, so a wrong halo, a wrong
//! block layout or a wrong product all show up as a difference.

use std::ops::Range;

use super::{coefficient, value};

/// The serial product's rows `rows` (all `m` vectors, row-major), over global indices:
/// `sum_j t[|i - j|] X[j]` for `j` within the band and inside `0..n`, with `X` and `t`
/// generated from their formulas. It shares no code with the distributed product: one
/// diagonal `j - i = d` at a time, `d` from `-lambda` to `lambda`, over chunks of rows
/// (so that it vectorises and stays in cache: it costs about one direct product).
pub fn serial_rows(n: usize, lambda: usize, m: usize, rows: Range<usize>) -> Vec<f64> {
    const CHUNK: usize = 512;
    let t: Vec<f64> = (0..=lambda).map(coefficient).collect();
    let lo = rows.start.saturating_sub(lambda);
    let hi = (rows.end + lambda).min(n);
    let x: Vec<f64> = (lo..hi)
        .flat_map(|j| (0..m).map(move |k| value(j, k)))
        .collect();
    let mut out = vec![0.0; rows.len() * m];
    let (n, lambda) = (n as isize, lambda as isize);
    for start in rows.clone().step_by(CHUNK) {
        let end = (start + CHUNK).min(rows.end) as isize;
        for d in -lambda..=lambda {
            // Rows i of the chunk whose column i + d is inside the matrix.
            let first = (start as isize).max(-d);
            let last = end.min(n - d);
            if first >= last {
                continue;
            }
            let w = t[d.unsigned_abs()];
            let (a, b) = (
                (first as usize - rows.start) * m,
                (last as usize - rows.start) * m,
            );
            let src = ((first + d) as usize - lo) * m;
            for (y, v) in out[a..b].iter_mut().zip(&x[src..]) {
                *y += w * v;
            }
        }
    }
    out
}

/// How far a result is from the serial product.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Deviation {
    /// Largest `|y - y_ref|` (infinite when `y` holds a NaN).
    pub max_difference: f64,
    /// Largest `|y_ref|`.
    pub max_reference: f64,
    /// Where the largest difference is: (local row, vector).
    pub worst: (usize, usize),
}

/// Compares `y` with `reference` (both row-major, `m` per row).
pub fn deviation(y: &[f64], reference: &[f64], m: usize) -> Deviation {
    let mut d = Deviation {
        max_difference: 0.0,
        max_reference: 0.0,
        worst: (0, 0),
    };
    for (i, (a, b)) in y.iter().zip(reference).enumerate() {
        let diff = (a - b).abs();
        let diff = if diff.is_nan() { f64::INFINITY } else { diff };
        if diff > d.max_difference {
            d.max_difference = diff;
            d.worst = (i / m, i % m);
        }
        d.max_reference = d.max_reference.max(b.abs());
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The band sums one entry at a time, straight from the definition.
    fn naive_rows(n: usize, lambda: usize, m: usize, rows: Range<usize>) -> Vec<f64> {
        let mut out = Vec::new();
        for i in rows {
            for k in 0..m {
                let band = i.saturating_sub(lambda)..(i + lambda + 1).min(n);
                out.push(band.map(|j| coefficient(i.abs_diff(j)) * value(j, k)).sum());
            }
        }
        out
    }

    #[test]
    fn serial_rows_match_the_definition_at_the_ends_and_across_chunks() {
        for (n, lambda, m, rows) in [
            (3000, 7, 2, 0..1200),
            (3000, 7, 2, 1800..3000),
            (50, 20, 3, 10..40),
            (10, 9, 1, 0..10),
        ] {
            let got = serial_rows(n, lambda, m, rows.clone());
            let want = naive_rows(n, lambda, m, rows);
            let d = deviation(&got, &want, m);
            assert!(d.max_difference / d.max_reference < 1e-14, "{d:?}");
        }
    }

    #[test]
    fn serial_rows_are_the_band_sums() {
        // Row 0 of a 3-row, lambda-1 problem: t0*x0 + t1*x1.
        let r = serial_rows(3, 1, 1, 0..1);
        let expected = coefficient(0) * value(0, 0) + coefficient(1) * value(1, 0);
        assert_eq!(r, vec![expected]);
    }
}
