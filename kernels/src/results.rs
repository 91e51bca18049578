//! How the micro-benchmarks show and save their figures: aligned text tables with units
//! that fit the value, and the JSON results file (`--json FILE`).
//!
//! The results file wraps each kernel's rows with what is needed to read them later:
//!
//! ```json
//! {"format": "overlap-microbench", "version": 1, "kernel": "pingpong", "ranks": 2,
//!  "stability": {"min_samples": 5, ...}, "results": {...}}
//! ```
//!
//! Times are in seconds and rates in bytes per second in the file; the tables use
//! ns/µs/ms/s and MB/s (10^6 bytes per second).

use std::path::Path;

use serde::Serialize;

use crate::stats::{Measurement, Stability};

/// The `format` field of every results file.
pub const RESULTS_FORMAT: &str = "overlap-microbench";
/// The version this code writes.
pub const RESULTS_VERSION: u32 = 1;

#[derive(Serialize)]
struct ResultsFile<'a, T: Serialize> {
    format: &'static str,
    version: u32,
    kernel: &'a str,
    ranks: u32,
    stability: &'a Stability,
    results: &'a T,
}

/// Writes the results file of `kernel` at `path`.
pub fn write_json<T: Serialize>(
    path: &Path,
    kernel: &str,
    ranks: u32,
    stability: &Stability,
    results: &T,
) -> std::io::Result<()> {
    let file = ResultsFile {
        format: RESULTS_FORMAT,
        version: RESULTS_VERSION,
        kernel,
        ranks,
        stability,
        results,
    };
    let text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)? + "\n";
    overlap_instrument::output::write_atomically(path, text.as_bytes())
        .map_err(std::io::Error::other)
}

/// A time, with the unit that keeps 3 to 4 significant digits.
pub fn seconds(s: f64) -> String {
    let a = s.abs();
    if !s.is_finite() {
        format!("{s}")
    } else if a < 1e-6 {
        format!("{:.1} ns", s * 1e9)
    } else if a < 1e-3 {
        format!("{:.2} µs", s * 1e6)
    } else if a < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

/// A rate in MB/s (10^6 bytes per second).
pub fn rate(bytes_per_s: f64) -> String {
    format!("{:.1} MB/s", bytes_per_s / 1e6)
}

/// A size in B, KiB or MiB (exact for powers of two).
pub fn bytes(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// The repetition columns every table ends with: measured repetitions, samples, and the
/// RSE in percent, starred when the target was not reached.
pub fn repetition_cells(m: &Measurement) -> [String; 3] {
    let star = if m.stable() { "" } else { "*" };
    [
        m.reps.to_string(),
        m.samples.to_string(),
        format!("{:.1}{star}", m.rse * 100.0),
    ]
}

/// The headers of [`repetition_cells`].
pub const REPETITION_HEADERS: [&str; 3] = ["reps", "samples", "rse%"];

/// The line under a table that explains its repetition columns.
pub fn repetition_note(s: &Stability, rows: &[&Measurement]) -> String {
    let unstable = rows.iter().filter(|m| !m.stable()).count();
    let mut note = format!(
        "reps: repetitions timed (after warm-up), in samples of ~{}; figures are medians \
         over samples; rse: relative standard error of the median (target {:.1}%)",
        seconds(s.sample_seconds),
        s.target_rse * 100.0
    );
    if unstable > 0 {
        note.push_str(&format!(
            "\n* {unstable} figure(s) did not reach the target within --max-samples {} / \
             --point-seconds {}",
            s.max_samples, s.max_seconds
        ));
    }
    note
}

/// A text table: the first column left-aligned, the others right-aligned.
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (as many cells as headers).
    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(cells);
    }

    /// The table as lines of text.
    pub fn render(&self) -> String {
        let width = |c: usize| {
            self.rows
                .iter()
                .map(|r| r[c].chars().count())
                .chain([self.headers[c].chars().count()])
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.headers.len()).map(width).collect();
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (c, cell) in cells.iter().enumerate() {
                let pad = widths[c] - cell.chars().count();
                if c == 0 {
                    out.push_str(cell);
                    out.push_str(&" ".repeat(pad));
                } else {
                    out.push_str("  ");
                    out.push_str(&" ".repeat(pad));
                    out.push_str(cell);
                }
            }
            out.trim_end().to_string() + "\n"
        };
        let mut text = line(&self.headers);
        for r in &self.rows {
            text.push_str(&line(r));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::stats::Stop;

    #[test]
    fn units_fit_the_value() {
        assert_eq!(seconds(412e-9), "412.0 ns");
        assert_eq!(seconds(3.214e-6), "3.21 µs");
        assert_eq!(seconds(1.5e-3), "1.50 ms");
        assert_eq!(seconds(2.0), "2.000 s");
        assert_eq!(seconds(-20e-9), "-20.0 ns");
        assert_eq!(rate(1.5e9), "1500.0 MB/s");
        assert_eq!(bytes(8), "8 B");
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(4 << 20), "4 MiB");
        assert_eq!(bytes(1536), "1536 B");
    }

    #[test]
    fn tables_align_and_star_unstable_figures() {
        let mut t = Table::new(&["pattern", "bytes", "latency"]);
        t.row(vec!["single".into(), "8 B".into(), "1.00 µs".into()]);
        t.row(vec!["multiple".into(), "4 MiB".into(), "1.20 ms".into()]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "pattern   bytes  latency");
        assert_eq!(lines[1], "single      8 B  1.00 µs");
        assert_eq!(lines[2], "multiple  4 MiB  1.20 ms");
        let m = Measurement {
            median_s: 1e-6,
            min_s: 1e-6,
            rse: 0.031,
            samples: 50,
            reps_per_sample: 10,
            reps: 500,
            warmup_reps: 3,
            stop: Stop::MaxSamples,
        };
        assert_eq!(
            repetition_cells(&m),
            ["500", "50", "3.1*"].map(String::from)
        );
        let note = repetition_note(&Stability::default(), &[&m]);
        assert!(
            note.contains("* 1 figure(s) did not reach the target"),
            "{note}"
        );
    }

    #[test]
    fn results_files_say_what_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        write_json(&path, "sync", 4, &Stability::default(), &vec![1, 2]).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["format"], RESULTS_FORMAT);
        assert_eq!(v["kernel"], "sync");
        assert_eq!(v["ranks"], 4);
        assert_eq!(v["stability"]["min_samples"], 5);
        assert_eq!(v["results"][1], 2);
    }
}
