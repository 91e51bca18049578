//! Loading an OTF2 archive for analysis: its ranks read as rank files would be
//! ([`crate::import::otf2`]), then aligned and matched as a directory of them is.

use std::path::Path;

use super::Loaded;
use crate::import::otf2::read_archive_into;
use crate::merge::{check_one_run, merge_timelines};
use crate::model::{RankTrace, Timeline};
use crate::Result;

/// Loads the archive whose anchor file is `anchor`.
pub(super) fn load_archive(anchor: &Path) -> Result<Loaded> {
    let mut traces = read_archive_into::<Timeline>(anchor)?;
    check_one_run(anchor, &traces)?;
    traces.sort_by_key(RankTrace::rank);
    let notes = traces.iter().flat_map(RankTrace::note_lines).collect();
    Ok(Loaded {
        trace: merge_timelines(traces).into_trace(anchor),
        unreadable: Vec::new(),
        problems: Vec::new(),
        notes,
        cut_short: false,
    })
}
