//! The subcommands and their arguments (clap stays in this crate), and what each does.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::{Args, Parser, Subcommand};
use overlap_analyzer::analysis::{analyze as analyze_trace, analyze_owned};
use overlap_analyzer::load::Loaded;
use overlap_analyzer::merge::{Output, Window};
use overlap_analyzer::metrics::Options;
use overlap_analyzer::model::Trace;
use overlap_analyzer::report::{
    render, render_profile, render_regions, render_summary, render_window, Style, WithRegions,
};
use overlap_analyzer::window::WindowReport;
use overlap_instrument::schema::Nanos;

use crate::finish::{report_merge, warn_incomplete, Failure, RunEnd};
use crate::format::{default_format, format_of, FormatArg};
use crate::hold::HoldArgs;
use crate::output::{out, outln, sayln};
use crate::parallel::Role;
use crate::run::RunArgs;
use crate::rundir::RunDir;
use crate::supervise::Ending;

/// Record, merge and analyze what MPI non-blocking communication really does.
#[derive(Debug, Parser)]
#[command(name = "overlap", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a bundled kernel under mpiexec, traced, then merge and analyze its trace.
    Run(RunArgs),
    /// Trace any MPI program unchanged: `overlap trace -- mpiexec -n 4 ./app args`.
    Trace(TraceArgs),
    /// Merge a directory of per-rank trace files into one Perfetto trace.
    Merge(MergeArgs),
    /// Analyze a trace: time per rank, wait states, overlap per request, false overlap, POP.
    Analyze(AnalyzeArgs),
    /// Propose reorderings: which call to move where, what it gains (replayed), what it
    /// assumes.
    Suggest(crate::suggest::SuggestArgs),
    /// Compare two traces side by side, with deltas.
    Diff(crate::gate::DiffArgs),
    /// Save the gated metrics of a trace as a baseline for `overlap check`.
    Baseline(crate::gate::BaselineArgs),
    /// Check a trace against a baseline: exit 0 within tolerance, 1 on regression,
    /// 2 when the check cannot be trusted (see `overlap check --help`).
    Check(crate::gate::CheckArgs),
    /// Predict the run on another network or progress mode: `overlap whatif TRACE
    /// --latency 2us --bandwidth 12.5GB/s [--progress async]`.
    Whatif(crate::whatif::WhatifArgs),
    /// Explore a trace in the terminal: timeline, waits, overlap, summary; with a second
    /// trace, compare them. For the login node over SSH, where Perfetto is far away.
    Tui(crate::tui::TuiArgs),
}

#[derive(Debug, Args)]
struct AnalyzeArgs {
    /// A merged trace, a directory of per-rank files (rank-N.ovlp), or one of them.
    trace: PathBuf,
    /// Print the report as JSON (stable keys, see docs/metrics.md).
    #[arg(long)]
    json: bool,
    /// Write the tables (ranks, calls, requests, messages, wait_states) as CSV here.
    #[arg(long, value_name = "DIR")]
    csv: Option<PathBuf>,
    /// Write the same tables as Parquet here.
    #[arg(long, value_name = "DIR")]
    parquet: Option<PathBuf>,
    /// Record the analyzer's own phases as a Chrome trace (open it in Perfetto).
    #[arg(long, value_name = "FILE")]
    self_trace: Option<PathBuf>,
    /// Print every section of the report (default: the report on one screen, the run,
    /// time per rank, the largest findings and the sites that lost the most).
    #[arg(long)]
    full: bool,
    /// Add the profile to the text report: time per MPI function and per call site
    /// (mpiP's columns), the communication matrix, message sizes and the phases, each
    /// table cut to ROWS rows (default 10; `--json` always has the profile whole).
    #[arg(long, value_name = "ROWS", num_args = 0..=1, default_missing_value = "10")]
    profile: Option<usize>,
    #[command(flatten)]
    hold: HoldArgs,
    #[command(flatten)]
    parallel: crate::parallel::ParallelArgs,
    #[command(flatten)]
    analysis: AnalysisArgs,
    #[command(flatten)]
    window: crate::window::WindowArgs,
}

/// Thresholds of the analysis.
#[derive(Debug, Args)]
pub(crate) struct AnalysisArgs {
    /// Instances listed per wait state, and worst requests.
    #[arg(long, default_value_t = Options::default().worst)]
    worst: usize,
    /// False-overlap losses (and the independent work that could hide them) shorter
    /// than this many microseconds are not reported.
    #[arg(long, default_value_t = Options::default().min_wait.0 as f64 / 1e3)]
    min_wait_us: f64,
    /// False-overlap findings the report lists in full, largest loss first (every
    /// finding is counted, summed and grouped by call site, and the gate's figures use
    /// them all; the terminal UI lists all).
    #[arg(long, value_name = "N", default_value_t = Options::default().findings)]
    findings: usize,
}

impl AnalysisArgs {
    pub(crate) fn options(&self) -> Result<Options> {
        if !(self.min_wait_us >= 0.0 && self.min_wait_us.is_finite()) {
            bail!("--min-wait-us must be a non-negative number");
        }
        Ok(Options {
            worst: self.worst,
            findings: self.findings,
            min_wait: Nanos((self.min_wait_us * 1000.0).round() as u64),
            ..Options::default()
        })
    }
}

#[derive(Debug, Args)]
struct TraceArgs {
    /// The merged trace to write; per-rank files go to FILE's stem + ".ranks/". Its
    /// extension chooses the format: .pftrace (Perfetto's protobuf) or .json (Chrome
    /// JSON, which `overlap analyze` also reads) [default: overlap-trace.pftrace].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The merged trace's format, for an --out whose name does not say it, or for the
    /// default name (overlap-trace.json with json).
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// The preload library (default: the one built for the program's MPI, found beside
    /// this binary).
    #[arg(long, env = "OVERLAP_PRELOAD")]
    preload: Option<PathBuf>,
    /// Stop the run when no MPI call completed on any rank for DURATION, given with its
    /// unit (`30s`, `500ms`); each rank then records the calls it is inside: exit status
    /// 124. SIGINT, SIGTERM or SIGHUP also stop the run, merged all the same: exit
    /// status 128 + the signal.
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_timeout)]
    hang_timeout: Option<Duration>,
    /// Also learn what the program does with each completed request's buffer: when it
    /// next reads or writes it, and at which line (see docs/buffers.md). Costs a few
    /// microseconds per completion.
    #[arg(long)]
    buffers: bool,
    /// Record N frames of each MPI call's stack, its call path, not only the line that
    /// made the call: a wait inside a helper is then reported at the helper's callers
    /// too, and findings are grouped by path (as mpiP's -k N). Unwound with the code's
    /// unwind tables (.eh_frame): about a microsecond per call (docs/preload.md).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    callpath: u32,
    /// The launch command, after `--`: `mpiexec -n 4 ./app`, `srun -n 4 ./app`,
    /// `mpirun -n 4 ./app` (Open MPI: the environment is exported with -x for you).
    #[arg(last = true, required = true, value_name = "LAUNCH")]
    command: Vec<String>,
}

#[derive(Debug, Args)]
struct MergeArgs {
    /// Directory holding the per-rank files (rank-N.ovlp).
    dir: PathBuf,
    /// The merged trace to write: .pftrace for Perfetto's protobuf (what the Perfetto UI
    /// opens best), .json for Chrome JSON (what `overlap analyze` also reads), .otf2 for
    /// an OTF2 archive's anchor file (Vampir, Scalasca; `overlap analyze` reads it too).
    #[arg(long)]
    out: PathBuf,
    /// The format, for an --out whose name says neither; with otf2, an --out not named
    /// *.otf2 is a new directory holding traces.otf2.
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Write the run from T on (.pftrace only): a time from the run's start, with its
    /// unit (1.5s, 200ms, 30us; a bare number is refused). Slices across the edge are cut and
    /// say so; messages with an end outside lose their arrow for a mark.
    #[arg(long, value_name = "T", value_parser = crate::format::parse_time)]
    from: Option<Nanos>,
    /// Write the run up to T (.pftrace only), as --from.
    #[arg(long, value_name = "T", value_parser = crate::format::parse_time)]
    to: Option<Nanos>,
    /// Write the part of the run a region covers (.pftrace only), a region the program
    /// marked with MPI_Pcontrol: IPM's named ones (MPI_Pcontrol(1, "solve") enters,
    /// MPI_Pcontrol(-1, "solve") leaves) or mpiP's unnamed on/off, called `pcontrol`.
    /// NAME spans every instance, from the first rank's enter to the last rank's leave;
    /// NAME#K the K-th instance only. The ranks that never entered it are said. An
    /// unknown NAME is an error that lists the run's regions. Instead of --from/--to.
    #[arg(long, value_name = "NAME[#K]", conflicts_with_all = ["from", "to"])]
    region: Option<String>,
    /// Write only these ranks (.pftrace only): a list of ranks and ranges, 0-15,64.
    #[arg(long, value_name = "LIST", value_parser = crate::format::parse_ranks)]
    ranks: Option<crate::format::RankList>,
    /// Fail when any rank's file is missing, cut short or unreadable.
    #[arg(long)]
    strict: bool,
}

impl Cli {
    /// Parses the command line, or exits as clap does (status 2) with clap's message,
    /// which for `overlap trace` given its launch command without `--` also says to add
    /// it: clap alone says only "unexpected argument".
    pub fn parse_args() -> Cli {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        Cli::try_parse_from(&args).unwrap_or_else(|e| with_dashes_tip(e, &args).exit())
    }

    /// True for `overlap tui`, which handles the stop signals itself.
    pub fn is_tui(&self) -> bool {
        matches!(self.command, Command::Tui(_))
    }
}

/// `e` with a tip for `overlap trace` whose launch command was given without `--`
/// (`overlap trace mpiexec -n 4 ./app`): where the command line is `trace` and clap
/// found an argument it does not know.
fn with_dashes_tip(mut e: clap::Error, args: &[std::ffi::OsString]) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let trace = args.get(1).is_some_and(|a| a == "trace");
    let dashes = args.iter().any(|a| a == "--");
    if !trace || dashes || e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let mut tips = match e.get(ContextKind::Suggested) {
        Some(ContextValue::StyledStrs(t)) => t.clone(),
        _ => Vec::new(),
    };
    tips.push(
        "the launch command goes after `--`: `overlap trace [OPTIONS] -- mpiexec -n 4 ./app`"
            .into(),
    );
    e.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    e
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(a) => crate::run::run(a),
        Command::Trace(a) => trace(a),
        Command::Merge(a) => merge(a),
        Command::Analyze(a) => analyze(a),
        Command::Suggest(a) => crate::suggest::suggest(a),
        Command::Diff(a) => crate::gate::diff(a),
        Command::Baseline(a) => crate::gate::baseline(a),
        Command::Check(a) => crate::gate::check(a),
        Command::Whatif(a) => crate::whatif::whatif(a),
        Command::Tui(a) => crate::tui::tui(a),
    }
}

pub(crate) fn ranks_dir_for(out: &Path) -> PathBuf {
    out.with_extension("ranks")
}

fn trace(a: TraceArgs) -> Result<ExitCode> {
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "overlap-trace.{}",
            default_format(a.format).extension()
        ))
    });
    let format = format_of(&out, a.format)?;
    // A mistyped --out is told now, not after the run.
    overlap_analyzer::output::check_output(&out)?;
    let chosen = crate::which_mpi::choose(a.preload.as_deref(), &a.command)?;
    if let Some(note) = &chosen.note {
        crate::output::sayln!("overlap: {note}");
    }
    if let Some(note) = crate::program::without_launcher(&a.command) {
        sayln!("overlap: note: {note}");
    }
    let ranks_dir = ranks_dir_for(&out);
    // Held until the merge is written: a second run on the same --out is refused.
    let _run_dir = RunDir::claim(
        &ranks_dir,
        &format!("overlap trace -- {}", a.command.join(" ")),
    )?;
    let options = crate::trace::TraceOptions {
        hang_timeout: a.hang_timeout,
        buffers: a.buffers,
        callpath: a.callpath,
    };
    let ending = crate::trace::run_traced(&a.command, &chosen, &ranks_dir, &options)?;
    let command = a.command.join(" ");
    // No rank started: a program written as a path that is not there is why.
    let missing = crate::program::no_rank_file(&ranks_dir)
        .then(|| crate::program::missing_program(&a.command))
        .flatten()
        .map(|p| format!(": the program {p} does not exist (no such file here)"))
        .unwrap_or_default();
    let failure = match &ending {
        Ending::Finished(status) if status.success() => None,
        Ending::Finished(status) => Some(Failure {
            message: format!("`{command}` failed ({status}){missing}"),
            code: status
                .code()
                .and_then(|c| u8::try_from(c).ok())
                .filter(|c| *c != 0)
                .unwrap_or(1),
        }),
        stopped => Some(Failure {
            message: crate::finish::stopped(stopped),
            code: stopped.stopped_exit_code().unwrap_or(1),
        }),
    };
    let built_for = chosen
        .built_for
        .as_ref()
        .map_or("an MPI it does not name".to_string(), |b| b.to_string());
    let no_trace = if missing.is_empty() {
        format!(
            "`{command}` ({}) left no readable trace in {}: was it an MPI program of \
             {built_for}, the MPI the preload {} was built for? (programs that start MPI \
             only through MPI_Session_init are not traced: see docs/preload.md)",
            ending.status(),
            ranks_dir.display(),
            chosen.path.display()
        )
    } else {
        format!("`{command}` ({}) left no trace{missing}", ending.status())
    };
    let end = RunEnd {
        ranks_dir: &ranks_dir,
        out: &out,
        print: crate::output::stderr_fmt,
    };
    match end.finish(
        crate::finish::merge(
            &ranks_dir,
            &out,
            &Output {
                format,
                window: Window::all(),
            },
            false,
        ),
        failure,
        no_trace,
    )? {
        Ok(written) => {
            end.summary(&written)?;
            sayln!("{}", crate::finish::what_next(&out, format, &ranks_dir));
            Ok(ExitCode::SUCCESS)
        }
        Err(code) => Ok(code),
    }
}

fn merge(a: MergeArgs) -> Result<ExitCode> {
    if crate::format::wants_otf2(&a.out, a.format) {
        return crate::otf2::merge(
            &a.dir,
            &a.out,
            a.from.is_some() || a.to.is_some() || a.region.is_some() || a.ranks.is_some(),
        );
    }
    let format = format_of(&a.out, a.format)?;
    let (from, to) = match &a.region {
        Some(text) => region_window(&a.dir, text)?,
        None => (a.from, a.to),
    };
    let window = Window::new(from, to, a.ranks.clone().map(|r| r.0))
        .map_err(|e| anyhow::anyhow!("--from/--to/--ranks: {e}"))?;
    let output = Output { format, window };
    overlap_analyzer::output::check_output(&a.out)?;
    if let Some(holder) = crate::rundir::holder(&a.dir) {
        sayln!(
            "warning: {} is still being written by a run ({holder}): what its ranks wrote so \
             far is merged",
            a.dir.display()
        );
    }
    let m = crate::finish::merge(&a.dir, &a.out, &output, a.strict)?;
    let line = report_merge(&m, &a.dir, &a.out);
    outln!("{line}");
    out!("{}", m.summary.to_table());
    let cpus = overlap_analyzer::metrics::oversubscription::Oversubscription::of(&m.info);
    if let Some(line) = cpus.warning() {
        outln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The times `merge --region TEXT` stands for, said on stderr with the ranks that never
/// entered the region; an unknown region is an error listing the run's.
fn region_window(dir: &Path, text: &str) -> Result<(Option<Nanos>, Option<Nanos>)> {
    use overlap_analyzer::regions::RegionChoice;
    let choice = RegionChoice::parse(text).map_err(|e| anyhow::anyhow!("--region: {e}"))?;
    let regions = overlap_analyzer::merge::regions_of_dir(dir)?;
    let w = regions
        .window(&choice)
        .map_err(|e| anyhow::anyhow!("--region {text}: {e} (in {})", dir.display()))?;
    sayln!(
        "region {text}: {:.6} s to {:.6} s of the run, entered by {} rank(s)",
        w.from.0 as f64 / 1e9,
        w.to.0 as f64 / 1e9,
        w.entered.len()
    );
    if !w.never_entered.is_empty() {
        let ranks: Vec<String> = w.never_entered.iter().map(u32::to_string).collect();
        sayln!(
            "region {text}: never entered by rank(s) {} (their events in that time are written \
             all the same)",
            ranks.join(", ")
        );
    }
    Ok((Some(w.from), Some(w.to)))
}

/// Loads a trace for analysis, with a progress bar on stderr when it takes a while.
/// The heap is set for analysis first ([`overlap_analyzer::heap`]).
pub(crate) fn load(path: &Path) -> Result<Loaded> {
    overlap_analyzer::heap::set_thresholds();
    let mut bar = crate::progress::Bar::new(&format!("reading {}", path.display()));
    let loaded = overlap_analyzer::load::load(path, &mut |done, total| bar.update(done, total));
    bar.finish();
    Ok(loaded?)
}

/// Loads a trace for analysis and prints what could not be used.
pub(crate) fn load_trace(path: &Path) -> Result<Trace> {
    let loaded = load(path)?;
    for p in &loaded.problems {
        sayln!("warning: {}: {p}", path.display());
    }
    if !loaded.problems.is_empty() {
        sayln!(
            "warning: {}: {} part(s) of the file left out (listed above); the analysis \
             covers the rest",
            path.display(),
            loaded.problems.len()
        );
    }
    for n in &loaded.notes {
        sayln!("warning: {n}");
    }
    warn_incomplete(&loaded.unreadable, &loaded.trace.info, |_| {
        format!("none of its events is in {}", path.display())
    });
    Ok(loaded.trace)
}

/// Colour for stdout: only on a terminal that is not dumb, and never when NO_COLOR is
/// set ([`crate::output::color_allowed`]).
pub(crate) fn style() -> Style {
    let color = crate::output::color_allowed(crate::output::stdout_is_terminal());
    crate::output::allow_color(color);
    Style { color }
}

/// Refuses what the workers of `--parallel` cannot give: they analyse a directory of
/// rank files whole, a share of the files each, and the report is worker 0's.
fn only_in_parts(a: &AnalyzeArgs) -> Result<()> {
    if !a.trace.is_dir() {
        bail!(
            "{}: --parallel analyses a directory of rank files (rank-N.ovlp), not a file",
            a.trace.display()
        );
    }
    let refused = if !a.window.choice().is_all() {
        Some("a window of the run (it is cut from the run held whole)")
    } else if a.hold.hold == crate::hold::Hold::Whole {
        Some("--hold whole (each worker holds its share)")
    } else if a.self_trace.is_some() {
        Some("--self-trace (it records one process)")
    } else {
        None
    };
    match refused {
        Some(what) => bail!("--parallel: its workers cannot take {what}"),
        None => Ok(()),
    }
}

fn analyze(a: AnalyzeArgs) -> Result<ExitCode> {
    let opts = a.analysis.options()?;
    crate::tables::check_built(&a.csv, &a.parquet)?;
    let tables = a.csv.is_some() || a.parquet.is_some();
    let role = a.parallel.role()?;
    if !matches!(role, Role::Alone) {
        only_in_parts(&a)?;
    }
    let asked = (&a.csv, &a.parquet);
    let worker_run = match role {
        Role::Launch(workers) => return a.parallel.launch(workers),
        Role::Worker(library) => {
            match crate::parallel::analyze(&library, &a.trace, &opts, asked)? {
                Ok(Some(run)) => Some(run),
                Ok(None) => return Ok(ExitCode::SUCCESS),
                Err(code) => return Ok(code),
            }
        }
        Role::Alone => None,
    };
    let self_trace = match &a.self_trace {
        Some(file) => Some(crate::selftrace::start(file)?),
        None => None,
    };
    // A directory of rank files, whole, may be analysed without ever being held whole
    // (read three times, a part of its ranks at a time), its tables written as it goes.
    let by_parts =
        worker_run.is_none() && (a.hold.hold).chosen(&a.trace, a.window.choice().is_all());
    let mut streamed = None;
    let (report, run_regions, window, for_tables) = if let Some((run, tables)) = worker_run {
        streamed = tables;
        (run.report, run.regions, WindowReport::default(), None)
    } else if by_parts {
        let mut tables = crate::tables::Stream::start(&a.csv, &a.parquet)?;
        let rows = tables.as_mut().and_then(crate::tables::Stream::rows);
        let run = crate::hold::analyze_in_parts(&a.trace, &opts, rows)?;
        streamed = tables;
        (run.report, run.regions, WindowReport::default(), None)
    } else {
        let (trace, window) = a.window.apply(load_trace(&a.trace)?)?;
        let run_regions = overlap_analyzer::regions::RunRegions::of_trace(&trace);
        // The tables need the trace and every instance after the report; without them
        // the trace is given up to the analysis, which then peaks lower.
        if tables {
            let (report, details) = analyze_trace(&trace, &opts);
            (report, run_regions, window, Some((trace, details)))
        } else {
            (analyze_owned(trace, &opts), run_regions, window, None)
        }
    };
    let (regions, regions_unknown) = (run_regions.summary(), run_regions.unknown);
    {
        let _s = tracing::info_span!("report").entered();
        if a.json {
            let with = WithRegions {
                report: &report,
                regions: &regions,
                regions_unknown: regions_unknown.as_deref(),
                window: (!window.asked.is_all()).then_some(&window),
            };
            outln!("{}", serde_json::to_string_pretty(&with)?);
        } else {
            out!("{}", render_window(&window, style()));
            if a.full {
                out!("{}", render(&report, style()));
                let unknown = regions_unknown.as_deref();
                out!("{}", render_regions(&regions, unknown, style()));
            } else {
                out!("{}", render_summary(&report, style()));
            }
            if let Some(rows) = a.profile {
                out!("{}", render_profile(&report.profile, style(), rows));
            }
        }
    }
    if let Some((trace, details)) = for_tables {
        crate::tables::write(&trace, &report, &details, &a.csv, &a.parquet)?;
    }
    if let Some(tables) = streamed {
        tables.finish(&report)?;
    }
    if let Some(guard) = self_trace {
        guard.finish()?;
    }
    Ok(ExitCode::SUCCESS)
}
