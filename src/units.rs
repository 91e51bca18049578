//! The units options are given in: durations, rates and sizes, read the same way by
//! every subcommand (`whatif --latency 2us`, `trace --hang-timeout 30s`).
//!
//! A duration or a rate must say its unit: a bare `2` could be nanoseconds, seconds or
//! anything between, and a guess that is silently wrong is worse than a refusal naming
//! the units. A size alone may be a bare number, which is bytes (said in `--help`).

use std::time::Duration;

/// The units of a duration, and their factor to nanoseconds.
const DURATION_UNITS: [(&str, f64); 5] = [
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
];

/// The units of a bandwidth, and their factor to bytes per second.
const RATE_UNITS: [(&str, f64); 8] = [
    ("B/s", 1.0),
    ("KB/s", 1e3),
    ("kB/s", 1e3),
    ("MB/s", 1e6),
    ("GB/s", 1e9),
    ("KiB/s", 1024.0),
    ("MiB/s", 1024.0 * 1024.0),
    ("GiB/s", 1024.0 * 1024.0 * 1024.0),
];

/// The units of a size, and their factor to bytes; "" (a bare number) is bytes.
const SIZE_UNITS: [(&str, f64); 7] = [
    ("", 1.0),
    ("B", 1.0),
    ("KB", 1e3),
    ("kB", 1e3),
    ("MB", 1e6),
    ("KiB", 1024.0),
    ("MiB", 1024.0 * 1024.0),
];

/// The units a quantity takes, for an error: `ns, us, µs, ms, s`.
fn named(units: &[(&str, f64)]) -> String {
    units
        .iter()
        .map(|(u, _)| *u)
        .filter(|u| !u.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Splits `text` into a number and its unit, and scales by the unit's factor. A unit
/// missing where `units` has no "" is refused, naming the units and an `example`.
fn scaled(text: &str, units: &[(&str, f64)], what: &str, example: &str) -> Result<f64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+'))
        .unwrap_or(t.len());
    let (num, unit) = (t[..split].trim(), t[split..].trim());
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{text:?}: not a {what} (a number, then its unit: {example})"))?;
    let factor = units
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|(_, f)| *f)
        .ok_or_else(|| {
            if unit.is_empty() {
                format!(
                    "{text:?}: a {what} needs its unit, one of {} (e.g. {example})",
                    named(units)
                )
            } else {
                format!("{text:?}: unknown unit {unit:?} (use {})", named(units))
            }
        })?;
    let v = value * factor;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("{text:?}: must be a finite number, 0 or more"));
    }
    Ok(v)
}

/// A duration with its unit (`2us`, `1.5 ms`), in ns.
pub(crate) fn parse_duration_ns(text: &str) -> Result<f64, String> {
    scaled(text, &DURATION_UNITS, "duration", "2us")
}

/// A bandwidth with its unit (`12.5GB/s`), in bytes per second (more than 0).
pub(crate) fn parse_bandwidth(text: &str) -> Result<f64, String> {
    let v = scaled(text, &RATE_UNITS, "bandwidth", "12.5GB/s")?;
    if v == 0.0 {
        return Err(format!("{text:?}: a bandwidth must be more than 0"));
    }
    Ok(v)
}

/// A size, in bytes (a bare number is bytes).
pub(crate) fn parse_bytes(text: &str) -> Result<u64, String> {
    let v = scaled(text, &SIZE_UNITS, "size", "64KiB")?;
    if v.fract() != 0.0 || v > u64::MAX as f64 {
        return Err(format!("{text:?}: not a whole number of bytes"));
    }
    Ok(v as u64)
}

/// A timeout with its unit (`30s`, `500ms`): above 0, up to 1 000 000 s.
pub(crate) fn parse_timeout(text: &str) -> Result<Duration, String> {
    let ns = scaled(text, &DURATION_UNITS, "duration", "30s")?;
    if !(ns > 0.0 && ns <= 1e15) {
        return Err(format!(
            "{text:?}: a timeout must be above 0 and at most 1000000s"
        ));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn units_parse_and_bad_ones_are_named() {
        assert_eq!(parse_duration_ns("2us").unwrap(), 2000.0);
        assert_eq!(parse_duration_ns("1.5 ms").unwrap(), 1.5e6);
        assert_eq!(parse_duration_ns("700ns").unwrap(), 700.0);
        assert_eq!(parse_bandwidth("12.5GB/s").unwrap(), 12.5e9);
        assert_eq!(parse_bandwidth("1KiB/s").unwrap(), 1024.0);
        assert_eq!(parse_bytes("64KiB").unwrap(), 65536);
        assert_eq!(parse_bytes("100").unwrap(), 100, "a bare size is bytes");
        let e = parse_duration_ns("2 parsecs").unwrap_err();
        assert!(e.contains("unknown unit \"parsecs\""), "{e}");
        assert!(parse_bandwidth("0GB/s").is_err());
        assert!(parse_bandwidth("fast")
            .unwrap_err()
            .contains("not a bandwidth"));
        assert!(parse_bytes("1.5B").is_err());
        assert!(parse_duration_ns("-2us").is_err());
    }

    /// A bare number is no duration and no rate: refused, naming the units, never
    /// taken as nanoseconds or bytes per second.
    #[test]
    fn durations_and_rates_without_a_unit_are_refused_naming_the_units() {
        let e = parse_duration_ns("2").unwrap_err();
        assert_eq!(
            e,
            "\"2\": a duration needs its unit, one of ns, us, µs, ms, s (e.g. 2us)"
        );
        let e = parse_bandwidth("12.5").unwrap_err();
        assert!(
            e.contains("a bandwidth needs its unit, one of B/s, KB/s"),
            "{e}"
        );
        let e = parse_timeout("30").unwrap_err();
        assert!(e.contains("(e.g. 30s)"), "{e}");
    }

    #[test]
    fn timeouts_are_positive_durations() {
        assert_eq!(parse_timeout("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_timeout("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_timeout("0s").is_err());
        assert!(parse_timeout("-1s").is_err());
        assert!(parse_timeout("nans").is_err());
        assert!(parse_timeout("2000000s").is_err());
        assert!(parse_timeout("x").unwrap_err().contains("\"x\""));
    }
}
