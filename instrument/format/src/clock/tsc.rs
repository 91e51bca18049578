//! Turning raw time-stamp counter readings into nanoseconds of `CLOCK_MONOTONIC`, after
//! the run.
//!
//! The recorder stores raw ticks and, as the run goes, calibration readings: pairs of
//! (TSC, monotonic ns) taken together. With every reading known, the conversion is the
//! piecewise-linear function through them: exact at each reading, linear in between,
//! and extended along the first and the last segment outside them. Readings that do not
//! advance both clocks are left out, so the function is strictly increasing: a thread's
//! events never run backwards.

/// The conversion of one rank's ticks, from its calibration readings.
#[derive(Clone, Debug, PartialEq)]
pub struct TscConversion {
    /// Readings (tsc, absolute monotonic ns), strictly increasing in both.
    readings: Vec<(u64, u64)>,
}

impl TscConversion {
    /// The conversion through `readings` (in the order taken). `None` with fewer than two
    /// usable readings: the tick rate is then unknown.
    pub fn new(readings: impl IntoIterator<Item = (u64, u64)>) -> Option<TscConversion> {
        let mut kept: Vec<(u64, u64)> = Vec::new();
        for (tsc, mono) in readings {
            match kept.last() {
                Some(&(t, m)) if tsc <= t || mono <= m => {}
                _ => kept.push((tsc, mono)),
            }
        }
        (kept.len() >= 2).then_some(TscConversion { readings: kept })
    }

    /// The readings used.
    pub fn readings(&self) -> &[(u64, u64)] {
        &self.readings
    }

    /// `tsc` as absolute monotonic ns (rounded; clamped at 0).
    pub fn to_monotonic(&self, tsc: u64) -> u64 {
        let r = &self.readings;
        // The segment holding `tsc`: the first one for ticks before it, the last one after.
        let i = r.partition_point(|&(t, _)| t <= tsc).clamp(1, r.len() - 1);
        let ((t0, m0), (t1, m1)) = (r[i - 1], r[i]);
        let slope = (m1 - m0) as f64 / (t1 - t0) as f64;
        let ns = m0 as f64 + (tsc as i128 - t0 as i128) as f64 * slope;
        ns.round().max(0.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_two_readings_that_advance() {
        assert_eq!(TscConversion::new([]), None);
        assert_eq!(TscConversion::new([(100, 10_000)]), None);
        assert_eq!(TscConversion::new([(100, 10_000), (100, 20_000)]), None);
        assert_eq!(TscConversion::new([(100, 10_000), (200, 10_000)]), None);
    }

    /// ```text
    ///  ticks   50   100   150   200   250   300   350
    ///  ns      5k   10k   15k   20k   30k   40k   50k
    ///  readings:    (100,10k)   (200,20k)   (300,40k)
    /// ```
    #[test]
    fn interpolates_between_readings_and_extends_outside() {
        let c = TscConversion::new([(100, 10_000), (200, 20_000), (300, 40_000)])
            .expect("three readings");
        assert_eq!(c.to_monotonic(100), 10_000);
        assert_eq!(c.to_monotonic(150), 15_000);
        assert_eq!(c.to_monotonic(200), 20_000);
        assert_eq!(c.to_monotonic(250), 30_000);
        assert_eq!(
            c.to_monotonic(350),
            50_000,
            "after the last: its segment's rate"
        );
        assert_eq!(
            c.to_monotonic(50),
            5_000,
            "before the first: the first segment's"
        );
        assert_eq!(c.to_monotonic(0), 0);
    }

    #[test]
    fn readings_that_do_not_advance_are_left_out() {
        // (250, 19k) runs backwards in ns: dropped.
        let c = TscConversion::new([(100, 10_000), (200, 20_000), (250, 19_000), (300, 30_000)])
            .expect("usable");
        assert_eq!(c.readings(), &[(100, 10_000), (200, 20_000), (300, 30_000)]);
    }

    /// Random rates and jitter: conversion never decreases as ticks increase.
    #[test]
    fn conversion_is_monotonic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..100 {
            let (mut tick, mut ns) = (1_000u64, 1_000u64);
            let mut readings = Vec::new();
            for _ in 0..20 {
                readings.push((tick, ns));
                tick += 1 + next() % 1_000;
                ns = (ns as i64 + (next() % 2_000) as i64 - 100).max(0) as u64;
            }
            let Some(c) = TscConversion::new(readings) else {
                continue;
            };
            let mut before = 0;
            for t in (0..tick + 500).step_by(7) {
                let now = c.to_monotonic(t);
                assert!(now >= before, "tick {t}: {now} < {before}");
                before = now;
            }
        }
    }
}
