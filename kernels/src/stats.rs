//! How many repetitions a micro-benchmark takes, and what figure it reports.
//!
//! Every figure of the micro-benchmarks comes from [`measure`]: a batch of repetitions is
//! timed on every rank, the ranks' times are combined (the slowest rank sets the time),
//! and batches ("samples") are taken until the median of the samples is known to within
//! a target relative standard error, or a sample count or time budget runs out. The
//! figure is the median of the samples; the relative standard error (RSE) of that median
//! is estimated from the median absolute deviation (MAD), which a few samples disturbed
//! by the operating system do not inflate:
//!
//! ```text
//! se(median) = 1.4826 * MAD * sqrt(pi / 2) / sqrt(k)      (k samples)
//! RSE        = se(median) / |median|
//! ```
//!
//! Before the samples, batches of 1, 2, 4... repetitions are run until one would last
//! half of `sample_seconds` at the fastest time per repetition seen so far (warm-up and
//! calibration); their repetitions are reported as warm-up.
//! Every decision is taken from values all ranks hold after the same reductions, so all
//! ranks take the same number of samples and no rank waits for a batch the others skip.

use std::time::Instant;

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use overlap_instrument::mpi::TracedComm;
use serde::Serialize;

/// The factor between the MAD and the standard deviation of a normal distribution.
const MAD_TO_SIGMA: f64 = 1.4826;
/// The standard error of the median of a normal sample is sqrt(pi/2) times the mean's.
const MEDIAN_SE_FACTOR: f64 = 1.253_314_137_315_500_3;
/// A spread this small (per repetition) counts as stable whatever the median: figures
/// near zero (a synchronisation that costs nothing) have no meaningful relative error.
const ABSOLUTE_RESOLUTION_S: f64 = 10e-9;
/// Most repetitions in one sample.
const MAX_REPS_PER_SAMPLE: u64 = 1 << 20;

pub use crate::options::Stability;

impl Stability {
    /// Why these settings cannot be used, naming the option.
    pub fn check(&self) -> Result<(), String> {
        if self.min_samples < 3 {
            return Err(format!(
                "--min-samples must be at least 3 (the spread needs 3 samples), got {}",
                self.min_samples
            ));
        }
        if self.max_samples < self.min_samples {
            return Err(format!(
                "--max-samples ({}) must be at least --min-samples ({})",
                self.max_samples, self.min_samples
            ));
        }
        if !(self.target_rse > 0.0 && self.target_rse < 1.0) {
            return Err(format!(
                "--rse must be a percentage above 0 and below 100, got {}",
                self.target_rse * 100.0
            ));
        }
        if !(self.sample_seconds > 0.0 && self.sample_seconds.is_finite()) {
            return Err("--sample-ms must be a positive number".into());
        }
        if !(self.max_seconds > 0.0 && self.max_seconds.is_finite()) {
            return Err("--point-seconds must be a positive number".into());
        }
        Ok(())
    }
}

/// Why sampling stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The target RSE was reached.
    Stable,
    /// `max_samples` were taken first.
    MaxSamples,
    /// The time budget ran out first.
    TimeBudget,
}

/// One measured figure: seconds per repetition, with how it was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Measurement {
    /// Median over samples of the seconds per repetition: the figure.
    pub median_s: f64,
    /// Fastest sample, seconds per repetition.
    pub min_s: f64,
    /// Estimated relative standard error of the median.
    pub rse: f64,
    /// Samples taken.
    pub samples: usize,
    /// Repetitions in each sample.
    pub reps_per_sample: u64,
    /// Repetitions measured (`samples * reps_per_sample`).
    pub reps: u64,
    /// Repetitions run before the samples, to warm up and to size the samples.
    pub warmup_reps: u64,
    /// Why sampling stopped.
    pub stop: Stop,
}

impl Measurement {
    /// True when the target RSE was reached.
    pub fn stable(&self) -> bool {
        self.stop == Stop::Stable
    }
}

/// What one rank measured for one batch of repetitions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BatchTime {
    /// Seconds the batch took on this rank.
    pub total: f64,
    /// Seconds of the part to subtract (the delay loop alone, for the synchronisation
    /// benchmark); 0 when nothing is subtracted.
    pub baseline: f64,
}

/// Median of `values` (which it sorts).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let k = values.len();
    match k {
        0 => f64::NAN,
        _ if k % 2 == 1 => values[k / 2],
        _ => 0.5 * (values[k / 2 - 1] + values[k / 2]),
    }
}

/// Standard error of the median of `values`, from their MAD; infinite below 3 values.
pub fn median_standard_error(values: &[f64]) -> f64 {
    if values.len() < 3 {
        return f64::INFINITY;
    }
    let mut v = values.to_vec();
    let m = median(&mut v);
    let mut deviations: Vec<f64> = values.iter().map(|x| (x - m).abs()).collect();
    let mad = median(&mut deviations);
    MAD_TO_SIGMA * mad * MEDIAN_SE_FACTOR / (values.len() as f64).sqrt()
}

/// Whether sampling stops after these per-repetition `samples`, having spent `spent`
/// seconds on this figure.
pub fn decide(samples: &[f64], spent: f64, s: &Stability) -> Option<Stop> {
    let k = samples.len();
    if k < s.min_samples {
        return None;
    }
    let mut v = samples.to_vec();
    let m = median(&mut v).abs();
    let se = median_standard_error(samples);
    if se <= s.target_rse * m || se <= ABSOLUTE_RESOLUTION_S {
        Some(Stop::Stable)
    } else if k >= s.max_samples {
        Some(Stop::MaxSamples)
    } else if spent >= s.max_seconds {
        Some(Stop::TimeBudget)
    } else {
        None
    }
}

/// The summary of per-repetition `samples`.
fn summarize(samples: &[f64], reps_per_sample: u64, warmup_reps: u64, stop: Stop) -> Measurement {
    let mut v = samples.to_vec();
    let median_s = median(&mut v);
    let se = median_standard_error(samples);
    Measurement {
        median_s,
        min_s: v.first().copied().unwrap_or(f64::NAN),
        rse: if median_s == 0.0 {
            0.0
        } else {
            se / median_s.abs()
        },
        samples: samples.len(),
        reps_per_sample,
        reps: samples.len() as u64 * reps_per_sample,
        warmup_reps,
        stop,
    }
}

/// Repetitions per sample so that a sample lasts about `target` seconds, when one
/// repetition takes `per_rep` seconds.
fn reps_for(per_rep: f64, target: f64) -> u64 {
    if per_rep <= 0.0 || !per_rep.is_finite() {
        return MAX_REPS_PER_SAMPLE;
    }
    ((target / per_rep).ceil() as u64).clamp(1, MAX_REPS_PER_SAMPLE)
}

/// Seconds on this rank's monotonic clock since `t0`.
pub fn seconds_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64()
}

/// Measures one figure, collectively over `comm`: `batch(reps)` runs `reps` repetitions
/// on this rank (ranks with no part in the pattern return a zero [`BatchTime`]). Each
/// batch starts after a barrier; its time is the largest over ranks of the rank's time
/// less the rank's own baseline (each rank's delay loop cancels its own speed). The
/// result is in seconds per repetition.
pub fn measure(
    comm: &TracedComm<'_, SimpleCommunicator>,
    s: &Stability,
    mut batch: impl FnMut(u64) -> BatchTime,
) -> Measurement {
    // (the batch's time less its baseline, the time it spent in all), each the
    // largest over ranks
    let mut timed = |reps: u64| -> (f64, f64) {
        comm.barrier();
        let local = batch(reps);
        let mut slowest = [0.0f64; 2];
        comm.all_reduce_into(
            &[local.total - local.baseline, local.total + local.baseline][..],
            &mut slowest[..],
            SystemOperation::max(),
        );
        (slowest[0], slowest[1])
    };
    // Warm-up and calibration: double the batch until it would last half a sample at
    // the fastest time per repetition seen (a batch slowed down by the scheduler does
    // not end the calibration early with too few repetitions per sample).
    let mut warmup = 0u64;
    let mut spent = 0.0;
    let mut reps = 1u64;
    let mut fastest = f64::INFINITY;
    let reps_per_sample = loop {
        let (_, took) = timed(reps);
        warmup += reps;
        spent += took;
        fastest = fastest.min(took / reps as f64);
        // The first batch of a new message size is slow (buffers touched, protocols
        // set up): never size the samples from it alone.
        let enough = reps > 1 && reps as f64 * fastest * 2.0 >= s.sample_seconds;
        if enough || reps >= MAX_REPS_PER_SAMPLE || spent >= s.max_seconds {
            break reps_for(fastest, s.sample_seconds);
        }
        reps *= 2;
    };
    let mut samples = Vec::with_capacity(s.min_samples);
    let stop = loop {
        let (value, took) = timed(reps_per_sample);
        spent += took;
        samples.push(value / reps_per_sample as f64);
        if let Some(stop) = decide(&samples, spent, s) {
            break stop;
        }
    };
    summarize(&samples, reps_per_sample, warmup, stop)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn median_and_its_error() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&mut []).is_nan());
        assert_eq!(median_standard_error(&[1.0, 2.0]), f64::INFINITY);
        // MAD of [1, 2, 3, 4, 100] about the median 3 is 1 (deviations 2, 1, 0, 1, 97).
        let se = median_standard_error(&[1.0, 2.0, 3.0, 4.0, 100.0]);
        let expected = 1.4826 * 1.0 * MEDIAN_SE_FACTOR / 5f64.sqrt();
        assert!((se - expected).abs() < 1e-12, "{se} vs {expected}");
        // Identical samples: no spread at all.
        assert_eq!(median_standard_error(&[5.0; 4]), 0.0);
    }

    #[test]
    fn one_outlier_does_not_make_a_figure_unstable() {
        let s = Stability::default();
        let mut v = vec![1.00e-6, 1.01e-6, 0.99e-6, 1.00e-6, 1.02e-6];
        assert_eq!(decide(&v, 0.01, &s), Some(Stop::Stable));
        v[2] = 50e-6; // one sample hit by the scheduler
        assert_eq!(decide(&v, 0.01, &s), Some(Stop::Stable));
    }

    #[test]
    fn stops_for_the_right_reason() {
        let s = Stability {
            min_samples: 3,
            max_samples: 6,
            target_rse: 0.01,
            sample_seconds: 1e-3,
            max_seconds: 1.0,
        };
        // Too few samples: go on, whatever the spread.
        assert_eq!(decide(&[1.0, 1.0], 0.0, &s), None);
        let noisy = [1.0, 2.0, 3.0, 1.5, 2.5];
        assert_eq!(decide(&noisy, 0.1, &s), None);
        assert_eq!(decide(&noisy, 1.5, &s), Some(Stop::TimeBudget));
        let more = [1.0, 2.0, 3.0, 1.5, 2.5, 1.2];
        assert_eq!(decide(&more, 0.1, &s), Some(Stop::MaxSamples));
        // A figure near zero is stable once its spread is below the clock's resolution.
        assert_eq!(
            decide(&[1e-9, -2e-9, 0.0, 3e-9], 0.1, &s),
            Some(Stop::Stable)
        );
    }

    #[test]
    fn samples_are_sized_to_the_target_duration() {
        assert_eq!(reps_for(25e-6, 1e-3), 40);
        assert_eq!(reps_for(5e-3, 1e-3), 1);
        assert_eq!(reps_for(0.0, 1e-3), MAX_REPS_PER_SAMPLE);
        assert_eq!(reps_for(1e-12, 1.0), MAX_REPS_PER_SAMPLE);
    }

    #[test]
    fn summary_reports_what_was_taken() {
        let m = summarize(&[2e-6, 1e-6, 3e-6], 100, 7, Stop::MaxSamples);
        assert_eq!(m.median_s, 2e-6);
        assert_eq!(m.min_s, 1e-6);
        assert_eq!((m.samples, m.reps, m.warmup_reps), (3, 300, 7));
        assert!(!m.stable());
        assert!(m.rse > 0.0);
    }

    #[test]
    fn bad_settings_name_the_option() {
        let mut s = Stability {
            min_samples: 2,
            ..Stability::default()
        };
        assert!(s.check().unwrap_err().contains("--min-samples"));
        s.min_samples = 10;
        s.max_samples = 5;
        assert!(s.check().unwrap_err().contains("--max-samples"));
        s.max_samples = 10;
        s.target_rse = 0.0;
        assert!(s.check().unwrap_err().contains("--rse"));
        s.target_rse = 0.05;
        assert!(s.check().is_ok());
    }
}
