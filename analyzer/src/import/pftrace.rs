//! A Perfetto protobuf trace (`.pftrace`) given where a merged JSON or a rank directory
//! is read: the analysis does not read it (it is the Perfetto UI's format, and carries
//! the events but not the run's compact columns), so it is refused with the way to the
//! files that do hold the run.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use overlap_format::pftrace::TraceFormat;

use crate::{Error, Result};

/// True when `head`, a file's first bytes, opens a protobuf trace as overlap writes it:
/// a `Trace.packet` field (tag `0x0a`), its length, then a `TracePacket` starting with
/// its sequence id (`0x50`) or its timestamp (`0x40`).
fn opens_as_protobuf(head: &[u8]) -> bool {
    let Some((&0x0a, rest)) = head.split_first() else {
        return false;
    };
    let len_bytes = rest.iter().take_while(|b| **b & 0x80 != 0).count() + 1;
    matches!(rest.get(len_bytes), Some(0x50 | 0x40))
}

/// Fails with a clear answer when `path` (opened as `file`) is a protobuf trace, named
/// so or starting as one; otherwise leaves `file` at its start.
pub(crate) fn refuse_protobuf<F: Read + Seek>(path: &Path, file: &mut F) -> Result<()> {
    let mut head = [0u8; 16];
    let n = file.read(&mut head).map_err(|cause| Error::Io {
        what: "reading",
        path: path.to_path_buf(),
        cause,
    })?;
    file.seek(SeekFrom::Start(0)).map_err(|cause| Error::Io {
        what: "reading",
        path: path.to_path_buf(),
        cause,
    })?;
    if TraceFormat::of_path(path) != TraceFormat::Pftrace && !opens_as_protobuf(&head[..n]) {
        return Ok(());
    }
    let ranks = path.with_extension("ranks");
    let where_ = match ranks.is_dir() {
        true => format!("its rank directory {}", ranks.display()),
        false => "the rank directory it was merged from (`overlap merge DIR --out ...`)".into(),
    };
    Err(Error::NotATrace {
        path: path.to_path_buf(),
        reason: format!(
            "a Perfetto protobuf trace, for the Perfetto UI (https://ui.perfetto.dev) and \
             trace_processor; overlap's analysis reads {where_}, or a merged .json \
             (`overlap merge DIR --out run.json`)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protobuf_openings_are_told_from_json() {
        assert!(opens_as_protobuf(&[0x0a, 0x10, 0x50, 0x01]));
        assert!(opens_as_protobuf(&[0x0a, 0x90, 0x01, 0x40, 0x01]));
        assert!(!opens_as_protobuf(b"{\"otherData\""));
        assert!(!opens_as_protobuf(b"\n{\"otherData\""));
        assert!(!opens_as_protobuf(b""));
    }
}
