//! Regression gates over reports: a baseline keeps the metrics of a run that do not
//! flake on a noisy machine (counts of findings, efficiencies, fractions; never absolute
//! times), `check` compares a new run against it within a tolerance, and `diff` puts two
//! runs side by side.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use overlap_format::schema::ParamValue;
use serde::{Deserialize, Serialize};

use crate::metrics::{Report, WaitKind};
use crate::report::duration;
use crate::{Error, Result};

/// The name every baseline file carries.
pub const BASELINE_FORMAT: &str = "overlap-baseline";
/// The baseline layout's version.
pub const BASELINE_VERSION: u32 = 1;

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
    /// A number of things.
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
    /// Value.
    pub value: f64,
    /// Unit.
    pub unit: Unit,
    /// Which way is better.
    pub better: Better,
}

/// A baseline file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Always [`BASELINE_FORMAT`].
    pub format: String,
    /// [`BASELINE_VERSION`].
    pub version: u32,
    /// The run it was made from: program.
    pub program: String,
    /// ... and its parameters.
    pub params: BTreeMap<String, ParamValue>,
    /// ... and ranks.
    pub ranks: u32,
    /// The gated metrics.
    pub metrics: Vec<Metric>,
}

/// The metrics a gate compares, from a report.
pub fn gate_metrics(r: &Report) -> Vec<Metric> {
    let m = |name: &str, value: f64, unit, better| Metric {
        name: name.to_string(),
        value,
        unit,
        better,
    };
    let mut v = vec![
        m(
            "false_overlap.findings",
            r.false_overlap.len() as f64,
            Unit::Count,
            Better::Lower,
        ),
        m(
            "pop.parallel_efficiency",
            r.pop.parallel_efficiency,
            Unit::Fraction,
            Better::Higher,
        ),
        m(
            "pop.load_balance",
            r.pop.load_balance,
            Unit::Fraction,
            Better::Higher,
        ),
        m(
            "pop.communication_efficiency",
            r.pop.communication_efficiency,
            Unit::Fraction,
            Better::Higher,
        ),
        m(
            "pop.serialization_efficiency",
            r.pop.serialization_efficiency,
            Unit::Fraction,
            Better::Higher,
        ),
        m(
            "pop.transfer_efficiency",
            r.pop.transfer_efficiency,
            Unit::Fraction,
            Better::Higher,
        ),
        m(
            "wait_states.fraction",
            r.wait_states.fraction,
            Unit::Fraction,
            Better::Lower,
        ),
    ];
    // Unknown when no request has an overlap figure: then not gated (reported missing).
    if let Some(o) = r.requests.mean_overlap {
        v.push(m(
            "requests.mean_overlap",
            o,
            Unit::Fraction,
            Better::Higher,
        ));
    }
    v
}

/// A baseline made from a report.
pub fn baseline(r: &Report) -> Baseline {
    Baseline {
        format: BASELINE_FORMAT.into(),
        version: BASELINE_VERSION,
        program: r.run.program.clone(),
        params: r.run.params.clone(),
        ranks: r.run.ranks_traced,
        metrics: gate_metrics(r),
    }
}

/// Reads a baseline file.
pub fn read_baseline(path: &Path) -> Result<Baseline> {
    let text = std::fs::read(path).map_err(|source| Error::Io {
        what: "reading",
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |reason: String| Error::BadBaseline {
        path: path.to_path_buf(),
        reason,
    };
    let b: Baseline = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
    if b.format != BASELINE_FORMAT {
        return Err(bad(format!(
            "format is {:?}, not {BASELINE_FORMAT:?}",
            b.format
        )));
    }
    if b.version != BASELINE_VERSION {
        return Err(bad(format!(
            "version {}, but this overlap reads version {BASELINE_VERSION}",
            b.version
        )));
    }
    Ok(b)
}

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
    /// In the baseline, not computed now (or the other way round).
    Missing,
}

/// One metric compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Metric name.
    pub name: String,
    /// Its unit.
    pub unit: Unit,
    /// Baseline value.
    pub baseline: Option<f64>,
    /// Current value.
    pub current: Option<f64>,
    /// How far it may move the wrong way: `tolerance% * |baseline|`.
    pub allowed: f64,
    /// The verdict.
    pub verdict: Verdict,
}

/// Compares a report with a baseline. A metric regresses when it moved the wrong way
/// by more than `tolerance_pct` percent of its baseline value (so a count whose
/// baseline is 0 regresses on any increase).
pub fn compare(base: &Baseline, current: &Report, tolerance_pct: f64) -> Vec<Comparison> {
    let now = gate_metrics(current);
    let mut out = Vec::new();
    for b in &base.metrics {
        let c = now.iter().find(|m| m.name == b.name);
        let allowed = tolerance_pct / 100.0 * b.value.abs();
        let verdict = match c {
            None => Verdict::Missing,
            Some(c) => {
                let worse_by = match b.better {
                    Better::Lower => c.value - b.value,
                    Better::Higher => b.value - c.value,
                };
                if worse_by > allowed + 1e-12 {
                    Verdict::Regressed
                } else if -worse_by > allowed + 1e-12 {
                    Verdict::Improved
                } else {
                    Verdict::Ok
                }
            }
        };
        out.push(Comparison {
            name: b.name.clone(),
            unit: b.unit,
            baseline: Some(b.value),
            current: c.map(|c| c.value),
            allowed,
            verdict,
        });
    }
    for c in now {
        if !base.metrics.iter().any(|b| b.name == c.name) {
            out.push(Comparison {
                unit: c.unit,
                name: c.name,
                baseline: None,
                current: Some(c.value),
                allowed: 0.0,
                verdict: Verdict::Missing,
            });
        }
    }
    out
}

fn value(v: Option<f64>, unit: Unit) -> String {
    match v {
        None => "-".into(),
        Some(v) => number(v, unit, false),
    }
}

/// A value (or, `signed`, a change) in its unit: counts whole, fractions in percent
/// (changes in points), durations for people.
fn number(v: f64, unit: Unit, signed: bool) -> String {
    if v.is_nan() {
        return "unknown".into();
    }
    let sign = if signed && v > 0.0 { "+" } else { "" };
    match unit {
        Unit::Count => format!("{sign}{v:.0}"),
        Unit::Fraction if signed => format!("{sign}{:.1}pt", v * 100.0),
        Unit::Fraction => format!("{:.1}%", v * 100.0),
        Unit::Nanos if v < 0.0 => format!("-{}", duration((-v) as u64)),
        Unit::Nanos => format!("{sign}{}", duration(v as u64)),
    }
}

/// How far a metric may move, in its unit: `±16.1pt`, `±0.0`.
fn allowance(allowed: f64, unit: Unit) -> String {
    match unit {
        Unit::Fraction => format!("±{:.1}pt", allowed * 100.0),
        _ => format!("±{allowed:.1}"),
    }
}

/// The comparison as a table.
pub fn comparison_table(rows: &[Comparison]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<32} {:>10} {:>10} {:>10}  verdict",
        "metric", "baseline", "current", "allowed"
    );
    for r in rows {
        let _ = writeln!(
            o,
            "{:<32} {:>10} {:>10} {:>10}  {}",
            r.name,
            value(r.baseline, r.unit),
            value(r.current, r.unit),
            allowance(r.allowed, r.unit),
            match r.verdict {
                Verdict::Ok => "ok",
                Verdict::Improved => "improved",
                Verdict::Regressed => "REGRESSED",
                Verdict::Missing => "missing",
            }
        );
    }
    o
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The comparison as a JUnit XML report (one test case per metric).
pub fn junit(rows: &[Comparison], suite: &str) -> String {
    let failures = rows
        .iter()
        .filter(|r| r.verdict == Verdict::Regressed)
        .count();
    let mut o = String::new();
    let _ = writeln!(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        o,
        "<testsuites name=\"overlap check\" tests=\"{}\" failures=\"{failures}\">",
        rows.len()
    );
    let _ = writeln!(
        o,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\">",
        xml_escape(suite),
        rows.len()
    );
    for r in rows {
        let _ = write!(
            o,
            "    <testcase classname=\"overlap.check\" name=\"{}\"",
            xml_escape(&r.name)
        );
        match r.verdict {
            Verdict::Regressed => {
                let _ = writeln!(o, ">");
                let _ = writeln!(
                    o,
                    "      <failure message=\"{} regressed: {} (baseline {}, allowed {})\"/>",
                    xml_escape(&r.name),
                    value(r.current, r.unit),
                    value(r.baseline, r.unit),
                    allowance(r.allowed, r.unit)
                );
                let _ = writeln!(o, "    </testcase>");
            }
            Verdict::Missing => {
                let _ = writeln!(o, ">");
                let _ = writeln!(o, "      <skipped message=\"not in both runs\"/>");
                let _ = writeln!(o, "    </testcase>");
            }
            _ => {
                let _ = writeln!(o, "/>");
            }
        }
    }
    let _ = writeln!(o, "  </testsuite>");
    let _ = writeln!(o, "</testsuites>");
    o
}

/// One row of a diff.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiffRow {
    /// Metric.
    pub name: String,
    /// Value in the first run.
    pub a: f64,
    /// Value in the second run.
    pub b: f64,
    /// `b - a`.
    pub delta: f64,
    /// Its unit.
    pub unit: Unit,
}

/// Two runs side by side.
pub fn diff(a: &Report, b: &Report) -> Vec<DiffRow> {
    let rows = |r: &Report| -> Vec<(String, f64, Unit)> {
        let mut v = vec![
            ("run.wall".to_string(), r.totals.wall_ns as f64, Unit::Nanos),
            (
                "run.waiting".into(),
                r.totals.waiting_ns as f64,
                Unit::Nanos,
            ),
            (
                "run.waiting_fraction".into(),
                r.totals.waiting_fraction,
                Unit::Fraction,
            ),
            (
                "wait_states.total".into(),
                r.wait_states.total_ns as f64,
                Unit::Nanos,
            ),
        ];
        for k in WaitKind::ALL {
            let t = r
                .wait_states
                .kinds
                .iter()
                .find(|x| x.kind == k)
                .map_or(0, |x| x.total_ns);
            v.push((format!("wait_states.{}", k.key()), t as f64, Unit::Nanos));
        }
        v.push((
            "false_overlap.findings".into(),
            r.false_overlap.len() as f64,
            Unit::Count,
        ));
        v.push((
            "false_overlap.lost".into(),
            r.false_overlap.iter().map(|f| f.lost_ns).sum::<u64>() as f64,
            Unit::Nanos,
        ));
        v.push((
            "requests.mean_overlap".into(),
            // NaN (null in JSON) when unknown.
            r.requests.mean_overlap.unwrap_or(f64::NAN),
            Unit::Fraction,
        ));
        v.push((
            "requests.exposed_wait".into(),
            r.requests.exposed_wait_ns as f64,
            Unit::Nanos,
        ));
        let p = &r.pop;
        for (n, x) in [
            ("pop.parallel_efficiency", p.parallel_efficiency),
            ("pop.load_balance", p.load_balance),
            ("pop.communication_efficiency", p.communication_efficiency),
            ("pop.serialization_efficiency", p.serialization_efficiency),
            ("pop.transfer_efficiency", p.transfer_efficiency),
        ] {
            v.push((n.into(), x, Unit::Fraction));
        }
        v
    };
    rows(a)
        .into_iter()
        .zip(rows(b))
        .map(|((name, x, unit), (_, y, _))| DiffRow {
            name,
            a: x,
            b: y,
            delta: y - x,
            unit,
        })
        .collect()
}

/// A diff as a table.
pub fn diff_table(rows: &[DiffRow], a_name: &str, b_name: &str) -> String {
    let mut o = String::new();
    let short = |s: &str| -> String {
        let c: Vec<char> = s.chars().collect();
        if c.len() > 14 {
            c[c.len() - 14..].iter().collect()
        } else {
            s.to_string()
        }
    };
    let _ = writeln!(
        o,
        "{:<32} {:>14} {:>14} {:>12}",
        "metric",
        short(a_name),
        short(b_name),
        "delta"
    );
    for r in rows {
        let _ = writeln!(
            o,
            "{:<32} {:>14} {:>14} {:>12}",
            r.name,
            number(r.a, r.unit, false),
            number(r.b, r.unit, false),
            number(r.delta, r.unit, true)
        );
    }
    o
}
