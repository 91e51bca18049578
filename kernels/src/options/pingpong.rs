//! The ping-pong kernel's options (the kernel: `crate::pingpong`).

use serde::Serialize;

use super::Stability;

/// Who ping-pongs with whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// First and last rank.
    Single,
    /// Rank `i` with `i + N/2`.
    Multiple,
    /// As multiple, every other pair in the opposite direction.
    Crossing,
}

impl Pattern {
    /// Every pattern.
    pub const ALL: [Pattern; 3] = [Pattern::Single, Pattern::Multiple, Pattern::Crossing];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Single => "single",
            Pattern::Multiple => "multiple",
            Pattern::Crossing => "crossing",
        }
    }

    /// Whether it runs on `ranks` ranks: `single` on 2 or more, the others on an even
    /// count of at least 4 (on 2 ranks they would be `single`).
    pub fn fits(self, ranks: usize) -> bool {
        match self {
            Pattern::Single => ranks >= 2,
            Pattern::Multiple | Pattern::Crossing => ranks >= 4 && ranks.is_multiple_of(2),
        }
    }
}

/// Options of the ping-pong kernel: their flags, help and defaults (see
/// [`crate::args`]).
#[derive(Clone, Debug, PartialEq, clap::Args)]
#[non_exhaustive]
pub struct Options {
    /// Patterns to run, comma-separated: single (first and last rank), multiple (rank i
    /// with i+N/2, all pairs at once, even N >= 4), crossing (as multiple, every other
    /// pair in the opposite direction) [default: all that fit the rank count].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub patterns: Option<Vec<Pattern>>,
    /// Smallest message, bytes (a power of two).
    #[arg(long, value_name = "BYTES", default_value_t = 8)]
    pub min_bytes: usize,
    /// Largest message, bytes (a power of two).
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20)]
    pub max_bytes: usize,
    /// When a figure is stable.
    #[command(flatten)]
    pub stability: Stability,
}

impl Default for Options {
    fn default() -> Self {
        crate::args::defaults()
    }
}
