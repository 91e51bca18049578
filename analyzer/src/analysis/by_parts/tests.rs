//! The analysis read a part at a time against the one of the run loaded whole.

use super::analyze_in_parts;
use crate::analysis::analyze_owned;
use crate::metrics::options::Options;
use crate::regions::RunRegions;

/// Every kept run, read a rank a part, about two ranks a part, and in one part, reports
/// what it reports loaded whole, figure for figure (the replays' too), with the same
/// regions, notes and unusable files.
#[test]
fn the_parts_report_what_the_whole_run_reports() {
    let opts = Options::default();
    let mut cut = 0;
    for dir in crate::load::kept_run_dirs() {
        let loaded = crate::load::load_dir(&dir, &mut |_, _| {}).expect("a kept run");
        let trace = loaded.trace;
        let events: u64 = trace.ranks.iter().map(|t| t.event_count() as u64).sum();
        let ranks = trace.ranks.len() as u64;
        let regions = RunRegions::of_trace(&trace).summary();
        let info = trace.info.clone();
        let whole = analyze_owned(trace, &opts);
        for at_least in [
            Some(1),
            Some(2 * events / ranks.max(1)),
            Some(u64::MAX),
            None,
        ] {
            let name = format!("{}, parts of {at_least:?} events", dir.display());
            let parts = analyze_in_parts(&dir, &opts, at_least).expect("its two passes");
            assert!(parts.report == whole, "{name}: report");
            assert!(parts.regions.summary() == regions, "{name}: regions");
            assert!(parts.info == info, "{name}: info");
            assert_eq!(parts.notes, loaded.notes, "{name}: notes");
            assert_eq!(parts.unreadable, loaded.unreadable, "{name}: unreadable");
            cut += usize::from(ranks > 1 && at_least == Some(1));
        }
    }
    // Most kept runs have several ranks, each then a part of its own.
    assert!(cut >= 8, "runs cut into parts: {cut}");
}
