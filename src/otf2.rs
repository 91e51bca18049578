//! `overlap merge --format otf2`: a run's rank directory written as an OTF2 archive
//! (the analyzer's [`overlap_analyzer::merge::otf2`]), and what was written said.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Result};
use overlap_analyzer::merge::otf2::{archive_place, write_otf2};

use crate::output::{outln, sayln};

/// Writes the rank files of `dir` as the archive `out`; `windowed`: a part of the run
/// was asked for, which only .pftrace writes.
pub(crate) fn merge(dir: &Path, out: &Path, windowed: bool) -> Result<ExitCode> {
    if windowed {
        bail!("--from, --to, --region and --ranks write a part of a run to .pftrace only: an OTF2 archive holds the whole run");
    }
    let w = write_otf2(dir, out)?;
    for u in &w.unreadable {
        sayln!("warning: {}: skipped: {}", u.path.display(), u.reason);
    }
    for n in &w.notes {
        sayln!("warning: {n}");
    }
    let records: u64 = w.records.values().sum();
    let (place, name) = archive_place(out);
    let bytes = archive_bytes(&place, &name);
    outln!(
        "merged {} rank(s): {} events into the OTF2 archive {} ({} OTF2 records on {} location(s), {:.1} KiB); open it in Vampir, or analyze it with `overlap analyze {}`",
        w.ranks,
        w.events,
        w.anchor.display(),
        records,
        w.records.len(),
        bytes as f64 / 1024.0,
        w.anchor.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The bytes of the archive `name` in `dir`: its anchor, definitions and events.
fn archive_bytes(dir: &Path, name: &str) -> u64 {
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let mut total =
        size(&dir.join(format!("{name}.otf2"))) + size(&dir.join(format!("{name}.def")));
    if let Ok(entries) = std::fs::read_dir(dir.join(name)) {
        total += entries.flatten().map(|e| size(&e.path())).sum::<u64>();
    }
    total
}
