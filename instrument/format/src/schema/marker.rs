//! The dump marker: the small file through which a rank tells `overlap trace` that it
//! wrote an in-flight dump. Beside `rank-N.ovlp` in the trace directory, `rank-N.dump`
//! holds one line, `signal <unix_ns>` or `stalled <unix_ns>` (the dump's
//! [`DumpReason`] and its wall-clock time); it is written as `rank-N.dump.tmp` and
//! renamed, so a reader never sees half of it. The recorder writes it, the launcher
//! reads it: both through this module.

use std::path::{Path, PathBuf};

use super::DumpReason;

/// The marker's extension.
pub const DUMP_MARKER_EXTENSION: &str = "dump";

/// The marker of the rank file `rank_file` (`rank-N.ovlp` gives `rank-N.dump`).
pub fn marker_path(rank_file: &Path) -> PathBuf {
    rank_file.with_extension(DUMP_MARKER_EXTENSION)
}

/// The temporary file a marker is written to before it is renamed.
pub fn marker_temp_path(marker: &Path) -> PathBuf {
    marker.with_extension(format!("{DUMP_MARKER_EXTENSION}.tmp"))
}

/// The marker's content.
pub fn marker_line(reason: DumpReason, unix_ns: u64) -> String {
    format!("{} {unix_ns}\n", reason.word())
}

/// The reason and time a marker says (`None` for anything else).
pub fn parse_marker(text: &str) -> Option<(DumpReason, u64)> {
    let mut words = text.split_whitespace();
    let reason = match words.next()? {
        w if w == DumpReason::Signal.word() => DumpReason::Signal,
        w if w == DumpReason::Stalled.word() => DumpReason::Stalled,
        _ => return None,
    };
    Some((reason, words.next()?.parse().ok()?))
}

/// True when `name` is a marker, `rank-N.dump`, or one of its temporary files
/// (`rank-N.dump.` followed by anything).
pub fn is_marker_file_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("rank-") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Some(tail) = rest[digits..].strip_prefix('.') else {
        return false;
    };
    digits > 0
        && tail
            .strip_prefix(DUMP_MARKER_EXTENSION)
            .is_some_and(|t| t.is_empty() || t.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_line_reads_back() {
        for reason in [DumpReason::Signal, DumpReason::Stalled] {
            let line = marker_line(reason, 1_700_000_000_123);
            assert_eq!(parse_marker(&line), Some((reason, 1_700_000_000_123)));
        }
        assert_eq!(marker_line(DumpReason::Stalled, 17), "stalled 17\n");
        assert_eq!(parse_marker(""), None);
        assert_eq!(parse_marker("stall 1"), None);
        assert_eq!(parse_marker("signal"), None);
    }

    #[test]
    fn marker_names_and_paths() {
        let m = marker_path(Path::new("d/rank-3.ovlp"));
        assert_eq!(m, Path::new("d/rank-3.dump"));
        assert_eq!(marker_temp_path(&m), Path::new("d/rank-3.dump.tmp"));
        assert!(is_marker_file_name("rank-0.dump"));
        assert!(is_marker_file_name("rank-12.dump.tmp"));
        assert!(!is_marker_file_name("rank-.dump"));
        assert!(!is_marker_file_name("rank-1.dumpx"));
        assert!(!is_marker_file_name("rank-1.ovlp"));
    }
}
