//! The other term of a network the user gave one of (`--latency` or `--bandwidth`),
//! fitted through the trace's class estimates with the given one fixed, and the
//! plausibility rules of [`crate::metrics::transfer`] it must pass.

use crate::metrics::transfer::{Line, SizeClass, Unfit, BANDWIDTH_RANGE, LATENCY_RANGE_NS};

/// Time per byte of a bandwidth in bytes per second (0 for an infinite one).
pub(super) fn ns_per_byte(bandwidth: f64) -> f64 {
    if bandwidth.is_infinite() {
        0.0
    } else {
        1e9 / bandwidth
    }
}

/// `(bytes, [fastest, estimate, typical])` of each class with an estimate, ns.
pub(super) fn points(classes: &[SizeClass]) -> impl Iterator<Item = (f64, [f64; 3])> + '_ {
    classes.iter().filter_map(|c| {
        let v = [c.fastest_ns?, c.estimate_ns?, c.typical_ns?].map(|v| v as f64);
        Some((c.bytes as f64, v))
    })
}

/// The time per byte through `classes` with latency `l` fixed (least squares on
/// relative errors, through the origin once the latency is taken off), and its range
/// from the classes' fastest and median clean transfers; why not, when none has bytes
/// or the bandwidth comes out implausible.
pub(super) fn bandwidth_for(classes: &[SizeClass], l: f64) -> Result<[Line; 3], Unfit> {
    let sized: Vec<(f64, [f64; 3])> = points(classes).filter(|p| p.0 > 0.0).collect();
    let (Some(first), Some(last)) = (sized.first(), sized.last()) else {
        return Err(Unfit::TooFewClean {
            most: classes.iter().map(|c| c.clean).max().unwrap_or(0),
            needed: crate::metrics::transfer::MIN_CLEAN,
        });
    };
    let w = |y: f64| 1.0 / (y * y).max(1.0);
    let num: f64 = sized.iter().map(|(x, v)| w(v[1]) * x * (v[1] - l)).sum();
    let den: f64 = sized.iter().map(|(x, v)| w(v[1]) * x * x).sum();
    let b = num / den;
    if b.is_nan() || b <= 0.0 {
        return Err(Unfit::NoGrowth {
            from: first.0 as u64,
            to: last.0 as u64,
        });
    }
    check_bandwidth(1e9 / b)?;
    let per = |k: usize| sized.iter().map(move |(x, v)| ((v[k] - l) / x).max(0.0));
    let low = per(0).fold(b, f64::min);
    let high = per(2).fold(b, f64::max);
    let line = |ns_per_byte| Line {
        latency_ns: l,
        ns_per_byte,
    };
    Ok([line(low), line(b), line(high)])
}

/// The latency through `classes` with time per byte `b` fixed (the weighted mean of
/// what is left of each class's time), and its range; why not, when it comes out
/// implausible.
pub(super) fn latency_for(classes: &[SizeClass], b: f64) -> Result<[Line; 3], Unfit> {
    let points: Vec<(f64, [f64; 3])> = points(classes).collect();
    let Some(first) = points.first() else {
        return Err(Unfit::TooFewClean {
            most: classes.iter().map(|c| c.clean).max().unwrap_or(0),
            needed: crate::metrics::transfer::MIN_CLEAN,
        });
    };
    // l = Σ w (y - b x) / Σ w, each class weighing 1 / y² as in the fit.
    let w = |y: f64| 1.0 / (y * y).max(1.0);
    let l = points
        .iter()
        .map(|(x, v)| w(v[1]) * (v[1] - b * x))
        .sum::<f64>()
        / points.iter().map(|(_, v)| w(v[1])).sum::<f64>();
    check_latency(l, first.0 as u64)?;
    let rest = |k: usize| points.iter().map(move |(x, v)| v[k] - b * x);
    let low = rest(0).fold(l, f64::min).max(0.0);
    let high = rest(2).fold(l, f64::max);
    let line = |latency_ns| Line {
        latency_ns,
        ns_per_byte: b,
    };
    Ok([line(low), line(l), line(high)])
}

/// A latency the plausibility rules of [`crate::metrics::transfer`] accept.
fn check_latency(latency_ns: f64, from: u64) -> Result<(), Unfit> {
    if latency_ns <= 0.0 {
        return Err(Unfit::NoLatency { latency_ns, from });
    }
    if !(LATENCY_RANGE_NS.0..=LATENCY_RANGE_NS.1).contains(&latency_ns) {
        return Err(Unfit::Latency { latency_ns });
    }
    Ok(())
}

/// A bandwidth those rules accept.
fn check_bandwidth(bytes_per_s: f64) -> Result<(), Unfit> {
    if !(BANDWIDTH_RANGE.0..=BANDWIDTH_RANGE.1).contains(&bytes_per_s) {
        return Err(Unfit::Bandwidth { bytes_per_s });
    }
    Ok(())
}
