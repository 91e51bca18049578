//! The thresholds every analysis reads, given by the command line ([`Options`]).

use overlap_format::schema::Nanos;

/// Thresholds of the analysis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// How many worst instances to list per wait state, and worst requests.
    pub worst: usize,
    /// How many false-overlap findings the report lists in full, largest loss first
    /// (every finding is counted, summed and grouped by site).
    pub findings: usize,
    /// A false-overlap loss (or the independent work after it) shorter than this is not
    /// worth reporting. Wait states count every positive wait.
    pub min_wait: Nanos,
    /// A request's window counts as empty when the compute inside it is less than this
    /// share of the time its wait lost.
    pub empty_window_share: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            worst: 5,
            findings: 100,
            min_wait: Nanos(1_000),
            empty_window_share: 0.1,
        }
    }
}
