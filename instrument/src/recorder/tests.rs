//! Unit tests of the recorder: calls keep their completions and order, groups follow their call, and many threads share a small ring.
use super::*;
use crate::clock::ClockSource;
use crate::schema::{CommId, Event, Nanos, Started, SyncPhase};
use overlap_format::stream::codec::MEMBERS_PER_RECORD;

fn config() -> RecorderConfig {
    RecorderConfig {
        ring_bytes: 0,
        flush_interval: Duration::from_millis(5),
        clock: ClockSource::Monotonic,
        // The stalls of the tiny ring exercise the sleep that lets a low-priority
        // writer run.
        idle_writer: true,
        hang_timeout: None,
    }
}

fn at(ns: u64) -> Stamp {
    Stamp::from_nanos(Nanos(ns))
}

#[test]
fn calls_keep_their_completions_and_order() {
    let sink = MemorySink::new();
    let rec = Recorder::new(sink.clone(), config()).expect("recorder");
    let transfer = Transfer {
        peer: 1,
        tag: 7,
        bytes: 64,
        comm: CommId::WORLD,
        buf: 0x1000,
        buf_len: 64,
    };
    let r1 = rec.next_request_id();
    let r2 = rec.next_request_id();
    rec.record_call(
        Op::Isend,
        at(10),
        at(20),
        CallData::Post {
            transfer,
            request: r1,
        },
        &[],
    );
    {
        let _g = rec.compute("pack");
    }
    let done = [r1, r2].map(|r| Completion {
        request: Some(r.0),
        source: None,
        tag: None,
        bytes: None,
    });
    rec.record_call(
        Op::Waitall,
        at(30),
        at(40),
        CallData::Complete { flag: None },
        &done,
    );
    let report = rec.finish().expect("finish");
    assert_eq!(report.events, 3);
    assert!(matches!(rec.finish(), Err(Error::AlreadyFinished)));
    let got = sink.recorded();
    assert_eq!(got.events.len(), 3);
    assert_eq!(got.threads.len(), 1);
    let Event::Call(waitall) = &got.events[2] else {
        panic!("third event is the Waitall")
    };
    assert_eq!(waitall.op, Op::Waitall);
    assert_eq!(waitall.args.completed.len(), 2);
    assert_eq!(waitall.args.completed[1].request, Some(2));
    assert!(matches!(&got.events[1], Event::Compute(c) if c.name == "pack"));
    assert_eq!(got.footer.map(|f| f.events), Some(3));
}

#[test]
fn a_group_follows_its_call_in_order() {
    let sink = MemorySink::new();
    let rec = Recorder::new(sink.clone(), config()).expect("recorder");
    let group: Vec<i32> = (0..(MEMBERS_PER_RECORD as i32 * 2 + 3)).rev().collect();
    let data = CallData::WindowSync {
        win: 5,
        target: None,
        exclusive: None,
        flag: None,
    };
    let here = rec.for_this_thread();
    here.record_group(Op::WinStart, at(10), at(20), 0x40, data, &group);
    here.record_group(Op::WinPost, at(30), at(40), 0x50, data, &[]);
    let lock = CallData::WindowSync {
        win: 5,
        target: Some(3),
        exclusive: Some(true),
        flag: None,
    };
    rec.record_call(Op::WinLock, at(50), at(60), lock, &[]);
    rec.finish().expect("finish");
    let got = sink.recorded();
    let calls: Vec<_> = got
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Call(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0].args.group, group);
    assert_eq!(calls[0].args.win, Some(5));
    assert_eq!(calls[0].args.site, Some(0x40));
    assert!(calls[1].args.group.is_empty());
    assert_eq!(
        (calls[2].args.peer, calls[2].args.exclusive),
        (Some(3), Some(1))
    );
}

#[test]
fn many_events_through_a_small_ring_from_several_threads() {
    let sink = MemorySink::new();
    let rec = Recorder::new(sink.clone(), config()).expect("recorder");
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for i in 0..2_000u64 {
                    rec.record_compute("work", at(i), at(i + 1));
                }
            });
        }
    });
    rec.record_clock_sync(ClockSync {
        phase: SyncPhase::Final,
        local_ns: 5,
        offset_ns: -3,
        error_ns: 1,
        rtt_ns: 2,
        rounds: 4,
    });
    let report = rec.finish().expect("finish");
    assert_eq!(report.events, 16_000);
    // Eight workers, plus the test thread that recorded the clock sync.
    assert_eq!(report.threads, 9);
    let got = sink.recorded();
    assert_eq!(got.syncs.len(), 1);
    for tid in 0..8 {
        let starts: Vec<u64> = got
            .events
            .iter()
            .filter(|e| e.tid() == tid)
            .map(|e| e.start().0)
            .collect();
        assert_eq!(starts, (0..2_000).collect::<Vec<_>>(), "thread {tid}");
    }
    // Recording after finish is dropped, not blocked.
    rec.record_compute("late", at(0), at(1));
}

#[test]
fn a_thread_recorder_appends_to_its_threads_stream_in_order() {
    let sink = MemorySink::new();
    let rec = Recorder::new(sink.clone(), config()).expect("recorder");
    let mine = rec.for_this_thread();
    let first = mine.next_request_id();
    let second = rec.next_request_id();
    assert_eq!((first.0, second.0), (1, 2), "one numbering per thread");
    mine.record_call_from(Op::Barrier, at(1), at(2), 0x10, CallData::Plain, 0, |_| {
        unreachable!("no completions")
    });
    rec.record_call(Op::Barrier, at(3), at(4), CallData::Plain, &[]);
    mine.record_start(Op::Start, at(5), at(6), 0x20, 1, |_| Started {
        request: 3,
        persistent: 1,
    });
    std::thread::spawn({
        let rec = rec.clone();
        move || {
            let other = rec.for_this_thread();
            other.record_group(Op::WinPost, at(7), at(8), 0x30, CallData::Plain, &[1, 2]);
        }
    })
    .join()
    .expect("other thread");
    rec.finish().expect("finish");
    let got = sink.recorded();
    let ops: Vec<(u32, u64)> = got.events.iter().map(|e| (e.tid(), e.start().0)).collect();
    assert_eq!(ops, [(0, 1), (0, 3), (0, 5), (1, 7)]);
    let Event::Call(start) = &got.events[2] else {
        panic!("the Start")
    };
    assert_eq!(start.args.started[0].request, 3);
    let Event::Call(post) = &got.events[3] else {
        panic!("the Win_post")
    };
    assert_eq!(post.args.group, [1, 2]);
}

/// Waits (up to 10 s) until `f` holds.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(10), "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_dump_asked_for_holds_the_call_in_flight_after_what_was_recorded() {
    let sink = MemorySink::new();
    let rec = Recorder::new(sink.clone(), config()).expect("recorder");
    let here = rec.for_this_thread();
    here.record_call_from(
        Op::Barrier,
        at(10),
        at(20),
        0x10,
        CallData::Plain,
        0,
        |_| unreachable!(),
    );
    let waits = WaitsOn {
        comm: Some(0),
        peer: Some((1, 7)),
        ..WaitsOn::default()
    };
    here.enter(Op::Recv, at(30), 0x4010, &waits);
    rec.request_dump();
    eventually("a dump", || !sink.recorded().in_flight.is_empty());
    here.leave();
    rec.finish().expect("finished");
    let got = sink.recorded();
    assert_eq!(got.events.len(), 1, "the Barrier, written before the dump");
    let [dump] = got.in_flight.as_slice() else {
        panic!("one dump: {:?}", got.in_flight)
    };
    assert_eq!(dump.reason, crate::schema::DumpReason::Signal);
    assert_eq!(dump.threads, 1);
    let call = &dump.calls[0];
    assert_eq!(
        (
            call.call,
            call.start_ns,
            call.site,
            call.peer,
            call.tag,
            call.comm
        ),
        (Op::Recv, 30, Some(0x4010), Some(1), Some(7), Some(0))
    );
}

#[test]
fn a_stalled_rank_dumps_once_marks_itself_and_unmarks_when_calls_complete() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rank-0.ovlp");
    let header = crate::schema::Header {
        format: crate::schema::FORMAT_NAME.into(),
        format_version: crate::schema::FORMAT_VERSION,
        rank: 0,
        size: 1,
        host: String::new(),
        os_pid: 1,
        epoch_ns: 0,
        clock_domain: String::new(),
        program: "stall".into(),
        params: Default::default(),
        run_id: String::new(),
        start_unix_ns: 0,
    };
    let sink = RankFileSink::create(&path, &header).expect("sink");
    let mut cfg = config();
    cfg.hang_timeout = Some(Duration::from_millis(50));
    let rec = Recorder::new(sink, cfg).expect("recorder");
    let here = rec.for_this_thread();
    let marker = dir.path().join("rank-0.dump");
    // Computing (no call in flight) for longer than the timeout is no stall.
    std::thread::sleep(Duration::from_millis(150));
    assert!(!marker.exists(), "no call in flight, no stall");
    here.enter(Op::Wait, rec.stamp(), 0, &WaitsOn::default());
    eventually("the stalled marker", || marker.exists());
    let line = std::fs::read_to_string(&marker).expect("marker");
    assert!(
        line.starts_with("stalled ") && line.ends_with('\n'),
        "{line:?}"
    );
    std::thread::sleep(Duration::from_millis(150));
    here.leave();
    here.record_call_from(
        Op::Wait,
        at(1),
        at(2),
        0,
        CallData::Complete { flag: None },
        0,
        |_| unreachable!(),
    );
    eventually("the marker removed", || !marker.exists());
    rec.finish().expect("finished");
    let mut got = overlap_format::stream::Collected::new();
    let bytes = std::fs::read(&path).expect("rank file");
    overlap_format::stream::read(&bytes, &mut got).expect("readable");
    assert_eq!(
        got.in_flight.len(),
        1,
        "one dump per stall: {:?}",
        got.in_flight
    );
    assert_eq!(got.in_flight[0].reason, crate::schema::DumpReason::Stalled);
    assert_eq!(got.in_flight[0].calls[0].call, Op::Wait);
}

#[test]
fn the_rust_layer_publishes_its_call_through_the_recorder_itself() {
    let sink = MemorySink::new();
    let rec = Recorder::new(sink.clone(), config()).expect("recorder");
    let waits = WaitsOn {
        comm: Some(0),
        ..WaitsOn::default()
    };
    rec.enter(Op::Barrier, at(5), &waits);
    rec.request_dump();
    eventually("a dump", || !sink.recorded().in_flight.is_empty());
    rec.leave();
    rec.request_dump();
    eventually("a second dump", || sink.recorded().in_flight.len() == 2);
    rec.finish().expect("finished");
    let got = sink.recorded();
    let call = &got.in_flight[0].calls[0];
    assert_eq!(
        (call.call, call.start_ns, call.comm),
        (Op::Barrier, 5, Some(0))
    );
    assert!(
        got.in_flight[1].calls.is_empty(),
        "left the call before the second dump"
    );
}

/// A vector bound where it is allocated and bound again when it grows: each span's
/// names resolve to where the vector was when the span started, on every thread (each
/// defines the list in its own stream), and bindings made on one thread serve another.
#[test]
fn compute_spans_name_their_buffers_through_rebinding() {
    let sink = MemorySink::new();
    let rec = Recorder::new(sink.clone(), config()).expect("recorder");
    let step = BufferAccess::new(&["v", "halo"], &["v"]).expect("names");
    let mut v: Vec<u64> = Vec::with_capacity(4);
    rec.bind_vec("v", &v);
    let halo = [0u8; 16];
    rec.bind_slice("halo", &halo);
    let first = (v.as_ptr() as u64, 32);
    {
        let _g = rec.compute_with("step", step);
        v.push(1);
    }
    v.extend(0..100u64);
    rec.bind_vec("v", &v);
    let second = (v.as_ptr() as u64, 8 * v.capacity() as u64);
    let other = std::thread::scope(|s| {
        s.spawn(|| {
            let d = rec.start_compute_with("step", step);
            d.finish(&rec);
        })
        .join()
    });
    assert!(other.is_ok());
    drop(rec.compute("plain"));
    rec.finish().expect("finish");
    let got = sink.recorded();
    assert_eq!(got.notes, []);
    type Range = (u64, u64);
    let mut found: Vec<(u32, Option<(Range, Range)>)> = got
        .events
        .iter()
        .map(|e| match e {
            Event::Compute(c) => (
                c.tid,
                c.buffers.as_ref().map(|b| {
                    assert_eq!(b.reads[1].buf, halo.as_ptr() as u64);
                    assert_eq!(b.reads[1].len, 16);
                    assert_eq!(b.reads[0], b.writes[0]);
                    (
                        (b.reads[0].buf, b.reads[0].len),
                        (b.writes[0].buf, b.writes[0].len),
                    )
                }),
            ),
            _ => panic!("compute spans only"),
        })
        .collect();
    // Threads' records interleave by drain: order by thread (stable within one).
    found.sort_by_key(|(tid, _)| *tid);
    assert_eq!(
        found,
        [
            (0, Some((first, first))),
            (0, None),
            (1, Some((second, second)))
        ]
    );
}

/// Learned buffer uses reach the file in a frame of their own, their stamps converted
/// like the events' (a monotonic clock here: unchanged).
#[test]
fn learned_buffer_uses_are_written_and_read_back() {
    use crate::schema::{ByteRange, LearnedUse, Outcome, Unwatched, UnwatchedReason, WatchEnd};
    use overlap_format::stream::learned::{push_unwatched, push_watch};
    let sink = MemorySink::new();
    let rec = Recorder::new(sink.clone(), config()).expect("recorder");
    let at = rec.stamp().raw();
    let watch = LearnedUse {
        request: 4,
        from: Nanos(at),
        reads: None,
        writes: Some(ByteRange {
            addr: 0x10_0000,
            len: 1 << 16,
        }),
        outcome: Outcome::Untouched {
            until: Nanos(at + 10),
            why: WatchEnd::RunEnded,
        },
    };
    let gone = Unwatched {
        request: 5,
        at: Nanos(at + 1),
        why: UnwatchedReason::OnStack,
    };
    rec.record_learned(|out| {
        push_watch(out, &watch);
        push_unwatched(out, &gone);
    });
    rec.finish().expect("finish");
    rec.record_learned(|_: &mut Vec<u8>| panic!("not called once finished"));
    let got = sink.recorded();
    assert_eq!(got.learned, vec![watch]);
    assert_eq!(got.unwatched, vec![gone]);
}
