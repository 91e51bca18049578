//! `overlap baseline`, `check` and `diff`: the regression gate as the user drives it.
//! The decisions (what is complete, what differs, each verdict, the exit status) are
//! the analyzer's ([`overlap_analyzer::check`]); this module loads, prints and exits.
//!
//! `check` and `baseline` exit 2 for every input they cannot use, never 1: 1 is kept for
//! a real regression, so that a CI job can tell a slower program from a broken trace.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use overlap_analyzer::analysis::{analyze_owned, Report};
use overlap_analyzer::check::{self, CheckOptions, Exit, Judged, RankWork};
use overlap_analyzer::output::write_atomically;
use overlap_analyzer::report::{render_window, Style};
use overlap_analyzer::window::WindowReport;

use crate::cli::{load, load_trace, style, AnalysisArgs};
use crate::hold::HoldArgs;
use crate::output::{out, outln, sayln};
use crate::window::WindowArgs;

/// How each gate command reads and analyses a trace: the analysis's thresholds, how a
/// directory of rank files is held, and the part of the run (all by default).
#[derive(Debug, Args)]
pub(crate) struct ReadingArgs {
    #[command(flatten)]
    analysis: AnalysisArgs,
    #[command(flatten)]
    hold: HoldArgs,
    #[command(flatten)]
    window: WindowArgs,
}

impl ReadingArgs {
    /// Whether the trace at `path` is read a part of its ranks at a time: a directory
    /// of rank files, whole, as `--hold` says.
    fn in_parts(&self, path: &Path) -> bool {
        (self.hold.hold).chosen(path, self.window.choice().is_all())
    }
}

#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The first trace (merged file or directory of per-rank files).
    pub(crate) a: PathBuf,
    /// The second trace.
    pub(crate) b: PathBuf,
    /// Print the rows as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) reading: ReadingArgs,
}

#[derive(Debug, Args)]
pub(crate) struct BaselineArgs {
    /// The trace (merged file or directory of per-rank files). It must be complete.
    pub(crate) trace: PathBuf,
    /// The baseline file to write.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// How far a metric may move the wrong way, in percent of its baseline value, kept
    /// in the baseline for `overlap check`. A tolerance that would let a metric never fail
    /// is refused.
    #[arg(long, value_name = "PCT", default_value_t = overlap_analyzer::check::DEFAULT_TOLERANCE_PCT)]
    pub(crate) tolerance: f64,
    #[command(flatten)]
    pub(crate) reading: ReadingArgs,
}

/// Exit status of `overlap check`.
const CHECK_EXIT_CODES: &str = "\
Exit status:
  0  every gated metric was compared and is within tolerance
  1  at least one metric regressed beyond the tolerance (and nothing below applies)
  2  the check cannot be trusted: the trace is incomplete (a rank missing, cut short
     or unreadable, a merged file cut or damaged, no events); it covers another
     program, other parameters, other ranks or other work than the baseline (unless
     --allow-different); a gated metric has no figure now; the baseline is unreadable,
     of another version, has no metrics, or a tolerance could never fail

See docs/metrics.md, \"Regression gates\".";

#[derive(Debug, Args)]
#[command(after_long_help = CHECK_EXIT_CODES)]
pub(crate) struct CheckArgs {
    /// The trace to check (merged file or directory of per-rank files).
    pub(crate) trace: PathBuf,
    /// The baseline (from `overlap baseline`).
    #[arg(long)]
    pub(crate) baseline: PathBuf,
    /// How far a metric may move the wrong way, in percent of its baseline value
    /// (default: the tolerance the baseline was made for).
    #[arg(long, value_name = "PCT")]
    pub(crate) tolerance: Option<f64>,
    /// Compare a trace of another program, other parameters, other ranks or other work
    /// than the baseline's, with a warning (counts then compared per 1000 MPI calls)
    /// instead of refusing it (exit 2).
    #[arg(long)]
    pub(crate) allow_different: bool,
    /// Also write the result as JUnit XML.
    #[arg(long)]
    pub(crate) junit: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) reading: ReadingArgs,
}

/// A trace loaded, judged complete or not as a whole, then cut to the window asked
/// for (if any), and the report of that part; or a directory read a part of its ranks
/// at a time, judged alike. The trace is given to the analysis once judged: nothing
/// after needs it, and analysis that is given its trace peaks lower.
struct Analysed {
    judged: Judged,
    window: WindowReport,
    report: Report,
}

impl Analysed {
    fn of(path: &Path, reading: &ReadingArgs) -> Result<Analysed> {
        let (opts, window) = (reading.analysis.options()?, &reading.window);
        if reading.in_parts(path) {
            let run = crate::hold::analyze_dir(path, &opts, None)?;
            return Ok(Analysed {
                judged: Judged::of_parts(path, &run),
                window: WindowReport::default(),
                report: run.report,
            });
        }
        let loaded = load(path)?;
        let incomplete = check::usable::completeness(&loaded);
        let (trace, window) = window.apply(loaded.trace)?;
        let asked = (!window.asked.is_all()).then(|| window.asked.clone());
        let judged = Judged::part(incomplete, &trace, asked);
        let report = analyze_owned(trace, &opts);
        Ok(Analysed {
            judged,
            window,
            report,
        })
    }
}

/// Prints `overlap: error: ...` and exits 2.
fn unusable(e: &anyhow::Error) -> ExitCode {
    sayln!("overlap: error: {e:#}");
    ExitCode::from(Exit::Unusable.code())
}

/// The report of a trace (of its window, when one is asked for) and the work of its
/// ranks (what tells like runs apart); the window is said first.
fn report_and_work(path: &Path, reading: &ReadingArgs) -> Result<(Report, Vec<RankWork>)> {
    let (opts, window) = (reading.analysis.options()?, &reading.window);
    if reading.in_parts(path) {
        let run = crate::hold::analyze_in_parts(path, &opts, None)?;
        return Ok((run.report, run.work));
    }
    let (trace, w) = window.apply(load_trace(path)?)?;
    if !w.asked.is_all() {
        sayln!(
            "{}: {}",
            path.display(),
            render_window(&w, Style::default()).trim_end()
        );
    }
    let work = check::work(&trace);
    Ok((analyze_owned(trace, &opts), work))
}

/// `overlap diff`: the rows, after a warning on stderr for each way the two runs are
/// unlike (as `check` tells a trace from its baseline).
pub(crate) fn diff(a: DiffArgs) -> Result<ExitCode> {
    let (ra, wa) = report_and_work(&a.a, &a.reading)?;
    let (rb, wb) = report_and_work(&a.b, &a.reading)?;
    let (na, nb) = (a.a.display().to_string(), a.b.display().to_string());
    for w in check::unlike((&na, &ra, &wa), (&nb, &rb, &wb)) {
        sayln!("warning: {w}");
    }
    let rows = check::diff(&ra, &rb);
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        out!("{}", check::diff_table(&rows, &label(&a.a), &label(&a.b)));
    }
    Ok(ExitCode::SUCCESS)
}

/// `overlap baseline`: exit 0 when written, 2 when refused.
pub(crate) fn baseline(a: BaselineArgs) -> Result<ExitCode> {
    let analysed = match Analysed::of(&a.trace, &a.reading) {
        Ok(x) => x,
        Err(e) => return Ok(unusable(&e)),
    };
    let made = match check::make_baseline_of(&analysed.judged, &analysed.report, a.tolerance) {
        Ok(m) => m,
        Err(reasons) => {
            sayln!(
                "overlap: error: no baseline made from {}:",
                a.trace.display()
            );
            for r in reasons {
                sayln!("  {r}");
            }
            return Ok(ExitCode::from(Exit::Unusable.code()));
        }
    };
    let b = &made.baseline;
    let text = serde_json::to_string_pretty(b)? + "\n";
    if let Err(e) = write_atomically(&a.out, text.as_bytes()) {
        return Ok(unusable(&e.into()));
    }
    out!("{}", render_window(&analysed.window, style()));
    for n in &made.notes {
        outln!("note: {n}");
    }
    let gated = b
        .metrics
        .iter()
        .filter(|m| {
            matches!(
                check::metrics::gate(m, b.tolerance_pct),
                check::Gate::Gated { .. }
            )
        })
        .count();
    outln!(
        "baseline of {} metrics ({gated} gated at {}%) from {} rank(s) of {} written to {}",
        b.metrics.len(),
        b.tolerance_pct,
        b.ranks.len(),
        b.program,
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `overlap check`: exit 0 within tolerance, 1 on regression, 2 when it cannot judge.
pub(crate) fn check(a: CheckArgs) -> Result<ExitCode> {
    let suite = format!("overlap check {}", a.trace.display());
    let junit = |text: String| -> Result<()> {
        match &a.junit {
            Some(path) => Ok(write_atomically(path, text.as_bytes())?),
            None => Ok(()),
        }
    };
    let inputs = check::read_baseline(&a.baseline)
        .map_err(anyhow::Error::from)
        .and_then(|base| Ok((base, Analysed::of(&a.trace, &a.reading)?)));
    let (base, analysed) = match inputs {
        Ok(x) => x,
        Err(e) => {
            // A stale JUnit file must not pass for this run.
            if let Err(j) = junit(check::junit_error(&format!("{e:#}"), &suite)) {
                sayln!("overlap: error: {j:#}");
            }
            return Ok(unusable(&e));
        }
    };
    let opts = CheckOptions {
        tolerance_pct: a.tolerance,
        allow_different: a.allow_different,
    };
    out!("{}", render_window(&analysed.window, style()));
    let outcome = check::check_judged(&base, &analysed.judged, &analysed.report, opts);
    for w in &outcome.warnings {
        sayln!("warning: {w}");
    }
    for n in &outcome.notes {
        outln!("note: {n}");
    }
    if !outcome.rows.is_empty() {
        out!("{}", check::comparison_table(&outcome.rows));
    }
    if let Err(e) = junit(check::junit(&outcome.rows, &outcome.problems, &suite)) {
        return Ok(unusable(&e));
    }
    let exit = outcome.exit();
    match exit {
        Exit::Unusable => {
            sayln!(
                "overlap: error: {} cannot be checked against {}:",
                a.trace.display(),
                a.baseline.display()
            );
            for p in &outcome.problems {
                sayln!("  {p}");
            }
        }
        Exit::Regressed => {
            let regressed: Vec<&str> = outcome
                .rows
                .iter()
                .filter(|r| r.verdict == check::Verdict::Regressed)
                .map(|r| r.name.as_str())
                .collect();
            outln!(
                "{} metric(s) regressed beyond {}%: {}",
                regressed.len(),
                outcome.tolerance_pct,
                regressed.join(", ")
            );
        }
        Exit::Pass => {
            let gated = outcome
                .rows
                .iter()
                .filter(|r| check::compare::is_gated(r.verdict))
                .count();
            let despite = if outcome.warnings.is_empty() {
                ""
            } else {
                " (a trace that differs from the baseline, compared with --allow-different)"
            };
            outln!(
                "within tolerance ({}%) of {}: {gated} of {} metric(s) gated{despite}",
                outcome.tolerance_pct,
                a.baseline.display(),
                outcome.rows.len()
            );
        }
    }
    Ok(ExitCode::from(exit.code()))
}

/// A short name for a trace in a table header: its file name.
fn label(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
