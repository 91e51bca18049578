//! Files cut short, torn or without enough clock readings: what of them is read, and
//! what is said (sections 3.8 and 3.10 of `docs/trace-format.md`). The stream of
//! [`super::tests::stream`] is cut and edited here.

use super::codec::{encode_compute, Deltas};
use super::tests::{header, stream, times};
use super::varint::RecordBuf;
use super::*;
use crate::schema::{Event, Op};

#[test]
fn a_file_cut_anywhere_keeps_every_whole_frame_before_the_cut() {
    let (bytes, ends) = stream(StampClock::Tsc);
    for cut in ends[1]..bytes.len() {
        let mut got = Collected::new();
        let problems = read(&bytes[..cut], &mut got).expect("readable up to the cut");
        let whole = ends.iter().filter(|&&e| e <= cut).count();
        // Frames end after: header, thread, first page, second page, footer.
        let events_by_frames = [0, 0, 2, 3, 3];
        let events = events_by_frames[whole - 1];
        // A page of events cut short keeps the records whole in it, no more.
        let at_most = events_by_frames[whole.min(4)];
        let n = got.events.len();
        assert!(events <= n && n <= at_most, "cut at {cut}: {n} events");
        if ends.contains(&cut) {
            assert!(problems.is_empty(), "cut at {cut}: {problems:?}");
        } else {
            let start = *ends.iter().rfind(|&&e| e <= cut).expect("a frame") as u64;
            assert!(
                problems
                    .iter()
                    .any(|p| p.offset == start && p.reason.contains("cut")),
                "cut at {cut}: {problems:?}"
            );
            assert!(problems.iter().all(|p| p.offset >= start), "{problems:?}");
        }
        assert_eq!(got.footer.is_some(), cut == bytes.len());
        assert!(!got.damaged, "cut at {cut}: a cut is no damage");
    }
}

#[test]
fn the_records_whole_in_a_torn_page_are_kept() {
    let (bytes, ends) = stream(StampClock::Tsc);
    // The second page holds a Wait and its completion. Cut one byte into it: the first
    // page's two events, not the Wait.
    let second_page = ends[2] + super::FRAME_HEADER_LEN;
    let mut got = Collected::new();
    let problems = read(&bytes[..second_page + 1], &mut got).expect("readable");
    assert_eq!(got.events.len(), 2, "{problems:?}");
    // Cut one byte short: the Wait is whole, its completion is not (said).
    let mut got = Collected::new();
    let problems = read(&bytes[..ends[3] - 1], &mut got).expect("readable");
    assert_eq!(got.events.len(), 3, "{problems:?}");
    assert!(problems
        .iter()
        .any(|p| p.reason.contains("lacks 1 of the records")));
    // Cut the first page after its first record: the Isend is kept.
    let first_page = ends[1] + super::FRAME_HEADER_LEN;
    let kept = (first_page..ends[2]).find_map(|cut| {
        let mut got = Collected::new();
        read(&bytes[..cut], &mut got).ok()?;
        (!got.events.is_empty()).then_some(got)
    });
    let got = kept.expect("some cut of the first page keeps its first call");
    assert!(matches!(&got.events[0], Event::Call(c) if c.op == Op::Isend));
}

#[test]
fn tsc_stamps_need_two_calibration_readings() {
    let mut out = file_start(&header());
    frame(&mut out, FrameKind::Clock, 0, &[&[StampClock::Tsc as u8]]);
    frame(
        &mut out,
        FrameKind::Calibration,
        0,
        &[&calibration_payload(&[(2_000_000, 1_000_000)])],
    );
    // Without a stamp to convert, the file is a rank that recorded nothing.
    let mut got = Collected::new();
    assert_eq!(read(&out, &mut got), Ok(vec![]));
    assert!(got.header.is_some() && got.events.is_empty());
    // A page of events needs the rate.
    let mut b = RecordBuf::default();
    encode_compute(&mut b, &mut Deltas::default(), 0, 2_000_200, 2_000_400);
    frame(&mut out, FrameKind::Events, 0, &[b.as_bytes()]);
    let mut got = Collected::new();
    assert_eq!(
        read(&out, &mut got),
        Err(StreamError::NoCalibration { readings: 1 })
    );
}

#[test]
fn a_file_with_one_reading_borrows_the_rate_of_its_host() {
    // The stream of the module's drawing with its second reading left out: 1 reading,
    // events after it. Another file of host "node7" read the same counter at 2 ticks a
    // nanosecond from tick 2_000_000 at monotonic 1_000_000 ns.
    let (whole, _) = stream(StampClock::Tsc);
    let one = whole_with_readings(&whole, &[(2_000_000, 1_000_000)]);
    let mut got = Collected::new();
    assert_eq!(
        read(&one, &mut got),
        Err(StreamError::NoCalibration { readings: 1 })
    );
    let (host, donor) = host_readings(&whole).expect("a readable stream");
    assert_eq!(host, "node7");
    let mut got = Collected::new();
    let problems = read_borrowing(&one, &mut got, &donor).expect("readable with a donor");
    assert_eq!(problems, []);
    assert_eq!(times(&got), [(100, 150), (150, 400), (600, 700)]);
    assert!(got.notes[0]
        .reason
        .contains("another rank of host \"node7\""));
    // Its own readings suffice: the donor is not used.
    let mut got = Collected::new();
    read_borrowing(&whole, &mut got, &[(0, 0), (1, 1)]).expect("readable");
    assert_eq!(times(&got), [(100, 150), (150, 400), (600, 700)]);
    assert!(got.notes.is_empty());
}

#[test]
fn a_rank_that_ended_before_its_first_page_is_read_as_empty() {
    // The header alone: killed before the writer's first page.
    let out = file_start(&header());
    let mut got = Collected::new();
    assert_eq!(read(&out, &mut got), Ok(vec![]));
    assert!(got.header.is_some() && got.events.is_empty() && got.footer.is_none());
}

/// `bytes` with its calibration frame's readings replaced by `readings`.
fn whole_with_readings(bytes: &[u8], readings: &[(u64, u64)]) -> Vec<u8> {
    let mut out = bytes[..super::FILE_HEADER_LEN].to_vec();
    let mut at = super::FILE_HEADER_LEN;
    while at < bytes.len() {
        let len = super::le_u32(bytes, at) as usize;
        let kind = FrameKind::from_byte(bytes[at + 4]).expect("a frame");
        let tid = super::le_u32(bytes, at + 8);
        let payload = &bytes[at + super::FRAME_HEADER_LEN..at + super::FRAME_HEADER_LEN + len];
        if kind == FrameKind::Calibration {
            frame(&mut out, kind, tid, &[&calibration_payload(readings)]);
        } else {
            frame(&mut out, kind, tid, &[payload]);
        }
        at += super::FRAME_HEADER_LEN + len;
    }
    out
}

/// A store that only counts the events, as the analyzer's first reading does.
#[derive(Debug, Default, PartialEq)]
struct Count(usize);

impl Extend<Event> for Count {
    fn extend<I: IntoIterator<Item = Event>>(&mut self, events: I) {
        self.0 += events.into_iter().count();
    }
}

impl EventStore for Count {
    const BUILT: bool = false;
    fn skipped(&mut self) {
        self.0 += 1;
    }
}

/// `bytes` read by a reader that only counts: what a reader of the events gets, but
/// the events, whose number it gets (and the same problems).
fn counted_as_read(bytes: &[u8], what: &str) {
    let mut events = Collected::new();
    let read_events = read(bytes, &mut events);
    let mut counted = Collected::<Count>::default();
    let read_counted = read(bytes, &mut counted);
    assert_eq!(read_counted, read_events, "{what}: problems");
    let expected = Collected {
        header: events.header,
        threads: events.threads,
        events: Count(events.events.len()),
        syncs: events.syncs,
        sites: events.sites,
        footer: events.footer,
        in_flight: events.in_flight,
        learned: events.learned,
        unwatched: events.unwatched,
        call_counts: events.call_counts,
        call_paths: events.call_paths,
        notes: events.notes,
        damaged: events.damaged,
    };
    assert_eq!(counted, expected, "{what}");
}

/// The count of a stream cut anywhere (its last call then missing the records that
/// follow it, its last frame torn), flipped anywhere (a checksum failing, the rest
/// corrupt) or followed by garbage is the number of events a reader of them gets, with
/// the same clock readings, sites, problems and notes.
#[test]
fn a_reader_that_only_counts_gets_all_but_the_events() {
    for clock in [StampClock::Tsc, StampClock::Monotonic] {
        let (bytes, ends) = stream(clock);
        counted_as_read(&bytes, "whole");
        for cut in ends[0]..bytes.len() {
            counted_as_read(&bytes[..cut], &format!("cut at {cut}"));
        }
        for at in ends[0]..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x40;
            counted_as_read(&flipped, &format!("byte {at} flipped"));
        }
        let mut garbage = bytes.clone();
        garbage.extend_from_slice(b"\x07garbage that is no frame at all");
        counted_as_read(&garbage, "garbage after");
    }
}
