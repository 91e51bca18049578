//! Building the bytes of a stream: the file's opening and frames. The recorder's writer
//! thread appends frames to a page buffer and hands the bytes to its file; nothing here
//! looks inside the records.

use super::{checksum, FrameKind, FILE_HEADER_LEN, FRAME_HEADER_LEN, MAGIC};
use crate::schema::{Footer, Header, FORMAT_VERSION};

/// The opening of a file: magic, version, and the header frame.
pub fn file_start(header: &Header) -> Vec<u8> {
    let json = serde_json::to_vec(header).unwrap_or_default();
    let mut out = Vec::with_capacity(FILE_HEADER_LEN + FRAME_HEADER_LEN + json.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    frame(&mut out, FrameKind::Header, 0, &[&json]);
    out
}

/// Appends a frame of `kind` for thread `tid` to `out`, its payload the concatenation
/// of `parts`.
pub fn frame(out: &mut Vec<u8>, kind: FrameKind, tid: u32, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let at = out.len();
    out.reserve(FRAME_HEADER_LEN + len);
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&[kind as u8, 0, 0, 0]);
    out.extend_from_slice(&tid.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    for p in parts {
        out.extend_from_slice(p);
    }
    let sum = checksum(&out[at + FRAME_HEADER_LEN..]);
    out[at + 12..at + 16].copy_from_slice(&sum.to_le_bytes());
}

/// The payload of a calibration frame.
pub fn calibration_payload(readings: &[(u64, u64)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(readings.len() * 16);
    for (tsc, mono) in readings {
        out.extend_from_slice(&tsc.to_le_bytes());
        out.extend_from_slice(&mono.to_le_bytes());
    }
    out
}

/// The payload of the footer frame.
pub fn footer_payload(footer: &Footer) -> [u8; 20] {
    let mut out = [0u8; 20];
    out[..8].copy_from_slice(&footer.events.to_le_bytes());
    out[8..12].copy_from_slice(&footer.threads.to_le_bytes());
    out[12..].copy_from_slice(&footer.buffer_stalls.to_le_bytes());
    out
}
