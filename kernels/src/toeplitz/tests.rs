//! Unit tests of the Toeplitz kernel: row blocks, options, the distributed product against the serial one, and the halo check.
#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn blocks_cover_the_rows_once() {
    for (n, p) in [(10, 3), (12, 4), (7, 7), (100, 1)] {
        let mut next = 0;
        for r in 0..p {
            let b = block(n, p, r);
            assert_eq!(b.start, next);
            assert!(b.len() == n / p || b.len() == n / p + 1);
            next = b.end;
        }
        assert_eq!(next, n);
    }
}

#[test]
fn options_are_checked_against_the_rank_count() {
    let o = Options {
        size: 100,
        lambda: 30,
        ..Options::default()
    };
    assert!(o.check(3).is_ok());
    let err = o.check(4).unwrap_err();
    assert!(
        err.contains("--lambda (30) is larger than the smallest block"),
        "{err}"
    );
    let zero = Options {
        lambda: 0,
        ..o.clone()
    };
    assert!(zero.check(2).unwrap_err().contains("--lambda"));
    let small = Options { size: 30, ..o };
    assert!(small.check(1).unwrap_err().contains("--size (30)"));
    assert_eq!(ProductChoice::Auto.method(FFT_FROM_LAMBDA), Method::Fft);
    assert_eq!(ProductChoice::Auto.method(3), Method::Direct);
}

/// The halo exchange done by hand for `ranks` blocks: each block's extended rows
/// copied from its neighbours' local rows, as the messages would bring them.
fn blocks_after_exchange(n: usize, lambda: usize, m: usize, ranks: usize) -> Vec<Block> {
    (0..ranks)
        .map(|r| {
            let rows = block(n, ranks, r);
            let nl = rows.len();
            let mut ext = vec![0.0; (nl + 2 * lambda) * m];
            let lo = rows.start as isize - lambda as isize;
            for (e, row) in ext.chunks_exact_mut(m).enumerate() {
                let g = lo + e as isize;
                if g >= 0 && (g as usize) < n {
                    for (k, x) in row.iter_mut().enumerate() {
                        *x = value(g as usize, k);
                    }
                }
            }
            Block {
                rows,
                lambda,
                m,
                ext,
                left: (r > 0).then(|| r as i32 - 1),
                right: (r + 1 < ranks).then(|| r as i32 + 1),
            }
        })
        .collect()
}

fn local_product(b: &Block, method: Method) -> Vec<f64> {
    let t = (0..=b.lambda).map(coefficient).collect();
    let mut p = BandProduct::new(t, b.m, method, b.ext.len() / b.m);
    let mut y = vec![0.0; b.local_rows() * b.m];
    p.apply(&b.ext, &mut y);
    y
}

#[test]
fn distributed_products_match_the_serial_product() {
    let (n, lambda, m) = (97, 5, 3);
    for ranks in [1, 2, 4] {
        for method in [Method::Direct, Method::Fft] {
            for b in blocks_after_exchange(n, lambda, m, ranks) {
                let y = local_product(&b, method);
                let d = deviation(&y, &serial_rows(n, lambda, m, b.rows.clone()), m);
                assert!(
                    d.max_difference / d.max_reference < TOLERANCE,
                    "{ranks} ranks, {method:?}: {d:?}"
                );
            }
        }
    }
}

#[test]
fn a_corrupt_or_missing_halo_value_fails_the_check() {
    let (n, lambda, m) = (64, 4, 2);
    let mut blocks = blocks_after_exchange(n, lambda, m, 2);
    let b = &mut blocks[1];
    let reference = serial_rows(n, lambda, m, b.rows.clone());
    // One value of rank 1's left halo, slightly wrong.
    b.ext[m + 1] += 1e-6;
    let d = deviation(&local_product(b, Method::Direct), &reference, m);
    assert!(d.max_difference / d.max_reference > TOLERANCE, "{d:?}");
    assert!(
        d.worst.0 < lambda,
        "the damage is within lambda rows of the edge"
    );
    // A halo never received (still NaN) is an infinite error, not a skipped one.
    b.poison_halos();
    let d = deviation(&local_product(b, Method::Fft), &reference, m);
    assert_eq!(d.max_difference, f64::INFINITY);
}
