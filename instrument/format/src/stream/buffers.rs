//! The bytes behind compute spans' buffers: the names of a buffers definition (record
//! tag 53, see [`super::codec`]), and the bindings frame, which gives each name its
//! address range from a time on.
//!
//! Bindings are per rank (one address space), rare (once per buffer, again when it
//! moves) and needed before any span that names them can be resolved, so they travel in
//! frames of their own, which a reader collects before it reads the events (as it does
//! the calibration readings), rather than among one thread's records.
//!
//! ```text
//! names    := (len var | len bytes of UTF-8)*            reads first, then writes
//! bindings := (at u64 | addr u64 | len u64 | name_len u16 | name_len bytes)*   LE
//! ```

use super::convert::Converter;
use super::read::{Frame, Problem};
use super::varint::{DecodeError, Reader};
use super::FrameKind;
use crate::schema::{Binding, Bindings};

/// Most names a compute span may list as read, and as written.
pub const BUFFER_NAMES_MAX: usize = 16;

/// Longest buffer name, in bytes.
pub const BUFFER_NAME_MAX: usize = 255;

/// Most bytes the names of one buffers definition take.
pub const BUFFER_NAMES_BYTES_MAX: usize = 2 * BUFFER_NAMES_MAX * (BUFFER_NAME_MAX + 2);

/// The names part of a buffers definition. Names are written as they are: the caller
/// keeps them within [`BUFFER_NAME_MAX`] bytes and [`BUFFER_NAMES_MAX`] a list.
pub fn names_bytes<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
    let mut out = Vec::new();
    for n in names {
        let mut len = n.len() as u64;
        while len >= 0x80 {
            out.push(len as u8 | 0x80);
            len >>= 7;
        }
        out.push(len as u8);
        out.extend_from_slice(n.as_bytes());
    }
    out
}

/// The `reads` then `writes` names of a buffers definition's bytes; `None` when the
/// bytes do not hold exactly that many names of valid UTF-8.
pub(super) fn names(
    bytes: &[u8],
    reads: usize,
    writes: usize,
) -> Option<(Vec<String>, Vec<String>)> {
    let mut r = Reader::new(bytes);
    let mut take = |n: usize| -> Option<Vec<String>> {
        (0..n)
            .map(|_| {
                let len = r.var().ok()?;
                if len > BUFFER_NAME_MAX as u64 {
                    return None;
                }
                let b = r.take(len as usize).ok()?;
                std::str::from_utf8(b).ok().map(str::to_string)
            })
            .collect()
    };
    let reads = take(reads)?;
    let writes = take(writes)?;
    r.is_empty().then_some((reads, writes))
}

/// One binding as the stream holds it: the stamp it was made at (in the file's clock),
/// the address range, and the name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawBinding {
    /// Stamp.
    pub at: u64,
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// The name.
    pub name: String,
}

/// Appends one binding to a bindings frame's payload (a name longer than
/// [`BUFFER_NAME_MAX`] is cut at a character boundary).
pub fn push_binding(out: &mut Vec<u8>, at: u64, addr: u64, len: u64, name: &str) {
    let mut cut = name.len().min(BUFFER_NAME_MAX);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&addr.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(cut as u16).to_le_bytes());
    out.extend_from_slice(&name.as_bytes()[..cut]);
}

/// The bindings of a frame's payload, or why it cannot be read (all or nothing: the
/// frame passed its checksum, so a bad one was never written by overlap).
pub fn decode_bindings(payload: &[u8]) -> Result<Vec<RawBinding>, String> {
    let mut r = Reader::new(payload);
    let mut out = Vec::new();
    let bad = |e: DecodeError| format!("a bindings frame is cut inside a binding ({e:?})");
    while !r.is_empty() {
        let fixed = r.take(26).map_err(bad)?;
        let le = |at: usize| super::le_u64(fixed, at);
        let n = u16::from_le_bytes([fixed[24], fixed[25]]) as usize;
        let name = r.take(n).map_err(bad)?;
        let name = std::str::from_utf8(name).map_err(|_| {
            "a bindings frame names a buffer in bytes that are not UTF-8".to_string()
        })?;
        out.push(RawBinding {
            at: le(0),
            addr: le(8),
            len: le(16),
            name: name.to_string(),
        });
    }
    Ok(out)
}
/// Every binding of the file's bindings frames, their stamps converted. A frame that
/// cannot be read is reported; the others still count.
pub(super) fn collect(
    frames: &[Frame<'_>],
    converter: &Converter,
    problems: &mut Vec<Problem>,
) -> Bindings {
    let mut all = Vec::new();
    for f in frames.iter().filter(|f| f.kind == FrameKind::Bindings) {
        match decode_bindings(f.payload) {
            Ok(raw) => all.extend(raw.into_iter().map(|b| Binding {
                name: b.name,
                at: converter.nanos(b.at),
                addr: b.addr,
                len: b.len,
            })),
            Err(reason) => problems.push(Problem {
                offset: f.offset as u64,
                event_index: 0,
                reason,
            }),
        }
    }
    Bindings::new(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let b = names_bytes(["halo_l", "x", "sendbuf"]);
        assert_eq!(b[0], 6);
        let (r, w) = names(&b, 2, 1).expect("names");
        assert_eq!(
            (r, w),
            (vec!["halo_l".into(), "x".into()], vec!["sendbuf".into()])
        );
        assert_eq!(names(&b, 1, 1), None, "bytes left over");
        assert_eq!(names(&b, 2, 2), None, "a name missing");
    }

    #[test]
    fn bindings_round_trip_and_a_cut_frame_is_refused() {
        let mut p = Vec::new();
        push_binding(&mut p, 7, 0x1000, 64, "data");
        push_binding(&mut p, 9, 0x2000, 8, "é");
        let got = decode_bindings(&p).expect("bindings");
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].at, got[0].addr, got[0].len), (7, 0x1000, 64));
        assert_eq!((got[1].name.as_str(), got[1].addr), ("é", 0x2000));
        assert!(decode_bindings(&p[..p.len() - 1]).is_err());
        let mut long = Vec::new();
        push_binding(&mut long, 0, 0, 0, &"a".repeat(300));
        assert_eq!(
            decode_bindings(&long).expect("cut")[0].name.len(),
            BUFFER_NAME_MAX
        );
    }
}
