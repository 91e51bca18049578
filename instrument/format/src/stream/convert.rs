//! Turning a stream's stamps into nanoseconds since the rank's epoch: the file's clock
//! frame says what they count, and for TSC ticks its calibration readings give the
//! conversion (section 3.8 of `docs/trace-format.md`).

use super::read::{Frame, Problem};
use super::{le_u64, FrameKind, StampClock, StreamError, FILE_HEADER_LEN};
use crate::clock::TscConversion;
use crate::schema::Nanos;

/// How stamps become nanoseconds since the epoch.
pub(super) enum Converter {
    Monotonic,
    Tsc { conv: TscConversion, epoch_ns: u64 },
}

impl Converter {
    pub(super) fn nanos(&self, stamp: u64) -> Nanos {
        match self {
            Converter::Monotonic => Nanos(stamp),
            Converter::Tsc { conv, epoch_ns } => {
                Nanos(conv.to_monotonic(stamp).saturating_sub(*epoch_ns))
            }
        }
    }
}

/// How far from the rank's epoch a calibration reading can be: no run lasts longer. A
/// reading beyond it (a wrapped or corrupt clock value under a valid checksum) would
/// stretch every stamp near it to a run of centuries.
const MAX_READING_DISTANCE_NS: u64 = 30 * 24 * 3600 * 1_000_000_000;

/// The calibration readings of the file, those whose monotonic time is implausibly far
/// from the epoch left out, each with a problem naming its frame.
fn plausible_readings(
    frames: &[Frame<'_>],
    epoch_ns: u64,
    problems: &mut Vec<Problem>,
) -> Vec<(u64, u64)> {
    let mut kept = Vec::new();
    for f in frames.iter().filter(|f| f.kind == FrameKind::Calibration) {
        for c in f.payload.chunks_exact(16) {
            let (tsc, mono) = (le_u64(c, 0), le_u64(c, 8));
            if mono.abs_diff(epoch_ns) <= MAX_READING_DISTANCE_NS {
                kept.push((tsc, mono));
                continue;
            }
            problems.push(Problem {
                offset: f.offset as u64,
                event_index: 0,
                reason: format!(
                    "a calibration reading at monotonic time {mono} ns, {:.0} days from the \
                     rank's epoch ({epoch_ns} ns): not a time of this run, left out",
                    mono.abs_diff(epoch_ns) as f64 / 86_400e9
                ),
            });
        }
    }
    kept
}

/// How a file's stamps are converted: with its own readings, or completed by another
/// file's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Readings {
    Own,
    Borrowed,
}

/// The converter of a file whose frames are `frames`; `borrowed` are the readings of
/// another file of the same host, used only when its own are too few to give a rate.
pub(super) fn converter(
    frames: &[Frame<'_>],
    epoch_ns: u64,
    problems: &mut Vec<Problem>,
    borrowed: &[(u64, u64)],
) -> Result<(Converter, Readings), StreamError> {
    // A file without a single stamp (its rank ended before its first page of events
    // was written) needs no conversion: it is a rank that recorded nothing, not an
    // unreadable file.
    let stamped = |k: FrameKind| {
        matches!(
            k,
            FrameKind::Events | FrameKind::InFlight | FrameKind::Bindings | FrameKind::Learned
        )
    };
    if !frames.iter().any(|f| stamped(f.kind)) {
        return Ok((Converter::Monotonic, Readings::Own));
    }
    let clock = frames
        .iter()
        .find(|f| f.kind == FrameKind::Clock)
        .and_then(|f| f.payload.first().copied());
    match clock {
        Some(c) if c == StampClock::Tsc as u8 => {
            let mut readings = plausible_readings(frames, epoch_ns, problems);
            let n = readings.len();
            if let Some(conv) = TscConversion::new(readings.iter().copied()) {
                return Ok((Converter::Tsc { conv, epoch_ns }, Readings::Own));
            }
            // One counter for the whole host: another rank's readings there convert
            // these stamps as well as its own (the ones this file has are kept).
            readings.extend_from_slice(borrowed);
            readings.sort_unstable();
            let conv = TscConversion::new(readings)
                .ok_or(StreamError::NoCalibration { readings: n.min(1) })?;
            Ok((Converter::Tsc { conv, epoch_ns }, Readings::Borrowed))
        }
        Some(c) if c == StampClock::Monotonic as u8 => Ok((Converter::Monotonic, Readings::Own)),
        Some(c) => Err(StreamError::BadHeader {
            offset: FILE_HEADER_LEN as u64,
            reason: format!("unknown stamp clock {c}"),
        }),
        None => Err(StreamError::BadHeader {
            offset: FILE_HEADER_LEN as u64,
            reason: "no clock frame: the stamps cannot be read".into(),
        }),
    }
}

/// The host a stream was recorded on and its plausible calibration readings (none for a
/// file whose stamps are not TSC ticks): what another file of the same host, with too
/// few readings of its own, can borrow ([`super::read_borrowing`]). `None` when the
/// bytes are no readable stream.
pub fn host_readings(bytes: &[u8]) -> Option<(String, Vec<(u64, u64)>)> {
    if !super::is_stream(bytes) || bytes.len() < FILE_HEADER_LEN {
        return None;
    }
    let (frames, _) = super::frames::frames(bytes, &mut Vec::new());
    let header: crate::schema::Header = match frames.first() {
        Some(f) if f.kind == FrameKind::Header => serde_json::from_slice(f.payload).ok()?,
        _ => return None,
    };
    let tsc = frames
        .iter()
        .find(|f| f.kind == FrameKind::Clock)
        .and_then(|f| f.payload.first().copied())
        == Some(StampClock::Tsc as u8);
    let readings = if tsc {
        plausible_readings(&frames, header.epoch_ns, &mut Vec::new())
    } else {
        Vec::new()
    };
    Some((header.host, readings))
}
