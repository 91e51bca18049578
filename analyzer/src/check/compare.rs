//! `check`: a trace against a baseline, with one verdict per metric and one exit status
//! for the whole: 0 only when every gated metric was compared and is within tolerance,
//! 1 only for a real regression, 2 whenever the comparison cannot be trusted.

use serde::Serialize;

use super::metrics::{gate, gate_metrics, Better, Gate, Unit};
use super::usable::{differences, Coverage, Problem};
use super::{coverage_of, Baseline, Judged};
use crate::analysis::Report;
use crate::load::Loaded;

/// How one metric compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Within tolerance.
    Ok,
    /// Better than the baseline beyond tolerance.
    Improved,
    /// Worse than the baseline beyond tolerance.
    Regressed,
    /// The baseline has a figure, the trace has none (or lacks the metric): the gate
    /// cannot be judged.
    Unknown,
    /// At its worst possible value in the baseline: can only improve, so it is no gate.
    AtWorst,
    /// A value no measurement can have in the baseline (see [`Gate::Impossible`]): no
    /// gate, and the check is unusable.
    Impossible,
    /// No figure in the baseline: no gate.
    NoBaselineFigure,
    /// Computed now, not in the baseline: no gate.
    NotInBaseline,
}

/// How a count was compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// As it is.
    Absolute,
    /// Per 1000 MPI calls (polls aside): the traced work differs from the baseline's.
    PerThousandCalls,
}

/// One metric compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Metric name.
    pub name: String,
    /// Its unit.
    pub unit: Unit,
    /// How it was compared.
    pub scale: Scale,
    /// Baseline value (null: no figure).
    pub baseline: Option<f64>,
    /// Current value (null: no figure).
    pub current: Option<f64>,
    /// How far it may move the wrong way (null when it is no gate).
    pub allowed: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// How the whole check ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    /// Every gated metric compared, all within tolerance: 0.
    Pass,
    /// At least one real regression, everything else compared: 1.
    Regressed,
    /// The comparison cannot be trusted: 2.
    Unusable,
}

impl Exit {
    /// The process exit status.
    pub fn code(self) -> u8 {
        match self {
            Exit::Pass => 0,
            Exit::Regressed => 1,
            Exit::Unusable => 2,
        }
    }
}

/// What `check` is told.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CheckOptions {
    /// Replaces the baseline's tolerance (percent) when given.
    pub tolerance_pct: Option<f64>,
    /// Differences of program, ranks or work become warnings.
    pub allow_different: bool,
}

/// A check's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The tolerance used, percent.
    pub tolerance_pct: f64,
    /// Why the check cannot pass judgement (each one makes the exit 2).
    pub problems: Vec<String>,
    /// Differences allowed by `--allow-different`.
    pub warnings: Vec<String>,
    /// How the comparison was made, when not plainly.
    pub notes: Vec<String>,
    /// One row per metric (empty when the trace itself was unusable).
    pub rows: Vec<Comparison>,
}

impl Outcome {
    /// The exit status this outcome calls for.
    pub fn exit(&self) -> Exit {
        if !self.problems.is_empty() {
            Exit::Unusable
        } else if self.rows.iter().any(|r| r.verdict == Verdict::Regressed) {
            Exit::Regressed
        } else {
            Exit::Pass
        }
    }
}

/// Checks a loaded trace and its report against a baseline.
pub fn check(base: &Baseline, loaded: &Loaded, report: &Report, opts: CheckOptions) -> Outcome {
    check_judged(base, &Judged::whole(loaded), report, opts)
}

/// [`check`] of a judged trace: a window, which must be the baseline's.
pub fn check_judged(
    base: &Baseline,
    judged: &Judged,
    report: &Report,
    opts: CheckOptions,
) -> Outcome {
    let tolerance_pct = opts.tolerance_pct.unwrap_or(base.tolerance_pct);
    let mut out = Outcome {
        tolerance_pct,
        problems: super::baseline_problems(base, tolerance_pct),
        warnings: Vec::new(),
        notes: Vec::new(),
        rows: Vec::new(),
    };
    out.problems
        .extend((judged.incomplete.iter()).map(|p| format!("incomplete trace: {p}")));
    if !out.problems.is_empty() {
        return out;
    }
    if base.window != judged.window {
        let said = |w: &Option<crate::window::Choice>| {
            w.as_ref().map_or("the whole run".into(), |w| w.describe())
        };
        let d = format!(
            "the baseline was made of {}, this check analyses {}: ask for the same \
             --from/--to/--region/--ranks",
            said(&base.window),
            said(&judged.window)
        );
        if opts.allow_different {
            out.warnings.push(d);
        } else {
            out.problems
                .push(format!("{d} (--allow-different compares it all the same)"));
            return out;
        }
    }
    let now = coverage_of(report, &judged.work);
    let base_cov = Coverage {
        program: base.program_text(),
        world_size: base.world_size,
        work: &base.ranks,
    };
    let diffs = differences(&base_cov, &now, tolerance_pct);
    let other_work = diffs
        .iter()
        .any(|d| matches!(d, Problem::OtherWork { .. } | Problem::OtherRanks { .. }));
    for d in diffs {
        if opts.allow_different {
            out.warnings.push(d.to_string());
        } else {
            out.problems
                .push(format!("{d} (--allow-different compares it all the same)"));
        }
    }
    if !out.problems.is_empty() {
        return out;
    }
    let scale = if other_work {
        out.notes.push(
            "the traced work differs from the baseline's: counts are compared per 1000 MPI \
             calls (polls aside), not as they are"
                .into(),
        );
        Scale::PerThousandCalls
    } else {
        Scale::Absolute
    };
    let calls = |w: &[super::RankWork]| w.iter().map(|r| r.work_calls()).sum::<u64>();
    let (base_calls, now_calls) = (calls(&base.ranks), calls(&judged.work));
    let rate = |v: Option<f64>, n: u64| v.filter(|_| n > 0).map(|v| v * 1000.0 / n as f64);
    let now_metrics = gate_metrics(report);
    for b in &base.metrics {
        let c = now_metrics.iter().find(|m| m.name == b.name);
        let mut b = b.clone();
        let mut current = c.and_then(|c| c.value);
        let mut row_scale = Scale::Absolute;
        if b.unit == Unit::Count && scale == Scale::PerThousandCalls {
            b.value = rate(b.value, base_calls);
            current = rate(current, now_calls);
            row_scale = scale;
        }
        let (allowed, verdict) = match gate(&b, tolerance_pct) {
            Gate::NoFigure => (None, Verdict::NoBaselineFigure),
            Gate::AtWorst => (None, Verdict::AtWorst),
            // Refused as a problem of the baseline (`baseline_problems`).
            Gate::Impossible { .. } => (None, Verdict::Impossible),
            // Refused above for the baseline's own tolerance; a count per call never gets here.
            Gate::CannotFail { .. } => (None, Verdict::Unknown),
            Gate::Gated { allowed } => (Some(allowed), judge(b.better, b.value, current, allowed)),
        };
        out.rows.push(Comparison {
            name: b.name.clone(),
            unit: b.unit,
            scale: row_scale,
            baseline: b.value,
            current,
            allowed,
            verdict,
        });
    }
    for c in now_metrics {
        if !base.metrics.iter().any(|b| b.name == c.name) {
            out.rows.push(Comparison {
                unit: c.unit,
                name: c.name,
                scale: Scale::Absolute,
                baseline: None,
                current: c.value,
                allowed: None,
                verdict: Verdict::NotInBaseline,
            });
        }
    }
    for r in out.rows.iter().filter(|r| r.verdict == Verdict::Unknown) {
        out.problems.push(format!(
            "{}: no figure in this trace, but the baseline has one: it cannot be judged",
            r.name
        ));
    }
    if !out.rows.iter().any(|r| is_gated(r.verdict)) {
        out.problems
            .push("no metric of the baseline can be compared: the check would gate nothing".into());
    }
    out
}

/// True for verdicts of a metric that was actually compared.
pub fn is_gated(v: Verdict) -> bool {
    matches!(v, Verdict::Ok | Verdict::Improved | Verdict::Regressed)
}

/// The verdict on a gated metric: it regresses when it moved the wrong way by more
/// than `allowed` (so a count whose baseline is 0 regresses on any increase).
fn judge(better: Better, base: Option<f64>, current: Option<f64>, allowed: f64) -> Verdict {
    let (Some(b), Some(c)) = (base, current) else {
        return Verdict::Unknown;
    };
    if !c.is_finite() {
        return Verdict::Unknown;
    }
    let worse_by = match better {
        Better::Lower => c - b,
        Better::Higher => b - c,
    };
    if worse_by > allowed + 1e-12 {
        Verdict::Regressed
    } else if -worse_by > allowed + 1e-12 {
        Verdict::Improved
    } else {
        Verdict::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        let j = |better, b, c, allowed| judge(better, Some(b), Some(c), allowed);
        assert_eq!(j(Better::Lower, 0.0, 1.0, 0.0), Verdict::Regressed);
        assert_eq!(j(Better::Lower, 10.0, 10.5, 0.5), Verdict::Ok);
        assert_eq!(j(Better::Lower, 10.0, 9.0, 0.5), Verdict::Improved);
        assert_eq!(j(Better::Higher, 0.5, 0.44, 0.05), Verdict::Regressed);
        assert_eq!(j(Better::Higher, 0.5, 0.46, 0.05), Verdict::Ok);
        assert_eq!(
            judge(Better::Higher, Some(0.5), None, 0.05),
            Verdict::Unknown
        );
        assert_eq!(
            judge(Better::Higher, Some(0.5), Some(f64::NAN), 0.05),
            Verdict::Unknown
        );
    }

    #[test]
    fn exit_codes() {
        let row = |verdict| Comparison {
            name: "m".into(),
            unit: Unit::Count,
            scale: Scale::Absolute,
            baseline: Some(1.0),
            current: Some(1.0),
            allowed: Some(0.0),
            verdict,
        };
        let mut o = Outcome {
            tolerance_pct: 5.0,
            problems: vec![],
            warnings: vec![],
            notes: vec![],
            rows: vec![row(Verdict::Ok), row(Verdict::AtWorst)],
        };
        assert_eq!(o.exit(), Exit::Pass);
        o.rows.push(row(Verdict::Regressed));
        assert_eq!(o.exit().code(), 1);
        o.problems.push("rank 1: missing".into());
        assert_eq!(o.exit().code(), 2, "unusable input wins over a regression");
    }
}
