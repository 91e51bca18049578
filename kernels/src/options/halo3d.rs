//! The 3-D halo kernel's options (the kernel: `crate::halo3d`).

use super::Stability;

/// Options of the halo kernel.
#[derive(Clone, Debug, PartialEq, clap::Args)]
#[non_exhaustive]
pub struct Options {
    /// Local block edges to measure, cells per side (without the halo), comma-separated.
    #[arg(
        long,
        value_name = "EDGES",
        value_delimiter = ',',
        default_value = "8,16,32,64,128"
    )]
    pub sizes: Vec<usize>,
    /// When a figure is stable.
    #[command(flatten)]
    pub stability: Stability,
}

impl Default for Options {
    fn default() -> Self {
        crate::args::defaults()
    }
}
