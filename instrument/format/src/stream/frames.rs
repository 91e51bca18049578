//! A stream's frames, checked one by one: the length, kind and checksum of each, and
//! where they stop being readable (a frame cut short by a writer that was cut off, or
//! damage). The frames' contents are read by [`super::read`].

use super::read::Problem;
use super::{checksum, le_u32, FrameKind, FILE_HEADER_LEN, FRAME_HEADER_LEN, FRAME_MAX};

/// One frame of a stream.
pub(super) struct Frame<'a> {
    pub(super) offset: usize,
    pub(super) kind: FrameKind,
    pub(super) tid: u32,
    pub(super) payload: &'a [u8],
    /// The last frame, cut short: its payload is what is there, its records unchecked.
    pub(super) torn: bool,
}

/// How the frames of a file end before the file does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FramesEnd {
    /// With the file, or cut off (the writer stopped, maybe mid-frame).
    Whole,
    /// At a frame that fails its checksum or is no frame: what follows is corrupt.
    Damaged,
}

/// Splits the file into frames, up to the first that is cut short or corrupt.
pub(super) fn frames<'a>(
    bytes: &'a [u8],
    problems: &mut Vec<Problem>,
) -> (Vec<Frame<'a>>, FramesEnd) {
    let mut out = Vec::new();
    let mut at = FILE_HEADER_LEN;
    while at < bytes.len() {
        let left = bytes.len() - at;
        let problem = |reason: String| Problem {
            offset: at as u64,
            event_index: 0,
            reason,
        };
        if left < FRAME_HEADER_LEN {
            problems.push(problem(format!(
                "the file ends {left} byte(s) into a frame header (the writer was cut off)"
            )));
            break;
        }
        let len = le_u32(bytes, at) as usize;
        let kind = FrameKind::from_byte(bytes[at + 4]);
        let reserved_ok = bytes[at + 5..at + 8] == [0, 0, 0];
        let Some(kind) = kind.filter(|_| reserved_ok && len <= FRAME_MAX) else {
            problems.push(problem(format!(
                "not a frame header (kind byte {}, length {len}): the rest of the file is \
                 not readable",
                bytes[at + 4]
            )));
            return (out, FramesEnd::Damaged);
        };
        if left - FRAME_HEADER_LEN < len {
            let there = left - FRAME_HEADER_LEN;
            if kind == FrameKind::Events {
                // The writer was cut off in the middle of a page of events (killed, or
                // the disk full): the records whole in what is there are as written.
                problems.push(problem(format!(
                    "the last frame is cut short: {there} of its {len} bytes are there (the \
                     writer was cut off); the records whole in it are kept, unchecked (a \
                     cut frame has no checksum)"
                )));
                out.push(Frame {
                    offset: at,
                    kind,
                    tid: le_u32(bytes, at + 8),
                    payload: &bytes[at + FRAME_HEADER_LEN..],
                    torn: true,
                });
            } else {
                problems.push(problem(format!(
                    "the last frame is cut short: {there} of its {len} bytes are there (the \
                     writer was cut off); it is left out"
                )));
            }
            break;
        }
        let payload = &bytes[at + FRAME_HEADER_LEN..at + FRAME_HEADER_LEN + len];
        if checksum(payload) != le_u32(bytes, at + 12) {
            let last = at + FRAME_HEADER_LEN + len == bytes.len();
            if last {
                problems.push(problem(
                    "the last frame fails its checksum (torn while being written); it is left \
                     out"
                    .to_string(),
                ));
                break;
            }
            problems.push(problem(
                "a frame fails its checksum: the file is corrupt from here on, and the rest \
                 of it (its footer with it) is not readable"
                    .to_string(),
            ));
            return (out, FramesEnd::Damaged);
        }
        out.push(Frame {
            offset: at,
            kind,
            tid: le_u32(bytes, at + 8),
            payload,
            torn: false,
        });
        at += FRAME_HEADER_LEN + len;
    }
    (out, FramesEnd::Whole)
}
