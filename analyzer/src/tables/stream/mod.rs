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
use super::parts::{Part, Tables, ORDER};
use super::write::{failed, in_rows, make_dirs, remove, write_table, Writer, ROWS};
use super::{calls, gpu_chains, messages, profile, ranks, requests, sites, wait_states};
use super::{MessageTimes, TableFormat};
use crate::analysis::{Details, Report, RowSink};
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
    /// One per output, from the first rows on (none before).
    files: Vec<StreamedFile>,
    /// Rows not written yet: fewer than a batch, written once a batch is in, so that the
    /// Parquet files have the row groups of the table written whole.
    pending: Option<DataFrame>,
}

struct StreamedFile {
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
        let streamed = [
            Part::Calls,
            Part::Requests,
            Part::WaitStates,
            Part::Messages,
        ];
        Ok(TableStream {
            outputs: (outputs.iter())
                .map(|(d, f)| (d.to_path_buf(), *f))
                .collect(),
            made: made.into_iter().map(Path::to_path_buf).collect(),
            streamed: (streamed.into_iter())
                .map(|part| Streamed {
                    part,
                    files: Vec::new(),
                    pending: None,
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
        for part in [
            Part::Calls,
            Part::Requests,
            Part::WaitStates,
            Part::Messages,
        ] {
            let table = &self.streamed[self.slot(part)];
            if !table.files.is_empty() || table.pending.is_some() {
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

    /// Adds `df` to the rows of table `k` not written yet, and writes them a batch at a
    /// time while there are as many.
    fn add_rows(&mut self, k: usize, df: DataFrame) -> Result<()> {
        let mut rest = match self.streamed[k].pending.take() {
            Some(mut pending) => {
                pending.vstack_mut_owned(df).map_err(|e| Error::Table {
                    reason: e.to_string(),
                })?;
                pending
            }
            None => df,
        };
        let batch = self.batch;
        while rest.height() >= batch {
            let mut rows = rest.slice(0, batch);
            self.write_rows(k, rows.rechunk_mut())?;
            rest = rest.slice(batch as i64, rest.height() - batch);
        }
        self.streamed[k].pending = Some(rest);
        Ok(())
    }

    /// Writes the rows of table `k` not written yet (its header when it has none).
    fn flush(&mut self, k: usize) -> Result<()> {
        let Some(mut rest) = self.streamed[k].pending.take() else {
            return Ok(());
        };
        if rest.height() > 0 || self.streamed[k].files.is_empty() {
            self.write_rows(k, rest.rechunk_mut())?;
        }
        Ok(())
    }

    /// Writes `df` into every file of table `k`, each opened with the first rows.
    fn write_rows(&mut self, k: usize, df: &DataFrame) -> Result<()> {
        let outputs = &self.outputs;
        let table = &mut self.streamed[k];
        let part = table.part;
        if table.files.is_empty() {
            let name = part.name().unwrap_or_default();
            for (dir, format) in outputs {
                let path = dir.join(format!("{name}.{}", format.extension()));
                let file = Shared(Arc::new(Mutex::new(AtomicFile::create(&path)?)));
                let writer = Writer::new(*format, file.clone(), df);
                let writer = writer.map_err(|e| failed(&file.lock(), &path, e))?;
                table.files.push(StreamedFile { file, path, writer });
            }
        }
        for f in &mut table.files {
            (f.writer.write(df)).map_err(|e| failed(&f.file.lock(), &f.path, e))?;
        }
        Ok(())
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

    fn written(&mut self) -> Result<Vec<Vec<u8>>> {
        Err(Error::Table {
            reason: "the tables' writer writes the rows it takes: it hands none on".into(),
        })
    }

    fn take_written(&mut self, piece: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        match handed::read(piece) {
            Ok(Handed::Batch(part, df)) => self.write(part, Ok(df)),
            Ok(Handed::Findings(findings)) => self.take_findings(findings),
            Ok(Handed::Chains(chains)) => self.chains = chains,
            Err(e) => self.failed = Some(e),
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
