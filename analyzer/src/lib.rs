//! overlap-analyzer: reads overlap traces and makes sense of them. Its rooms go in
//! data-flow order, and none imports one that imports it (`scripts/import-cycles.py`
//! checks it, file by file and room by room):
//!
//! - [`units`]: how numbers are written for people; [`model`]: the typed traces the
//!   importer produces, [`model::compute`] the compute intervals every figure uses
//!   (recorded spans, or the gaps between MPI calls).
//! - [`import`]: the only reader of trace files (per-rank and merged), tolerant of files
//!   cut short, with errors that name the file, the event and the reason.
//! - [`merge`]: per-rank files onto one timeline (clock alignment, message matching) and
//!   the merged Perfetto trace; what it keeps of each rank is given from above
//!   ([`merge::RankDigest`]).
//! - [`load`]: the run loader, above both: a merged trace or rank files into a
//!   [`model::Trace`].
//! - [`window`]: a part of the run (times, an `MPI_Pcontrol` region, ranks) cut from a
//!   loaded trace, for the analysis to take as a run, with what crosses its edges.
//! - [`sites`]: call sites symbolized to `file:line (function)`.
//! - [`metrics`]: wait states, per-request overlap, false overlap, POP efficiencies,
//!   findings grouped by site; [`gpu`], [`hang`] (a hung run explained from the ranks'
//!   in-flight dumps), [`profile`]: their parts of the report.
//! - [`dependence`]: the one rule of whether work may touch a request's buffer, which
//!   the reordering and the false-overlap finding share.
//! - [`ops`]: a run as programs of operations per rank; [`dag`]: their dependences, the
//!   ordering policies and the seed's consensus; [`replay`]: the one discrete-event
//!   replay (what-if, T_ideal, predicted gains); [`suggest`]: the reordering suggestion.
//! - [`analysis`]: the report's types and the order its passes run in.
//! - [`report`], `tables` (feature `tables`), [`check`]: the report for people (one
//!   file per field), the tables behind it (CSV and Parquet through polars), baselines, regression checks and diffs; [`summary`]: where each
//!   rank's time went, as `overlap merge` prints it.
//! - [`heap`]: how the process's heap is set for analysis (glibc's thresholds);
//!   [`exchange`]: what the workers of an analysis made by several processes send one
//!   another (the trait the binary implements over MPI).
//!
//! ```no_run
//! use std::path::Path;
//! let outcome = overlap_analyzer::merge::merge_dir(Path::new("run.ranks")).unwrap();
//! overlap_analyzer::merge::write_merged(&outcome.merged, Path::new("run.json")).unwrap();
//! let trace = outcome.merged.to_trace(Path::new("run.json"));
//! print!("{}", overlap_analyzer::summary::summarize(&trace).to_table());
//! let (report, _) = overlap_analyzer::analysis::analyze(&trace, &Default::default());
//! print!("{}", overlap_analyzer::report::render(&report, Default::default()));
//! ```

pub mod analysis;
pub mod check;
pub mod dag;
pub mod dependence;
pub mod exchange;
pub mod gpu;
pub mod hang;
pub mod heap;
use overlap_format::fxhash;
pub mod import;
pub mod load;
pub mod merge;
pub mod metrics;
pub mod model;
pub mod ops;
pub mod profile;
pub mod regions;
pub use overlap_format::input;
pub use overlap_format::output;
pub mod replay;
pub mod report;
pub mod sites;
mod static_names;
pub mod suggest;
pub mod summary;
#[cfg(feature = "tables")]
pub mod tables;
pub mod units;
pub mod unrecorded;
pub mod window;

use std::path::PathBuf;

/// Errors of the analyzer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read or written.
    #[error("{what} {}: {cause}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause: shown in the message, so not chained (a field named `source` would
        /// be, and anyhow would print it twice).
        cause: std::io::Error,
    },
    /// The file is not an overlap trace.
    #[error("{}: not an overlap trace: {reason}", path.display())]
    NotATrace {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The file has no header record before its first event.
    #[error("{}: no overlap_header record before the first event", path.display())]
    NoHeader {
        /// The file.
        path: PathBuf,
    },
    /// The file was written in another format version.
    #[error(
        "{}: trace format version {found}, but this overlap reads versions 1 to {supported}",
        path.display()
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        supported: u32,
    },
    /// A merged trace that cannot be read.
    #[error("{}: not a readable merged trace: {reason}", path.display())]
    BadMerged {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A baseline file that cannot be used.
    #[error("{}: not a usable baseline: {reason}", path.display())]
    BadBaseline {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// An OTF2 archive could not be read or written (or this build has no OTF2).
    #[error(transparent)]
    Otf2(#[from] overlap_otf2::Error),
    /// A table could not be built or written.
    #[error("table: {reason}")]
    Table {
        /// Why.
        reason: String,
    },
    /// An output file could not be written (nothing partial is left).
    #[error(transparent)]
    Output(#[from] overlap_format::output::OutputError),
    /// An input is not a regular file, or cannot be looked at.
    #[error(transparent)]
    Input(#[from] overlap_format::input::InputError),
    /// Rank files that are not one run (another run id, program or world size, a rank
    /// twice, a rank beyond the world): merging them would be meaningless.
    #[error("{}: {reason}", dir.display())]
    NotOneRun {
        /// The directory.
        dir: PathBuf,
        /// What does not fit, naming the files.
        reason: String,
    },
    /// A rank file that no longer holds what the merge read from it when the merged
    /// file is written (the merge reads each rank file twice: to match, then to write).
    #[error(
        "{}: changed since it was read for this merge (its events no longer match): merge \
         the directory again",
        path.display()
    )]
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// A rank with more records of one kind than the analysis can index.
    #[error(
        "{}: rank {rank} has more {what} than the analysis can hold ({max}: it keeps a \
         rank's indices in 32 bits)",
        path.display(),
        max = crate::model::MAX_RECORDS
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The rank.
        rank: u32,
        /// What it has too many of: events, completions, started requests, group members.
        what: &'static str,
    },
    /// A merge the caller refused once it saw what the run holds (`merge --strict`).
    #[error("{}: {reason}", dir.display())]
    Refused {
        /// The directory.
        dir: PathBuf,
        /// Why, as the caller said it.
        reason: String,
    },
    /// A merged file asked for in a form it cannot take (a window of the run in JSON).
    #[error("{}: {reason}", path.display())]
    NotWritable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A worker of an analysis made by several ([`exchange`]) failed: its error, as the
    /// analysis of one process would give it, reported by every worker that heard of it.
    #[error("{reason}")]
    Worker {
        /// The worker that failed, from 0.
        worker: usize,
        /// How many workers the analysis had.
        workers: usize,
        /// Its error.
        reason: String,
    },
    /// What the workers of an analysis send one another could not be sent or read.
    #[error("the analysis workers' exchange failed: {reason}")]
    Exchange {
        /// Why.
        reason: String,
    },
    /// A directory without a single usable rank file.
    #[error(
        "{}: no usable per-rank trace file{}{}",
        dir.display(),
        if problems.is_empty() { "" } else { ":\n  " },
        problems.join("\n  ")
    )]
    NoRanks {
        /// The directory.
        dir: PathBuf,
        /// What was wrong with each file.
        problems: Vec<String>,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
