//! Real per-rank files written by an older overlap, kept as test data: they must stay
//! readable as the format moves on. `data/v3-preload-calls` is `tests/programs/calls.c`
//! traced on 2 ranks by the preload of format version 3 (JSON per-rank files), the last
//! version before per-rank files became binary streams.

use std::path::Path;

use overlap_analyzer::load::load_dir;

#[test]
fn version_3_json_rank_files_of_a_real_run_still_read() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/v3-preload-calls");
    let loaded = load_dir(&dir, &mut |_, _| {}).expect("version-3 files read");
    assert!(loaded.unreadable.is_empty(), "{:?}", loaded.unreadable);
    let t = &loaded.trace;
    assert_eq!(t.ranks.len(), 2);
    assert!(t.info.incomplete.is_empty(), "{:?}", t.info.incomplete);
    // Every call event of the files (62 and 61 "X" lines), and the 27 messages the
    // merge of that time found.
    let spans: Vec<usize> = t.ranks.iter().map(|r| r.spans.len()).collect();
    assert_eq!(spans, [62, 61]);
    assert_eq!(t.info.messages, 27);
    assert_eq!(t.messages.len(), 27);
    assert_eq!((t.info.unmatched_sends, t.info.unmatched_receives), (0, 0));
}
