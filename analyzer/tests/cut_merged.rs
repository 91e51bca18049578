//! A merged file says how many events each rank has, so one cut short (a full disk, an
//! interrupted copy) is reported rank by rank: cut ranks in `incomplete`, ranks with
//! nothing left in `missing_ranks`. Older merged files (version 4) have no counts:
//! their completeness is unknown, and said so.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use crate::common::*;
use overlap_analyzer::analysis::analyze;
use overlap_analyzer::import::read_merged;
use overlap_analyzer::load::{load_dir, load_merged, Loaded};
use overlap_analyzer::merge::{merge, merge_dir, write_merged};
use overlap_analyzer::model::RankTrace;
use overlap_analyzer::Error;
use overlap_instrument::schema::SyncPhase;

/// Four ranks of 100 events each (50 times a 10 ns compute span then a 10 ns barrier),
/// no messages: the merged file is its opening, then each rank's events in rank order.
fn four_ranks() -> Vec<RankTrace> {
    (0..4)
        .map(|r| {
            let events = (0..50u64)
                .flat_map(|i| {
                    let t = i * 20;
                    [compute(t, t + 10, "work"), barrier(t + 10, t + 20)]
                })
                .collect();
            rank_trace(
                header(r, 4, 0, "boot-1"),
                vec![sync(SyncPhase::Init, 0, 0, 0)],
                events,
            )
        })
        .collect()
}

fn written(dir: &Path) -> PathBuf {
    let path = dir.join("run.json");
    write_merged(&merge(four_ranks()), &path).unwrap();
    path
}

/// The file's bytes up to the middle of the `k`-th (from 1) event line of `rank`.
fn cut_in_event(path: &Path, rank: u32, k: usize) -> Vec<u8> {
    let text = std::fs::read_to_string(path).unwrap();
    let pid = format!("\"pid\":{rank},");
    let mut at = 0;
    let mut seen = 0;
    for line in text.split_inclusive('\n') {
        if line.contains("\"ph\":\"X\"") && line.contains(&pid) {
            seen += 1;
            if seen == k {
                return text.as_bytes()[..at + line.len() / 2].to_vec();
            }
        }
        at += line.len();
    }
    panic!("rank {rank} has no event {k}");
}

fn load_cut(bytes: &[u8]) -> Loaded {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.json");
    std::fs::write(&path, bytes).unwrap();
    load_merged(&path, &mut |_, _| {}).unwrap()
}

fn reasons(l: &Loaded) -> Vec<(u32, String, u64)> {
    l.trace
        .info
        .incomplete
        .iter()
        .map(|i| (i.rank, i.reason.clone(), i.events_read))
        .collect()
}

#[test]
fn a_whole_merged_file_counts_every_rank_and_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path());
    let l = load_merged(&path, &mut |_, _| {}).unwrap();
    let info = &l.trace.info;
    assert!(info.completeness_known());
    assert_eq!(
        info.ranks
            .iter()
            .map(|r| (r.events, r.complete))
            .collect::<Vec<_>>(),
        vec![(100, true); 4]
    );
    assert!(info.incomplete.is_empty() && info.missing_ranks.is_empty());
    assert!(l.problems.is_empty() && l.notes.is_empty() && !l.cut_short);
    assert_eq!(read_merged(&path).unwrap().info, *info);
}

#[test]
fn cut_at_99_percent_the_last_rank_is_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path());
    // 400 events in all; the cut goes through rank 3's 99th: 98 of its 100 are whole.
    let l = load_cut(&cut_in_event(&path, 3, 99));
    assert_eq!(
        reasons(&l),
        vec![(3, "merged file cut short: 98 of 100 events".to_string(), 98)]
    );
    assert!(l.trace.info.missing_ranks.is_empty());
    assert!(l
        .problems
        .iter()
        .any(|p| p.reason.contains("ends in the middle")));
    let r = analyze(&l.trace, &Default::default()).0;
    assert_eq!(
        (r.run.ranks_traced, r.run.incomplete_ranks.clone()),
        (4, vec![3])
    );
    let json = serde_json::to_value(&r.run).unwrap();
    assert_eq!(
        json["incomplete"][0]["reason"],
        "merged file cut short: 98 of 100 events"
    );
    assert_eq!(json["completeness_known"], true);
}

#[test]
fn cut_at_10_percent_the_ranks_after_the_cut_are_missing() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path());
    // Through rank 0's 40th event (40 of 400): 39 whole, ranks 1 to 3 have nothing.
    let l = load_cut(&cut_in_event(&path, 0, 40));
    assert_eq!(
        reasons(&l),
        vec![(0, "merged file cut short: 39 of 100 events".to_string(), 39)]
    );
    assert_eq!(l.trace.info.missing_ranks, vec![1, 2, 3]);
    let r = analyze(&l.trace, &Default::default()).0;
    assert_eq!(r.run.ranks_traced, 1);
    assert_eq!(r.run.missing_ranks, vec![1, 2, 3]);
    assert_eq!(r.run.incomplete_ranks, vec![0]);
}

#[test]
fn cut_between_two_ranks_the_file_end_is_missing_and_later_ranks_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path());
    // Up to the line before rank 2's first event, a line boundary: ranks 0 and 1 whole.
    let bytes = cut_in_event(&path, 2, 1);
    let end = bytes.iter().rposition(|b| *b == b'\n').unwrap() + 1;
    let l = load_cut(&bytes[..end]);
    assert!(reasons(&l).is_empty(), "{:?}", reasons(&l));
    assert_eq!(l.trace.info.missing_ranks, vec![2, 3]);
    assert!(l.cut_short);
    assert!(
        l.problems
            .iter()
            .any(|p| p.reason.contains("no closing bracket")),
        "{:?}",
        l.problems
    );
}

#[test]
fn cut_inside_its_other_data_nothing_can_be_read_and_it_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..200]).unwrap();
    let e = load_merged(&path, &mut |_, _| {}).unwrap_err();
    assert!(matches!(e, Error::BadMerged { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("the file ends inside its otherData, 200 byte(s) in: it was cut short"),
        "{e}"
    );
}

#[test]
fn a_line_lost_from_a_whole_file_is_reported_by_read_merged_and_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    // Drop rank 2's 10th event line.
    let cut = cut_in_event(&path, 2, 10).len();
    let start = text[..cut].rfind('\n').unwrap() + 1;
    let end = cut + text[cut..].find('\n').unwrap() + 1;
    std::fs::write(&path, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let expected = vec![(
        2,
        "merged file damaged: only 99 of 100 events".to_string(),
        99,
    )];
    assert_eq!(
        reasons(&load_merged(&path, &mut |_, _| {}).unwrap()),
        expected
    );
    let whole = read_merged(&path).unwrap();
    assert_eq!(whole.info.incomplete[0].reason, expected[0].1);
}

#[test]
fn a_rank_file_cut_short_stays_incomplete_in_the_merged_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut ranks = four_ranks();
    ranks[1].events.truncate(30);
    for (i, t) in ranks.iter().enumerate() {
        write_rank_file(dir.path(), t, i != 1);
    }
    let outcome = merge_dir(dir.path()).unwrap();
    let rc = &outcome.merged.info.ranks[1];
    assert_eq!((rc.events, rc.complete), (30, false));
    let path = dir.path().join("run.json");
    write_merged(&outcome.merged, &path).unwrap();
    let l = load_merged(&path, &mut |_, _| {}).unwrap();
    let got = reasons(&l);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, got[0].2), (1, 30));
    assert!(got[0].1.contains("ends without its footer"), "{got:?}");
    // The directory itself says the same.
    let d = load_dir(dir.path(), &mut |_, _| {}).unwrap();
    assert_eq!(d.trace.info.incomplete[0].rank, 1);
}

/// A merged file written by overlap before version 5 (tests/data/v4-merged: two ranks
/// of 4 events each, Barrier, Send, Recv, Barrier): it has no per-rank counts.
fn v4_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/v4-merged/run.json")
}

#[test]
fn an_old_merged_file_reads_with_its_completeness_unknown() {
    let l = load_merged(&v4_file(), &mut |_, _| {}).unwrap();
    assert_eq!(l.trace.info.format_version, 4);
    assert!(!l.trace.info.completeness_known());
    assert_eq!(l.notes.len(), 1, "{:?}", l.notes);
    assert!(
        l.notes[0].contains("whether it is complete is unknown"),
        "{:?}",
        l.notes
    );
    assert!(reasons(&l).is_empty());
    let r = analyze(&l.trace, &Default::default()).0;
    assert!(!r.run.completeness_known);
    assert_eq!(r.run.ranks_traced, 2);
    assert_eq!(r.run.messages, 2);
    let text = overlap_analyzer::report::render(&r, Default::default());
    assert!(text.contains("completeness unknown"), "{text}");
}

#[test]
fn an_old_merged_file_cut_short_blames_the_last_rank_and_misses_the_rest() {
    // Through rank 0's 3rd event: rank 0 cut, rank 1 missing.
    let l = load_cut(&cut_in_event(&v4_file(), 0, 3));
    let got = reasons(&l);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, got[0].2), (0, 2));
    assert!(
        got[0].1.contains("merged file cut short (no event counts"),
        "{got:?}"
    );
    assert_eq!(l.trace.info.missing_ranks, vec![1]);
    // Through rank 1's 2nd: rank 0 whole (rank 1's events follow it), rank 1 cut.
    let l = load_cut(&cut_in_event(&v4_file(), 1, 2));
    let got = reasons(&l);
    assert_eq!((got.len(), got[0].0, got[0].2), (1, 1, 1));
    assert!(l.trace.info.missing_ranks.is_empty());
}

#[test]
fn cut_after_every_event_no_rank_is_lost_but_the_cut_is_known() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    let end = text.rfind(']').unwrap();
    let l = load_cut(&text.as_bytes()[..end]);
    assert!(reasons(&l).is_empty() && l.trace.info.missing_ranks.is_empty());
    assert!(l.cut_short);
    assert!(
        l.notes[0].contains("after every rank's events"),
        "{:?}",
        l.notes
    );
}
