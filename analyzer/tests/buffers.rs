//! Compute spans that name their buffers, end to end: recorded with the instrument
//! crate (buffers bound, one re-bound, one never bound), streamed to rank files, read
//! into timelines, merged into the Perfetto JSON and read back from it; and files of
//! version 5, which had no buffers, still read.

use std::path::Path;
use std::time::Duration;

use overlap_analyzer::load::{load, load_dir};
use overlap_analyzer::merge::{merge_dir, write_merged};
use overlap_analyzer::model::{Access, Buffer, NamedBuffer, Timeline, What};
use overlap_instrument::clock::{ClockSource, Stamp};
use overlap_instrument::recorder::{BufferAccess, RankFileSink, Recorder, RecorderConfig};
use overlap_instrument::schema::{Header, Nanos, Params, FORMAT_NAME, FORMAT_VERSION};

fn header(rank: u32) -> Header {
    Header {
        format: FORMAT_NAME.into(),
        format_version: FORMAT_VERSION,
        rank,
        size: 1,
        host: "node".into(),
        os_pid: 7,
        epoch_ns: 1_000_000,
        clock_domain: "boot".into(),
        program: "buffers".into(),
        params: Params::new(),
        run_id: "00000000000000aa".into(),
        start_unix_ns: 0,
    }
}

fn named(name: &str, addr: u64, len: u64) -> NamedBuffer {
    NamedBuffer {
        name: name.into(),
        buf: Buffer { addr, len },
    }
}

/// Rank 0 of a run of one:
///
/// ```text
///  ns (since the epoch)  100        1000   1100        2000  2100   2200  2300
///  bindings              data@0x1000 halo      data@0x8000 (grown)
///  thread 0                     [step 1]         [step 2] [plain] [odd]
///  step: reads halo, data; writes data.  odd: reads "lost", never bound.
/// ```
fn record(dir: &Path) {
    let sink = RankFileSink::create(dir.join("rank-0.ovlp"), &header(0)).expect("file");
    let mut config = RecorderConfig::default();
    config.flush_interval = Duration::from_millis(2);
    config.clock = ClockSource::Monotonic;
    let rec = Recorder::with_epoch(sink, config, header(0).epoch_ns).expect("recorder");
    let at = |ns: u64| Stamp::from_nanos(Nanos(ns));
    // Bindings are stamped now (well after the epoch): the spans below are set later.
    rec.bind_buffer("data", 0x1000, 256);
    rec.bind_buffer("halo", 0x4000, 16);
    let later = rec.stamp().raw() + 1_000_000;
    let step = BufferAccess::new(&["halo", "data"], &["data"]).expect("names");
    let odd = BufferAccess::new(&["lost"], &[]).expect("names");
    rec.record_compute_with("step", Some(step), at(later), at(later + 100));
    std::thread::sleep(Duration::from_millis(3));
    rec.bind_buffer("data", 0x8000, 512);
    let later = rec.stamp().raw() + 1_000_000;
    rec.record_compute_with("step", Some(step), at(later), at(later + 100));
    rec.record_compute("plain", at(later + 100), at(later + 200));
    rec.record_compute_with("odd", Some(odd), at(later + 200), at(later + 300));
    rec.finish().expect("finish");
}

/// The compute spans of a timeline: name and declared buffers.
fn computes(t: &Timeline) -> Vec<(String, Option<Access>)> {
    (0..t.spans.len())
        .filter_map(|i| match t.spans[i].what {
            What::Compute(n) => Some((t.name(n).to_string(), t.access(i).cloned())),
            What::Call(..) => None,
        })
        .collect()
}

fn expected() -> Vec<(String, Option<Access>)> {
    let step = |data: (u64, u64)| Access {
        reads: vec![named("halo", 0x4000, 16), named("data", data.0, data.1)],
        writes: vec![named("data", data.0, data.1)],
    };
    vec![
        ("step".into(), Some(step((0x1000, 256)))),
        ("step".into(), Some(step((0x8000, 512)))),
        ("plain".into(), None),
        ("odd".into(), None),
    ]
}

#[test]
fn buffers_survive_the_rank_file_the_merge_and_the_merged_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    record(dir.path());

    // From the rank file, straight into timelines.
    let loaded = load_dir(dir.path(), &mut |_, _| {}).expect("loads");
    let t = &loaded.trace.ranks[0];
    assert_eq!(computes(t), expected());
    assert!(
        t.complete,
        "an unbound name does not make the rank incomplete"
    );
    assert_eq!(loaded.notes.len(), 1, "{:?}", loaded.notes);
    assert!(
        loaded.notes[0].contains("rank-0.ovlp")
            && loaded.notes[0].contains("compute span \"odd\"")
            && loaded.notes[0].contains("\"lost\" was never bound"),
        "{}",
        loaded.notes[0]
    );
    // A call or a span out of range has none.
    assert_eq!(t.access(t.spans.len()), None);

    // Merged: the compute slices carry the buffers in their args, and read back.
    let m = merge_dir(dir.path()).expect("merges");
    assert_eq!(m.notes.len(), 1);
    let out = dir.path().join("run.json");
    write_merged(&m.merged, &out).expect("written");
    let text = std::fs::read_to_string(&out).expect("read");
    assert!(
        text.contains(
            r#""args":{"reads":[{"name":"halo","buf":16384,"len":16},{"name":"data","buf":4096,"len":256}],"writes":[{"name":"data","buf":4096,"len":256}]}"#
        ),
        "{text}"
    );
    let back = load(&out, &mut |_, _| {}).expect("loads the merged file");
    assert_eq!(computes(&back.trace.ranks[0]), expected());
}

/// Files of format version 5 (rank streams and their merged trace, from
/// `overlap run false-overlap --ranks 2 --iters 2` before buffers existed) still read,
/// their compute spans without buffers.
#[test]
fn version_5_files_still_read_without_buffers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/v5-false-overlap");
    let from_ranks = load_dir(&dir, &mut |_, _| {}).expect("version-5 rank files read");
    let from_merged = load(&dir.join("run.json"), &mut |_, _| {}).expect("merged reads");
    for loaded in [&from_ranks, &from_merged] {
        let t = &loaded.trace;
        assert!(t.info.incomplete.is_empty(), "{:?}", t.info.incomplete);
        assert_eq!(t.ranks.len(), 2);
        assert_eq!(t.messages.len(), 8);
        let spans: Vec<usize> = t.ranks.iter().map(|r| r.spans.len()).collect();
        assert_eq!(spans, [30, 30]);
        for r in &t.ranks {
            let computes = computes(r);
            assert!(!computes.is_empty());
            assert!(computes.iter().all(|(_, a)| a.is_none()));
        }
    }
}
