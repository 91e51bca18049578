//! The tables' rows of a job's workers but worker 0, handed to worker 0 to write: each
//! such worker makes the rows of its block's parts as one process makes them
//! ([`RowRecorder`], a [`RowSink`]) and writes each batch into pieces of bytes; worker 0
//! takes the pieces of each worker in turn, after its own block's rows, into its
//! [`super::TableStream`] ([`RowSink::take_written`]). So the files are one process's,
//! byte for byte, and worker 0 never reads the other workers' ranks.
//!
//! The worker encodes its rows as the files hold them, so that worker 0 only copies
//! them: a batch's CSV text, which worker 0 appends to its CSV files as it is (the text
//! of a row is the same whichever batch it is written in); and Parquet row groups of
//! [`super::write::ROWS`] rows (the last one fewer), compressed, whose pages worker 0
//! copies into its Parquet files ([`super::groups`]). Those files hold the rows one
//! process writes, their row groups cut at each worker's block too.
//!
//! A piece is a byte naming what it holds, then for a streamed table a byte naming the
//! table, then its columns (a Parquet file of no rows, sent before the table's first
//! rows), CSV text, or row groups (a Parquet file); or findings' rows and their sites'
//! labels, or staging chains, as MessagePack.

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom, Write};

use polars::prelude::{DataFrame, ParquetReader, SerReader};

use super::batches::Batches;
use super::findings::{rows_of, Findings};
use super::groups::Groups;
use super::parts::{Part, STREAMED};
use super::write::{csv_text, in_batches, in_rows, Writer, ROWS};
use super::{messages, MessageTimes, TableFormat};
use crate::analysis::{RowSink, Written};
use crate::gpu::ChainRow;
use crate::metrics::message_ends::MessageEnds;
use crate::metrics::request_row::RequestRow;
use crate::metrics::{Finding, WaitInstance};
use crate::model::Trace;
use crate::sites::SiteTable;
use crate::{Error, Result};

/// What a piece holds: the first byte of its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Row groups of a streamed table for its Parquet files: a Parquet file.
    Groups = 0,
    /// A batch of a streamed table for its CSV files, as CSV text without a header.
    Text = 1,
    /// A streamed table's columns, without rows (as Parquet): what opens worker 0's
    /// files of the table when its first rows come as text.
    Columns = 2,
    Findings = 3,
    Chains = 4,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Groups,
        Kind::Text,
        Kind::Columns,
        Kind::Findings,
        Kind::Chains,
    ];
}

/// What a piece gives worker 0's writer.
pub(super) enum Handed<'p> {
    /// Row groups of a streamed table, for its Parquet files.
    Groups(Part, Groups),
    /// A batch of rows of a streamed table as its CSV files hold them, for those.
    Text(Part, &'p [u8]),
    /// A streamed table's columns, without rows.
    Columns(Part, DataFrame),
    Findings(Findings),
    Chains(Vec<ChainRow>),
}

/// Takes the rows of a worker's block (not worker 0's) and writes each batch as it
/// comes into the pieces worker 0 writes of it ([`RowSink::written`]): its CSV text when
/// worker 0 writes CSV files, its rows into row groups when it writes Parquet files
/// (each group once its rows are in, the last ones when the pieces are asked for),
/// after the table's columns. The pieces wait in
/// a file of their own (unnamed, in the system's temporary directory, gone with the
/// recorder), not in the worker's memory beside the view it folds over, and are read
/// back one at a time as they are sent; in memory only when no such file can be made.
pub struct RowRecorder {
    /// Whether worker 0 writes CSV files, and Parquet files.
    csv: bool,
    parquet: bool,
    /// The file the pieces are set aside in, and each piece's length there.
    aside: Option<(File, Vec<usize>)>,
    /// The pieces kept in memory, without a file.
    pieces: Vec<Vec<u8>>,
    /// Whether the columns of each streamed table went before its rows.
    columns_sent: [bool; STREAMED.len()],
    /// The rows of each streamed table not in a row group yet: fewer than a batch.
    pending: [Option<DataFrame>; STREAMED.len()],
    /// The rows of a row group ([`super::write::ROWS`]; fewer in tests).
    batch: usize,
    /// The first failure: nothing more is written, and [`RowSink::written`] says it.
    failed: Option<Error>,
}

impl RowRecorder {
    /// A recorder of no rows yet, for a worker 0 that writes tables in `formats`.
    pub fn new(formats: &[TableFormat]) -> RowRecorder {
        RowRecorder {
            aside: tempfile::tempfile().ok().map(|file| (file, Vec::new())),
            ..RowRecorder::in_memory(formats)
        }
    }

    /// [`RowRecorder::new`], keeping its pieces in memory.
    pub(super) fn in_memory(formats: &[TableFormat]) -> RowRecorder {
        RowRecorder {
            csv: formats.contains(&TableFormat::Csv),
            parquet: formats.contains(&TableFormat::Parquet),
            aside: None,
            pieces: Vec::new(),
            columns_sent: [false; STREAMED.len()],
            pending: Default::default(),
            batch: ROWS,
            failed: None,
        }
    }

    /// This recorder, its row groups of `batch` rows.
    #[cfg(test)]
    pub(super) fn in_groups_of(self, batch: usize) -> RowRecorder {
        RowRecorder { batch, ..self }
    }

    /// Writes a piece of `kind` made by `write`, unless a piece failed before.
    fn add(&mut self, kind: Kind, write: impl FnOnce(&mut Vec<u8>) -> Result<()>) {
        if self.failed.is_some() {
            return;
        }
        let mut piece = vec![kind as u8];
        if let Err(e) = write(&mut piece).and_then(|()| self.keep(piece)) {
            self.fail(e);
        }
    }

    /// Stops writing, with `e` for [`RowSink::written`] to say unless an earlier
    /// failure is said.
    fn fail(&mut self, e: Error) {
        self.failed.get_or_insert(e);
    }

    /// Sets `piece` aside until [`RowSink::written`].
    fn keep(&mut self, piece: Vec<u8>) -> Result<()> {
        let Some((file, lengths)) = &mut self.aside else {
            self.pieces.push(piece);
            return Ok(());
        };
        file.write_all(&piece).map_err(set_aside)?;
        lengths.push(piece.len());
        Ok(())
    }

    /// The pieces set aside, in the order written, to be read back one at a time.
    fn read_back(&mut self) -> Result<Written> {
        let Some((file, lengths)) = self.aside.take() else {
            return Ok(Written::held(std::mem::take(&mut self.pieces)));
        };
        let mut file = BufReader::new(file);
        file.seek(SeekFrom::Start(0)).map_err(set_aside)?;
        let read = lengths.clone().into_iter().map(move |len| {
            let mut piece = vec![0; len];
            file.read_exact(&mut piece).map_err(set_aside)?;
            Ok(piece)
        });
        Ok(Written {
            lengths,
            pieces: Box::new(read),
        })
    }

    /// Writes the rows of every table not in a row group yet as the last of its groups.
    fn group_the_rest(&mut self) {
        for at in 0..STREAMED.len() {
            if let Some(rows) = self.pending[at].take().filter(|rows| rows.height() > 0) {
                self.add(Kind::Groups, |piece| parquet(at as u8, &rows, piece));
            }
        }
    }
}

impl Batches for RowRecorder {
    /// Writes the batch `df` of the streamed table `table` as the pieces worker 0 writes:
    /// the table's columns first, its text now, its rows into row groups as a group's
    /// rows are in.
    fn batch(&mut self, table: Part, df: Result<DataFrame>) {
        let mut df = match df {
            Ok(df) => df,
            Err(e) => return self.fail(e),
        };
        let at = table.streamed();
        if !std::mem::replace(&mut self.columns_sent[usize::from(at)], true) {
            self.add(Kind::Columns, |piece| parquet(at, &df.clear(), piece));
        }
        if self.csv {
            self.add(Kind::Text, |piece| {
                piece.push(at);
                csv_text(&mut df, piece).map_err(table_error)
            });
        }
        if self.parquet && self.failed.is_none() {
            let mut pending = self.pending[usize::from(at)].take();
            let batch = self.batch;
            let grouped = in_batches(&mut pending, df, batch, |rows| {
                self.add(Kind::Groups, |piece| parquet(at, rows, piece));
                Ok(())
            });
            self.pending[usize::from(at)] = pending;
            if let Err(e) = grouped {
                self.fail(e);
            }
        }
    }
}

/// Appends the streamed table `at` ([`Part::streamed`]) and its rows `df` to `piece`, as
/// a Parquet file written as worker 0 writes its own (one row group, compressed alike).
fn parquet(at: u8, df: &DataFrame, piece: &mut Vec<u8>) -> Result<()> {
    piece.push(at);
    let mut writer = Writer::new(TableFormat::Parquet, piece, df).map_err(table_error)?;
    writer
        .write(df)
        .and_then(|()| writer.finish())
        .map_err(table_error)
}

/// The error of the file a worker's rows are set aside in.
fn set_aside(cause: std::io::Error) -> Error {
    Error::Io {
        what: "setting a worker's rows aside for worker 0",
        path: std::env::temp_dir(),
        cause,
    }
}

fn table_error(e: polars::error::PolarsError) -> Error {
    Error::Table {
        reason: format!("the rows handed to worker 0: {e}"),
    }
}

impl RowSink for RowRecorder {
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
        if found.is_empty() {
            return;
        }
        let findings = rows_of(part, sites, found);
        self.add(Kind::Findings, |piece| {
            rmp_serde::encode::write(piece, &findings).map_err(|e| Error::Table {
                reason: format!("the findings handed to worker 0: {e}"),
            })
        });
    }

    fn messages(&mut self, run: &Trace, ends: &MessageEnds) {
        let all = &run.messages;
        in_rows(all.len(), |range| {
            let first = range.start;
            let times = |i: usize| MessageTimes::of_ends(ends, first + i, &all[first + i]);
            self.batch(Part::Messages, messages(&all[range], times))
        });
    }

    fn chains(&mut self, chains: &[ChainRow]) {
        self.add(Kind::Chains, |piece| {
            rmp_serde::encode::write(piece, chains).map_err(|e| Error::Table {
                reason: format!("the staging chains handed to worker 0: {e}"),
            })
        });
    }

    fn written(&mut self) -> Result<Written> {
        self.group_the_rest();
        match self.failed.take() {
            Some(e) => Err(e),
            None => self.read_back(),
        }
    }

    fn take_written(&mut self, _piece: &[u8]) {
        self.fail(Error::Table {
            reason: "a worker's rows are written by worker 0, not handed on again".into(),
        });
    }
}

/// What the piece `piece` ([`RowRecorder`]'s) holds.
pub(super) fn read(piece: &[u8]) -> Result<Handed<'_>> {
    let unreadable = |why: String| Error::Table {
        reason: format!("the rows a worker handed to worker 0 could not be read: {why}"),
    };
    let (&first, rows) = (piece.split_first()).ok_or_else(|| unreadable("empty".into()))?;
    let kind = (Kind::ALL.into_iter().find(|k| *k as u8 == first))
        .ok_or_else(|| unreadable(format!("no rows are of kind {first}")))?;
    if let Kind::Groups | Kind::Text | Kind::Columns = kind {
        let (&at, rows) = (rows.split_first()).ok_or_else(|| unreadable("no table".into()))?;
        let part = (STREAMED.get(usize::from(at)).copied())
            .ok_or_else(|| unreadable(format!("no streamed table is table {at}")))?;
        return Ok(match kind {
            Kind::Text => Handed::Text(part, rows),
            Kind::Groups => Handed::Groups(part, Groups::read(rows.to_vec())?),
            _ => {
                let df = ParquetReader::new(Cursor::new(rows)).finish();
                Handed::Columns(part, df.map_err(|e| unreadable(e.to_string()))?)
            }
        });
    }
    let read = |e: rmp_serde::decode::Error| unreadable(e.to_string());
    Ok(match kind {
        Kind::Findings => Handed::Findings(rmp_serde::from_slice(rows).map_err(read)?),
        _ => Handed::Chains(rmp_serde::from_slice(rows).map_err(read)?),
    })
}

#[cfg(test)]
mod tests {
    use super::{read, Handed, Kind, Part, RowRecorder};
    use crate::analysis::RowSink;
    use crate::gpu::chains::Breakdown;
    use crate::gpu::ChainRow;
    use crate::tables::TableFormat;

    /// A piece empty, of no known kind, of no streamed table, or whose rows are cut
    /// short is an error that says what it is; text is taken as it is.
    #[test]
    fn a_piece_that_cannot_be_read_fails_the_tables() {
        let said = |piece: &[u8]| match read(piece) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{piece:?} read"),
        };
        assert!(said(&[]).contains("empty"), "{}", said(&[]));
        assert!(said(&[9, 1]).contains("kind 9"), "{}", said(&[9, 1]));
        for kind in [Kind::Groups, Kind::Text, Kind::Columns] {
            let e = said(&[kind as u8]);
            assert!(e.contains("no table"), "{e}");
            let e = said(&[kind as u8, 4, 1]);
            assert!(e.contains("no streamed table is table 4"), "{e}");
        }
        for kind in [Kind::Groups, Kind::Columns, Kind::Findings, Kind::Chains] {
            let e = said(&[kind as u8, 1, 2, 3]);
            assert!(e.contains("handed to worker 0 could not be read"), "{e}");
        }
        match read(&[Kind::Text as u8, 2, b'a', b'\n']) {
            Ok(Handed::Text(Part::WaitStates, b"a\n")) => {}
            _ => panic!("the text of the wait states"),
        }
    }

    /// A recorder that sets its pieces aside in a file hands on the pieces one that
    /// keeps them in memory hands on, in the same order.
    #[test]
    fn pieces_set_aside_are_those_kept() {
        let chains = |n: u64| {
            let chain = ChainRow {
                message: n,
                from: 0,
                to: 1,
                tag: n as i32,
                packet: None,
                bytes: n,
                send_index: 0,
                completion_index: None,
                start_ns: n,
                breakdown: Breakdown::default(),
            };
            vec![chain; n as usize]
        };
        let formats = [TableFormat::Csv];
        let (mut aside, mut kept) = (RowRecorder::new(&formats), RowRecorder::in_memory(&formats));
        assert!(aside.aside.is_some(), "a file for the pieces");
        for n in [3, 1, 700] {
            aside.chains(&chains(n));
            kept.chains(&chains(n));
        }
        let all = |written: crate::analysis::Written| {
            let lengths = written.lengths;
            let pieces: Vec<Vec<u8>> = written.pieces.map(|p| p.expect("read")).collect();
            assert_eq!(lengths, pieces.iter().map(Vec::len).collect::<Vec<_>>());
            pieces
        };
        let written = all(aside.written().expect("read back"));
        assert_eq!(written.len(), 3);
        assert_eq!(written, all(kept.written().expect("kept")));
    }

    /// A batch that could not be made stops the recorder: it hands on no piece, and says
    /// the first failure, not a later one.
    #[test]
    fn a_recorder_says_its_first_failure() {
        use crate::tables::batches::Batches;
        use crate::Error;
        let failed = |why: &str| {
            Err(Error::Table {
                reason: why.to_string(),
            })
        };
        let mut recorder = RowRecorder::in_memory(&[TableFormat::Csv, TableFormat::Parquet]);
        recorder.batch(Part::Calls, failed("the first"));
        recorder.batch(Part::Requests, failed("the second"));
        recorder.chains(&[]);
        let e = recorder.written().expect_err("failed").to_string();
        assert!(e.contains("the first"), "{e}");
    }

    /// The staging chains a recorder takes are those read back; a recorder hands no
    /// piece on after it was given one to take, but says why.
    #[test]
    fn chains_cross_whole_and_a_recorder_takes_no_piece() {
        let chain = ChainRow {
            message: 7,
            from: 1,
            to: 2,
            tag: 3,
            packet: Some(4),
            bytes: 4096,
            send_index: 11,
            completion_index: None,
            start_ns: 1_000,
            breakdown: Breakdown {
                d2h_ns: Some(5),
                ..Breakdown::default()
            },
        };
        let mut recorder = RowRecorder::new(&[TableFormat::Parquet]);
        recorder.chains(&[chain, chain]);
        let written = recorder.written().expect("written");
        let pieces: Vec<Vec<u8>> = written.pieces.map(|p| p.expect("read")).collect();
        assert_eq!(pieces.len(), 1);
        match read(&pieces[0]) {
            Ok(Handed::Chains(read)) => assert_eq!(read, vec![chain, chain]),
            _ => panic!("chains read back"),
        }
        recorder.take_written(&pieces[0]);
        let e = recorder.written().expect_err("refused").to_string();
        assert!(e.contains("worker 0"), "{e}");
    }
}
