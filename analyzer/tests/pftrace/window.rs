//! A window of a recorded run (`--from`, `--to`, `--ranks`) against the whole run, both
//! read back: the window holds exactly the slices of its ranks that meet it, cut to it
//! and marked where cut; the arrows whose both ends are in it; and a mark at each end in
//! it of an arrow it lost.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use overlap_analyzer::merge::{Output, TraceFormat, Window};
use overlap_analyzer::summary::{merge_to_file, merge_to_file_if};
use overlap_instrument::schema::Nanos;

use crate::decode::{decode, Decoded, Slice};

/// Slices by (rank, thread, name, start, end) and their `cut` arg.
type Slices = BTreeMap<(u32, u32, String, u64, u64), Option<String>>;

fn thread_slices(d: &Decoded, slices: &[Slice]) -> Slices {
    slices
        .iter()
        .filter_map(|s| {
            let t = &d.tracks[&s.begin.track];
            let cut = s
                .begin
                .args
                .get("cut")
                .and_then(|c| c.as_str())
                .map(String::from);
            Some((
                (t.pid?, t.tid?, s.begin.name.clone(), s.begin.ts, s.end),
                cut,
            ))
        })
        .collect()
}

#[test]
fn a_window_holds_what_meets_it_cut_and_marked() {
    let ranks =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports/false-overlap/ranks");
    let tmp = tempfile::tempdir().expect("temp dir");
    let (full_path, part_path) = (
        tmp.path().join("full.pftrace"),
        tmp.path().join("part.pftrace"),
    );
    merge_to_file(&ranks, &full_path).expect("whole run");
    let full = decode(&std::fs::read(&full_path).expect("read"));
    let full_slices = full.slices();
    // The window: a part of the exchanges, ranks 0 to 2 of 4.
    let (from, to) = (180_000_000u64, 200_000_000u64);
    let written = [0u32, 1, 2];
    let window =
        Window::new(Some(Nanos(from)), Some(Nanos(to)), Some(written.to_vec())).expect("window");
    let output = Output {
        format: TraceFormat::Pftrace,
        window,
    };
    merge_to_file_if(&ranks, &part_path, &output, |_, _, _| Ok(())).expect("window");
    let part = decode(&std::fs::read(&part_path).expect("read"));
    let part_slices = part.slices();

    // Slices: those of the ranks written that meet the window, cut to it.
    let expected: Slices = thread_slices(&full, &full_slices)
        .into_keys()
        .filter(|k| written.contains(&k.0) && k.4 >= from && k.3 <= to)
        .map(|(pid, tid, name, start, end)| {
            let cut = match (start < from, end > to) {
                (false, false) => None,
                (true, false) => Some("start"),
                (false, true) => Some("end"),
                (true, true) => Some("both"),
            };
            (
                (pid, tid, name, start.max(from), end.min(to)),
                cut.map(String::from),
            )
        })
        .collect();
    let got = thread_slices(&part, &part_slices);
    assert!(
        got.values().any(Option::is_some),
        "some slice crosses an edge"
    );
    assert_eq!(got, expected, "the window's slices");

    // Arrows: kept when both ends (send start, completion end) are in the window, on
    // ranks written; each end in the window of one it lost has a mark.
    let rank_of = |d: &Decoded, track: u64| d.tracks[&track].pid.expect("a thread");
    let mut ends: BTreeMap<u64, [(u32, u64); 2]> = BTreeMap::new();
    for s in &full_slices {
        for f in &s.begin.flows {
            ends.entry(*f).or_default()[0] = (rank_of(&full, s.begin.track), s.begin.ts);
        }
        for f in &s.ends_flows {
            ends.entry(*f).or_default()[1] = (rank_of(&full, s.begin.track), s.end);
        }
    }
    let inside = |(rank, at): (u32, u64)| written.contains(&rank) && (from..=to).contains(&at);
    let kept: BTreeSet<u64> = ends
        .iter()
        .filter(|(_, e)| inside(e[0]) && inside(e[1]))
        .map(|(id, _)| *id)
        .collect();
    let mut marks_expected: BTreeSet<(u64, u32, u64)> = BTreeSet::new();
    for (id, e) in &ends {
        if kept.contains(id) {
            continue;
        }
        for end in e.iter().filter(|end| inside(**end)) {
            marks_expected.insert((*id, end.0, end.1));
        }
    }
    let part_flows: BTreeSet<u64> = part_slices
        .iter()
        .flat_map(|s| s.begin.flows.clone())
        .collect();
    let part_ends: BTreeSet<u64> = part_slices
        .iter()
        .flat_map(|s| s.ends_flows.clone())
        .collect();
    assert_eq!(part_flows, kept, "arrows started");
    assert_eq!(part_ends, kept, "arrows ended");
    let marks: BTreeSet<(u64, u32, u64)> = part
        .events
        .iter()
        .filter(|e| e.name == "message cut by the window")
        .map(|e| {
            let id = e.args["message"].as_u64().expect("message");
            (id, rank_of(&part, e.track), e.ts)
        })
        .collect();
    assert!(!marks.is_empty(), "the window cuts some message");
    assert_eq!(marks, marks_expected, "marks of cut messages");
    // The window says what it is.
    let w = part
        .events
        .iter()
        .find(|e| e.name == "window")
        .expect("the window's instant");
    assert_eq!(w.args["from_ns"], from);
    assert_eq!(w.args["to_ns"], to);

    // A window in JSON is refused, naming the file.
    let json = Output {
        format: TraceFormat::Json,
        window: Window::new(Some(Nanos(from)), None, None).expect("window"),
    };
    let err = merge_to_file_if(&ranks, &tmp.path().join("w.json"), &json, |_, _, _| Ok(()))
        .expect_err("refused")
        .to_string();
    assert!(err.contains("w.json: a window of the run"), "{err}");
}
