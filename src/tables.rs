//! `overlap analyze --csv/--parquet`: the figures behind the report written as tables
//! ([`overlap_analyzer::tables`]), when this build has them (the feature `tables`, on
//! by default; `make demo` builds without it, polars being two thirds of a release
//! build). A build without them refuses the options before any analysis starts.

#[cfg(feature = "tables")]
use std::path::Path;
use std::path::PathBuf;

use anyhow::Result;
use overlap_analyzer::analysis::{Details, Report, Rows};
use overlap_analyzer::model::Trace;

/// Fails, before the analysis, when tables are asked for of a build without them.
pub(crate) fn check_built(csv: &Option<PathBuf>, parquet: &Option<PathBuf>) -> Result<()> {
    check(cfg!(feature = "tables"), csv, parquet)
}

/// [`check_built`] of a build that has the tables (`built`) or not.
fn check(built: bool, csv: &Option<PathBuf>, parquet: &Option<PathBuf>) -> Result<()> {
    if built || (csv.is_none() && parquet.is_none()) {
        return Ok(());
    }
    anyhow::bail!(
        "--csv and --parquet need the tables, and this overlap was built without them \
         (the cargo feature `tables`; `make demo` leaves it out to build in minutes): \
         `cargo build --release -p overlap` builds them"
    )
}

/// Writes every table of the run to the directories asked for, CSV and Parquet.
#[cfg(feature = "tables")]
pub(crate) fn write(
    trace: &Trace,
    report: &Report,
    details: &Details,
    csv: &Option<PathBuf>,
    parquet: &Option<PathBuf>,
) -> Result<()> {
    use overlap_analyzer::tables::{tables, write_tables};

    // Each table is made once, written to both directories, and dropped.
    let outputs = outputs(csv, parquet);
    let written = write_tables(&tables(trace, report, details), &outputs)?;
    say_written(&outputs, written);
    Ok(())
}

/// The directories asked for, each with its format.
#[cfg(feature = "tables")]
fn outputs<'a>(
    csv: &'a Option<PathBuf>,
    parquet: &'a Option<PathBuf>,
) -> Vec<(&'a Path, overlap_analyzer::tables::TableFormat)> {
    use overlap_analyzer::tables::TableFormat;
    [(csv, TableFormat::Csv), (parquet, TableFormat::Parquet)]
        .into_iter()
        .filter_map(|(dir, format)| Some((dir.as_deref()?, format)))
        .collect()
}

/// Says how many tables went to each output.
#[cfg(feature = "tables")]
fn say_written<F>(outputs: &[(&Path, F)], written: Vec<Vec<PathBuf>>) {
    use crate::output::sayln;
    for ((dir, _), files) in outputs.iter().zip(written) {
        sayln!("wrote {} tables to {}", files.len(), dir.display());
    }
}

/// The tables of a run analysed in parts ([`overlap_analyzer::tables::TableStream`]):
/// the large ones written as the parts are analysed, the others once the report is made;
/// every file committed by [`Stream::finish`], or none.
pub(crate) struct Stream {
    #[cfg(feature = "tables")]
    tables: overlap_analyzer::tables::TableStream,
    #[cfg(feature = "tables")]
    dirs: Vec<PathBuf>,
}

impl Stream {
    /// The tables asked for (none: `None`), about to be written as a run is analysed in
    /// parts; the directories missing are made now.
    pub(crate) fn start(
        csv: &Option<PathBuf>,
        parquet: &Option<PathBuf>,
    ) -> Result<Option<Stream>> {
        check_built(csv, parquet)?;
        #[cfg(feature = "tables")]
        {
            let outputs = outputs(csv, parquet);
            if outputs.is_empty() {
                return Ok(None);
            }
            let tables = overlap_analyzer::tables::TableStream::new(&outputs)?;
            let dirs = outputs.iter().map(|(d, _)| d.to_path_buf()).collect();
            Ok(Some(Stream { tables, dirs }))
        }
        #[cfg(not(feature = "tables"))]
        Ok(None)
    }

    /// Where the analysis gives the rows.
    pub(crate) fn rows(&mut self) -> Rows<'_> {
        #[cfg(feature = "tables")]
        return Some(&mut self.tables);
        #[cfg(not(feature = "tables"))]
        None
    }

    /// Writes the rest of the tables, of the run's report `report`, and commits them all.
    pub(crate) fn finish(self, report: &Report) -> Result<()> {
        #[cfg(feature = "tables")]
        {
            let written = self.tables.finish(report)?;
            let outputs: Vec<(&Path, ())> = self.dirs.iter().map(|d| (d.as_path(), ())).collect();
            say_written(&outputs, written);
        }
        #[cfg(not(feature = "tables"))]
        let _ = report;
        Ok(())
    }
}

/// The tables' rows that a worker of a job but worker 0 makes of its block, for worker 0
/// to write ([`overlap_analyzer::tables::RowRecorder`]).
pub(crate) struct Recorder {
    #[cfg(feature = "tables")]
    rows: overlap_analyzer::tables::RowRecorder,
}

impl Recorder {
    /// A recorder of the rows of the tables asked for (none: `None`), made as worker 0
    /// writes them (the same options: CSV text for its CSV files, rows for its Parquet).
    pub(crate) fn start(
        csv: &Option<PathBuf>,
        parquet: &Option<PathBuf>,
    ) -> Result<Option<Recorder>> {
        check_built(csv, parquet)?;
        #[cfg(feature = "tables")]
        let recorder = {
            let formats: Vec<_> = outputs(csv, parquet).into_iter().map(|o| o.1).collect();
            (!formats.is_empty()).then(|| Recorder {
                rows: overlap_analyzer::tables::RowRecorder::new(&formats),
            })
        };
        #[cfg(not(feature = "tables"))]
        let recorder = None;
        Ok(recorder)
    }

    /// Where the analysis gives the rows.
    pub(crate) fn rows(&mut self) -> Rows<'_> {
        #[cfg(feature = "tables")]
        return Some(&mut self.rows);
        #[cfg(not(feature = "tables"))]
        None
    }
}

/// [`check_built`] refused the options before any analysis: nothing to write.
#[cfg(not(feature = "tables"))]
pub(crate) fn write(
    _: &Trace,
    _: &Report,
    _: &Details,
    csv: &Option<PathBuf>,
    parquet: &Option<PathBuf>,
) -> Result<()> {
    check_built(csv, parquet)
}

#[cfg(test)]
mod tests {
    use super::{check, check_built};
    use std::path::PathBuf;

    /// Without --csv or --parquet nothing is refused; with one, a build without the
    /// tables refuses it, naming the feature and the command that builds it, and a build
    /// with them takes it. This build answers as its features say.
    #[test]
    fn tables_asked_of_a_build_without_them_are_refused_by_name() {
        assert!(check(false, &None, &None).is_ok());
        let dir = Some(PathBuf::from("t"));
        for (csv, parquet) in [(&dir, &None), (&None, &dir)] {
            assert!(check(true, csv, parquet).is_ok());
            let e = check(false, csv, parquet).expect_err("refused").to_string();
            assert!(
                e.contains("feature `tables`") && e.contains("cargo build"),
                "{e}"
            );
            let here = check_built(csv, parquet);
            assert_eq!(here.is_ok(), cfg!(feature = "tables"));
        }
    }
}
