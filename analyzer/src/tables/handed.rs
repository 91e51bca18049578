//! The tables' rows of a job's workers but worker 0, handed to worker 0 to write: each
//! such worker makes the rows of its block's parts as one process makes them
//! ([`RowRecorder`], a [`RowSink`]) and writes each batch into a piece of bytes; worker 0
//! takes the pieces of each worker in turn, after its own block's rows, into its
//! [`super::TableStream`] ([`RowSink::take_written`]), which cuts every table into the
//! batches one process writes. So the files are one process's, byte for byte, and
//! worker 0 never reads the other workers' ranks.
//!
//! A piece is a byte naming what it holds, then the rows: a batch of a streamed table
//! as Parquet (which keeps each column's type and nulls exactly); or findings' rows and
//! their sites' labels, or staging chains, as MessagePack.

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom, Write};

use polars::io::parquet::write::StatisticsOptions;
use polars::prelude::{DataFrame, ParquetCompression, ParquetReader, ParquetWriter, SerReader};

use super::batches::Batches;
use super::findings::{rows_of, Findings};
use super::parts::Part;
use super::write::in_rows;
use super::{messages, MessageTimes};
use crate::analysis::RowSink;
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
    Calls = 0,
    Requests = 1,
    WaitStates = 2,
    Messages = 3,
    Findings = 4,
    Chains = 5,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Calls,
        Kind::Requests,
        Kind::WaitStates,
        Kind::Messages,
        Kind::Findings,
        Kind::Chains,
    ];

    /// What holds a batch of the streamed table `table`.
    fn of_table(table: Part) -> Kind {
        match table {
            Part::Calls => Kind::Calls,
            Part::Requests => Kind::Requests,
            Part::WaitStates => Kind::WaitStates,
            _ => Kind::Messages,
        }
    }

    /// The streamed table whose batch it holds.
    fn table(self) -> Option<Part> {
        match self {
            Kind::Calls => Some(Part::Calls),
            Kind::Requests => Some(Part::Requests),
            Kind::WaitStates => Some(Part::WaitStates),
            Kind::Messages => Some(Part::Messages),
            Kind::Findings | Kind::Chains => None,
        }
    }
}

/// What a piece gives worker 0's writer.
pub(super) enum Handed {
    /// A batch of rows of a streamed table.
    Batch(Part, DataFrame),
    Findings(Findings),
    Chains(Vec<ChainRow>),
}

/// Takes the rows of a worker's block (not worker 0's) and writes each batch as it
/// comes into a piece for worker 0 ([`RowSink::written`]). The pieces wait in a file of
/// their own (unnamed, in the system's temporary directory, gone with the recorder), not
/// in the worker's memory beside the view it folds over; in memory only when no such
/// file can be made.
#[derive(Default)]
pub struct RowRecorder {
    /// The file the pieces are set aside in, and each piece's length there.
    aside: Option<(File, Vec<usize>)>,
    /// The pieces kept in memory, without a file.
    pieces: Vec<Vec<u8>>,
    /// The first failure: nothing more is written, and [`RowSink::written`] says it.
    failed: Option<Error>,
}

impl RowRecorder {
    /// A recorder of no rows yet.
    pub fn new() -> RowRecorder {
        RowRecorder {
            aside: tempfile::tempfile().ok().map(|file| (file, Vec::new())),
            ..RowRecorder::default()
        }
    }

    /// Writes a piece of `kind` made by `write`, unless a piece failed before.
    fn add(&mut self, kind: Kind, write: impl FnOnce(&mut Vec<u8>) -> Result<()>) {
        if self.failed.is_some() {
            return;
        }
        let mut piece = vec![kind as u8];
        if let Err(e) = write(&mut piece).and_then(|()| self.keep(piece)) {
            self.failed = Some(e);
        }
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

    /// The pieces set aside, in the order written, read back.
    fn read_back(&mut self) -> Result<Vec<Vec<u8>>> {
        let Some((file, lengths)) = self.aside.take() else {
            return Ok(std::mem::take(&mut self.pieces));
        };
        let mut file = BufReader::new(file);
        file.seek(SeekFrom::Start(0)).map_err(set_aside)?;
        let read = |len: &usize| {
            let mut piece = vec![0; *len];
            file.read_exact(&mut piece).map(|()| piece)
        };
        lengths
            .iter()
            .map(read)
            .collect::<std::io::Result<_>>()
            .map_err(set_aside)
    }
}

impl Batches for RowRecorder {
    /// Writes the batch `df` of the streamed table `table` as a piece.
    fn batch(&mut self, table: Part, df: Result<DataFrame>) {
        let kind = Kind::of_table(table);
        self.add(kind, |piece| {
            let mut df = df?;
            // Compressed as the Parquet tables are: the pieces wait on the worker's disk
            // until worker 0 takes them. Without statistics, which no one reads.
            let writer = ParquetWriter::new(piece)
                .with_compression(ParquetCompression::Zstd(None))
                .with_statistics(StatisticsOptions::empty());
            writer.finish(&mut df).map(|_| ()).map_err(table_error)
        });
    }
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

    fn written(&mut self) -> Result<Vec<Vec<u8>>> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => self.read_back(),
        }
    }

    fn take_written(&mut self, _piece: &[u8]) {
        if self.failed.is_none() {
            self.failed = Some(Error::Table {
                reason: "a worker's rows are written by worker 0, not handed on again".into(),
            });
        }
    }
}

/// What the piece `piece` ([`RowRecorder`]'s) holds.
pub(super) fn read(piece: &[u8]) -> Result<Handed> {
    let unreadable = |why: String| Error::Table {
        reason: format!("the rows a worker handed to worker 0 could not be read: {why}"),
    };
    let (&first, rows) = (piece.split_first()).ok_or_else(|| unreadable("empty".into()))?;
    let kind = (Kind::ALL.into_iter().find(|k| *k as u8 == first))
        .ok_or_else(|| unreadable(format!("no rows are of kind {first}")))?;
    if let Some(part) = kind.table() {
        let df = ParquetReader::new(Cursor::new(rows)).finish();
        return Ok(Handed::Batch(
            part,
            df.map_err(|e| unreadable(e.to_string()))?,
        ));
    }
    let read = |e: rmp_serde::decode::Error| unreadable(e.to_string());
    Ok(match kind {
        Kind::Findings => Handed::Findings(rmp_serde::from_slice(rows).map_err(read)?),
        _ => Handed::Chains(rmp_serde::from_slice(rows).map_err(read)?),
    })
}

#[cfg(test)]
mod tests {
    use super::{read, Handed, RowRecorder};
    use crate::analysis::RowSink;
    use crate::gpu::chains::Breakdown;
    use crate::gpu::ChainRow;

    /// A piece empty, of no known kind, or whose rows are cut short is an error that says
    /// what it is.
    #[test]
    fn a_piece_that_cannot_be_read_fails_the_tables() {
        let said = |piece: &[u8]| match read(piece) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{piece:?} read"),
        };
        assert!(said(&[]).contains("empty"), "{}", said(&[]));
        assert!(said(&[9, 1]).contains("kind 9"), "{}", said(&[9, 1]));
        for kind in 0..6 {
            let e = said(&[kind, 1, 2, 3]);
            assert!(e.contains("handed to worker 0 could not be read"), "{e}");
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
        let (mut aside, mut kept) = (RowRecorder::new(), RowRecorder::default());
        assert!(aside.aside.is_some(), "a file for the pieces");
        for n in [3, 1, 700] {
            aside.chains(&chains(n));
            kept.chains(&chains(n));
        }
        let written = aside.written().expect("read back");
        assert_eq!(written.len(), 3);
        assert_eq!(written, kept.written().expect("kept"));
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
        let mut recorder = RowRecorder::new();
        recorder.chains(&[chain, chain]);
        let pieces = recorder.written().expect("written");
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
