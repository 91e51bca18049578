//! Whether a merged file will open in the Perfetto UI, said before it is written: an
//! estimate of its size from what the merge has counted by then (events, requests and
//! messages), against what the UI can hold, and when it is more, a window or a subset of
//! ranks that would fit (`merge --from --to --ranks`, section 7.10 of
//! docs/trace-format.md).
//!
//! The UI runs trace_processor in a WebAssembly heap of 2 GiB and needs two to four
//! times the file in memory (docs: "Perfetto's protobuf trace"): files above
//! [`UI_LIMIT`] (512 MiB) may not open. The bytes per event, request and message are
//! those measured on the recorded runs of `analyzer/tests/data/reports` and on preloaded
//! runs of 10^5 to 2x10^5 events (docs/trace-format.md 7.10): within about 15 %.

use std::path::Path;

use overlap_format::pftrace::TraceFormat;

use super::Window;

/// The largest file the Perfetto UI is taken to open: its 2 GiB heap over the 4x the
/// file it may need.
pub const UI_LIMIT: u64 = 512 << 20;

/// Bytes per call or compute span, per request and per message: (JSON, protobuf).
const PER_EVENT: (u64, u64) = (200, 85);
/// See [`PER_EVENT`].
const PER_REQUEST: (u64, u64) = (330, 80);
/// See [`PER_EVENT`].
const PER_MESSAGE: (u64, u64) = (200, 15);

/// The merged file's expected size, and what it is measured against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeEstimate {
    /// The format written.
    pub format: TraceFormat,
    /// Expected bytes.
    pub bytes: u64,
    /// The run's length, ns.
    pub run_ns: u64,
    /// The ranks written.
    pub ranks: Vec<u32>,
}

impl SizeEstimate {
    /// The estimate for a run of `events`, `requests` and `messages` lasting `run_ns` on
    /// `ranks`, written in `format`, of which `window` is written.
    pub fn new(
        format: TraceFormat,
        window: &Window,
        (events, requests, messages): (u64, u64, u64),
        run_ns: u64,
        ranks: &[u32],
    ) -> SizeEstimate {
        let pick = |(json, proto): (u64, u64)| match format {
            TraceFormat::Json => json,
            TraceFormat::Pftrace => proto,
        };
        let whole =
            events * pick(PER_EVENT) + requests * pick(PER_REQUEST) + messages * pick(PER_MESSAGE);
        let written: Vec<u32> = ranks
            .iter()
            .copied()
            .filter(|r| window.has_rank(*r))
            .collect();
        let rank_share = written.len() as f64 / ranks.len().max(1) as f64;
        let (from, to) = (window.from().0.min(run_ns), window.to().0.min(run_ns));
        let time_share = match run_ns {
            0 => 1.0,
            _ => (to - from) as f64 / run_ns as f64,
        };
        SizeEstimate {
            format,
            bytes: (whole as f64 * rank_share * time_share) as u64,
            run_ns,
            ranks: written,
        }
    }

    /// True when the file is expected to be more than the UI opens.
    pub fn too_large(&self) -> bool {
        self.bytes > UI_LIMIT
    }

    /// What to tell before writing `out` from `dir` when it is too large for the UI: its
    /// expected size, and a window and a subset of ranks that would fit.
    pub fn advice(&self, dir: &Path, out: &Path) -> Option<String> {
        if !self.too_large() {
            return None;
        }
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        // A tenth below the limit, for the estimate's error.
        let share = UI_LIMIT as f64 * 0.9 / self.bytes as f64;
        let to_ns = (self.run_ns as f64 * share) as u64;
        let first = (self.ranks.len() as f64 * share).floor().max(1.0) as usize;
        let ranks = match self.ranks.get(..first) {
            Some([one]) => one.to_string(),
            Some([a, .., b]) if (*b - *a) as usize + 1 == first => format!("{a}-{b}"),
            Some(list) => list
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
            None => String::new(),
        };
        let json = match self.format {
            TraceFormat::Json => format!(
                " (as .pftrace it would be about {:.0} % of the size)",
                100.0 * PER_EVENT.1 as f64 / PER_EVENT.0 as f64
            ),
            TraceFormat::Pftrace => String::new(),
        };
        Some(format!(
            "{out} will be about {:.0} MiB, more than the Perfetto UI opens (about {:.0} MiB: \
             its 2 GiB heap needs up to 4x the file){json}; trace_processor reads it whole. To \
             open the run in the UI, merge a part of it: `overlap merge {dir} --out part.pftrace \
             --to {}` (the first {:.0} % of the run) or `--ranks {ranks}` ({first} of {} ranks)",
            mib(self.bytes),
            mib(UI_LIMIT),
            duration(to_ns),
            100.0 * share,
            self.ranks.len(),
            out = out.display(),
            dir = dir.display(),
        ))
    }
}

/// A time for `--to`: ms (or s) with three decimals.
fn duration(ns: u64) -> String {
    match ns {
        n if n >= 10_000_000_000 => format!("{:.3}s", n as f64 / 1e9),
        n => format!("{:.3}ms", n as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_too_large_for_the_ui_gets_a_window_and_a_subset_that_fit() {
        let ranks: Vec<u32> = (0..16).collect();
        let all = Window::all();
        let small = SizeEstimate::new(TraceFormat::Pftrace, &all, (1000, 500, 250), 10, &ranks);
        assert!(!small.too_large());
        assert_eq!(small.advice(Path::new("d"), Path::new("o.pftrace")), None);
        // 10^7 events, each with a request and half a message: about 1.6 GiB of protobuf.
        let big = (10_000_000, 10_000_000, 5_000_000);
        let e = SizeEstimate::new(TraceFormat::Pftrace, &all, big, 2_000_000_000, &ranks);
        assert_eq!(e.bytes, 10_000_000 * 85 + 10_000_000 * 80 + 5_000_000 * 15);
        let text = e
            .advice(Path::new("run.ranks"), Path::new("run.pftrace"))
            .expect("advice");
        assert!(text.starts_with("run.pftrace will be about 1645 MiB, more than the Perfetto UI opens (about 512 MiB"), "{text}");
        assert!(text.contains("`overlap merge run.ranks --out part.pftrace --to 560.213ms` (the first 28 % of the run) or `--ranks 0-3` (4 of 16 ranks)"), "{text}");
        // A window that fits is not told.
        let window = Window::new(None, Some(overlap_format::schema::Nanos(400_000_000)), None)
            .expect("window");
        let part = SizeEstimate::new(TraceFormat::Pftrace, &window, big, 2_000_000_000, &ranks);
        assert!(!part.too_large(), "{part:?}");
        let json = SizeEstimate::new(
            TraceFormat::Json,
            &all,
            (1_000_000, 1_000_000, 500_000),
            1,
            &ranks,
        );
        let text = json
            .advice(Path::new("d"), Path::new("o.json"))
            .expect("advice");
        assert!(
            text.contains("(as .pftrace it would be about 42 % of the size)"),
            "{text}"
        );
    }
}
