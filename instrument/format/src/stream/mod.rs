//! The binary per-rank stream: what a rank's recorder writes while the program runs, and
//! how it is read back.
//!
//! ```text
//! file   := magic "OVLPRANK" | version u32 | reserved u32 | frame*
//! frame  := length u32 | kind u8 | 0 u8 | 0 u16 | tid u32 | checksum u32 | payload
//! ```
//!
//! All integers in the framing are little-endian. The first frame is the header (JSON of
//! [`crate::schema::Header`]), the second the clock the stamps are in; then, as the run
//! goes, thread names, pages of events (each a run of records copied from one thread's
//! ring, see [`codec`]), clock calibrations, in-flight dumps ([`inflight`]), buffer
//! bindings ([`buffers`]), what the program did with its requests' buffers
//! ([`learned`]) and, last,
//! the footer. A frame is written whole or not at all, so a rank that dies leaves a file
//! readable up to its last flushed frame; a frame cut short or failing its checksum ends the reading there, and says so.
//! `docs/trace-format.md` specifies every byte.

pub mod buffers;
pub mod codec;
mod collect;
mod convert;
pub mod counts;
mod decode;
mod frames;
pub mod inflight;
pub mod learned;
pub mod paths;
mod read;
mod sites;
pub mod varint;
mod visitor;
mod write;

pub use collect::{Collected, EventStore};
pub use convert::host_readings;
pub use read::{read, read_borrowing, Problem, StreamError, Visitor};
pub use write::{calibration_payload, file_start, footer_payload, frame};

/// The first 8 bytes of every binary per-rank file.
pub const MAGIC: &[u8; 8] = b"OVLPRANK";

/// True when `bytes` start as a binary stream does: with the magic, or with a part of it
/// (a file cut inside its opening is still a stream, a damaged one).
pub fn is_stream(bytes: &[u8]) -> bool {
    let opening = &bytes[..bytes.len().min(MAGIC.len())];
    !bytes.is_empty() && MAGIC.starts_with(opening)
}

/// Bytes before the first frame: magic, version, reserved.
pub const FILE_HEADER_LEN: usize = 16;

/// Bytes of a frame's header.
pub const FRAME_HEADER_LEN: usize = 16;

/// Largest payload a reader accepts: a frame longer than this is corrupt (the writer's
/// pages are at most a ring's size, far below it).
pub const FRAME_MAX: usize = 64 << 20;

/// What a frame holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    /// The rank's header: JSON of [`crate::schema::Header`]. Always the first frame.
    Header = 1,
    /// The clock the stamps are in: one byte, a [`StampClock`].
    Clock = 2,
    /// A thread's name (UTF-8), for the frame's `tid`.
    Thread = 3,
    /// Records of the frame's `tid`, in recording order (see [`codec`]).
    Events = 4,
    /// Calibration readings: pairs of little-endian u64 (TSC ticks, absolute
    /// `CLOCK_MONOTONIC` ns) taken together.
    Calibration = 5,
    /// The footer: events u64, threads u32, buffer stalls u64. Only a rank that finished
    /// recording writes it.
    Footer = 6,
    /// An in-flight dump: the calls the rank's threads were inside when it was told to
    /// dump or found itself stalled (see [`inflight`]).
    InFlight = 7,
    /// Buffer names bound to address ranges (see [`buffers`]).
    Bindings = 8,
    /// Watches of completed requests' buffers and how they ended (see [`learned`]).
    Learned = 9,
    /// What the recorder counted besides the calls it recorded, since the rank began
    /// (see [`counts`]): the last such frame holds the totals.
    CallCounts = 10,
    /// Call paths first used since the last such frame (see [`paths`]).
    CallPaths = 11,
}

impl FrameKind {
    fn from_byte(b: u8) -> Option<FrameKind> {
        Some(match b {
            1 => FrameKind::Header,
            2 => FrameKind::Clock,
            3 => FrameKind::Thread,
            4 => FrameKind::Events,
            5 => FrameKind::Calibration,
            6 => FrameKind::Footer,
            7 => FrameKind::InFlight,
            8 => FrameKind::Bindings,
            9 => FrameKind::Learned,
            10 => FrameKind::CallCounts,
            11 => FrameKind::CallPaths,
            _ => return None,
        })
    }
}

/// What a stamp counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum StampClock {
    /// Nanoseconds of `CLOCK_MONOTONIC` since the header's epoch.
    Monotonic = 0,
    /// Time-stamp counter ticks, converted with the file's calibration readings.
    Tsc = 1,
}

/// The little-endian u32 at byte `at` of `b` (which the caller checked is long enough).
pub(super) fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// The little-endian u64 at byte `at` of `b` (which the caller checked is long enough).
pub(super) fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The checksum of a frame's payload: the 64-bit state starts as the length xor a
/// constant, takes each 8-byte little-endian word (the last one padded with zeros) as
/// `state = (state.rotate_left(5) ^ word) * K`, and is folded to 32 bits at the end.
/// It catches torn and overwritten pages, at a small fraction of the cost of copying them.
pub fn checksum(payload: &[u8]) -> u32 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = payload.len() as u64 ^ 0x9e37_79b9_7f4a_7c15;
    let mut words = payload.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(K);
    }
    (h ^ (h >> 32)) as u32
}

#[cfg(test)]
mod cut_tests;
#[cfg(test)]
mod tests;
