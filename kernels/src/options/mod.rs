//! The kernels' options, apart from the kernels: plain data with their command-line
//! definitions (flags, help, defaults; see [`crate::args`]), free of MPI so that `overlap
//! run` can parse them without building the kernels (the crate's `mpi` feature).

pub mod false_overlap;
pub mod gpu_pipeline;
pub mod halo3d;
pub mod pingpong;
pub mod sync;
pub mod toeplitz;

use serde::Serialize;

/// When a figure is stable enough.
///
/// On the command line (see [`crate::args`]) the figures are given in the units a user
/// thinks in: percent, milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, clap::Args)]
#[non_exhaustive]
pub struct Stability {
    /// Fewest samples per figure.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub min_samples: usize,
    /// Most samples per figure.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_samples: usize,
    /// Target relative standard error of each figure's median, percent.
    // A fraction in the options: 0.02 is 2%.
    #[arg(long = "rse", value_name = "PCT", default_value = "2",
          value_parser = crate::args::percent_as_fraction)]
    pub target_rse: f64,
    /// Duration one sample aims at, ms (sets the repetitions per sample).
    // Seconds in the options.
    #[arg(long = "sample-ms", value_name = "MS", default_value = "0.2",
          value_parser = crate::args::millis_as_seconds)]
    pub sample_seconds: f64,
    /// Time budget per figure, seconds (warm-up included; at least --min-samples are
    /// taken even when it runs out).
    #[arg(long = "point-seconds", value_name = "S", default_value_t = 1.0)]
    pub max_seconds: f64,
}

impl Default for Stability {
    fn default() -> Self {
        crate::args::defaults()
    }
}
