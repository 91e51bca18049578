//! The synchronisation kernel's options (the kernel: `crate::sync`).

use serde::Serialize;

use super::Stability;

/// A kind of synchronisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncKind {
    /// `MPI_Barrier`.
    Barrier,
    /// With one partner.
    Pairwise,
    /// With the ranks `±1..±k` away.
    Ring,
    /// With the ranks `±1..±k` away on a permuted ring.
    Random,
    /// With the neighbours on a periodic 3-D grid.
    Grid3d,
}

impl SyncKind {
    /// Every kind, in the order they run.
    pub const ALL: [SyncKind; 5] = [
        SyncKind::Barrier,
        SyncKind::Pairwise,
        SyncKind::Ring,
        SyncKind::Random,
        SyncKind::Grid3d,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SyncKind::Barrier => "barrier",
            SyncKind::Pairwise => "pairwise",
            SyncKind::Ring => "ring",
            SyncKind::Random => "random",
            SyncKind::Grid3d => "grid3d",
        }
    }
}

/// Options of the synchronisation kernel: their flags, help and defaults (see
/// [`crate::args`]). A difference of two timed loops is noisier than one timing: it
/// takes more samples per figure than the other micro-benchmarks.
#[derive(Clone, Debug, PartialEq, clap::Args)]
#[command(mut_arg("max_samples", |a| a.default_value("50")))]
#[non_exhaustive]
pub struct Options {
    /// Kinds to run, comma-separated: barrier (MPI_Barrier), pairwise (rank i with
    /// i+N/2), ring (neighbours +-1 .. +-k), random (a ring of +-k on a random
    /// permutation of the ranks), grid3d (up and down neighbours on a periodic 3-D grid)
    /// [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub kinds: Option<Vec<SyncKind>>,
    /// Most neighbours of ring and random (k runs to max/2, capped at N/2;
    /// `syncmaxneigh` in the suite).
    #[arg(long, value_name = "K", default_value_t = 12)]
    pub max_neighbours: usize,
    /// Length of the delay loop, microseconds.
    #[arg(long, value_name = "US", default_value_t = 10.0)]
    pub delay_us: f64,
    /// Seed of the random permutation.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// When a figure is stable.
    #[command(flatten)]
    pub stability: Stability,
}

impl Default for Options {
    fn default() -> Self {
        crate::args::defaults()
    }
}
