//! Which format a merged trace is written in: the `--format` option of `merge`, `trace`
//! and `run`, and the output's name. Kept apart so the three commands agree: the name's
//! extension chooses (`.pftrace` Perfetto's protobuf, `.json` Chrome JSON), `--format`
//! names it when the name does not, and the two must not contradict each other.

use std::path::Path;

use anyhow::{bail, Result};
use clap::ValueEnum;
use overlap_analyzer::merge::TraceFormat;

/// `--format`: the merged trace's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    /// Chrome Trace Event JSON: what `overlap analyze`, `tui`, `diff` and `check` read.
    Json,
    /// Perfetto's protobuf trace: for the Perfetto UI and trace_processor, a fraction of
    /// the JSON's size.
    Pftrace,
}

impl FormatArg {
    fn format(self) -> TraceFormat {
        match self {
            FormatArg::Json => TraceFormat::Json,
            FormatArg::Pftrace => TraceFormat::Pftrace,
        }
    }
}

/// The format of a new default output: `--format`'s, else protobuf.
pub(crate) fn default_format(flag: Option<FormatArg>) -> TraceFormat {
    flag.map_or(TraceFormat::Pftrace, FormatArg::format)
}

/// The format `out` is written in: what its name says, or `--format` for a name that
/// says neither; a flag that contradicts the name is an error.
pub(crate) fn format_of(out: &Path, flag: Option<FormatArg>) -> Result<TraceFormat> {
    let by_name = TraceFormat::of_path(out);
    let named_json = out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    match flag.map(FormatArg::format) {
        None => Ok(by_name),
        Some(f) if f == by_name && (f == TraceFormat::Pftrace || named_json) => Ok(f),
        Some(TraceFormat::Pftrace) if !named_json => Ok(TraceFormat::Pftrace),
        Some(TraceFormat::Json) if !named_json && by_name == TraceFormat::Json => {
            Ok(TraceFormat::Json)
        }
        Some(f) => bail!(
            "--format {} but {} is named as a {} file: name it *.{} or leave --format out",
            f.extension(),
            out.display(),
            by_name.extension(),
            f.extension()
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_name_chooses_and_the_flag_must_agree() {
        let f = |p: &str, flag| format_of(Path::new(p), flag);
        assert_eq!(f("a.pftrace", None).unwrap(), TraceFormat::Pftrace);
        assert_eq!(f("a.json", None).unwrap(), TraceFormat::Json);
        assert_eq!(f("a.trace", None).unwrap(), TraceFormat::Json);
        assert_eq!(
            f("a.trace", Some(FormatArg::Pftrace)).unwrap(),
            TraceFormat::Pftrace
        );
        assert_eq!(
            f("a.json", Some(FormatArg::Json)).unwrap(),
            TraceFormat::Json
        );
        let err = f("a.json", Some(FormatArg::Pftrace))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--format pftrace but a.json is named as a json file: name it *.pftrace or leave \
             --format out"
        );
        assert!(f("a.pftrace", Some(FormatArg::Json)).is_err());
    }
}
