//! Record with the instrument crate, stream to a per-rank file, import with the
//! analyzer: every event comes back as it was recorded, with 1 and with 8 threads.

use std::time::Duration;

use overlap_analyzer::import::read_rank_file;
use overlap_analyzer::model::Place;
use overlap_instrument::clock::{ClockSource, Stamp};
use overlap_instrument::recorder::{CallData, RankFileSink, Recorder, RecorderConfig, Transfer};
use overlap_instrument::schema::{
    CallArgs, CallEvent, ClockSync, CommId, Completion, ComputeEvent, Event, Header, Nanos, Op,
    Params, RequestId, SyncPhase, FORMAT_NAME, FORMAT_VERSION,
};

fn header() -> Header {
    Header {
        format: FORMAT_NAME.into(),
        format_version: FORMAT_VERSION,
        rank: 3,
        size: 4,
        host: "node7".into(),
        os_pid: 4242,
        epoch_ns: 123_456_789,
        clock_domain: "boot".into(),
        program: "roundtrip".into(),
        params: Params::new(),
        run_id: String::new(),
        start_unix_ns: 0,
    }
}

/// Records, on one thread, a fixed sequence whose times encode `(thread, i)`.
fn record_sequence(rec: &Recorder, thread: u64, n: u64) -> Vec<Event> {
    let mut expected = Vec::new();
    for i in 0..n {
        let t = thread * 1_000_000_000 + i * 1000;
        let transfer = Transfer {
            peer: 1,
            tag: i as i32,
            bytes: 8 * i,
            comm: CommId::WORLD,
            buf: 0xdead_b000 + i,
            buf_len: 8 * i,
        };
        let request = RequestId(thread * 1_000_000 + i);
        let at = |ns: u64| Stamp::from_nanos(Nanos(ns));
        rec.record_call(
            Op::Isend,
            at(t),
            at(t + 10),
            CallData::Post { transfer, request },
            &[],
        );
        rec.record_compute("step", at(t + 10), at(t + 500));
        let done = [Completion {
            request: Some(request.0),
            source: None,
            tag: None,
            bytes: None,
        }];
        rec.record_call(
            Op::Wait,
            at(t + 500),
            at(t + 900),
            CallData::Complete { flag: None },
            &done,
        );
        let tid = thread as u32;
        expected.push(Event::Call(CallEvent {
            tid,
            start: Nanos(t),
            end: Nanos(t + 10),
            op: Op::Isend,
            // The recorder lists each source line once and gives it an id in order of
            // first use: this Isend's line is 1, the Wait's 2.
            args: CallArgs {
                request: Some(request.0),
                ..CallData::Post { transfer, request }.to_args(1, vec![], vec![])
            },
        }));
        expected.push(Event::Compute(ComputeEvent {
            tid,
            start: Nanos(t + 10),
            end: Nanos(t + 500),
            name: "step".into(),
            buffers: None,
        }));
        expected.push(Event::Call(CallEvent {
            tid,
            start: Nanos(t + 500),
            end: Nanos(t + 900),
            op: Op::Wait,
            args: CallArgs {
                completed: done.to_vec(),
                site: Some(2),
                ..CallArgs::default()
            },
        }));
    }
    expected
}

fn roundtrip(threads: u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("rank-3.ovlp");
    let sink = RankFileSink::create(&path, &header()).expect("file");
    let mut config = RecorderConfig::default();
    config.ring_bytes = 0;
    config.flush_interval = Duration::from_millis(2);
    config.clock = ClockSource::Monotonic;
    let rec = Recorder::with_epoch(sink, config, header().epoch_ns).expect("recorder");
    let sync = ClockSync {
        phase: SyncPhase::Init,
        local_ns: 5,
        offset_ns: -12,
        error_ns: 300,
        rtt_ns: 600,
        rounds: 20,
    };
    rec.record_clock_sync(sync);
    // Thread k gets tid k: the main thread registered first (the sync), so spawn
    // threads one after another to keep registration order fixed.
    let mut expected: Vec<Vec<Event>> = Vec::new();
    expected.push(record_sequence(&rec, 0, 700));
    for thread in 1..threads {
        let rec = rec.clone();
        let e = std::thread::Builder::new()
            .name(format!("worker-{thread}"))
            .spawn(move || record_sequence(&rec, thread, 700))
            .expect("spawn")
            .join()
            .expect("no panic");
        expected.push(e);
    }
    let report = rec.finish().expect("finish");
    assert_eq!(report.events, threads * 2100);

    let t = read_rank_file(&path).expect("reads");
    assert!(t.is_complete(), "{:?}", t.problems);
    assert_eq!(t.header, header());
    assert_eq!(t.syncs, vec![sync]);
    let sites: Vec<(u64, &str)> = t.sites.iter().map(|s| (s.id, s.file.as_str())).collect();
    assert_eq!(
        sites,
        [(1, file!()), (2, file!())],
        "two lines, listed once each"
    );
    assert!(t.sites[0].line < t.sites[1].line, "the Isend comes first");
    assert_eq!(t.footer.map(|f| f.events), Some(threads * 2100));
    assert_eq!(t.threads.len() as u64, threads);
    for (tid, exp) in expected.iter().enumerate() {
        let got: Vec<Event> = t
            .events
            .iter()
            .filter(|e| e.tid() == tid as u32)
            .cloned()
            .collect();
        assert_eq!(&got, exp, "thread {tid}");
    }
    if threads > 1 {
        assert_eq!(t.threads[&1], "worker-1");
    }
}

#[test]
fn one_thread() {
    roundtrip(1);
}

#[test]
fn eight_threads() {
    roundtrip(8);
}

/// A real file damaged the ways a disk or a crash damages files: garbage appended, cut
/// in the middle of a page, an unknown version. Each is said with the file and the
/// offset, and what is before the damage is read.
#[test]
fn a_damaged_file_is_read_up_to_the_damage_and_says_where() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("rank-3.ovlp");
    let sink = RankFileSink::create(&path, &header()).expect("file");
    let mut config = RecorderConfig::default();
    config.clock = ClockSource::Monotonic;
    let rec = Recorder::with_epoch(sink, config, header().epoch_ns).expect("recorder");
    let expected = record_sequence(&rec, 0, 100);
    rec.finish().expect("finish");
    let whole = std::fs::read(&path).expect("read");

    // Garbage appended: everything read, the garbage named at its offset.
    let mut garbage = whole.clone();
    garbage.extend_from_slice(b"\x09\x00\x00\x00 not a frame");
    std::fs::write(&path, &garbage).expect("write");
    let t = read_rank_file(&path).expect("reads");
    assert_eq!(t.events, expected);
    assert_eq!(t.problems.len(), 1, "{:?}", t.problems);
    assert_eq!(t.problems[0].place, Place::Offset(whole.len() as u64));
    assert!(t.problems[0].reason.contains("not a frame header"));

    // Cut in the middle of the page of events: the page is lost, not the header.
    std::fs::write(&path, &whole[..whole.len() - 100]).expect("write");
    let t = read_rank_file(&path).expect("reads");
    assert!(t.footer.is_none());
    assert_eq!(t.problems.len(), 1, "{:?}", t.problems);
    assert!(
        t.problems[0].reason.contains("cut short"),
        "{:?}",
        t.problems
    );
    assert!(t.incompleteness().is_some());

    // Another version: refused whole, naming the file.
    let mut other = whole.clone();
    other[8..12].copy_from_slice(&77u32.to_le_bytes());
    std::fs::write(&path, &other).expect("write");
    let err = read_rank_file(&path).expect_err("refused");
    assert!(
        err.to_string()
            .contains("rank-3.ovlp: trace format version 77"),
        "{err}"
    );
}
