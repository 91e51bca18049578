//! How the analyzer writes numbers for people: durations, rates, shares, sizes, counts,
//! and text cut to a column. A leaf: the report's printers, the merge's and the GPU
//! findings' messages, `suggest` and the terminal UI all write them the same way.

/// A duration for people: ns, µs, ms or s with 3 significant-ish digits.
pub fn duration(ns: u64) -> String {
    let n = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} us", n / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", n / 1e6)
    } else {
        format!("{:.3} s", n / 1e9)
    }
}

/// A point in time of the run, in seconds.
pub(crate) fn at(ns: u64) -> String {
    format!("{:.6} s", ns as f64 / 1e9)
}

/// A rate in bytes per second, in the unit that keeps it readable (an 8-byte class gives
/// kB/s, a link GB/s).
pub(crate) fn rate(bytes_per_s: f64) -> String {
    let (value, unit) = match bytes_per_s {
        b if b >= 1e9 => (b / 1e9, "GB/s"),
        b if b >= 1e6 => (b / 1e6, "MB/s"),
        b if b >= 1e3 => (b / 1e3, "kB/s"),
        b => (b, "B/s"),
    };
    format!("{value:.2} {unit}")
}

pub(crate) fn pct(f: f64) -> String {
    format!("{:5.1}%", f * 100.0)
}

/// `part` as a percentage of `whole`, 6 columns wide.
pub fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        "    - ".into()
    } else {
        pct(part as f64 / whole as f64)
    }
}

/// A size in bytes, in B, KiB or MiB.
pub fn bytes(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else if b >= 1 << 10 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// A count with thin groups of three digits: `1 197`.
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// `text` cut to `width` characters, ending in `...` when cut.
pub(crate) fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width.saturating_sub(3)).collect();
    format!("{kept}...")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_fitting() {
        assert_eq!(count(7), "7");
        assert_eq!(count(1197), "1 197");
        assert_eq!(count(1_234_567), "1 234 567");
        assert_eq!(fit("calls.c:57 (main)", 40), "calls.c:57 (main)");
        assert_eq!(fit("abcdefghij", 8), "abcde...");
    }
}
