//! The subcommands and their arguments (clap stays in this crate), and what each does.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use overlap_analyzer::merge::{merge_dir, write_merged, MergeOutcome};
use overlap_analyzer::summary::summarize;

use crate::launch::{launch_kernel, KernelLaunch};

/// Record, merge and analyze what MPI non-blocking communication really does.
#[derive(Debug, Parser)]
#[command(name = "overlap", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a bundled kernel under mpiexec, traced, then merge and summarise its trace.
    Run(RunArgs),
    /// Merge a directory of per-rank trace files into one Perfetto trace.
    Merge(MergeArgs),
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(subcommand)]
    kernel: Kernel,
}

#[derive(Debug, Subcommand)]
enum Kernel {
    /// Pairs exchanging imbalanced messages; shows false overlap (send Waitall too early).
    FalseOverlap(FalseOverlapArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Variant {
    /// Wait for the sends right after the receives, before computing.
    Naive,
    /// Defer the send Waitall until the send buffer is packed again.
    Fixed,
}

#[derive(Debug, Args)]
struct FalseOverlapArgs {
    /// MPI ranks (an odd count leaves the last rank without a partner).
    #[arg(long, short = 'n', default_value_t = 4)]
    ranks: u32,
    /// Where the send Waitall goes.
    #[arg(long, value_enum, default_value_t = Variant::Naive)]
    variant: Variant,
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
    /// The merged trace to write; per-rank files go to FILE's stem + ".ranks/".
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    launch: LaunchArgs,
}

/// How kernels are launched.
#[derive(Debug, Args)]
struct LaunchArgs {
    /// The MPI launcher.
    #[arg(long, env = "OVERLAP_MPIEXEC", default_value = "mpiexec")]
    mpiexec: String,
    /// The overlap-kernels binary (default: next to this one, then PATH).
    #[arg(long, env = "OVERLAP_KERNELS")]
    kernels: Option<PathBuf>,
    /// How often ranks flush trace data to their files, ms.
    #[arg(long, default_value_t = 50)]
    flush_ms: u64,
    /// Testing aid: this rank kills itself ...
    #[arg(long, hide = true)]
    kill_rank: Option<u32>,
    /// ... at the start of this iteration.
    #[arg(long, hide = true, default_value_t = 0)]
    kill_at_iteration: u64,
}

#[derive(Debug, Args)]
struct MergeArgs {
    /// Directory holding the per-rank files (rank-N.json).
    dir: PathBuf,
    /// The merged trace to write.
    #[arg(long)]
    out: PathBuf,
    /// Fail when any rank's file is missing, cut short or unreadable.
    #[arg(long)]
    strict: bool,
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(RunArgs {
            kernel: Kernel::FalseOverlap(a),
        }) => run_false_overlap(a),
        Command::Merge(a) => merge(a),
    }
}

fn ranks_dir_for(out: &Path) -> PathBuf {
    out.with_extension("ranks")
}

fn run_false_overlap(a: FalseOverlapArgs) -> Result<ExitCode> {
    if a.ranks == 0 {
        bail!("--ranks must be at least 1");
    }
    let variant = match a.variant {
        Variant::Naive => "naive",
        Variant::Fixed => "fixed",
    };
    let mut kernel_args: Vec<String> = vec![
        "--variant".into(),
        variant.into(),
        "--size".into(),
        a.size.to_string(),
        "--ratio".into(),
        a.ratio.to_string(),
        "--iters".into(),
        a.iters.to_string(),
        "--compute".into(),
        a.compute.to_string(),
        "--flush-ms".into(),
        a.launch.flush_ms.to_string(),
    ];
    if let Some(r) = a.launch.kill_rank {
        kernel_args.extend([
            "--kill-rank".into(),
            r.to_string(),
            "--kill-at-iteration".into(),
            a.launch.kill_at_iteration.to_string(),
        ]);
    }
    let ranks_dir = ranks_dir_for(&a.out);
    let launch = KernelLaunch {
        mpiexec: a.launch.mpiexec,
        kernels: a.launch.kernels,
        ranks: a.ranks,
        kernel: "false-overlap".into(),
        kernel_args,
        trace_dir: ranks_dir.clone(),
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
            report_merge(&m, &ranks_dir, &a.out)?;
            Ok(ExitCode::SUCCESS)
        }
        (Some(failure), Ok(m)) => {
            report_merge(&m, &ranks_dir, &a.out)?;
            bail!(
                "{failure}\nwhat was recorded is merged in {}",
                a.out.display()
            )
        }
        (None, Err(e)) => Err(e).context("merging the trace"),
        (Some(failure), Err(e)) => bail!("{failure}\nand nothing could be merged: {e}"),
    }
}

fn report_merge(m: &MergeOutcome, dir: &Path, out: &Path) -> Result<()> {
    let written = write_merged(&m.merged, out)
        .with_context(|| format!("writing the merged trace {}", out.display()))?;
    let info = &m.merged.info;
    for u in &m.unreadable {
        eprintln!("warning: {}: skipped: {}", u.path.display(), u.reason);
    }
    for r in &info.missing_ranks {
        eprintln!(
            "warning: rank {r}: no trace file in {} (the rank never started recording)",
            dir.display()
        );
    }
    for inc in &info.incomplete {
        eprintln!(
            "warning: rank {}: trace cut short ({} events kept from {}): {}",
            inc.rank, inc.events_read, inc.file, inc.reason
        );
    }
    if !info.clock_suspect.is_empty() {
        eprintln!(
            "warning: {} message(s) complete before they were sent once clocks are aligned; \
             flagged as clock-suspect",
            info.clock_suspect.len()
        );
    }
    let size = std::fs::metadata(out).map(|md| md.len()).unwrap_or(0);
    println!(
        "merged {} rank(s), {} messages ({} unmatched sends, {} unmatched receives) into {} \
         ({} events, {:.1} KiB)",
        m.merged.ranks.len(),
        info.messages,
        info.unmatched_sends,
        info.unmatched_receives,
        out.display(),
        written,
        size as f64 / 1024.0
    );
    print!("{}", summarize(&m.merged).to_table());
    Ok(())
}

fn merge(a: MergeArgs) -> Result<ExitCode> {
    let m = merge_dir(&a.dir)?;
    report_merge(&m, &a.dir, &a.out)?;
    let info = &m.merged.info;
    let problems = m.unreadable.len() + info.missing_ranks.len() + info.incomplete.len();
    if a.strict && problems > 0 {
        bail!("--strict: {problems} rank file(s) missing, cut short or unreadable");
    }
    Ok(ExitCode::SUCCESS)
}
