//! The gated metrics: which figures of a report a gate compares, which way each one
//! improves, and whether a tolerance around a baseline value can fail at all.
//!
//! Only figures that do not flake on a noisy machine are gated (counts of findings,
//! efficiencies, fractions; never absolute times). A figure the analysis could not
//! compute is `None` here and "unknown" everywhere it is shown, never 0.

use serde::{Deserialize, Serialize};

use crate::analysis::Report;

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Smaller is better (findings, waiting).
    Lower,
    /// Larger is better (efficiencies, overlap).
    Higher,
}

/// What a metric counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A number of things: grows with the work traced.
    Count,
    /// A fraction, 0..1.
    Fraction,
    /// A duration in ns (shown by `diff`; never gated).
    Nanos,
}

/// One gated metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Name: the report key it comes from.
    pub name: String,
    /// Value; `None` (null) when the analysis had no figure for it.
    pub value: Option<f64>,
    /// Unit.
    pub unit: Unit,
    /// Which way is better.
    pub better: Better,
}

/// The metrics a gate compares, from a report.
pub fn gate_metrics(r: &Report) -> Vec<Metric> {
    let m = |name: &str, value: Option<f64>, unit, better| Metric {
        name: name.to_string(),
        value,
        unit,
        better,
    };
    let p = &r.pop;
    let mut metrics = vec![
        m(
            "false_overlap.findings",
            Some(r.false_overlap.count as f64),
            Unit::Count,
            Better::Lower,
        ),
        m(
            "pop.parallel_efficiency",
            p.parallel_efficiency,
            Unit::Fraction,
            Better::Higher,
        ),
        m(
            "pop.load_balance",
            p.load_balance,
            Unit::Fraction,
            Better::Higher,
        ),
        m(
            "pop.communication_efficiency",
            p.communication_efficiency,
            Unit::Fraction,
            Better::Higher,
        ),
        m(
            "pop.serialization_efficiency",
            p.serialization_efficiency,
            Unit::Fraction,
            Better::Higher,
        ),
        m(
            "pop.transfer_efficiency",
            p.transfer_efficiency,
            Unit::Fraction,
            Better::Higher,
        ),
        m(
            "wait_states.fraction",
            r.wait_states.fraction,
            Unit::Fraction,
            Better::Lower,
        ),
        m(
            "requests.mean_overlap",
            r.requests.mean_overlap,
            Unit::Fraction,
            Better::Higher,
        ),
    ];
    // GPU metrics only for runs with GPU work: a run without any has nothing to gate.
    if let Some(g) = &r.gpu {
        metrics.push(m(
            "gpu.findings",
            Some(g.findings.len() as f64),
            Unit::Count,
            Better::Lower,
        ));
        metrics.push(m(
            "gpu.pipeline_hidden",
            g.pipeline_hidden,
            Unit::Fraction,
            Better::Higher,
        ));
    }
    metrics
}

/// Whether a baseline metric can act as a gate at a tolerance.
#[derive(Clone, Debug, PartialEq)]
pub enum Gate {
    /// It is compared: it regresses when it moves the wrong way by more than `allowed`.
    Gated {
        /// How far it may move the wrong way, in its unit (`tolerance% * |value|`).
        allowed: f64,
    },
    /// No figure in the baseline: nothing to compare with.
    NoFigure,
    /// Already at its worst possible value (an overlap of 0, higher is better): it
    /// cannot regress, only improve, so it is shown but is no gate.
    AtWorst,
    /// The tolerance lets it reach its worst possible value: it could never fail.
    CannotFail {
        /// Why, in words.
        why: String,
    },
    /// A value no measurement can have (a fraction beyond 0..=1, a negative count, not
    /// a number): the figure is wrong, so it cannot be gated, and says so.
    Impossible {
        /// Why, in words.
        why: String,
    },
}

/// True when a tolerance in percent is a number a gate can use.
pub fn valid_tolerance(pct: f64) -> bool {
    pct.is_finite() && pct >= 0.0
}

/// How `m` gates at `tolerance_pct` (a valid tolerance, see [`valid_tolerance`]).
/// Fractions lie in 0..=1 and counts in 0..: a Higher-is-better metric whose allowed
/// drop reaches 0, or a Lower-is-better fraction whose allowed rise reaches 1, cannot fail.
pub fn gate(m: &Metric, tolerance_pct: f64) -> Gate {
    let Some(v) = m.value else {
        return Gate::NoFigure;
    };
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    if let Some(why) = impossibility(v, m.unit) {
        return Gate::Impossible {
            why: format!("{} {why}: the figure is wrong", show(v, m.unit)),
        };
    }
    let allowed = tolerance_pct / 100.0 * v.abs();
    match (m.better, m.unit) {
        (Better::Higher, _) if v <= 0.0 => Gate::AtWorst,
        (Better::Higher, _) if v - allowed <= 0.0 => Gate::CannotFail {
            why: format!(
                "a drop of {tolerance_pct}% from {} reaches 0, its lowest possible value",
                show(v, m.unit)
            ),
        },
        (Better::Lower, Unit::Fraction) if v >= 1.0 => Gate::AtWorst,
        (Better::Lower, Unit::Fraction) if v + allowed >= 1.0 => Gate::CannotFail {
            why: format!(
                "a rise of {tolerance_pct}% from {} reaches {}, its highest possible value",
                pct(v),
                pct(1.0)
            ),
        },
        _ => Gate::Gated { allowed },
    }
}

/// Why `m`'s value cannot be a value of its unit, if it cannot: not a finite number, a
/// count or a duration below 0, a fraction outside 0..=1. (No figure is a valid value.)
pub fn value_problem(m: &Metric) -> Option<String> {
    let v = m.value?;
    let why = impossibility(v, m.unit)?;
    Some(format!("{}: its value {v} {why}", m.name))
}

/// Why `v` cannot be a value of `unit`, if it cannot: the one definition of a possible
/// value, for baselines read and for figures measured.
fn impossibility(v: f64, unit: Unit) -> Option<&'static str> {
    if !v.is_finite() {
        return Some("is not a finite number");
    }
    match unit {
        Unit::Count if v < 0.0 => Some("is a count below 0"),
        Unit::Fraction if !(0.0..=1.0).contains(&v) => Some("is a fraction outside 0 to 1"),
        Unit::Nanos if v < 0.0 => Some("is a duration below 0"),
        _ => None,
    }
}

/// A value in its unit for messages: counts whole, fractions in percent.
pub(crate) fn show(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Fraction => format!("{:.1}%", v * 100.0),
        _ => format!("{v}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(value: Option<f64>, unit: Unit, better: Better) -> Metric {
        Metric {
            name: "m".into(),
            value,
            unit,
            better,
        }
    }

    #[test]
    fn what_can_fail() {
        let hi = |v| metric(Some(v), Unit::Fraction, Better::Higher);
        let lo = |v| metric(Some(v), Unit::Fraction, Better::Lower);
        let count = |v| metric(Some(v), Unit::Count, Better::Lower);
        assert_eq!(gate(&hi(0.5), 10.0), Gate::Gated { allowed: 0.05 });
        // 100%: 0.5 may drop by 0.5, to 0: nothing lower exists.
        assert!(matches!(gate(&hi(0.5), 100.0), Gate::CannotFail { .. }));
        assert!(matches!(gate(&hi(0.5), 99.0), Gate::Gated { .. }));
        assert_eq!(gate(&hi(0.0), 5.0), Gate::AtWorst);
        // 0.6 + 70% of it = 1.02: above any fraction.
        assert!(matches!(gate(&lo(0.6), 70.0), Gate::CannotFail { .. }));
        assert!(matches!(gate(&lo(0.6), 60.0), Gate::Gated { .. }));
        assert_eq!(gate(&lo(1.0), 5.0), Gate::AtWorst);
        // A share of 178.8% is no worst value, but a wrong one: said, not gated.
        for wrong in [lo(1.788), hi(-0.1), lo(f64::NAN), count(-1.0)] {
            assert!(
                matches!(gate(&wrong, 5.0), Gate::Impossible { .. }),
                "{wrong:?}"
            );
        }
        // Counts have no ceiling, and 0 findings regress on any finding.
        assert_eq!(gate(&count(0.0), 500.0), Gate::Gated { allowed: 0.0 });
        assert_eq!(
            gate(&metric(None, Unit::Fraction, Better::Higher), 5.0),
            Gate::NoFigure
        );
    }

    #[test]
    fn values_outside_their_unit_are_told() {
        let count = |v| metric(Some(v), Unit::Count, Better::Lower);
        let fraction = |v| metric(Some(v), Unit::Fraction, Better::Higher);
        assert_eq!(value_problem(&count(3.0)), None);
        assert_eq!(value_problem(&fraction(1.0)), None);
        assert_eq!(
            value_problem(&metric(None, Unit::Fraction, Better::Higher)),
            None
        );
        assert_eq!(
            value_problem(&count(-1.0)).as_deref(),
            Some("m: its value -1 is a count below 0")
        );
        assert!(value_problem(&fraction(1e308)).is_some_and(|w| w.contains("outside 0 to 1")));
        assert!(value_problem(&count(f64::INFINITY)).is_some());
    }

    #[test]
    fn tolerances() {
        assert!(valid_tolerance(0.0) && valid_tolerance(5.0));
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(!valid_tolerance(bad));
        }
    }
}
