//! What a rank learned of its requests' buffers (`overlap trace --buffers`), end to end:
//! recorded with the instrument crate into a rank file's learned-uses frame, read into
//! the timeline (times aligned like the spans), merged into the Perfetto JSON as
//! `buffer` instants on the thread that completed each request, and read back from it
//! (streamed, and whole) the same; in Perfetto's protobuf, the same instants.

#[path = "pftrace/decode.rs"]
#[allow(dead_code)]
mod decode;

use std::num::NonZeroU64;
use std::path::Path;
use std::time::Duration;

use overlap_analyzer::import::read_merged;
use overlap_analyzer::load::{load, load_dir};
use overlap_analyzer::merge::{merge_dir, write_merged};
use overlap_analyzer::model::Timeline;
use overlap_instrument::clock::{ClockSource, Stamp};
use overlap_instrument::recorder::{
    push_unwatched, push_watch, CallData, RankFileSink, Recorder, RecorderConfig, Transfer,
};
use overlap_instrument::schema::{
    ByteRange, CommId, Completion, Header, LearnedUse, Nanos, Op, Outcome, Params, RequestId,
    Touch, Unwatched, UnwatchedReason, WatchEnd, FORMAT_NAME, FORMAT_VERSION,
};

fn header() -> Header {
    Header {
        format: FORMAT_NAME.into(),
        format_version: FORMAT_VERSION,
        rank: 0,
        size: 1,
        host: "node".into(),
        os_pid: 7,
        epoch_ns: 1_000_000,
        clock_domain: "boot".into(),
        program: "learned".into(),
        params: Params::new(),
        run_id: "00000000000000bb".into(),
        start_unix_ns: 0,
    }
}

fn isend(request: u64) -> CallData {
    CallData::Post {
        transfer: Transfer {
            peer: 0,
            tag: 1,
            bytes: 65536,
            comm: CommId(0),
            buf: 0x10_0010,
            buf_len: 65536,
        },
        request: RequestId(request),
    }
}

/// Rank 0 of a run of one (ns after `t`, a time well after the epoch):
///
/// ```text
///  ns          0      100   200           300  800                  1000
///  thread 0   [Isend 1][Isend 2]
///  thread 1                   [Waitall 1,2]   ^ first write of 1 (0x10_1000, by 0x5555_1234)
///  learned:                   request 1 watched from 300; request 2 not (smaller than a page)
/// ```
fn record(dir: &Path) -> (LearnedUse, Unwatched) {
    let sink = RankFileSink::create(dir.join("rank-0.ovlp"), &header()).expect("file");
    let mut config = RecorderConfig::default();
    config.flush_interval = Duration::from_millis(2);
    config.clock = ClockSource::Monotonic;
    let rec = Recorder::with_epoch(sink, config, header().epoch_ns).expect("recorder");
    let t = rec.stamp().raw() + 1_000_000;
    let at = |ns: u64| Stamp::from_nanos(Nanos(t + ns));
    rec.record_call(Op::Isend, at(0), at(100), isend(1), &[]);
    rec.record_call(Op::Isend, at(100), at(200), isend(2), &[]);
    let done = |request| Completion {
        request: Some(request),
        source: None,
        tag: None,
        bytes: None,
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            let data = CallData::Complete { flag: None };
            rec.record_call(Op::Waitall, at(200), at(300), data, &[done(1), done(2)]);
        });
    });
    let watch = LearnedUse {
        request: 1,
        from: Nanos(t + 300),
        reads: None,
        writes: Some(ByteRange {
            addr: 0x10_0010,
            len: 65536,
        }),
        outcome: Outcome::Used {
            earliest: Nanos(t + 800),
            latest: Nanos(t + 800),
            touch: Touch::Write,
            addr: 0x10_1000,
            ip: NonZeroU64::new(0x5555_1234),
        },
    };
    let gone = Unwatched {
        request: 2,
        at: Nanos(t + 300),
        why: UnwatchedReason::SmallerThanPage,
    };
    let end = LearnedUse {
        request: 3,
        from: Nanos(t + 300),
        reads: Some(ByteRange {
            addr: 0x20_0000,
            len: 8192,
        }),
        writes: Some(ByteRange {
            addr: 0x20_0000,
            len: 8192,
        }),
        outcome: Outcome::Untouched {
            until: Nanos(t + 1000),
            why: WatchEnd::RunEnded,
        },
    };
    rec.record_learned(|out| {
        push_watch(out, &watch);
        push_unwatched(out, &gone);
        push_watch(out, &end);
    });
    rec.finish().expect("finish");
    (watch, gone)
}

/// The span of the rank's Waitall: its thread and end.
fn waitall(t: &Timeline) -> (u32, Nanos) {
    let i = (0..t.spans.len())
        .find(|&i| t.call(i).is_some_and(|(op, _)| op == Op::Waitall))
        .expect("the Waitall");
    (t.spans[i].tid, t.spans[i].end)
}

/// The learned facts of `t` with times as offsets from the Waitall's end, which they
/// were recorded against (the alignment moves both alike).
fn relative(t: &Timeline) -> (Vec<LearnedUse>, Vec<Unwatched>) {
    let (_, end) = waitall(t);
    let shift = |n: Nanos| Nanos(n.0.wrapping_sub(end.0));
    (
        t.learned
            .iter()
            .map(|l| l.clone().map_times(shift))
            .collect(),
        t.unwatched
            .iter()
            .map(|u| u.clone().map_times(shift))
            .collect(),
    )
}

#[test]
fn learned_uses_survive_the_rank_file_the_merge_and_the_merged_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (watch, gone) = record(dir.path());
    let from = watch.from;
    let to_wait = |n: Nanos| Nanos(n.0.wrapping_sub(from.0));
    let want_watch = watch.map_times(to_wait);
    let want_gone = gone.map_times(to_wait);

    let loaded = load_dir(dir.path(), &mut |_, _| {}).expect("loads");
    let t = &loaded.trace.ranks[0];
    let (learned, unwatched) = relative(t);
    assert_eq!(learned.len(), 2, "{learned:?}");
    assert_eq!(learned[0], want_watch, "sorted by start, then request");
    assert_eq!(learned[1].request, 3);
    assert_eq!(unwatched, vec![want_gone.clone()]);

    let m = merge_dir(dir.path()).expect("merges");
    let out = dir.path().join("run.json");
    write_merged(&m.merged, &out).expect("written");
    let text = std::fs::read_to_string(&out).expect("read");
    let instant = text
        .lines()
        .find(|l| l.contains("first write of the send buffer of request 1"))
        .expect("the touch is an instant");
    let (completer, _) = waitall(t);
    assert!(
        instant.contains(r#""cat":"buffer","ph":"i""#)
            && instant.contains(&format!(r#""tid":{completer},"s":"t""#))
            && instant.contains(r#""ip":1431638580"#),
        "on the thread that completed the request: {instant}"
    );
    assert!(text.contains("buffer of request 2 not watched (smaller than a page)"));
    assert!(text.contains("receive buffer of request 3 untouched (run ended)"));

    let back = load(&out, &mut |_, _| {}).expect("loads the merged file");
    let b = &back.trace.ranks[0];
    assert_eq!((&b.learned, &b.unwatched), (&t.learned, &t.unwatched));
    assert_eq!(
        back.trace.ranks[0].event_count(),
        t.event_count(),
        "the instants are not counted as events"
    );
    assert!(
        back.notes.is_empty() && back.problems.is_empty(),
        "{back:?}"
    );
    let whole = read_merged(&out).expect("reads whole");
    assert_eq!(whole.learned.get(&0), Some(&t.learned));
    assert_eq!(whole.unwatched.get(&0), Some(&t.unwatched));

    // The protobuf holds the same three instants, on the completing thread's track.
    let proto = dir.path().join("run.pftrace");
    write_merged(&m.merged, &proto).expect("written");
    let d = decode::decode(&std::fs::read(&proto).expect("read"));
    const TYPE_INSTANT: u64 = 3;
    let instants: Vec<&decode::Ev> = d
        .events
        .iter()
        .filter(|e| e.ty == TYPE_INSTANT && e.cat == "buffer")
        .collect();
    assert_eq!(instants.len(), 3, "{instants:#?}");
    let write = instants
        .iter()
        .find(|e| {
            e.name
                .contains("first write of the send buffer of request 1")
        })
        .expect("the touch is an instant");
    assert_eq!(
        d.tracks.get(&write.track).and_then(|tr| tr.tid),
        Some(completer),
        "on the thread that completed the request: {write:?}"
    );
    assert_eq!(write.args.get("ip"), Some(&serde_json::json!(1431638580)));
    for text in [
        "buffer of request 2 not watched (smaller than a page)",
        "receive buffer of request 3 untouched (run ended)",
    ] {
        assert!(instants.iter().any(|e| e.name.contains(text)), "{text}");
    }
}
