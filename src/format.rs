//! How a merged trace is written: its format (the `--format` option of `merge`,
//! `trace` and `run`, and the output's name) and the part of the run (`merge --from
//! --to --ranks`). Kept apart so the three commands agree: the name's extension chooses
//! (`.pftrace` Perfetto's protobuf, `.json` Chrome JSON), `--format` names it when the
//! name does not, and the two must not contradict each other.

use std::path::Path;

use anyhow::{bail, Result};
use clap::ValueEnum;
use overlap_analyzer::merge::TraceFormat;
use overlap_instrument::schema::Nanos;

/// `--format`: the merged trace's format. (Its values have no doc comments: clap would
/// list them with their help, and lay out every option of the command on two lines.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    // Chrome Trace Event JSON: what `overlap analyze`, `tui`, `diff` and `check` read.
    Json,
    // Perfetto's protobuf trace: for the Perfetto UI and trace_processor, a fraction of
    // the JSON's size.
    Pftrace,
    // An OTF2 archive (`merge` only): for Vampir, Scalasca and Score-P's tools.
    Otf2,
}

impl FormatArg {
    fn format(self) -> TraceFormat {
        match self {
            FormatArg::Json => TraceFormat::Json,
            // Only `merge` writes OTF2 ([`wants_otf2`]); elsewhere `format_of` refuses it.
            FormatArg::Pftrace | FormatArg::Otf2 => TraceFormat::Pftrace,
        }
    }
}

/// True when `merge` is to write an OTF2 archive: `--format otf2`, or an `--out` named
/// `*.otf2` (the archive's anchor file).
pub(crate) fn wants_otf2(out: &Path, flag: Option<FormatArg>) -> bool {
    flag == Some(FormatArg::Otf2) || overlap_analyzer::import::otf2::is_anchor(out)
}

/// The format of a new default output: `--format`'s, else protobuf.
pub(crate) fn default_format(flag: Option<FormatArg>) -> TraceFormat {
    flag.map_or(TraceFormat::Pftrace, FormatArg::format)
}

/// The format `out` is written in: what its name says, or `--format` for a name that
/// says neither; a flag that contradicts the name is an error.
pub(crate) fn format_of(out: &Path, flag: Option<FormatArg>) -> Result<TraceFormat> {
    if wants_otf2(out, flag) {
        bail!(
            "an OTF2 archive is written from a run's rank directory by `overlap merge DIR \
             --format otf2 --out OUT`; here write .pftrace or .json"
        );
    }
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

/// A time of `--from`/`--to`: from the run's start, with its unit (`1.5s`, `200ms`,
/// `30us`, `100ns`; a bare number is refused, as every duration is).
pub(crate) fn parse_time(text: &str) -> std::result::Result<Nanos, String> {
    crate::units::parse_duration_ns(text).map(|ns| Nanos(ns.round() as u64))
}

/// The ranks `--ranks` lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RankList(pub(crate) Vec<u32>);

/// A list of ranks and ranges of `--ranks`: `0-15,64` (clap's error names the option
/// and the whole value before the reason).
pub(crate) fn parse_ranks(text: &str) -> std::result::Result<RankList, String> {
    overlap_analyzer::window::parse_rank_list(text).map(RankList)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ranks_and_times_parse() {
        assert_eq!(parse_ranks("0-3,64").unwrap().0, vec![0, 1, 2, 3, 64]);
        assert_eq!(parse_ranks("5").unwrap().0, vec![5]);
        assert!(parse_ranks("3-1").unwrap_err().contains("not a range"));
        assert!(parse_ranks("a").unwrap_err().contains("not a rank"));
        assert!(parse_ranks("").is_err());
        assert_eq!(parse_time("1.5ms").unwrap(), Nanos(1_500_000));
        assert!(
            parse_time("200").unwrap_err().contains("needs its unit"),
            "a bare number is refused"
        );
        assert_eq!(parse_time("200ns").unwrap(), Nanos(200));
        assert!(parse_time("-1s").is_err());
    }

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
        // OTF2 archives are `merge`'s alone.
        assert!(wants_otf2(Path::new("run.otf2"), None));
        assert!(wants_otf2(Path::new("run"), Some(FormatArg::Otf2)));
        assert!(!wants_otf2(Path::new("run.json"), None));
        let err = f("run.otf2", None).unwrap_err().to_string();
        assert!(err.contains("overlap merge DIR --format otf2"), "{err}");
        assert!(f("run.pftrace", Some(FormatArg::Otf2)).is_err());
    }
}
