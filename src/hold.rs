//! `--hold` (of `analyze`, `check`, `baseline` and `diff`): whether a directory of rank
//! files is loaded whole for analysis (the fastest way) or read a part of its ranks at
//! a time, never held whole (`overlap_analyzer::analysis::analyze_dir`: about half the
//! memory, read three times). By default the run is held whole when it fits in the
//! memory available, so that runs larger than the machine are analysed at all and the
//! others as fast as before.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use overlap_analyzer::analysis::{DirAnalysis, Rows};
use overlap_analyzer::exchange::{Alone, Exchange};
use overlap_analyzer::metrics::Options;

use crate::finish::warn_incomplete;
use crate::output::sayln;
use crate::progress::Bar;
use crate::tables::{Recorder, Stream};

/// `--hold`, for every command that analyses a run whole.
#[derive(Debug, Args)]
pub(crate) struct HoldArgs {
    /// How to hold a directory of rank files: `whole` loads the run (the fastest),
    /// `parts` reads it three times, a part of its ranks at a time, never holding it
    /// whole (about half the memory), `auto` holds it whole when it fits in
    /// the memory available. A merged trace or a window hold it whole; the report,
    /// and the tables of --csv and --parquet, are the same either way.
    #[arg(long, value_enum, default_value_t = Hold::Auto)]
    pub(crate) hold: Hold,
}

/// How to hold a directory of rank files for analysis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum Hold {
    /// Whole when it fits in the memory available, else in parts.
    #[default]
    Auto,
    /// The run loaded whole.
    Whole,
    /// A part of its ranks at a time, never the run whole.
    Parts,
}

/// The analysis of a run loaded whole peaks at about this many times its rank files'
/// size (10 on generated halo runs, 16 on a recorded ring of blocking calls heavy in
/// messages: docs/scale.md §0); the larger, to be safe.
const WHOLE_PEAK_PER_FILE_BYTE: u64 = 16;

/// The share of the memory available that a whole run may take.
const FITS_IN: f64 = 0.8;

impl Hold {
    /// Whether the rank files of `dir` are to be analysed in parts: asked for, or by
    /// default when holding the run whole would not fit in the memory available (when
    /// that cannot be read, the run is held whole, as before). Chosen by default, the
    /// reason comes with it, for a note.
    fn in_parts(self, dir: &Path) -> (bool, Option<String>) {
        match self {
            Hold::Whole => (false, None),
            Hold::Parts => (true, None),
            Hold::Auto => match (rank_file_bytes(dir), available_memory()) {
                (Some(bytes), Some(available)) => {
                    let whole = bytes.saturating_mul(WHOLE_PEAK_PER_FILE_BYTE);
                    let parts = whole as f64 > FITS_IN * available as f64;
                    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
                    let why = format!(
                        "{}: analysed a part of its ranks at a time: held whole it would \
                         need about {:.1} GiB of the {:.1} GiB available (--hold whole to \
                         hold it whole)",
                        dir.display(),
                        gib(whole),
                        gib(available)
                    );
                    (parts, parts.then_some(why))
                }
                _ => (false, None),
            },
        }
    }

    /// Whether the run at `path` is to be analysed in parts: only a directory of rank
    /// files analysed whole (`whole_run`: no window) can be. Chosen by
    /// default, the reason is said on stderr.
    pub(crate) fn chosen(self, path: &Path, whole_run: bool) -> bool {
        if !whole_run || !path.is_dir() {
            return false;
        }
        let (parts, why) = self.in_parts(path);
        if let Some(why) = why {
            sayln!("note: {why}");
        }
        parts
    }
}

/// Analyses the rank files of `dir` without holding the run whole
/// ([`overlap_analyzer::analysis::analyze_dir`]), the heap set for analysis first, with
/// a progress bar on stderr over its readings of the files; what could not be used is
/// the caller's to say.
pub(crate) fn analyze_dir(dir: &Path, opts: &Options, rows: Rows<'_>) -> Result<DirAnalysis> {
    let run = analyze_shared(dir, opts, &Alone, rows)?;
    run.context("the analysis of one process made no report")
}

/// [`analyze_dir`] made by the workers of `exchange`
/// ([`overlap_analyzer::analysis::analyze_dir_shared`]): the report at worker 0,
/// `None` at the others; the bar tells of this worker's readings; `rows` takes the
/// figures' rows at worker 0.
fn analyze_shared(
    dir: &Path,
    opts: &Options,
    exchange: &dyn Exchange,
    rows: Rows<'_>,
) -> Result<Option<DirAnalysis>> {
    overlap_analyzer::heap::set_thresholds();
    // Told from rayon's threads as each file is read: one bar, drawn by one at a time.
    let bar = Mutex::new(Bar::new(&format!("analysing {} in parts", dir.display())));
    let tell = |done: u64, total: u64| {
        if let Ok(mut bar) = bar.lock() {
            bar.update(done, total);
        }
    };
    let run = overlap_analyzer::analysis::analyze_dir_shared(dir, opts, exchange, &tell, rows);
    if let Ok(mut bar) = bar.lock() {
        bar.finish();
    }
    Ok(run?)
}

/// [`analyze_dir`], then what could not be used said on stderr, as loading the run says
/// it ([`crate::cli::load_trace`]).
pub(crate) fn analyze_in_parts(dir: &Path, opts: &Options, rows: Rows<'_>) -> Result<DirAnalysis> {
    let run = analyze_dir(dir, opts, rows)?;
    warn_unused(dir, &run);
    Ok(run)
}

/// What a worker of an analysis job gives: at worker 0, the run and the tables asked
/// for, to finish once the report is said; nothing at the others.
pub(crate) type WorkerRun = Option<(DirAnalysis, Option<Stream>)>;

/// [`analyze_in_parts`] made by the workers of `exchange`: said and returned at worker
/// 0, `None` at the others (which say nothing); the tables asked for (`csv`, `parquet`)
/// written by worker 0 as it analyses, each other worker's rows made there and handed to
/// it, and returned with the run, to finish.
pub(crate) fn analyze_in_parts_with(
    dir: &Path,
    opts: &Options,
    exchange: &dyn Exchange,
    (csv, parquet): (&Option<PathBuf>, &Option<PathBuf>),
) -> Result<WorkerRun> {
    let first = exchange.worker() == 0;
    let (mut tables, mut recorder) = (None, None);
    if csv.is_some() || parquet.is_some() {
        // Worker 0 makes the tables' directories before anything else, and every worker
        // (each given the same options) hears whether it could: none then waits in the
        // analysis for a worker 0 that gave up (which `srun` would let it do forever).
        // The others make their blocks' rows, which worker 0 writes.
        let started = match first {
            true => Stream::start(csv, parquet).map(|tables| (tables, None)),
            false => Recorder::start(csv, parquet).map(|recorder| (None, recorder)),
        };
        let told = started.as_ref().map(|_| ()).map_err(|e| format!("{e:#}"));
        let heard = overlap_analyzer::exchange::agree(exchange, told);
        (tables, recorder) = started?;
        heard?;
    }
    if !first {
        let rows = recorder.as_mut().and_then(Recorder::rows);
        let run =
            overlap_analyzer::analysis::analyze_dir_shared(dir, opts, exchange, &|_, _| {}, rows)?;
        return Ok(run.map(|run| (run, None)));
    }
    let rows = tables.as_mut().and_then(Stream::rows);
    let run = analyze_shared(dir, opts, exchange, rows)?;
    if let Some(run) = &run {
        warn_unused(dir, run);
    }
    Ok(run.map(|run| (run, tables)))
}

/// What of `dir` could not be used by `run`, said on stderr.
fn warn_unused(dir: &Path, run: &DirAnalysis) {
    for n in &run.notes {
        sayln!("warning: {n}");
    }
    warn_incomplete(&run.unreadable, &run.info, |_| {
        format!("none of its events is in {}", dir.display())
    });
}

/// The summed size of the rank files of `dir`; none when it cannot be listed.
fn rank_file_bytes(dir: &Path) -> Option<u64> {
    let files = overlap_analyzer::import::rank_files(dir).ok()?;
    Some(
        files
            .iter()
            .filter_map(|f| f.metadata().ok())
            .map(|m| m.len())
            .sum(),
    )
}

/// The memory available to a new process (`MemAvailable` of /proc/meminfo), bytes.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asked for, the choice is kept whatever the directory; by default a directory
    /// that cannot be listed is held whole (as before there was a choice).
    #[test]
    fn the_asked_choice_is_kept_and_auto_holds_what_it_cannot_measure_whole() {
        let missing = Path::new("/nonexistent/overlap-hold-test");
        assert_eq!(Hold::Parts.in_parts(missing), (true, None));
        assert_eq!(Hold::Whole.in_parts(missing), (false, None));
        assert_eq!(Hold::Auto.in_parts(missing), (false, None));
        assert!(available_memory().is_some_and(|m| m > 0));
    }
}
