//! Streams built by hand, read back: events regrouped and converted, and every way a
//! file can be damaged reported with its offset, keeping what is before it.

use super::codec::{encode_call, encode_completion, encode_compute, encode_string_head, Deltas};
use super::varint::RecordBuf;
use super::*;
use crate::call_data::{CallData, Transfer};
use crate::schema::{CommId, Completion, Event, Footer, Header, Op, RequestId};

pub(super) fn header() -> Header {
    Header {
        format: crate::schema::FORMAT_NAME.into(),
        format_version: crate::schema::FORMAT_VERSION,
        rank: 1,
        size: 2,
        host: "node7".into(),
        os_pid: 4242,
        epoch_ns: 1_000_000,
        clock_domain: String::new(),
        program: "ring".into(),
        params: Default::default(),
        run_id: String::new(),
        start_unix_ns: 0,
    }
}

/// One thread, stamps in TSC ticks at 2 ticks a nanosecond from tick 2_000_000 at the
/// epoch (monotonic 1_000_000 ns):
///
/// ```text
///  ns since epoch   100   150        400      600   700
///  thread 0         |Isend|  [ pack ]        |  Wait  |
///                   req 1                   completes 1
/// ```
pub(super) fn stream(clock: StampClock) -> (Vec<u8>, Vec<usize>) {
    let tick = |ns: u64| match clock {
        StampClock::Tsc => 2_000_000 + 2 * ns,
        StampClock::Monotonic => ns,
    };
    let mut out = file_start(&header());
    let mut ends = vec![out.len()];
    frame(&mut out, FrameKind::Clock, 0, &[&[clock as u8]]);
    frame(
        &mut out,
        FrameKind::Calibration,
        0,
        &[&calibration_payload(&[
            (2_000_000, 1_000_000),
            (4_000_000, 2_000_000),
        ])],
    );
    frame(&mut out, FrameKind::Thread, 0, &[b"main"]);
    ends.push(out.len());
    let mut d = Deltas::default();
    let mut page = Vec::new();
    let mut b = RecordBuf::default();
    let transfer = Transfer {
        peer: 0,
        tag: 3,
        bytes: 8,
        comm: CommId::WORLD,
        buf: 0x7000,
        buf_len: 8,
    };
    let post = CallData::Post {
        transfer,
        request: RequestId(1),
    };
    encode_call(
        &mut b,
        &mut d,
        Op::Isend,
        tick(100),
        tick(150),
        0x4010,
        &post,
        0,
    );
    encode_string_head(&mut b, 1, 4);
    page.extend_from_slice(b.as_bytes());
    page.extend_from_slice(b"pack");
    b.clear();
    encode_compute(&mut b, &mut d, 1, tick(150), tick(400));
    page.extend_from_slice(b.as_bytes());
    frame(&mut out, FrameKind::Events, 0, &[&page]);
    ends.push(out.len());
    b.clear();
    let wait = CallData::Complete { flag: None };
    encode_call(
        &mut b,
        &mut d,
        Op::Wait,
        tick(600),
        tick(700),
        0x4020,
        &wait,
        1,
    );
    let done = Completion {
        request: Some(1),
        source: None,
        tag: None,
        bytes: None,
    };
    encode_completion(&mut b, &mut d, &done);
    frame(&mut out, FrameKind::Events, 0, &[b.as_bytes()]);
    ends.push(out.len());
    let footer = Footer {
        events: 3,
        threads: 1,
        buffer_stalls: 0,
    };
    frame(&mut out, FrameKind::Footer, 0, &[&footer_payload(&footer)]);
    ends.push(out.len());
    (out, ends)
}

pub(super) fn times(c: &Collected) -> Vec<(u64, u64)> {
    c.events.iter().map(|e| (e.start().0, e.end().0)).collect()
}

#[test]
fn a_whole_stream_reads_back_as_events() {
    for clock in [StampClock::Tsc, StampClock::Monotonic] {
        let (bytes, _) = stream(clock);
        let mut got = Collected::new();
        let problems = read(&bytes, &mut got).expect("readable");
        assert_eq!(problems, [], "{clock:?}");
        assert_eq!(got.header.as_ref().map(|h| h.rank), Some(1));
        assert_eq!(got.threads, [(0, "main".to_string())]);
        assert_eq!(
            times(&got),
            [(100, 150), (150, 400), (600, 700)],
            "{clock:?}"
        );
        let Event::Call(isend) = &got.events[0] else {
            panic!("an Isend first")
        };
        assert_eq!(
            (
                isend.op,
                isend.args.request,
                isend.args.site,
                isend.args.buf
            ),
            (Op::Isend, Some(1), Some(0x4010), Some(0x7000))
        );
        assert!(matches!(&got.events[1], Event::Compute(c) if c.name == "pack"));
        let Event::Call(wait) = &got.events[2] else {
            panic!("a Wait last")
        };
        assert_eq!(wait.args.completed.len(), 1);
        assert_eq!(wait.args.completed[0].request, Some(1));
        assert_eq!(got.footer.map(|f| f.events), Some(3));
    }
}

#[test]
fn garbage_appended_or_written_over_is_reported_with_its_offset() {
    let (mut bytes, ends) = stream(StampClock::Monotonic);
    let whole = bytes.len();
    bytes.extend_from_slice(b"\x07garbage that is no frame at all");
    let mut got = Collected::new();
    let problems = read(&bytes, &mut got).expect("readable");
    assert_eq!(got.events.len(), 3);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].offset, whole as u64);
    assert!(
        problems[0].reason.contains("not a frame header"),
        "{problems:?}"
    );
    assert!(got.damaged);

    // A byte flipped inside the first page: its checksum fails, nothing after it is read.
    let (mut bytes, _) = stream(StampClock::Monotonic);
    bytes[ends[2] - 3] ^= 0x40;
    let mut got = Collected::new();
    let problems = read(&bytes, &mut got).expect("readable");
    assert_eq!(got.events.len(), 0);
    assert_eq!(problems[0].offset, ends[1] as u64);
    assert!(problems[0].reason.contains("checksum"), "{problems:?}");
    assert!(problems[0].reason.contains("corrupt"), "{problems:?}");
    assert!(
        got.damaged,
        "a checksum failure mid-file is damage, not a cut"
    );
}

#[test]
fn a_calibration_reading_far_from_the_epoch_is_left_out() {
    let (bytes, ends) = stream(StampClock::Tsc);
    // A reading whose monotonic time wrapped round (valid checksum), first in the file.
    let mut wrapped = bytes[..ends[0]].to_vec();
    let at = wrapped.len() as u64;
    let reading = calibration_payload(&[(3_000_000, u64::MAX - 4)]);
    frame(&mut wrapped, FrameKind::Calibration, 0, &[&reading]);
    wrapped.extend_from_slice(&bytes[ends[0]..]);
    let mut got = Collected::new();
    let problems = read(&wrapped, &mut got).expect("readable");
    assert_eq!(times(&got), [(100, 150), (150, 400), (600, 700)]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].offset, at);
    assert!(
        problems[0].reason.contains("not a time of this run"),
        "{problems:?}"
    );
}

#[test]
fn files_that_are_no_stream_are_refused_clearly() {
    let mut got = Collected::new();
    assert!(matches!(
        read(b"", &mut got),
        Err(StreamError::NotAStream(_))
    ));
    assert!(matches!(
        read(b"[{\"ph\":\"M\"}]", &mut got),
        Err(StreamError::NotAStream(_))
    ));
    let (mut bytes, _) = stream(StampClock::Tsc);
    bytes[8..12].copy_from_slice(&99u32.to_le_bytes());
    assert_eq!(
        read(&bytes, &mut got),
        Err(StreamError::Version { found: 99 })
    );
    let (bytes, ends) = stream(StampClock::Tsc);
    let mut no_header = bytes[..FILE_HEADER_LEN].to_vec();
    no_header.extend_from_slice(&bytes[ends[0]..]);
    let err = read(&no_header, &mut got).expect_err("no header");
    assert!(
        matches!(err, StreamError::BadHeader { offset: 16, .. }),
        "{err}"
    );
}

#[test]
fn checksum_sees_every_byte() {
    let data: Vec<u8> = (0..37u8).collect();
    let base = checksum(&data);
    for i in 0..data.len() {
        let mut d = data.clone();
        d[i] ^= 1;
        assert_ne!(checksum(&d), base, "byte {i}");
    }
    assert_ne!(checksum(&data[..36]), base);
}

/// A call whose completion never came (a writer bug, or a torn page): kept, and said.
#[test]
fn a_call_missing_its_follow_records_is_kept_and_reported() {
    let mut out = file_start(&header());
    frame(
        &mut out,
        FrameKind::Clock,
        0,
        &[&[StampClock::Monotonic as u8]],
    );
    let mut b = RecordBuf::default();
    let wait = CallData::Complete { flag: None };
    encode_call(
        &mut b,
        &mut Deltas::default(),
        Op::Waitall,
        10,
        20,
        0,
        &wait,
        2,
    );
    frame(&mut out, FrameKind::Events, 0, &[b.as_bytes()]);
    let mut got = Collected::new();
    let problems = read(&out, &mut got).expect("readable");
    assert_eq!(got.events.len(), 1);
    assert_eq!(problems.len(), 1);
    assert!(problems[0].reason.contains("lacks 2"), "{problems:?}");
    assert!(matches!(
        read(b"OVLPRA", &mut got),
        Err(StreamError::NotAStream(why)) if why.contains("6 byte(s)")
    ));
}

/// Records naming strings or source locations the thread never defined (an encoder
/// bug): the events are kept, and what could not be named is said, not left silent.
#[test]
fn names_never_defined_are_reported() {
    let mut out = file_start(&header());
    frame(
        &mut out,
        FrameKind::Clock,
        0,
        &[&[StampClock::Monotonic as u8]],
    );
    let mut b = RecordBuf::default();
    let mut d = Deltas::default();
    encode_compute(&mut b, &mut d, 5, 10, 20);
    let call_at = b.as_bytes().len();
    encode_call(
        &mut b,
        &mut d,
        Op::Barrier,
        30,
        40,
        1 << 63 | 0x99,
        &CallData::Plain,
        0,
    );
    let page_at = out.len() + FRAME_HEADER_LEN;
    frame(&mut out, FrameKind::Events, 0, &[b.as_bytes()]);
    let mut got = Collected::new();
    let problems = read(&out, &mut got).expect("readable");
    assert_eq!(got.events.len(), 2);
    assert!(matches!(&got.events[0], Event::Compute(c) if c.name.is_empty()));
    let Event::Call(call) = &got.events[1] else {
        panic!("the Barrier")
    };
    assert_eq!(call.args.site, None, "unknown, not made up");
    let places: Vec<u64> = problems.iter().map(|p| p.offset).collect();
    assert_eq!(
        places,
        [page_at as u64, (page_at + call_at) as u64],
        "{problems:?}"
    );
    assert!(problems[0].reason.contains("string 5"), "{problems:?}");
    assert!(
        problems[1].reason.contains("no thread defined"),
        "{problems:?}"
    );
}

/// The stream of [`stream`] cut after its first page, then a dump taken at 900 ns while
/// thread 0 is inside a Wait entered at 600 ns (its record never written: it hung):
///
/// ```text
///  ns since epoch   100   150        400      600           900
///  thread 0         |Isend|  [ pack ]        |Wait ......... dump
/// ```
fn hung_stream() -> (Vec<u8>, usize) {
    let (bytes, ends) = stream(StampClock::Tsc);
    let mut out = bytes[..ends[2]].to_vec();
    let tick = |ns: u64| 2_000_000 + 2 * ns;
    let dump = inflight::RawDump {
        reason: crate::schema::DumpReason::Stalled,
        at: tick(900),
        unix_ns: 1_700_000_000_000_000_000,
        threads: 1,
        calls: vec![inflight::RawCall {
            tid: 0,
            op: Op::Wait.code(),
            fields: inflight::fields::REQUESTS,
            start: tick(600),
            site: 0x4020,
            requests: 1,
            ..Default::default()
        }],
    };
    let start = out.len();
    frame(
        &mut out,
        FrameKind::InFlight,
        0,
        &[&inflight::payload(&dump)],
    );
    (out, start)
}

#[test]
fn an_in_flight_frame_reads_back_with_its_times_converted() {
    let (bytes, _) = hung_stream();
    let mut got = Collected::new();
    let problems = read(&bytes, &mut got).expect("readable");
    assert_eq!(problems, []);
    assert_eq!(times(&got), [(100, 150), (150, 400)]);
    let [dump] = got.in_flight.as_slice() else {
        panic!("one dump: {:?}", got.in_flight)
    };
    assert_eq!(dump.reason, crate::schema::DumpReason::Stalled);
    assert_eq!(
        (dump.at_ns, dump.unix_ns, dump.threads),
        (900, 1_700_000_000_000_000_000, 1)
    );
    let call = &dump.calls[0];
    assert_eq!(
        (call.tid, call.call, call.start_ns, call.site, call.requests),
        (0, Op::Wait, 600, Some(0x4020), Some(1))
    );
    assert_eq!((call.peer, call.tag, call.comm), (None, None, None));
}

#[test]
fn a_file_cut_inside_the_in_flight_frame_keeps_the_events_before_it() {
    let (bytes, start) = hung_stream();
    for cut in start + 1..bytes.len() {
        let mut got = Collected::new();
        let problems = read(&bytes[..cut], &mut got).expect("readable up to the cut");
        assert_eq!(got.events.len(), 2, "cut at {cut}");
        assert!(got.in_flight.is_empty(), "cut at {cut}");
        assert_eq!(problems.len(), 1, "cut at {cut}: {problems:?}");
        assert_eq!(problems[0].offset, start as u64);
    }
    // A payload whose length is no whole number of calls is reported, not read.
    let mut bad = bytes[..start].to_vec();
    frame(&mut bad, FrameKind::InFlight, 0, &[&[0u8; 30]]);
    let mut got = Collected::new();
    let problems = read(&bad, &mut got).expect("readable");
    assert!(got.in_flight.is_empty());
    assert!(
        problems[0].reason.contains("in-flight dump of 30 bytes"),
        "{problems:?}"
    );
}

/// Buffers bound in a bindings frame written after the events that use them (a reader
/// collects every binding first), `data` bound again when it grew:
///
/// ```text
///  ns           10        50          100   200   300       350  400  450 500 510
///  bindings     halo      data@0x1000             data@0x2000
///  thread 0                           [step 1]               [step 2]  [bad] [plain]
/// ```
#[test]
fn annotated_compute_spans_resolve_their_names_to_the_binding_in_force() {
    use super::buffers::{names_bytes, push_binding};
    use super::codec::{encode_buffers_head, encode_compute_buffers};
    let mut out = file_start(&header());
    frame(
        &mut out,
        FrameKind::Clock,
        0,
        &[&[StampClock::Monotonic as u8]],
    );
    let mut page = Vec::new();
    let mut d = Deltas::default();
    let mut b = RecordBuf::default();
    let put = |b: &mut RecordBuf, page: &mut Vec<u8>, raw: &[u8]| {
        page.extend_from_slice(b.as_bytes());
        page.extend_from_slice(raw);
        b.clear();
    };
    encode_string_head(&mut b, 1, 4);
    put(&mut b, &mut page, b"step");
    let names = names_bytes(["halo", "data", "data"]);
    encode_buffers_head(&mut b, 1, 2, 1, names.len());
    put(&mut b, &mut page, &names);
    let names = names_bytes(["nope"]);
    encode_buffers_head(&mut b, 2, 1, 0, names.len());
    put(&mut b, &mut page, &names);
    encode_compute_buffers(&mut b, &mut d, 1, 100, 200, 1);
    encode_compute_buffers(&mut b, &mut d, 1, 350, 400, 1);
    encode_compute_buffers(&mut b, &mut d, 1, 450, 500, 2);
    encode_compute(&mut b, &mut d, 1, 500, 510);
    put(&mut b, &mut page, &[]);
    frame(&mut out, FrameKind::Events, 0, &[&page]);
    let mut bindings = Vec::new();
    push_binding(&mut bindings, 50, 0x1000, 64, "data");
    push_binding(&mut bindings, 10, 0x3000, 8, "halo");
    push_binding(&mut bindings, 300, 0x2000, 128, "data");
    frame(&mut out, FrameKind::Bindings, 0, &[&bindings]);

    let mut got = Collected::new();
    assert_eq!(read(&out, &mut got).expect("readable"), []);
    let spans: Vec<_> = got
        .events
        .iter()
        .map(|e| match e {
            Event::Compute(c) => c.buffers.clone(),
            _ => panic!("compute spans only"),
        })
        .collect();
    let addrs = |i: usize| {
        spans[i].as_ref().map(|s| {
            let each = |v: &[crate::schema::BufferUse]| {
                v.iter()
                    .map(|u| (u.name.clone(), u.buf, u.len))
                    .collect::<Vec<_>>()
            };
            (each(&s.reads), each(&s.writes))
        })
    };
    let bu = |n: &str, a: u64, l: u64| (n.to_string(), a, l);
    assert_eq!(
        addrs(0),
        Some((
            vec![bu("halo", 0x3000, 8), bu("data", 0x1000, 64)],
            vec![bu("data", 0x1000, 64)]
        ))
    );
    assert_eq!(
        addrs(1),
        Some((
            vec![bu("halo", 0x3000, 8), bu("data", 0x2000, 128)],
            vec![bu("data", 0x2000, 128)]
        ))
    );
    // A name never bound: the span's buffers are unknown, and the reader says why; the
    // file is not damaged (no problem).
    assert_eq!(addrs(2), None);
    assert_eq!(got.notes.len(), 1, "{:?}", got.notes);
    assert!(
        got.notes[0].reason.contains("\"step\"") && got.notes[0].reason.contains("\"nope\""),
        "{}",
        got.notes[0].reason
    );
    // A span that declared nothing.
    assert_eq!(addrs(3), None);
}
