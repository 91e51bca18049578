//! The tables of a run analysed in parts ([`crate::analysis::analyze_dir`]): the large
//! ones (calls, requests, wait states, messages) written as the analysis hands their
//! rows out, a part at a time ([`RowSink`]), and the others once the report is made
//! ([`TableStream::finish`]). A run held whole is written by the same writer, its rows
//! handed over at once ([`write_tables`]): the files are the same, byte for byte, however
//! the run was read. Every file of every directory is committed together, or none.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use overlap_format::output::{commit_all, AtomicFile};
use polars::prelude::DataFrame;

use super::batches::Batches;
use super::findings::{false_overlap, rows_of, sort, FindingRow, Findings};
use super::handed::{self, Handed};
use super::parts::{Part, Tables, ORDER, STREAMED};
use super::write::{failed, in_batches, in_rows, make_dirs, remove, write_table, Writer, ROWS};
use super::{calls, gpu_chains, messages, profile, ranks, requests, sites, wait_states};
use super::{MessageTimes, TableFormat};
use crate::analysis::{Details, Report, RowSink, Written};
use crate::gpu::ChainRow;
use crate::metrics::message_ends::MessageEnds;
use crate::metrics::request_row::RequestRow;
use crate::metrics::{Finding, WaitInstance};
use crate::model::Trace;
use crate::sites::SiteTable;
use crate::{Error, Result};

/// The tables of a run being analysed in parts, written into every directory and
/// format asked for.
pub struct TableStream {
    outputs: Vec<(PathBuf, TableFormat)>,
    /// The directories made for the tables (removed again when none is written).
    made: Vec<PathBuf>,
    /// The tables written as the rows come: calls, requests, wait states, messages.
    streamed: Vec<Streamed>,
    /// Every finding's row, until they are all in and sorted.
    findings: Vec<FindingRow>,
    /// The label of each site a finding names, by id.
    labels: HashMap<u32, String>,
    chains: Vec<ChainRow>,
    /// The first failure: nothing more is written, and [`TableStream::finish`] says it.
    failed: Option<Error>,
    /// The rows of each batch written of a streamed table ([`ROWS`]; fewer in tests).
    batch: usize,
}

/// A table written a part of its rows at a time, into one file per output.
struct Streamed {
    part: Part,
    /// One per output, from the first rows (or columns) on (none before).
    files: Vec<StreamedFile>,
    /// Rows not written to the Parquet files yet: fewer than a batch, written once a
    /// batch is in, so that they have the row groups of the table written whole. The
    /// CSV files take the rows as they come.
    pending: Option<DataFrame>,
    /// Whether a batch went into the Parquet files.
    grouped: bool,
}

struct StreamedFile {
    format: TableFormat,
    file: Shared,
    path: PathBuf,
    writer: Writer<Shared>,
}

impl StreamedFile {
    /// Ends the file (Parquet's footer), for the stream to commit with the others.
    fn finish(self) -> Result<(AtomicFile, PathBuf)> {
        let StreamedFile {
            file,
            path,
            mut writer,
            ..
        } = self;
        (writer.finish()).map_err(|e| failed(&file.lock(), &path, e))?;
        drop(writer);
        let Ok(file) = Arc::try_unwrap(file.0) else {
            unreachable!("the writer, which shared the file, is dropped");
        };
        Ok((
            file.into_inner().unwrap_or_else(PoisonError::into_inner),
            path,
        ))
    }
}

/// A file that a writer writes and the stream commits afterwards.
#[derive(Clone)]
struct Shared(Arc<Mutex<AtomicFile>>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, AtomicFile> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.lock().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.lock().flush()
    }
}

/// Writes each table of the run `tables` as `DIR/<name>.<csv|parquet>` for each
/// directory and format of `outputs`, through the writer the analysis in parts writes
/// with: the large tables a batch of rows at a time; returns the files written, by
/// output. All are committed, or none.
pub fn write_tables(
    tables: &Tables,
    outputs: &[(&Path, TableFormat)],
) -> Result<Vec<Vec<PathBuf>>> {
    let mut stream = TableStream::new(outputs)?;
    stream.add_whole_run(tables.trace, tables.details);
    stream.finish(tables.report)
}

impl TableStream {
    /// The tables of a run about to be analysed, into `outputs` (each directory made when
    /// missing, never its parents).
    pub fn new(outputs: &[(&Path, TableFormat)]) -> Result<TableStream> {
        let made = make_dirs(outputs)?;
        Ok(TableStream {
            outputs: (outputs.iter())
                .map(|(d, f)| (d.to_path_buf(), *f))
                .collect(),
            made: made.into_iter().map(Path::to_path_buf).collect(),
            streamed: (STREAMED.into_iter())
                .map(|part| Streamed {
                    part,
                    files: Vec::new(),
                    pending: None,
                    grouped: false,
                })
                .collect(),
            findings: Vec::new(),
            labels: HashMap::new(),
            chains: Vec::new(),
            failed: None,
            batch: ROWS,
        })
    }

    /// [`TableStream::new`], writing the streamed tables `batch` rows at a time.
    #[cfg(test)]
    fn in_batches_of(outputs: &[(&Path, TableFormat)], batch: usize) -> Result<TableStream> {
        let mut stream = TableStream::new(outputs)?;
        stream.batch = batch;
        Ok(stream)
    }

    /// Takes every row of the run held whole `trace`, whose details are `d`.
    pub(super) fn add_whole_run(&mut self, trace: &Trace, d: &Details) {
        self.calls(trace, &d.sites);
        self.requests(trace, &d.requests);
        self.wait_states(trace, &d.sites, &d.waits);
        self.findings(trace, &d.sites, &d.findings);
        self.messages_timed(trace, |mi| MessageTimes::of_trace(trace, mi));
        self.chains(&d.chains);
    }

    /// Writes the messages of `run`, message `mi`'s calls timed by `times(mi)`; then the
    /// header of each streamed table none of whose rows came: made of `run` (the rows'
    /// functions read nothing of it for none).
    fn messages_timed(&mut self, run: &Trace, times: impl Fn(usize) -> MessageTimes) {
        let all = &run.messages;
        in_rows(all.len(), |range| {
            let first = range.start;
            let df = messages(&all[range], |i| times(first + i));
            self.write(Part::Messages, df)
        });
        let none = SiteTable::default();
        for part in STREAMED {
            let table = &self.streamed[self.slot(part)];
            if !table.files.is_empty() {
                continue;
            }
            let df = match part {
                Part::Calls => calls(run, &none, 0..0),
                Part::Requests => requests(run, &[]),
                Part::WaitStates => wait_states(run, &none, &[]),
                _ => messages(&[], |_| unreachable!("no message")),
            };
            self.write(part, df);
        }
    }

    /// Adds the rows `df` of the streamed table `part`, written a batch at a time
    /// ([`ROWS`]: the row groups of a table written whole), unless a write failed before.
    fn write(&mut self, part: Part, df: Result<DataFrame>) {
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = df.and_then(|df| self.add_rows(self.slot(part), df)) {
            self.failed = Some(e);
        }
    }

    /// Keeps the rows of findings and their sites' labels, until the run's are all in.
    fn take_findings(&mut self, (rows, labels): Findings) {
        self.findings.extend(rows);
        for (id, label) in labels {
            self.labels.entry(id).or_insert(label);
        }
    }

    /// Where the streamed table `part` is.
    fn slot(&self, part: Part) -> usize {
        let slot = self.streamed.iter().position(|t| t.part == part);
        slot.unwrap_or_else(|| unreachable!("{part:?} is streamed"))
    }

    /// Writes the rows `df` of table `k` into its CSV files, and adds them to the rows
    /// not written to its Parquet files yet ([`TableStream::add_grouped`]).
    fn add_rows(&mut self, k: usize, df: DataFrame) -> Result<()> {
        self.open(k, &df)?;
        for f in &mut self.streamed[k].files {
            if f.format == TableFormat::Csv {
                (f.writer.write(&df)).map_err(|e| failed(&f.file.lock(), &f.path, e))?;
            }
        }
        self.add_grouped(k, df)
    }

    /// Adds `df` to the rows of table `k` not written to its Parquet files yet, and
    /// writes them a batch at a time while there are as many.
    fn add_grouped(&mut self, k: usize, df: DataFrame) -> Result<()> {
        if !self.writes(TableFormat::Parquet) {
            return Ok(());
        }
        let mut pending = self.streamed[k].pending.take();
        let batch = self.batch;
        in_batches(&mut pending, df, batch, |rows| self.write_grouped(k, rows))?;
        self.streamed[k].pending = pending;
        Ok(())
    }

    /// Writes the rows of table `k` not written to its Parquet files yet (a batch of
    /// none when none was written: the file of a table without rows).
    fn flush(&mut self, k: usize) -> Result<()> {
        let Some(mut rest) = self.streamed[k].pending.take() else {
            return Ok(());
        };
        if rest.height() > 0 || !self.streamed[k].grouped {
            self.write_grouped(k, rest.rechunk_mut())?;
        }
        Ok(())
    }

    /// Opens the files of table `k` unless open, of the columns of `first`: a CSV file's
    /// header written at once, so that text handed by a worker follows it.
    fn open(&mut self, k: usize, first: &DataFrame) -> Result<()> {
        let table = &mut self.streamed[k];
        if !table.files.is_empty() {
            return Ok(());
        }
        let name = table.part.name().unwrap_or_default();
        for (dir, format) in &self.outputs {
            let path = dir.join(format!("{name}.{}", format.extension()));
            let file = Shared(Arc::new(Mutex::new(AtomicFile::create(&path)?)));
            let writer = Writer::new(*format, file.clone(), first);
            let mut writer = writer.map_err(|e| failed(&file.lock(), &path, e))?;
            if *format == TableFormat::Csv {
                let header = writer.write(&first.clear());
                header.map_err(|e| failed(&file.lock(), &path, e))?;
            }
            let format = *format;
            table.files.push(StreamedFile {
                format,
                file,
                path,
                writer,
            });
        }
        Ok(())
    }

    /// Writes `df` into every Parquet file of table `k` (open).
    fn write_grouped(&mut self, k: usize, df: &DataFrame) -> Result<()> {
        let table = &mut self.streamed[k];
        table.grouped = true;
        for f in &mut table.files {
            if f.format == TableFormat::Parquet {
                (f.writer.write(df)).map_err(|e| failed(&f.file.lock(), &f.path, e))?;
            }
        }
        Ok(())
    }

    /// Whether any table is written in `format`.
    fn writes(&self, format: TableFormat) -> bool {
        self.outputs.iter().any(|(_, f)| *f == format)
    }

    /// Where the streamed table `part` is, for `what` a worker handed of it for its
    /// `format` files: refused when none is written here, or when its files are not open
    /// (its columns did not come first).
    fn handed_to(&self, part: Part, format: TableFormat, what: &str) -> Result<usize> {
        let refused = |why: String| {
            Err(Error::Table {
                reason: format!(
                    "a worker handed {what} of the table {:?}: {why}",
                    part.name()
                ),
            })
        };
        if !self.writes(format) {
            return refused(format!("no {} table is written here", format.extension()));
        }
        let k = self.slot(part);
        if self.streamed[k].files.is_empty() {
            return refused("its columns did not come before".into());
        }
        Ok(k)
    }

    /// Takes what a worker handed of a streamed table: its columns, which open its files,
    /// then text for its CSV files (after their header), row groups for its Parquet
    /// files (after the rows taken before).
    fn take_handed(&mut self, handed: Handed<'_>) -> Result<()> {
        match handed {
            Handed::Groups(part, groups) => {
                let k = self.handed_to(part, TableFormat::Parquet, "Parquet row groups")?;
                // The rows taken before go first, in a row group of their own.
                if let Some(mut rows) = self.streamed[k].pending.take() {
                    if rows.height() > 0 {
                        self.write_grouped(k, rows.rechunk_mut())?;
                    }
                }
                let table = &mut self.streamed[k];
                table.grouped = true;
                for f in &mut table.files {
                    if f.format == TableFormat::Parquet {
                        let written = f.writer.groups(&groups);
                        written.map_err(|e| failed(&f.file.lock(), &f.path, e))?;
                    }
                }
                Ok(())
            }
            Handed::Columns(part, df) => self.open(self.slot(part), &df),
            Handed::Text(part, text) => {
                let k = self.handed_to(part, TableFormat::Csv, "CSV text")?;
                let csv = self.streamed[k].files.iter();
                for f in csv.filter(|f| f.format == TableFormat::Csv) {
                    let mut file = f.file.lock();
                    file.write_all(text)
                        .map_err(|e| Error::Output(file.error(e)))?;
                }
                Ok(())
            }
            Handed::Findings(findings) => {
                self.take_findings(findings);
                Ok(())
            }
            Handed::Chains(chains) => {
                self.chains = chains;
                Ok(())
            }
        }
    }

    /// Writes the tables made of the report `report` (ranks, sites, profile, GPU chains)
    /// and the findings, ends those written as the rows came, and commits every file;
    /// returns the files written, by output. On failure none is committed, and the
    /// directories made for them are removed (as when the stream is dropped unfinished).
    pub fn finish(mut self, report: &Report) -> Result<Vec<Vec<PathBuf>>> {
        let written = self.finish_all(report)?;
        self.made.clear();
        Ok(written)
    }

    fn finish_all(&mut self, report: &Report) -> Result<Vec<Vec<PathBuf>>> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let _span = tracing::info_span!("write tables").entered();
        let mut written = vec![Vec::new(); self.outputs.len()];
        let mut files = Vec::new();
        // The tables in the order the run held whole writes them.
        for part in ORDER {
            if let Some(k) = self.streamed.iter().position(|t| t.part == part) {
                self.flush(k)?;
                let table = std::mem::take(&mut self.streamed[k].files);
                for (streamed, paths) in table.into_iter().zip(&mut written) {
                    let (file, path) = streamed.finish()?;
                    files.push(file);
                    paths.push(path);
                }
                continue;
            }
            let tables = match part {
                Part::Ranks => vec![(part, ranks(report)?)],
                Part::FalseOverlap => {
                    sort(&mut self.findings);
                    let labels = &self.labels;
                    let label = |id: u32| labels.get(&id).map(String::as_str);
                    vec![(part, false_overlap(&self.findings, label)?)]
                }
                Part::Sites => vec![(part, sites(report)?)],
                Part::Profile => {
                    let named = profile::tables(&report.profile)?;
                    for (name, mut df) in named {
                        self.write_whole(&name, &mut df, &mut files, &mut written)?;
                    }
                    continue;
                }
                Part::GpuChains if report.gpu.is_some() => {
                    vec![(part, gpu_chains(&self.chains)?)]
                }
                _ => continue,
            };
            for (part, mut df) in tables {
                let name = part.name().unwrap_or_default();
                self.write_whole(name, &mut df, &mut files, &mut written)?;
            }
        }
        commit_all(files)?;
        Ok(written)
    }

    /// Writes the table `name` whole into every output.
    fn write_whole(
        &self,
        name: &str,
        df: &mut DataFrame,
        files: &mut Vec<AtomicFile>,
        written: &mut [Vec<PathBuf>],
    ) -> Result<()> {
        for ((dir, format), paths) in self.outputs.iter().zip(written) {
            let path = dir.join(format!("{name}.{}", format.extension()));
            files.push(write_table(df, &path, *format)?);
            paths.push(path);
        }
        Ok(())
    }
}

impl Drop for TableStream {
    /// The files not committed are gone with their writers: the directories made for
    /// them go too.
    fn drop(&mut self) {
        self.streamed.clear();
        remove(&self.made.iter().map(PathBuf::as_path).collect::<Vec<_>>());
    }
}

impl Batches for TableStream {
    fn batch(&mut self, table: Part, df: Result<DataFrame>) {
        self.write(table, df);
    }
}

impl RowSink for TableStream {
    fn calls(&mut self, part: &Trace, sites: &SiteTable) {
        self.calls_of(part, sites);
    }

    fn requests(&mut self, part: &Trace, rows: &[RequestRow]) {
        self.requests_of(part, rows);
    }

    fn wait_states(&mut self, part: &Trace, sites: &SiteTable, waits: &[WaitInstance]) {
        self.wait_states_of(part, sites, waits);
    }

    fn findings(&mut self, part: &Trace, sites: &SiteTable, found: &[Finding]) {
        self.take_findings(rows_of(part, sites, found));
    }

    fn written(&mut self) -> Result<Written> {
        Err(Error::Table {
            reason: "the tables' writer writes the rows it takes: it hands none on".into(),
        })
    }

    fn take_written(&mut self, piece: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = handed::read(piece).and_then(|handed| self.take_handed(handed)) {
            self.failed = Some(e);
        }
    }

    fn messages(&mut self, run: &Trace, ends: &MessageEnds) {
        let all = &run.messages;
        self.messages_timed(run, |mi| MessageTimes::of_ends(ends, mi, &all[mi]));
    }

    fn chains(&mut self, chains: &[ChainRow]) {
        self.chains = chains.to_vec();
    }
}

#[cfg(test)]
mod tests;
