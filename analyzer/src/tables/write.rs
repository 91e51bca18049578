//! A run's tables written as files: each table made, written to every directory asked for
//! (CSV, Parquet), and dropped before the next is made, so that writing holds one table
//! at a time; every file of every directory committed together, or none.

use std::io::Write;
use std::path::{Path, PathBuf};

use overlap_format::output::{commit_all, AtomicFile};
use polars::io::{csv::write as csv, parquet::write as parquet};
use polars::prelude::{CsvWriter, DataFrame, ParquetWriter, PolarsResult, SerWriter};

use super::parts::{Part, Tables};
use super::TableFormat;
use crate::{Error, Result};

/// Writes each table of `tables` as `DIR/<name>.<csv|parquet>` for each directory and
/// format of `outputs`; returns the files written, by output.
pub fn write_tables(
    tables: &Tables,
    outputs: &[(&Path, TableFormat)],
) -> Result<Vec<Vec<PathBuf>>> {
    let _span = tracing::info_span!("write tables").entered();
    let made = make_dirs(outputs)?;
    let written = write_all_tables(tables, outputs, ROWS);
    if written.is_err() {
        remove(&made);
    }
    written
}

/// Makes the directories of `outputs` that are missing, never their parents (a mistyped
/// path is an error, not a new tree); returns those it made, which go again when no
/// table is written ([`remove`]).
pub(super) fn make_dirs<'o>(outputs: &[(&'o Path, TableFormat)]) -> Result<Vec<&'o Path>> {
    let mut made = Vec::new();
    for (dir, _) in outputs {
        if !dir.is_dir() {
            let made_now = std::fs::create_dir(dir).map_err(|source| Error::Io {
                what: "creating the table directory",
                path: dir.to_path_buf(),
                cause: source,
            });
            if let Err(e) = made_now {
                remove(&made);
                return Err(e);
            }
            made.push(*dir);
        }
    }
    Ok(made)
}

/// Removes the directories made for tables none of which was written (empty: a table
/// not committed leaves no file).
pub(super) fn remove(made: &[&Path]) {
    for dir in made {
        let _ = std::fs::remove_dir(dir);
    }
}

/// The most rows of a table made at a time: a table of a row per call or per request is
/// made and written this many rows at a time. Polars writes a whole table's Parquet in
/// row groups of this many rows: parts of the same size make the same file.
pub(super) const ROWS: usize = 512 * 512;

/// Writes the tables into every output, all of them or none, the large ones
/// `rows_per_part` rows at a time.
fn write_all_tables(
    tables: &Tables,
    outputs: &[(&Path, TableFormat)],
    rows_per_part: usize,
) -> Result<Vec<Vec<PathBuf>>> {
    // All the tables or none: a full disk leaves no table of this run beside the old
    // ones of another.
    let mut written = vec![Vec::new(); outputs.len()];
    let mut files = Vec::new();
    for part in tables.parts() {
        // A table of a row per call or per request is made in parts of rows.
        let (Some(rows), Some(name)) = (tables.rows(part), part.name()) else {
            for (name, mut df) in tables.make(part, 0..0)? {
                for ((dir, format), paths) in outputs.iter().zip(&mut written) {
                    let path = dir.join(format!("{name}.{}", format.extension()));
                    files.push(write_table(&mut df, &path, *format)?);
                    paths.push(path);
                }
                // The table is dropped here, before the next is made.
            }
            continue;
        };
        // Made and written a part of its rows at a time (a header for none).
        let mut open: Vec<(AtomicFile, PathBuf)> = Vec::with_capacity(outputs.len());
        for (dir, format) in outputs {
            let path = dir.join(format!("{name}.{}", format.extension()));
            open.push((AtomicFile::create(&path)?, path));
        }
        match write_in_rows(tables, (part, rows, rows_per_part), &mut open, outputs) {
            Ok(()) => {}
            Err(Failure::Table(e)) => return Err(e),
            Err(Failure::Writing(k, e)) => return Err(failed(&open[k].0, &open[k].1, e)),
        }
        for ((file, path), paths) in open.into_iter().zip(&mut written) {
            files.push(file);
            paths.push(path);
        }
    }
    commit_all(files)?;
    Ok(written)
}

/// `df` written to a file at `path`, not committed yet.
pub(super) fn write_table(
    df: &mut DataFrame,
    path: &Path,
    format: TableFormat,
) -> Result<AtomicFile> {
    let mut file = AtomicFile::create(path)?;
    let result = match format {
        TableFormat::Csv => CsvWriter::new(&mut file).finish(df),
        TableFormat::Parquet => ParquetWriter::new(&mut file).finish(df).map(|_| ()),
    };
    result.map_err(|e| failed(&file, path, e))?;
    Ok(file)
}

/// Why a table made in parts of rows was not written.
enum Failure {
    /// It could not be made.
    Table(Error),
    /// Writing to the `usize`-th file failed.
    Writing(usize, polars::error::PolarsError),
}

/// Makes `part` (`rows` rows) `per_part` rows at a time, and writes each part into
/// every file of `files` (one per output of `outputs`) before the next is made.
fn write_in_rows(
    tables: &Tables,
    (part, rows, per_part): (Part, usize, usize),
    files: &mut [(AtomicFile, PathBuf)],
    outputs: &[(&Path, TableFormat)],
) -> std::result::Result<(), Failure> {
    let formats = outputs.iter().map(|o| o.1);
    let mut writers: Vec<Writer<&mut AtomicFile>> = Vec::with_capacity(files.len());
    let mut files = Some(files);
    // One part at least: a table of no rows is its header.
    for from in (0..rows.max(1)).step_by(per_part.max(1)) {
        let to = from.saturating_add(per_part).min(rows);
        for (_, df) in tables.make(part, from..to).map_err(Failure::Table)? {
            // The writers take the schema of the first part.
            if let Some(files) = files.take() {
                for (k, ((file, _), format)) in files.iter_mut().zip(formats.clone()).enumerate() {
                    let writer = Writer::new(format, file, &df);
                    writers.push(writer.map_err(|e| Failure::Writing(k, e))?);
                }
            }
            for (k, w) in writers.iter_mut().enumerate() {
                w.write(&df).map_err(|e| Failure::Writing(k, e))?;
            }
        }
    }
    for (k, w) in writers.iter_mut().enumerate() {
        w.finish().map_err(|e| Failure::Writing(k, e))?;
    }
    Ok(())
}

/// A table's writer into one file, a part of its rows at a time.
pub(super) enum Writer<W: Write> {
    Csv(csv::BatchedWriter<W>),
    // Boxed: it is six times the CSV writer's size.
    Parquet(Box<parquet::BatchedWriter<W>>),
}

impl<W: Write> Writer<W> {
    /// A writer of `format` into `file`, of tables of `first`'s schema.
    pub(super) fn new(format: TableFormat, file: W, first: &DataFrame) -> PolarsResult<Writer<W>> {
        match format {
            TableFormat::Csv => CsvWriter::new(file)
                .batched(first.schema())
                .map(Writer::Csv),
            TableFormat::Parquet => ParquetWriter::new(file)
                .batched(first.schema())
                .map(|w| Writer::Parquet(Box::new(w))),
        }
    }

    /// Writes the rows of `df`.
    pub(super) fn write(&mut self, df: &DataFrame) -> PolarsResult<()> {
        match self {
            Writer::Csv(w) => w.write_batch(df),
            Writer::Parquet(w) => w.write_batch(df),
        }
    }

    /// Ends the file (Parquet's footer).
    pub(super) fn finish(&mut self) -> PolarsResult<()> {
        match self {
            Writer::Csv(w) => w.finish(),
            Writer::Parquet(w) => w.finish().map(|_| ()),
        }
    }
}

/// The error of a table not written to `file` at `path`: the disk's refusal when it
/// refused, said as an output not written; else polars' reason.
pub(super) fn failed(file: &AtomicFile, path: &Path, e: polars::error::PolarsError) -> Error {
    match file.write_error() {
        Some(cause) => Error::Output(file.error(cause)),
        None => Error::Table {
            reason: format!("{}: {e}", path.display()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyze;
    use polars::prelude::{ParquetReader, SerReader};

    /// A kept run's tables written a few rows at a time (parts of 7 rows, and of 1)
    /// are the tables written whole: the same CSV bytes, the same Parquet frames.
    #[test]
    fn tables_written_in_parts_are_the_tables_written_whole() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports/c-calls/ranks");
        let trace = crate::load::load_dir(&root, &mut |_, _| {})
            .expect("a kept run")
            .trace;
        let (report, details) = analyze(&trace, &Default::default());
        let tables = super::super::tables(&trace, &report, &details);
        let rows = tables.rows(Part::Calls).expect("calls made in parts");
        assert!(rows > 7, "{rows} calls");
        let write = |per_part| {
            let dir = tempfile::tempdir().expect("a directory");
            let (csv, pq) = (dir.path().join("csv"), dir.path().join("pq"));
            std::fs::create_dir(&csv).expect("csv");
            std::fs::create_dir(&pq).expect("pq");
            let outputs = [
                (csv.as_path(), TableFormat::Csv),
                (pq.as_path(), TableFormat::Parquet),
            ];
            let written = write_all_tables(&tables, &outputs, per_part).expect("written");
            let csv: Vec<(PathBuf, Vec<u8>)> = (written[0].iter())
                .map(|p| {
                    (
                        p.file_name().expect("a name").into(),
                        std::fs::read(p).expect("read"),
                    )
                })
                .collect();
            let pq: Vec<DataFrame> = (written[1].iter())
                .map(|p| {
                    let file = std::fs::File::open(p).expect("open");
                    ParquetReader::new(file).finish().expect("Parquet")
                })
                .collect();
            (csv, pq)
        };
        let whole = write(usize::MAX);
        // The calls table in one part is what polars writes of the whole frame.
        let dir = tempfile::tempdir().expect("a directory");
        let path = dir.path().join("calls.csv");
        let (_, mut frame) = tables.make(Part::Calls, 0..rows).expect("made").remove(0);
        write_table(&mut frame, &path, TableFormat::Csv)
            .expect("written")
            .commit()
            .expect("committed");
        let calls = whole.0.iter().find(|(name, _)| name.ends_with("calls.csv"));
        assert_eq!(
            calls.map(|c| &c.1),
            Some(&std::fs::read(&path).expect("read"))
        );
        for per_part in [7, 1] {
            let parts = write(per_part);
            assert!(parts.0 == whole.0, "CSV in parts of {per_part}");
            assert!(parts.1 == whole.1, "Parquet in parts of {per_part}");
        }
    }
}
