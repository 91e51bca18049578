//! `overlap run KERNEL`: each bundled kernel's options, turned into the command line of
//! `overlap-kernels`, launched under `mpiexec`, then merged and analyzed.
//!
//! The options and their defaults mirror the kernels' own (`overlap-kernels` checks
//! them again, against the rank count); this module only parses and forwards them, so
//! the CLI never links MPI.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use overlap_analyzer::merge::merge_dir;
use overlap_analyzer::metrics::{analyze as analyze_trace, Options};
use overlap_analyzer::report::render;
use overlap_analyzer::summary::summarize;

use crate::cli::{ranks_dir_for, report_merge, style};
use crate::launch::{launch_kernel, KernelLaunch};

/// `overlap run`'s arguments.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(subcommand)]
    kernel: Kernel,
}

#[derive(Debug, Subcommand)]
enum Kernel {
    /// Pairs exchanging imbalanced messages; shows false overlap (send Waitall too early).
    FalseOverlap(FalseOverlapArgs),
    /// MIDAPACK's Toeplitz halo exchange; shows blocking vs false vs real overlap with the
    /// interior product.
    Toeplitz(ToeplitzArgs),
    /// Ping-pong latency and bandwidth per message size (single, multiple, crossing
    /// pairs); writes the network model.
    Pingpong(PingpongArgs),
    /// Synchronisation overhead (barrier, pairwise, ring, random, 3-D grid), by
    /// subtracting a delay loop.
    Sync(SyncArgs),
    /// Halo swaps of a 3-D array on a periodic 3-D process grid; time per swap and
    /// bandwidth.
    Halo3d(Halo3dArgs),
}

/// How kernels are launched, and where the trace goes.
#[derive(Debug, Args)]
struct LaunchArgs {
    /// MPI ranks.
    #[arg(long, short = 'n', default_value_t = 4)]
    ranks: u32,
    /// The merged trace to write; per-rank files go to FILE's stem + ".ranks/".
    #[arg(long)]
    out: PathBuf,
    /// The MPI launcher.
    #[arg(long, env = "OVERLAP_MPIEXEC", default_value = "mpiexec")]
    mpiexec: String,
    /// The overlap-kernels binary (default: next to this one, then PATH).
    #[arg(long, env = "OVERLAP_KERNELS")]
    kernels: Option<PathBuf>,
    /// How often ranks flush trace data to their files, ms.
    #[arg(long, default_value_t = 50)]
    flush_ms: u64,
    /// Stop the run when no MPI call completed on any rank for SECS seconds: exit
    /// status 124. SIGINT, SIGTERM or SIGHUP also stop the run, merged all the same:
    /// exit status 128 + the signal.
    #[arg(long, value_name = "SECS", value_parser = crate::supervise::parse_hang_timeout)]
    hang_timeout: Option<Duration>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum FalseOverlapVariant {
    /// Wait for the sends right after the receives, before computing.
    Naive,
    /// Defer the send Waitall until the send buffer is packed again.
    Fixed,
}

#[derive(Debug, Args)]
struct FalseOverlapArgs {
    /// Where the send Waitall goes.
    #[arg(long, value_enum, default_value_t = FalseOverlapVariant::Naive)]
    variant: FalseOverlapVariant,
    /// Small message size in 8-byte words.
    #[arg(long, default_value_t = 16384)]
    size: u64,
    /// The large message is SIZE*RATIO words.
    #[arg(long, default_value_t = 8)]
    ratio: u64,
    /// Iterations (each: two exchanges and a barrier).
    #[arg(long, default_value_t = 20)]
    iters: u64,
    /// Work per compute phase, in units of 1024 multiply-adds.
    #[arg(long, default_value_t = 2000)]
    compute: u64,
    /// Testing aid: this rank kills itself ...
    #[arg(long, hide = true)]
    kill_rank: Option<u32>,
    /// ... at the start of this iteration.
    #[arg(long, hide = true, default_value_t = 0)]
    kill_at_iteration: u64,
    #[command(flatten)]
    launch: LaunchArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ToeplitzVariant {
    /// Two MPI_Sendrecv, to the left then to the right.
    Blocking,
    /// Irecv/Isend both ways, then four MPI_Wait, then the product (false overlap).
    Nonblocking,
    /// The interior product runs between the posts and the waits.
    Overlapped,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Product {
    /// FFT for lambda >= 32, direct below (the crossover measured on x86-64).
    Auto,
    /// Direct band sums.
    Direct,
    /// FFT overlap-save (rustfft).
    Fft,
}

#[derive(Debug, Args)]
struct ToeplitzArgs {
    /// How the halo is exchanged.
    #[arg(long, value_enum, default_value_t = ToeplitzVariant::Nonblocking)]
    variant: ToeplitzVariant,
    /// n: global size (rows of the matrix and of each vector).
    #[arg(long, default_value_t = 262_144)]
    size: u64,
    /// lambda: half-bandwidth of the band (rows exchanged with each neighbour).
    #[arg(long, default_value_t = 1024)]
    lambda: u64,
    /// m: vectors multiplied at once (m_rowwise).
    #[arg(long, default_value_t = 8)]
    vectors: u64,
    /// Iterations (one exchange and one product each).
    #[arg(long, default_value_t = 20)]
    iters: u64,
    /// How the local product is computed.
    #[arg(long, value_enum, default_value_t = Product::Auto)]
    product: Product,
    /// Testing aid: this rank corrupts a received halo value.
    #[arg(long, hide = true)]
    fault_rank: Option<u32>,
    #[command(flatten)]
    launch: LaunchArgs,
}

/// How many repetitions a micro-benchmark figure takes (see docs/kernels.md). Unset
/// options keep the kernel's defaults.
#[derive(Debug, Args)]
struct RepetitionArgs {
    /// Fewest samples per figure [default: 5].
    #[arg(long)]
    min_samples: Option<u32>,
    /// Most samples per figure [default: 20; sync: 50].
    #[arg(long)]
    max_samples: Option<u32>,
    /// Target relative standard error of each figure's median, percent [default: 2].
    #[arg(long)]
    rse: Option<f64>,
    /// Duration one sample aims at, ms (sets the repetitions per sample) [default: 0.2].
    #[arg(long)]
    sample_ms: Option<f64>,
    /// Time budget per figure, seconds (at least --min-samples are taken) [default: 1].
    #[arg(long)]
    point_seconds: Option<f64>,
}

impl RepetitionArgs {
    fn kernel_args(&self) -> Vec<String> {
        let set = [
            ("--min-samples", self.min_samples.map(|v| v.to_string())),
            ("--max-samples", self.max_samples.map(|v| v.to_string())),
            ("--rse", self.rse.map(|v| v.to_string())),
            ("--sample-ms", self.sample_ms.map(|v| v.to_string())),
            ("--point-seconds", self.point_seconds.map(|v| v.to_string())),
        ];
        let given: Vec<(&str, String)> = set
            .into_iter()
            .filter_map(|(flag, value)| Some((flag, value?)))
            .collect();
        flags(&given)
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Pattern {
    /// First and last rank; the others idle.
    Single,
    /// Rank i with i+N/2, all pairs at once (even N >= 4).
    Multiple,
    /// As multiple, every other pair in the opposite direction.
    Crossing,
}

#[derive(Debug, Args)]
struct PingpongArgs {
    /// Patterns to run, comma-separated (default: all that fit the rank count).
    #[arg(long, value_enum, value_delimiter = ',')]
    patterns: Vec<Pattern>,
    /// Smallest message, bytes (a power of two).
    #[arg(long, default_value_t = 8)]
    min_bytes: u64,
    /// Largest message, bytes (a power of two).
    #[arg(long, default_value_t = 4 << 20)]
    max_bytes: u64,
    /// Write the results as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the single pattern's latency and bandwidth per size as a network model.
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    #[command(flatten)]
    repetition: RepetitionArgs,
    #[command(flatten)]
    launch: LaunchArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SyncKind {
    /// MPI_Barrier.
    Barrier,
    /// Rank i with i+N/2.
    Pairwise,
    /// Neighbours +-1 .. +-k.
    Ring,
    /// A ring of +-k on a random permutation of the ranks.
    Random,
    /// Up and down neighbours on a periodic 3-D grid (MPI_Dims_create).
    Grid3d,
}

#[derive(Debug, Args)]
struct SyncArgs {
    /// Kinds to run, comma-separated (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    kinds: Vec<SyncKind>,
    /// Most neighbours of ring and random (k runs to max/2, capped at N/2).
    #[arg(long, default_value_t = 12)]
    max_neighbours: u32,
    /// Length of the delay loop, microseconds.
    #[arg(long, default_value_t = 10.0)]
    delay_us: f64,
    /// Seed of the random permutation.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the results as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    repetition: RepetitionArgs,
    #[command(flatten)]
    launch: LaunchArgs,
}

#[derive(Debug, Args)]
struct Halo3dArgs {
    /// Local block edges to measure, cells per side, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64,128")]
    sizes: Vec<u32>,
    /// Write the results as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    repetition: RepetitionArgs,
    #[command(flatten)]
    launch: LaunchArgs,
}

/// `--flag value` pairs as arguments.
fn flags(pairs: &[(&str, String)]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|(f, v)| [f.to_string(), v.clone()])
        .collect()
}

/// Names of clap enum values, comma-separated.
fn names<T: ValueEnum>(values: &[T]) -> String {
    values
        .iter()
        .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_string()))
        .collect::<Vec<_>>()
        .join(",")
}

fn name<T: ValueEnum>(value: T) -> String {
    names(&[value])
}

/// `--json`/`--model`: an absolute path (the ranks may not start where this command
/// did), in a directory that exists.
fn output_file(flag: &str, path: &Option<PathBuf>) -> Result<Vec<String>> {
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    let absolute = std::path::absolute(path)
        .with_context(|| format!("{flag} {}: not a usable path", path.display()))?;
    if let Some(dir) = absolute.parent().filter(|d| !d.is_dir()) {
        bail!(
            "{flag} {}: the directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    Ok(vec![flag.to_string(), absolute.display().to_string()])
}

/// Runs the chosen kernel.
pub fn run(a: RunArgs) -> Result<ExitCode> {
    match a.kernel {
        Kernel::FalseOverlap(k) => {
            let mut args = flags(&[
                ("--variant", name(k.variant)),
                ("--size", k.size.to_string()),
                ("--ratio", k.ratio.to_string()),
                ("--iters", k.iters.to_string()),
                ("--compute", k.compute.to_string()),
            ]);
            if let Some(r) = k.kill_rank {
                args.extend(flags(&[
                    ("--kill-rank", r.to_string()),
                    ("--kill-at-iteration", k.kill_at_iteration.to_string()),
                ]));
            }
            run_kernel("false-overlap", args, k.launch)
        }
        Kernel::Toeplitz(k) => {
            let mut args = flags(&[
                ("--variant", name(k.variant)),
                ("--size", k.size.to_string()),
                ("--lambda", k.lambda.to_string()),
                ("--vectors", k.vectors.to_string()),
                ("--iters", k.iters.to_string()),
                ("--product", name(k.product)),
            ]);
            if let Some(r) = k.fault_rank {
                args.extend(flags(&[("--fault-rank", r.to_string())]));
            }
            run_kernel("toeplitz", args, k.launch)
        }
        Kernel::Pingpong(k) => {
            let mut args = flags(&[
                ("--min-bytes", k.min_bytes.to_string()),
                ("--max-bytes", k.max_bytes.to_string()),
            ]);
            if !k.patterns.is_empty() {
                args.extend(flags(&[("--patterns", names(&k.patterns))]));
            }
            args.extend(output_file("--json", &k.json)?);
            args.extend(output_file("--model", &k.model)?);
            args.extend(k.repetition.kernel_args());
            run_kernel("pingpong", args, k.launch)
        }
        Kernel::Sync(k) => {
            let mut args = flags(&[
                ("--max-neighbours", k.max_neighbours.to_string()),
                ("--delay-us", k.delay_us.to_string()),
                ("--seed", k.seed.to_string()),
            ]);
            if !k.kinds.is_empty() {
                args.extend(flags(&[("--kinds", names(&k.kinds))]));
            }
            args.extend(output_file("--json", &k.json)?);
            args.extend(k.repetition.kernel_args());
            run_kernel("sync", args, k.launch)
        }
        Kernel::Halo3d(k) => {
            let sizes: Vec<String> = k.sizes.iter().map(u32::to_string).collect();
            let mut args = flags(&[("--sizes", sizes.join(","))]);
            args.extend(output_file("--json", &k.json)?);
            args.extend(k.repetition.kernel_args());
            run_kernel("halo3d", args, k.launch)
        }
    }
}

/// Launches `kernel` with `kernel_args`, merges what the ranks recorded, and analyzes
/// it; when the run fails, still merges what was recorded and says how it failed.
fn run_kernel(kernel: &str, mut kernel_args: Vec<String>, l: LaunchArgs) -> Result<ExitCode> {
    if l.ranks == 0 {
        bail!("--ranks must be at least 1");
    }
    kernel_args.extend(flags(&[("--flush-ms", l.flush_ms.to_string())]));
    let ranks_dir = ranks_dir_for(&l.out);
    let launch = KernelLaunch {
        mpiexec: l.mpiexec,
        kernels: l.kernels,
        ranks: l.ranks,
        kernel: kernel.into(),
        kernel_args,
        trace_dir: ranks_dir.clone(),
        hang_timeout: l.hang_timeout,
    };
    let outcome = launch_kernel(&launch)?;
    let merged = merge_dir(&ranks_dir);
    let failure = outcome.failure(|pid| {
        let m = merged.as_ref().ok()?;
        m.merged
            .ranks
            .iter()
            .find(|r| r.os_pid == pid)
            .map(|r| r.rank)
    });
    match (failure, merged) {
        (None, Ok(m)) => {
            let (trace, line) = report_merge(&m, &ranks_dir, &l.out)?;
            println!("{line}");
            let (report, _) = analyze_trace(&trace, &Options::default());
            println!();
            print!("{}", render(&report, style()));
            Ok(ExitCode::SUCCESS)
        }
        (Some(failure), Ok(m)) => {
            let (trace, line) = report_merge(&m, &ranks_dir, &l.out)?;
            println!("{line}");
            print!("{}", summarize(&trace).to_table());
            // Integration (helper "hang"): for a hung run, print the analyzer's hang
            // report (report.hang's text section) here.
            if let Some(code) = outcome.ending.stopped_exit_code() {
                eprintln!(
                    "overlap: {failure}\nwhat the ranks recorded is merged in {}",
                    l.out.display()
                );
                return Ok(ExitCode::from(code));
            }
            bail!(
                "{failure}\nwhat was recorded is merged in {}",
                l.out.display()
            )
        }
        (None, Err(e)) => Err(e).context("merging the trace"),
        (Some(failure), Err(e)) => {
            if let Some(code) = outcome.ending.stopped_exit_code() {
                eprintln!("overlap: {failure}\nand nothing could be merged: {e:#}");
                return Ok(ExitCode::from(code));
            }
            bail!("{failure}\nand nothing could be merged: {e}")
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::path::Path;

    use super::*;

    #[test]
    fn enum_values_are_passed_by_their_command_line_names() {
        assert_eq!(name(ToeplitzVariant::Nonblocking), "nonblocking");
        assert_eq!(
            names(&[Pattern::Single, Pattern::Crossing]),
            "single,crossing"
        );
        assert_eq!(name(SyncKind::Grid3d), "grid3d");
        assert_eq!(name(FalseOverlapVariant::Fixed), "fixed");
        assert_eq!(
            flags(&[("--a", "1".into()), ("--b", "x".into())]),
            ["--a", "1", "--b", "x"]
        );
    }

    #[test]
    fn output_files_are_made_absolute_and_their_directory_must_exist() {
        let args = output_file("--json", &Some(PathBuf::from("r.json"))).unwrap();
        assert_eq!(args[0], "--json");
        assert!(Path::new(&args[1]).is_absolute());
        let err = output_file("--model", &Some(PathBuf::from("/nonexistent/dir/m.json")))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--model /nonexistent/dir/m.json: the directory"),
            "{err}"
        );
        assert!(output_file("--json", &None).unwrap().is_empty());
    }
}
