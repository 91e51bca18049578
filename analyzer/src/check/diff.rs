//! Two runs side by side, metric by metric, with the change. A figure one run has no
//! value for is "unknown" (null in JSON), and so is its change.

use std::fmt::Write as _;

use serde::Serialize;

use super::metrics::Unit;
use crate::analysis::Report;
use crate::gpu::GpuFindingKind;
use crate::metrics::WaitKind;
use crate::units::duration;

/// One row of a diff.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiffRow {
    /// Metric.
    pub name: String,
    /// Value in the first run (null: no figure).
    pub a: Option<f64>,
    /// Value in the second run (null: no figure).
    pub b: Option<f64>,
    /// `b - a` (null when either has no figure).
    pub delta: Option<f64>,
    /// Its unit.
    pub unit: Unit,
}

/// Two runs side by side.
pub fn diff(a: &Report, b: &Report) -> Vec<DiffRow> {
    // The GPU rows when either run has GPU work (unknown on the side without).
    let gpu = a.gpu.is_some() || b.gpu.is_some();
    let rows = |r: &Report| -> Vec<(String, Option<f64>, Unit)> {
        let mut v = vec![
            (
                "run.wall".to_string(),
                Some(r.totals.wall_ns as f64),
                Unit::Nanos,
            ),
            (
                "run.waiting".into(),
                Some(r.totals.waiting_ns as f64),
                Unit::Nanos,
            ),
            (
                "run.waiting_fraction".into(),
                r.totals.waiting_fraction,
                Unit::Fraction,
            ),
            (
                "wait_states.total".into(),
                Some(r.wait_states.total_ns as f64),
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
            v.push((
                format!("wait_states.{}", k.key()),
                Some(t as f64),
                Unit::Nanos,
            ));
        }
        v.push((
            "false_overlap.findings".into(),
            Some(r.false_overlap.count as f64),
            Unit::Count,
        ));
        v.push((
            "false_overlap.lost".into(),
            Some(r.false_overlap.lost_ns as f64),
            Unit::Nanos,
        ));
        v.push((
            "requests.mean_overlap".into(),
            r.requests.mean_overlap,
            Unit::Fraction,
        ));
        v.push((
            "requests.exposed_wait".into(),
            Some(r.requests.exposed_wait_ns as f64),
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
        if gpu {
            let g = r.gpu.as_ref();
            let lost = |k: GpuFindingKind| {
                g.map(|g| {
                    g.findings
                        .iter()
                        .filter(|f| f.kind == k)
                        .map(|f| f.lost_ns)
                        .sum::<u64>() as f64
                })
            };
            v.push((
                "gpu.findings".into(),
                g.map(|g| g.findings.len() as f64),
                Unit::Count,
            ));
            for k in [
                GpuFindingKind::SerializedStaging,
                GpuFindingKind::GpuIdleWhileHostWaits,
                GpuFindingKind::HostBlockedOnCopies,
                GpuFindingKind::CopiesSerializedWithMpi,
            ] {
                v.push((format!("gpu.{}", k.key()), lost(k), Unit::Nanos));
            }
            v.push((
                "gpu.chain_mean_total".into(),
                g.and_then(|g| g.chains.mean.total_ns).map(|n| n as f64),
                Unit::Nanos,
            ));
            v.push((
                "gpu.pipeline_hidden".into(),
                g.and_then(|g| g.pipeline_hidden),
                Unit::Fraction,
            ));
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
            delta: x.zip(y).map(|(x, y)| y - x),
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
    let _ = writeln!(
        o,
        "(run.waiting: whole calls that only wait; wait_states: the time any call spent on a \
         late partner)"
    );
    o
}

/// A value (or, `signed`, a change) in its unit: counts whole, fractions in percent
/// (changes in points), durations for people.
pub fn number(v: Option<f64>, unit: Unit, signed: bool) -> String {
    let Some(v) = v.filter(|v| v.is_finite()) else {
        return "unknown".into();
    };
    let sign = if signed && v > 0.0 { "+" } else { "" };
    match unit {
        Unit::Count => format!("{sign}{v:.0}"),
        Unit::Fraction if signed => format!("{sign}{:.1}pt", v * 100.0),
        Unit::Fraction => format!("{:.1}%", v * 100.0),
        Unit::Nanos if v < 0.0 => format!("-{}", duration((-v) as u64)),
        Unit::Nanos => format!("{sign}{}", duration(v as u64)),
    }
}
