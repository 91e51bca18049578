//! Turning a stream's stamps into nanoseconds since the rank's epoch: the file's clock
//! frame says what they count, and for TSC ticks its calibration readings give the
//! conversion (section 3.8 of `docs/trace-format.md`).

use super::read::Frame;
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

pub(super) fn converter(frames: &[Frame<'_>], epoch_ns: u64) -> Result<Converter, StreamError> {
    let clock = frames
        .iter()
        .find(|f| f.kind == FrameKind::Clock)
        .and_then(|f| f.payload.first().copied());
    match clock {
        Some(c) if c == StampClock::Tsc as u8 => {
            let readings = frames
                .iter()
                .filter(|f| f.kind == FrameKind::Calibration)
                .flat_map(|f| f.payload.chunks_exact(16))
                .map(|c| (le_u64(c, 0), le_u64(c, 8)));
            let readings: Vec<(u64, u64)> = readings.collect();
            let n = readings.len();
            let conv = TscConversion::new(readings)
                .ok_or(StreamError::NoCalibration { readings: n.min(1) })?;
            Ok(Converter::Tsc { conv, epoch_ns })
        }
        Some(c) if c == StampClock::Monotonic as u8 => Ok(Converter::Monotonic),
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
