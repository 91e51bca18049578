//! A check's verdicts for people (a table) and for CI (JUnit XML). A metric without a
//! figure reads "unknown", never 0; in JUnit a metric that cannot be judged, and every
//! reason the check could not judge at all, is an error, never a skipped test.

use std::fmt::Write as _;

use super::compare::{Comparison, Scale, Verdict};
use super::metrics::Unit;

/// A value in its unit and scale: counts whole (per 1000 calls with two decimals),
/// fractions in percent; "unknown" without a figure.
fn value(v: Option<f64>, unit: Unit, scale: Scale) -> String {
    match v {
        None => "unknown".into(),
        Some(v) if !v.is_finite() => "unknown".into(),
        Some(v) => match (unit, scale) {
            (Unit::Count, Scale::PerThousandCalls) => format!("{v:.2}/1k"),
            (Unit::Fraction, _) => format!("{:.1}%", v * 100.0),
            _ => format!("{v:.0}"),
        },
    }
}

/// How far a metric may move, in its unit: `±16.1pt`, `±0`, `-` when it is no gate.
fn allowance(r: &Comparison) -> String {
    match (r.allowed, r.unit, r.scale) {
        (None, _, _) => "-".into(),
        (Some(a), Unit::Fraction, _) => format!("±{:.1}pt", a * 100.0),
        (Some(a), _, Scale::PerThousandCalls) => format!("±{a:.2}"),
        (Some(a), _, _) => format!("±{a:.1}"),
    }
}

/// The verdict in words.
pub fn verdict_text(v: Verdict) -> &'static str {
    match v {
        Verdict::Ok => "ok",
        Verdict::Improved => "improved",
        Verdict::Regressed => "REGRESSED",
        Verdict::Unknown => "UNKNOWN: no figure now",
        Verdict::AtWorst => "not gated: at its worst in the baseline, can only improve",
        Verdict::Impossible => "NOT GATED: an impossible value in the baseline",
        Verdict::NoBaselineFigure => "not gated: no figure in the baseline",
        Verdict::NotInBaseline => "not gated: not in the baseline",
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
            value(r.baseline, r.unit, r.scale),
            value(r.current, r.unit, r.scale),
            allowance(r),
            verdict_text(r.verdict)
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

fn suite_open(o: &mut String, suite: &str, tests: usize, failures: usize, errors: usize) {
    let _ = writeln!(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        o,
        "<testsuites name=\"overlap check\" tests=\"{tests}\" failures=\"{failures}\" \
         errors=\"{errors}\">"
    );
    let _ = writeln!(
        o,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">",
        xml_escape(suite)
    );
}

fn suite_close(o: &mut String) {
    let _ = writeln!(o, "  </testsuite>");
    let _ = writeln!(o, "</testsuites>");
}

fn case(o: &mut String, name: &str, body: Option<(&str, String)>) {
    let _ = write!(
        o,
        "    <testcase classname=\"overlap.check\" name=\"{}\"",
        xml_escape(name)
    );
    match body {
        None => {
            let _ = writeln!(o, "/>");
        }
        Some((tag, message)) => {
            let _ = writeln!(o, ">");
            let _ = writeln!(o, "      <{tag} message=\"{}\"/>", xml_escape(&message));
            let _ = writeln!(o, "    </testcase>");
        }
    }
}

/// The comparison as a JUnit XML report: one test case per metric, plus one error per
/// reason the check could not be trusted (`problems`).
pub fn junit(rows: &[Comparison], problems: &[String], suite: &str) -> String {
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    let failures = count(Verdict::Regressed);
    let errors = count(Verdict::Unknown) + problems.len();
    let mut o = String::new();
    suite_open(&mut o, suite, rows.len() + problems.len(), failures, errors);
    for (i, p) in problems.iter().enumerate() {
        case(
            &mut o,
            &format!("usable input {}", i + 1),
            Some(("error", p.clone())),
        );
    }
    for r in rows {
        let shown = |v| value(v, r.unit, r.scale);
        let body = match r.verdict {
            Verdict::Ok | Verdict::Improved => None,
            Verdict::Regressed => Some((
                "failure",
                format!(
                    "{} regressed: {} (baseline {}, allowed {})",
                    r.name,
                    shown(r.current),
                    shown(r.baseline),
                    allowance(r)
                ),
            )),
            v @ Verdict::Impossible => Some(("error", verdict_text(v).to_string())),
            Verdict::Unknown => Some((
                "error",
                format!(
                    "{}: no figure in this trace (baseline {}): cannot be judged",
                    r.name,
                    shown(r.baseline)
                ),
            )),
            v @ (Verdict::AtWorst | Verdict::NoBaselineFigure | Verdict::NotInBaseline) => {
                Some(("skipped", verdict_text(v).to_string()))
            }
        };
        case(&mut o, &r.name, body);
    }
    suite_close(&mut o);
    o
}

/// A JUnit report of a check that could not run at all: one error.
pub fn junit_error(reason: &str, suite: &str) -> String {
    junit(&[], &[reason.to_string()], suite)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(verdict: Verdict, current: Option<f64>) -> Comparison {
        Comparison {
            name: "requests.mean_overlap".into(),
            unit: Unit::Fraction,
            scale: Scale::Absolute,
            baseline: Some(0.5),
            current,
            allowed: Some(0.025),
            verdict,
        }
    }

    #[test]
    fn unknown_is_an_error_never_a_skip_or_zero() {
        let rows = [row(Verdict::Unknown, None)];
        let t = comparison_table(&rows);
        assert!(t.contains("unknown") && !t.contains(" 0.0%"), "{t}");
        let x = junit(&rows, &[], "s");
        assert!(x.contains("errors=\"1\"") && x.contains("<error"), "{x}");
        assert!(!x.contains("<skipped"), "{x}");
        let x = junit_error("rank 1: missing", "s & t");
        assert!(x.contains("<error message=\"rank 1: missing\"") && x.contains("s &amp; t"));
    }
}
