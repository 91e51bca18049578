//! Whether a predicted gain held: the gain measured between runs of the original program
//! and runs of the changed one, set against the gain the replay predicted, and the
//! verdict with the rule that made it.
//!
//! ```text
//!  original runs   x  |--o--|   x      median O, interquartile range (IQR) |..|
//!  changed runs  x|-o-|  x            median C
//!  measured gain   m = O - C, spread s = (IQR O + IQR C) / 2,
//!                  noise floor n = the larger of IQR O and s
//!  predicted gain  p = replayed measured order - replayed suggested order, [p_lo, p_hi]
//!                  over the network fit's best estimate, fast end and slow end
//!  agrees          p_lo - s <= m <= p_hi + s, or |p - m| <= 25 % of |m|
//!  confirmed       agrees, and |m| > n
//!  not confirmed   does not agree, and |m| > n or the whole predicted range is beyond n
//!  not confirmable otherwise (within the noise); also with fewer than 3 runs a side,
//!                  no prediction, or a run with more ranks than cores on a host
//! ```

use serde::Serialize;

/// The fewest runs of each side (the analysed trace counts as one original run) for a
/// spread, and so a verdict.
pub const MIN_RUNS: usize = 3;

/// How far the predicted gain may be from the measured one and still agree, as a share
/// of the measured gain.
pub const SHARE: f64 = 0.25;

/// The run times of one side: the original program's runs, or the changed one's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Runs {
    /// The traces.
    pub traces: Vec<String>,
    /// Their measured run times, ns, in the order given.
    pub measured_ns: Vec<u64>,
    /// Their median, ns (the mean of the middle two for an even count).
    pub median_ns: u64,
    /// The fastest run, ns.
    pub min_ns: u64,
    /// The slowest run, ns.
    pub max_ns: u64,
    /// The first quartile, ns (linear between the sorted runs: at position
    /// `(n - 1) / 4` of `n`).
    pub q1_ns: u64,
    /// The third quartile, ns (at position `3 (n - 1) / 4`).
    pub q3_ns: u64,
}

/// The value at fractional position `at` of `sorted`, linear between its neighbours.
fn at_position(sorted: &[u64], at: f64) -> u64 {
    let below = at.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let frac = at - below as f64;
    (sorted[below] as f64 + frac * (sorted[above] as f64 - sorted[below] as f64)).round() as u64
}

impl Runs {
    /// The runs `traces` whose measured times are `measured_ns`; none without a run.
    pub fn of(traces: Vec<String>, measured_ns: Vec<u64>) -> Option<Runs> {
        let mut sorted = measured_ns.clone();
        sorted.sort_unstable();
        let n = sorted.len();
        let median_ns = match n {
            0 => return None,
            _ if n % 2 == 1 => sorted[n / 2],
            _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
        };
        let last = (n - 1) as f64;
        Some(Runs {
            traces,
            measured_ns,
            median_ns,
            min_ns: sorted[0],
            max_ns: sorted[n - 1],
            q1_ns: at_position(&sorted, last / 4.0),
            q3_ns: at_position(&sorted, 3.0 * last / 4.0),
        })
    }

    /// The interquartile range, ns: the middle half of the runs lies within it, whatever
    /// the few that the machine slowed most.
    pub fn iqr_ns(&self) -> u64 {
        self.q3_ns - self.q1_ns
    }
}

/// The gain the replay predicts for the suggested order, ns (negative: it costs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PredictedGain {
    /// On the network fit's best estimate: the replayed measured order minus the
    /// replayed suggested order.
    pub ns: i64,
    /// The least over the best estimate, the fit's fast end and its slow end.
    pub low_ns: i64,
    /// The most over the same three.
    pub high_ns: i64,
}

impl PredictedGain {
    /// From the replayed run times `(best, fast end, slow end)` of the measured order and
    /// of the suggested one.
    pub fn of(measured: (u64, u64, u64), suggested: (u64, u64, u64)) -> PredictedGain {
        let gain = |m: u64, s: u64| m as i64 - s as i64;
        let all = [
            gain(measured.0, suggested.0),
            gain(measured.1, suggested.1),
            gain(measured.2, suggested.2),
        ];
        PredictedGain {
            ns: all[0],
            low_ns: all.iter().copied().min().unwrap_or(all[0]),
            high_ns: all.iter().copied().max().unwrap_or(all[0]),
        }
    }
}

/// The gain measured between the two sides, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MeasuredGain {
    /// The original runs' median minus the changed runs' (negative: the change cost).
    pub ns: i64,
    /// Half the sum of the two sides' interquartile ranges: the gain is taken to lie
    /// within `ns ± spread_ns`.
    pub spread_ns: u64,
    /// The original runs' own interquartile range, or the spread when larger: a gain no
    /// larger may be noise.
    pub noise_ns: u64,
}

impl MeasuredGain {
    /// The gain from `original` to `changed`.
    pub fn of(original: &Runs, changed: &Runs) -> MeasuredGain {
        let spread_ns = (original.iqr_ns() + changed.iqr_ns()) / 2;
        MeasuredGain {
            ns: original.median_ns as i64 - changed.median_ns as i64,
            spread_ns,
            noise_ns: original.iqr_ns().max(spread_ns),
        }
    }
}

/// Which rule found the gains in agreement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Agreement {
    /// The measured gain lies within the predicted range widened by the measured spread.
    WithinRange,
    /// The predicted gain lies within [`SHARE`] of the measured gain.
    WithinShare,
}

/// Why a gain cannot be confirmed or refuted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Unconfirmable {
    /// Fewer than [`MIN_RUNS`] runs on a side.
    TooFewRuns {
        /// Original runs given (the analysed trace included).
        original: usize,
        /// Changed runs given.
        changed: usize,
    },
    /// The suggested order has no prediction, for this reason.
    NoPrediction {
        /// Why.
        why: String,
    },
    /// A run put more ranks on a host than it has cores: the replay gives every rank a
    /// core of its own, so the run is not what it predicts.
    Oversubscribed {
        /// The run.
        trace: String,
        /// The host.
        host: String,
        /// Ranks on it.
        ranks: usize,
        /// Its cores.
        cores: usize,
    },
    /// The measured gain does not exceed the noise floor, and the prediction does not
    /// say that it would have.
    WithinNoise,
}

/// What the runs say about the predicted gain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum GainVerdict {
    /// The measured gain exceeds the noise and agrees with the prediction.
    Confirmed {
        /// By which rule.
        by: Agreement,
    },
    /// The measured gain disagrees with the prediction, and the runs could tell.
    NotConfirmed,
    /// The runs cannot tell.
    NotConfirmable {
        /// Why.
        why: Unconfirmable,
    },
}

/// The verdict on `predicted` given `measured` (the preconditions, enough runs, a
/// prediction and cores, checked before).
pub fn verdict(predicted: &PredictedGain, measured: &MeasuredGain) -> GainVerdict {
    let (m, s, n) = (
        measured.ns,
        measured.spread_ns as i64,
        measured.noise_ns as i64,
    );
    let in_range = predicted.low_ns - s <= m && m <= predicted.high_ns + s;
    let in_share = (predicted.ns - m).unsigned_abs() as f64 <= SHARE * m.unsigned_abs() as f64;
    let measurable = m.abs() > n;
    let predicted_measurable = predicted.low_ns > n || predicted.high_ns < -n;
    match (in_range, in_share) {
        (true, _) if measurable => GainVerdict::Confirmed {
            by: Agreement::WithinRange,
        },
        (false, true) if measurable => GainVerdict::Confirmed {
            by: Agreement::WithinShare,
        },
        (false, false) if measurable || predicted_measurable => GainVerdict::NotConfirmed,
        _ => GainVerdict::NotConfirmable {
            why: Unconfirmable::WithinNoise,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(ms: &[u64]) -> Runs {
        Runs::of(vec![], ms.iter().map(|m| m * 1_000_000).collect()).expect("runs")
    }

    const MS: i64 = 1_000_000;

    fn predicted(ns: i64, low: i64, high: i64) -> PredictedGain {
        PredictedGain {
            ns: ns * MS,
            low_ns: low * MS,
            high_ns: high * MS,
        }
    }

    #[test]
    fn medians_quartiles_and_the_measured_gain() {
        // Sorted 96 98 100 104 130: quartiles at positions 1 and 3.
        let original = runs(&[100, 104, 98, 130, 96]);
        assert_eq!(original.median_ns, 100 * MS as u64);
        assert_eq!(
            (original.q1_ns, original.q3_ns),
            (98 * MS as u64, 104 * MS as u64)
        );
        assert_eq!(original.iqr_ns(), 6 * MS as u64);
        assert_eq!(
            (original.min_ns, original.max_ns),
            (96 * MS as u64, 130 * MS as u64)
        );
        // Even count: the median is the mean of the middle two; sorted 69 70 71 72, the
        // quartiles at positions 0.75 and 2.25.
        let changed = runs(&[70, 72, 71, 69]);
        assert_eq!(changed.median_ns, 70_500_000);
        assert_eq!((changed.q1_ns, changed.q3_ns), (69_750_000, 71_250_000));
        let g = MeasuredGain::of(&original, &changed);
        assert_eq!(g.ns, 29_500_000);
        assert_eq!(g.spread_ns, (6_000_000 + 1_500_000) / 2);
        assert_eq!(g.noise_ns, 6 * MS as u64);
        // Changed runs wider than the original ones: the spread is the floor. Three
        // runs: the quartiles halfway between the middle one and each end.
        let wide = runs(&[60, 80, 70]);
        assert_eq!(wide.iqr_ns(), 10 * MS as u64);
        let g = MeasuredGain::of(&original, &wide);
        assert_eq!(g.spread_ns, 8 * MS as u64);
        assert_eq!(g.noise_ns, 8 * MS as u64);
        assert!(Runs::of(vec![], vec![]).is_none());
        assert_eq!(runs(&[5]).iqr_ns(), 0);
    }

    #[test]
    fn the_predicted_range_spans_the_three_networks() {
        // Best 100 -> 70, fast end 90 -> 65, slow end 120 -> 80.
        let p = PredictedGain::of((100, 90, 120), (70, 65, 80));
        assert_eq!((p.ns, p.low_ns, p.high_ns), (30, 25, 40));
    }

    /// Measured 30 ± 4.5 ms over a noise floor of 6 ms.
    fn measured_30() -> MeasuredGain {
        MeasuredGain {
            ns: 30 * MS,
            spread_ns: 4_500_000,
            noise_ns: 6 * MS as u64,
        }
    }

    #[test]
    fn a_gain_within_the_widened_range_is_confirmed() {
        // [34, 40] widened by 4.5 reaches down to 29.5.
        assert_eq!(
            verdict(&predicted(34, 34, 40), &measured_30()),
            GainVerdict::Confirmed {
                by: Agreement::WithinRange
            }
        );
        // [36, 40] widened reaches down to 31.5 only, but 37 is within 25 % of 30 (7.5).
        assert_eq!(
            verdict(&predicted(37, 36, 40), &measured_30()),
            GainVerdict::Confirmed {
                by: Agreement::WithinShare
            }
        );
        // 40 is 10 from 30 (33 %), and [39, 45] widened reaches down to 34.5 only.
        assert_eq!(
            verdict(&predicted(40, 39, 45), &measured_30()),
            GainVerdict::NotConfirmed
        );
        // A change that cost where a gain was predicted.
        let cost = MeasuredGain {
            ns: -20 * MS,
            ..measured_30()
        };
        assert_eq!(
            verdict(&predicted(30, 25, 35), &cost),
            GainVerdict::NotConfirmed
        );
    }

    #[test]
    fn a_gain_within_the_noise_is_not_confirmable_unless_the_prediction_was_beyond_it() {
        let small = MeasuredGain {
            ns: 2 * MS,
            ..measured_30()
        };
        // Nothing predicted, nothing measured: the runs cannot tell.
        assert_eq!(
            verdict(&predicted(0, 0, 0), &small),
            GainVerdict::NotConfirmable {
                why: Unconfirmable::WithinNoise
            }
        );
        // Within the widened range [-0.5, 10.5], but within the noise too, and so is
        // the low end of the prediction.
        assert_eq!(
            verdict(&predicted(5, 4, 6), &small),
            GainVerdict::NotConfirmable {
                why: Unconfirmable::WithinNoise
            }
        );
        // The whole predicted range lies beyond the noise floor and the runs show
        // nothing of it: refuted.
        assert_eq!(
            verdict(&predicted(20, 18, 22), &small),
            GainVerdict::NotConfirmed
        );
    }
}
