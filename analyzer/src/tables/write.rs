//! What the writer of tables ([`super::TableStream`]) writes files with: the
//! directories asked for, a table's writer into one file (CSV, Parquet), a whole table
//! at once, a failure said as the disk's.

use std::io::Write;
use std::path::Path;

use overlap_format::output::AtomicFile;
use polars::error::PolarsError;
use polars::io::{csv::write as csv, parquet::write as parquet};
use polars::prelude::{CsvWriter, DataFrame, ParquetWriter, PolarsResult, SerWriter};

use super::groups::Groups;
use super::TableFormat;
use crate::{Error, Result};

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

/// The most rows of a table made and written at a time (a Parquet row group): those of
/// the large tables (a row per call, request, wait or message).
pub(super) const ROWS: usize = 512 * 512;

/// Calls `each` on the ranges of at most [`ROWS`] rows that cover `rows` rows (none
/// for none).
pub(super) fn in_rows(rows: usize, mut each: impl FnMut(std::ops::Range<usize>)) {
    for from in (0..rows).step_by(ROWS) {
        each(from..(from + ROWS).min(rows));
    }
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

/// Adds `df` to the rows `pending` not written yet, and hands `write` a batch of `batch`
/// rows at a time (in one chunk) while there are as many: so a Parquet file's row groups
/// are cut every `batch` rows however the rows came.
pub(super) fn in_batches(
    pending: &mut Option<DataFrame>,
    df: DataFrame,
    batch: usize,
    mut write: impl FnMut(&DataFrame) -> Result<()>,
) -> Result<()> {
    let mut rest = match pending.take() {
        Some(mut held) => {
            held.vstack_mut_owned(df).map_err(|e| Error::Table {
                reason: e.to_string(),
            })?;
            held
        }
        None => df,
    };
    while rest.height() >= batch {
        let mut rows = rest.slice(0, batch);
        write(rows.rechunk_mut())?;
        rest = rest.slice(batch as i64, rest.height() - batch);
    }
    *pending = Some(rest);
    Ok(())
}

/// Appends the rows of `df` to `text` as a CSV file of its table holds them (no header):
/// the text [`Writer`] writes of them, whichever batch they are written in.
pub(super) fn csv_text(df: &mut DataFrame, text: &mut Vec<u8>) -> PolarsResult<()> {
    CsvWriter::new(text).include_header(false).finish(df)
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

    /// Writes the row groups a worker encoded ([`Groups`]), as they are: a Parquet
    /// file's; a CSV file takes none.
    pub(super) fn groups(&mut self, groups: &Groups) -> PolarsResult<()> {
        match self {
            Writer::Parquet(w) => groups.write_into(w),
            Writer::Csv(_) => Err(PolarsError::InvalidOperation(
                "a CSV file takes no Parquet row groups".into(),
            )),
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
