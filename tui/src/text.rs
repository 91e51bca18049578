//! Text from a trace on its way to the terminal. Compute names, program names and call
//! sites come from the traced program: a name holding an escape sequence or a control
//! character must never reach the terminal raw (it could move the cursor, retitle the
//! window or worse), so every such string is passed through [`clean`] before it is drawn.
//! Also the few number formats the views share.

use std::borrow::Cow;

pub use overlap_analyzer::units::{bytes, duration};

/// `text` with every control character (C0, DEL, C1: escape sequences start with one)
/// shown as `\u{..}` instead: printable, and never interpreted by the terminal.
pub fn clean(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A point in time of the run: seconds with enough digits for the zoom it is shown at
/// (`ns_per_cell` ns per terminal column).
pub fn time_at(ns: f64, ns_per_cell: f64) -> String {
    let digits = match ns_per_cell {
        x if x >= 1e8 => 1,
        x if x >= 1e7 => 2,
        x if x >= 1e6 => 3,
        x if x >= 1e5 => 4,
        x if x >= 1e4 => 5,
        x if x >= 1e3 => 6,
        x if x >= 1e2 => 7,
        x if x >= 1e1 => 8,
        _ => 9,
    };
    format!("{:.*} s", digits, ns / 1e9)
}

/// A time span for people, from a float number of ns (the zoom's width of a cell).
pub fn span(ns: f64) -> String {
    duration(ns.max(0.0).round() as u64)
}

/// A fraction as a percentage, or `unknown`.
pub fn percent(f: Option<f64>) -> String {
    match f {
        Some(f) => format!("{:.1}%", f * 100.0),
        None => "unknown".to_string(),
    }
}

/// A time the user typed: `1.5` (seconds), `250ms`, `12.5us`, `800ns`, `2s`.
pub fn parse_time(text: &str) -> Option<f64> {
    let t = text.trim();
    let split = t
        .find(|c: char| c.is_ascii_alphabetic() || c == 'µ')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.trim().parse().ok()?;
    let scale = match unit.trim() {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        _ => return None,
    };
    let ns = value * scale;
    (ns.is_finite() && ns >= 0.0).then_some(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_never_pass() {
        assert_eq!(clean("halo"), "halo");
        assert_eq!(clean("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(clean("x\ny\u{7}"), "x\\u{a}y\\u{7}");
        assert_eq!(clean("\u{9b}31m"), "\\u{9b}31m");
        assert!(!clean("\u{1b}]0;title\u{7}").chars().any(char::is_control));
    }

    #[test]
    fn times_typed_by_people() {
        assert_eq!(parse_time("1.5"), Some(1.5e9));
        assert_eq!(parse_time("250ms"), Some(250e6));
        assert_eq!(parse_time("12.5 us"), Some(12_500.0));
        assert_eq!(parse_time("800ns"), Some(800.0));
        assert_eq!(parse_time("-1"), None);
        assert_eq!(parse_time("3 parsecs"), None);
        assert_eq!(time_at(1.234_567e9, 1e6), "1.235 s");
    }
}
