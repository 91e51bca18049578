//! The run loader: a merged trace, a directory of per-rank files or one of them, into
//! the [`Trace`] analysis reads. It sits above both the readers ([`crate::import`], the
//! only code that reads trace files) and the merge ([`crate::merge`]: clock alignment
//! and message matching), and is the one place that joins them, so that neither calls
//! the other back.

mod otf2;
mod ranks;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use overlap_format::input::{open_input, Accept};
use overlap_format::schema::{MergedInfo, RANK_FILE_EXTENSION};

use crate::import::{is_rank_file_name, read_merged_timelines, ReadProgress};
use crate::merge::{match_all, out_of_range, Unreadable};
use crate::model::{ReadProblem, Timeline, Trace};
use crate::{Error, Result};

pub use ranks::load_dir;

/// A run loaded for analysis, and what could not be used.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The run.
    pub trace: Trace,
    /// Per-rank files of a directory that could not be used at all.
    pub unreadable: Vec<Unreadable>,
    /// Events of a merged file that could not be used (skipped), and a cut-off end.
    pub problems: Vec<ReadProblem>,
    /// What the user should know about the file as a whole (a merged file too old to
    /// say whether it is complete).
    pub notes: Vec<String>,
    /// True for a merged file that ends before the end of its events (no closing
    /// bracket), even when every rank's events are there (the cut fell after them).
    pub cut_short: bool,
}

/// The rank directories of the runs kept in `tests/data/reports` (recorded under MPICH
/// and Open MPI), sorted: the real runs on which tests hold one way of making a figure
/// to another.
#[cfg(test)]
pub(crate) fn kept_run_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/data/reports")
        .filter_map(|e| Some(e.ok()?.path().join("ranks")))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 10, "the runs under {}", root.display());
    dirs
}

/// A copy, in a new temporary directory, of the rank files of the kept run `name` (of
/// `tests/data/reports`), for a test to damage.
#[cfg(test)]
pub(crate) fn kept_run_copy(name: &str) -> tempfile::TempDir {
    let kept = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/reports")
        .join(name)
        .join("ranks");
    let dir = tempfile::tempdir().expect("a temporary directory");
    for entry in std::fs::read_dir(&kept).expect("the kept run") {
        let from = entry.expect("an entry").path();
        std::fs::copy(&from, dir.path().join(from.file_name().expect("named"))).expect("copied");
    }
    dir
}

/// The kept runs of [`kept_run_dirs`], each loaded whole from its rank files.
#[cfg(test)]
pub(crate) fn kept_runs() -> Vec<crate::model::Trace> {
    let load = |d: &PathBuf| load_dir(d, &mut |_, _| {}).expect("a kept run").trace;
    kept_run_dirs().iter().map(load).collect()
}

/// Loads a merged trace file, a directory of per-rank files, or one per-rank file (a
/// binary stream, or a file named like one).
pub fn load(path: &Path, progress: ReadProgress<'_>) -> Result<Loaded> {
    let _span = tracing::info_span!("import", path = %path.display()).entered();
    // Never a fifo or a device: reading one would block or not end.
    let (file, md) = open_input(path, Accept::FileOrDirectory)?;
    if md.is_dir() {
        return ranks::load_dir(path, progress);
    }
    if crate::import::otf2::is_anchor(path) {
        return otf2::load_archive(path);
    }
    let named_as_rank_file = path.extension().is_some_and(|e| e == RANK_FILE_EXTENSION)
        || path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(is_rank_file_name);
    if named_as_rank_file || ranks::starts_as_stream(file) {
        return ranks::load_rank_file(path);
    }
    load_merged(path, progress)
}

/// Loads a merged trace, streaming its events.
pub fn load_merged(path: &Path, progress: ReadProgress<'_>) -> Result<Loaded> {
    let read = read_merged_timelines(path, progress)?;
    Ok(Loaded {
        trace: assemble_counted(path.to_path_buf(), read.info, read.ranks)?,
        unreadable: Vec::new(),
        problems: read.problems,
        notes: read.notes,
        cut_short: read.cut_short,
    })
}

/// Sorts the timelines, fills in what `otherData` says of each rank, and matches. Every
/// rank `otherData` lists has a timeline (empty when it recorded nothing), but for those
/// with none of their events left (in `missing_ranks`). A rank with more records than
/// the analysis can index is an error naming the file.
fn assemble_counted(
    source: PathBuf,
    info: MergedInfo,
    mut ranks: BTreeMap<u32, Timeline>,
) -> Result<Trace> {
    if let Some(t) = ranks.values().find(|t| t.overflow().is_some()) {
        return Err(Error::TooLarge {
            path: source,
            rank: t.rank,
            what: t.overflow().unwrap_or("events"),
        });
    }
    let _span = tracing::info_span!("match messages").entered();
    for r in &info.ranks {
        if !info.missing_ranks.contains(&r.rank) {
            ranks.entry(r.rank).or_insert_with(|| Timeline::new(r.rank));
        }
    }
    let mut timelines: Vec<Timeline> = ranks.into_values().collect();
    for t in &mut timelines {
        t.sort();
        t.shrink_to_fit();
        if let Some(r) = info.ranks.iter().find(|r| r.rank == t.rank) {
            t.host.clone_from(&r.host);
        }
        t.complete = !info.incomplete.iter().any(|i| i.rank == t.rank);
    }
    let (requests, matched) = match_all(&timelines, info.world_size);
    // Calls naming a peer beyond the world, found in the events themselves (a file that
    // lists none is not taken at its word).
    let mut info = info;
    if info.peers_out_of_range.is_empty() {
        let file = source.display().to_string();
        info.peers_out_of_range = out_of_range(&timelines, info.world_size, |_| file.clone());
    }
    Ok(Trace::new(
        source,
        info,
        timelines,
        matched.messages,
        requests,
    ))
}
