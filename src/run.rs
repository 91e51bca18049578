//! `overlap run KERNEL`: a bundled kernel launched under `mpiexec`, then merged and
//! analyzed. The kernel's options are the kernels crate's own definitions
//! (`overlap_kernels::args`); the ones the user gave are handed to `overlap-kernels` as
//! given (it checks them against the rank count), so no option or default is written
//! here.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use overlap_analyzer::analysis::analyze_owned;
use overlap_analyzer::merge::TraceFormat;
use overlap_analyzer::metrics::Options;
use overlap_analyzer::report::{render, render_summary};
use overlap_kernels::args::Kernels;

use crate::cli::{ranks_dir_for, style};
use crate::finish::{load_run, Failure, RunEnd};
use crate::launch::{launch_kernel, KernelLaunch};
use crate::output::{out, outln, sayln};
use crate::rundir::RunDir;

/// `overlap run`'s arguments: a kernel with its options, as the kernels crate defines
/// them, and how to launch it.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(subcommand)]
    kernel: Kernels<LaunchArgs>,
}

/// How kernels are launched, and where the trace goes.
#[derive(Clone, Debug, Args)]
pub struct LaunchArgs {
    /// MPI ranks.
    #[arg(long, short = 'n', default_value_t = 4)]
    ranks: u32,
    /// The merged trace to write; per-rank files go to FILE's stem + ".ranks/". Its
    /// extension chooses the format: .pftrace (Perfetto's protobuf) or .json (Chrome
    /// JSON) [default: traces/KERNEL-VARIANT.pftrace, or traces/KERNEL.pftrace for
    /// kernels without variants; traces/ is created when missing].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The merged trace's format, for an --out whose name does not say it, or for the
    /// default name (.json with json).
    #[arg(long, value_enum)]
    format: Option<crate::format::FormatArg>,
    /// The MPI launcher.
    #[arg(long, env = "OVERLAP_MPIEXEC", default_value = "mpiexec")]
    mpiexec: String,
    /// The overlap-kernels binary (default: next to this one, then PATH).
    #[arg(long, env = "OVERLAP_KERNELS")]
    kernels: Option<PathBuf>,
    /// Stop the run when no MPI call completed on any rank for DURATION, given with its
    /// unit (`30s`, `500ms`): exit status 124. SIGINT, SIGTERM or SIGHUP also stop the
    /// run, merged all the same: exit status 128 + the signal.
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_timeout)]
    hang_timeout: Option<Duration>,
    /// After the run, print the whole report, every section (default: the report on
    /// one screen; `overlap analyze --full` prints it later).
    #[arg(long)]
    full: bool,
}

/// The directory of the default output, relative to where `overlap run` runs.
const DEFAULT_OUT_DIR: &str = "traces";

/// The merged trace's default path: `traces/<kernel>-<variant>.<ext>`, or
/// `traces/<kernel>.<ext>` for a kernel without variants (`ext` the format's).
fn default_out(kernel: &str, variant: Option<&str>, format: TraceFormat) -> PathBuf {
    let stem = match variant {
        Some(v) => format!("{kernel}-{v}"),
        None => kernel.to_string(),
    };
    Path::new(DEFAULT_OUT_DIR).join(format!("{stem}.{}", format.extension()))
}

/// Where the merged trace goes: `--out`, whose directory must exist, else the default,
/// whose directory `traces/` is created (and said so) when missing.
fn out_path(
    given: Option<&Path>,
    format: TraceFormat,
    kernel: &str,
    variant: Option<&str>,
) -> Result<PathBuf> {
    if let Some(out) = given {
        // A mistyped --out is told now, not after the run.
        overlap_analyzer::output::check_output(out)?;
        return Ok(out.to_path_buf());
    }
    let out = default_out(kernel, variant, format);
    let dir = Path::new(DEFAULT_OUT_DIR);
    if !dir.is_dir() {
        std::fs::create_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
        sayln!("overlap: created {}/", dir.display());
    }
    sayln!(
        "overlap: the trace goes to {} (--out to choose)",
        out.display()
    );
    Ok(out)
}

/// Runs the chosen kernel.
pub fn run(a: RunArgs) -> Result<ExitCode> {
    let k = &a.kernel;
    let l = k.extra();
    let format = crate::format::default_format(l.format);
    let out = out_path(l.out.as_deref(), format, k.name(), k.variant())?;
    let format = crate::format::format_of(&out, l.format)?;
    run_kernel(k.name(), k.argv(), l, &out, format)
}

/// Launches `kernel` with `kernel_args`, merges what the ranks recorded into `out`, and
/// analyzes it; when the run fails, still merges what was recorded and says how it
/// failed.
fn run_kernel(
    kernel: &str,
    kernel_args: Vec<OsString>,
    l: &LaunchArgs,
    out: &Path,
    format: TraceFormat,
) -> Result<ExitCode> {
    if l.ranks == 0 {
        bail!("--ranks must be at least 1");
    }
    let ranks_dir = ranks_dir_for(out);
    // Held until the merge is written: a second run on the same --out is refused.
    let _run_dir = RunDir::claim(
        &ranks_dir,
        &format!("overlap run {kernel} --out {}", out.display()),
    )?;
    let launch = KernelLaunch {
        mpiexec: l.mpiexec.clone(),
        kernels: l.kernels.clone(),
        ranks: l.ranks,
        kernel: kernel.into(),
        kernel_args,
        trace_dir: ranks_dir.clone(),
        hang_timeout: l.hang_timeout,
    };
    let outcome = launch_kernel(&launch)?;
    let output = overlap_analyzer::merge::Output {
        format,
        window: overlap_analyzer::merge::Window::all(),
    };
    let merged = crate::finish::merge(&ranks_dir, out, &output, false);
    let failure = outcome
        .failure(|pid| {
            let m = merged.as_ref().ok()?;
            m.processes.iter().find(|p| p.1 == pid).map(|p| p.0)
        })
        .map(|message| Failure {
            message,
            code: outcome.ending.stopped_exit_code().unwrap_or(1),
        });
    let no_trace = match &failure {
        Some(f) => format!("{}\nand nothing could be merged", f.message),
        None => "merging the trace".into(),
    };
    let end = RunEnd {
        ranks_dir: &ranks_dir,
        out,
        print: crate::output::stdout_fmt,
    };
    match end.finish(merged, failure, no_trace)? {
        Ok(_) => {
            let trace = load_run(&ranks_dir, out)?;
            let report = analyze_owned(trace, &Options::default());
            outln!();
            if l.full {
                out!("{}", render(&report, style()));
            } else {
                out!("{}", render_summary(&report, style()));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(code) => Ok(code),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_default_trace_is_named_after_the_kernel_and_its_variant() {
        assert_eq!(
            default_out("toeplitz", Some("overlapped"), TraceFormat::Pftrace),
            Path::new("traces/toeplitz-overlapped.pftrace")
        );
        assert_eq!(
            default_out("halo3d", None, TraceFormat::Json),
            Path::new("traces/halo3d.json")
        );
    }

    #[test]
    fn a_given_out_needs_its_directory() {
        let err = out_path(
            Some(Path::new("/nonexistent/dir/t.json")),
            TraceFormat::Json,
            "sync",
            None,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "cannot write /nonexistent/dir/t.json: the directory /nonexistent/dir does not exist"
        );
        assert_eq!(
            out_path(Some(Path::new("t.json")), TraceFormat::Json, "sync", None).unwrap(),
            Path::new("t.json")
        );
    }
}
