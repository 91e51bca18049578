//! The command line of `overlap-kernels`: the kernels' own options
//! ([`overlap_kernels::args`], the definitions `overlap run` uses too), plus where the
//! ranks write their trace.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args as ClapArgs, Parser};
use overlap_kernels::args::Kernels;

/// Runs one bundled kernel on every rank, traced; launch it under mpiexec:
/// `mpiexec -n 4 overlap-kernels toeplitz --trace-dir run.ranks` (or use `overlap run`).
#[derive(Debug, Parser)]
#[command(name = "overlap-kernels", version)]
pub struct Cli {
    #[command(subcommand)]
    pub kernel: Kernels<TraceDir>,
}

/// Where each rank writes its trace.
#[derive(Clone, Debug, ClapArgs)]
pub struct TraceDir {
    /// Where each rank writes its trace file, rank-N.ovlp.
    #[arg(long, value_name = "DIR")]
    pub trace_dir: PathBuf,
}

impl Cli {
    /// The trace directory.
    pub fn trace_dir(&self) -> &PathBuf {
        &self.kernel.extra().trace_dir
    }

    /// How often the ranks flush their trace.
    pub fn flush(&self) -> Duration {
        Duration::from_millis(self.kernel.recording().flush_ms)
    }
}
