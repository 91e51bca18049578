//! Loading per-rank files for analysis: a directory of them, or one alone (given where a
//! merged trace could be), read into compact timelines, aligned and matched as `overlap
//! merge` does.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use overlap_format::stream::{is_stream, MAGIC};

use super::Loaded;
use crate::import::{rank_files, read_rank_file_into, ReadProgress};
use crate::merge::{check_one_run, merge_timelines, read_files_into};
use crate::model::{RankTrace, Timeline};
use crate::Result;

/// True when the file's first bytes are a binary per-rank stream's magic.
pub(super) fn starts_as_stream(file: File) -> bool {
    let mut opening = Vec::with_capacity(MAGIC.len());
    file.take(MAGIC.len() as u64)
        .read_to_end(&mut opening)
        .is_ok_and(|n| n == MAGIC.len() && is_stream(&opening))
}

/// Loads one per-rank file, as the one rank traced of its run (its errors are the file's,
/// not those of a directory with nothing usable in it).
pub(super) fn load_rank_file(path: &Path) -> Result<Loaded> {
    let t = read_rank_file_into::<Timeline>(path)?;
    check_one_run(path, std::slice::from_ref(&t))?;
    let notes = t.note_lines().collect();
    Ok(Loaded {
        trace: merge_timelines(vec![t]).into_trace(path),
        unreadable: Vec::new(),
        problems: Vec::new(),
        notes,
        cut_short: false,
    })
}

/// Loads a directory of per-rank files: reads each into a compact timeline (several at
/// once), aligns the clocks and matches messages.
pub fn load_dir(dir: &Path, progress: ReadProgress<'_>) -> Result<Loaded> {
    load_rank_files(dir, rank_files(dir)?, progress)
}

/// Loads the per-rank files `files` of the directory `dir`, several at once.
fn load_rank_files(dir: &Path, files: Vec<PathBuf>, progress: ReadProgress<'_>) -> Result<Loaded> {
    let sizes: Vec<u64> = files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .collect();
    let total: u64 = sizes.iter().sum();
    // The files are read on rayon's threads; progress is reported from this one.
    let (tx, rx) = std::sync::mpsc::channel::<usize>();
    let read = std::thread::scope(|s| {
        let reader = s.spawn(move || {
            read_files_into::<Timeline>(dir, files, move |i| {
                let _ = tx.send(i);
            })
        });
        let mut done = 0u64;
        for i in rx {
            done += sizes.get(i).copied().unwrap_or(0);
            progress(done, total);
        }
        reader.join()
    });
    let (traces, unreadable) = match read {
        Ok(read) => read?,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    let notes = traces.iter().flat_map(RankTrace::note_lines).collect();
    Ok(Loaded {
        trace: merge_timelines(traces).into_trace(dir),
        unreadable,
        problems: Vec::new(),
        notes,
        cut_short: false,
    })
}
