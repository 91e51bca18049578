//! The writer of tables against the whole run's: in batches, and of the run in parts.

use std::path::{Path, PathBuf};

use polars::prelude::{DataFrame, ParquetReader, SerReader};

use super::TableStream;
use crate::analysis::{analyze, analyze_dir_in_parts_of};
use crate::exchange::{Alone, Exchange, Threads};
use crate::tables::RowRecorder;
use crate::tables::{tables, write_tables, TableFormat};

/// What a directory of tables holds: each CSV file's bytes and each Parquet file's
/// frame, by file name.
type Written = (Vec<(PathBuf, Vec<u8>)>, Vec<(PathBuf, DataFrame)>);

fn read(written: &[Vec<PathBuf>]) -> Written {
    let name = |p: &Path| PathBuf::from(p.file_name().expect("a name"));
    let csv = (written[0].iter())
        .map(|p| (name(p), std::fs::read(p).expect("read")))
        .collect();
    let parquet = (written[1].iter())
        .map(|p| {
            let file = std::fs::File::open(p).expect("open");
            (name(p), ParquetReader::new(file).finish().expect("Parquet"))
        })
        .collect();
    (csv, parquet)
}

/// A kept run's tables written a few rows a batch (7, and 1) are those written in
/// batches of the default: the same CSV bytes and Parquet frames; and the calls
/// table is what polars writes of the whole frame, made at once.
#[test]
fn tables_written_in_batches_are_the_tables_written_whole() {
    use crate::tables::write::write_table;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports/c-calls/ranks");
    let trace = (crate::load::load_dir(&root, &mut |_, _| {}))
        .expect("a kept run")
        .trace;
    let (report, details) = analyze(&trace, &Default::default());
    let calls: usize = trace.ranks.iter().map(|t| t.spans.len()).sum();
    assert!(calls > 7, "{calls} calls");
    let out = tempfile::tempdir().expect("a directory");
    let write = |batch: usize| {
        let (csv, pq) = (
            out.path().join(format!("{batch}.csv")),
            out.path().join(format!("{batch}.pq")),
        );
        let outputs = [
            (csv.as_path(), TableFormat::Csv),
            (pq.as_path(), TableFormat::Parquet),
        ];
        let mut stream = TableStream::in_batches_of(&outputs, batch).expect("the directories");
        stream.add_whole_run(&trace, &details);
        read(&stream.finish(&report).expect("written"))
    };
    let whole = write(super::ROWS);
    let path = out.path().join("calls.csv");
    let mut frame = super::calls(&trace, &details.sites, 0..calls).expect("made");
    write_table(&mut frame, &path, TableFormat::Csv)
        .expect("written")
        .commit()
        .expect("committed");
    let written = whole.0.iter().find(|(name, _)| name.ends_with("calls.csv"));
    assert_eq!(
        written.map(|c| &c.1),
        Some(&std::fs::read(&path).expect("read"))
    );
    for batch in [7, 1] {
        let batches = write(batch);
        assert!(batches.0 == whole.0, "CSV in batches of {batch}");
        let frames = batches.1.iter().zip(&whole.1);
        assert!(
            frames.clone().count() == whole.1.len()
                && frames
                    .into_iter()
                    .all(|(a, b)| a.0 == b.0 && a.1.equals_missing(&b.1)),
            "Parquet in batches of {batch}"
        );
    }
}

/// Every kept run analysed in parts (a rank a part, the streamed tables written in
/// batches of 7 rows; in one part, in batches of the default) writes the tables the
/// run held whole writes: the same files, the same CSV bytes, the same Parquet
/// frames.
#[test]
fn the_tables_of_the_parts_are_the_tables_of_the_whole_run() {
    let opts = Default::default();
    let mut rows = 0;
    for dir in crate::load::kept_run_dirs() {
        let trace = (crate::load::load_dir(&dir, &mut |_, _| {}))
            .expect("a kept run")
            .trace;
        let (report, details) = analyze(&trace, &opts);
        let out = tempfile::tempdir().expect("a directory");
        let at = |name: &str| out.path().join(name);
        let outputs = |tag: &str| {
            [
                (at(&format!("{tag}.csv")), TableFormat::Csv),
                (at(&format!("{tag}.pq")), TableFormat::Parquet),
            ]
        };
        let whole_out = outputs("whole");
        let whole_out: Vec<(&Path, TableFormat)> =
            whole_out.iter().map(|(p, f)| (p.as_path(), *f)).collect();
        let whole = write_tables(&tables(&trace, &report, &details), &whole_out);
        let whole = read(&whole.expect("written whole"));
        rows += details.requests.len() + details.waits.len() + details.findings.len();
        for (events, batch) in [(1, 7), (u64::MAX, super::ROWS)] {
            let tag = format!("parts-{events}-{batch}");
            let parts_out = outputs(&tag);
            let parts_out: Vec<(&Path, TableFormat)> =
                parts_out.iter().map(|(p, f)| (p.as_path(), *f)).collect();
            let stream = TableStream::in_batches_of(&parts_out, batch);
            let mut stream = stream.expect("the directories");
            let run = analyze_dir_in_parts_of(&dir, &opts, events, &Alone, Some(&mut stream));
            let run = run.expect("analysed in parts").expect("worker 0");
            let parts = read(&stream.finish(&run.report).expect("written in parts"));
            let name = format!(
                "{}, parts of {events} events, batches of {batch}",
                dir.display()
            );
            assert_same(&name, &parts, &whole);
        }
    }
    assert!(rows > 1000, "the kept runs' rows: {rows}");
}

/// The tables `got` are `want`: the same files, the same CSV bytes, the same Parquet
/// frames.
fn assert_same(name: &str, got: &Written, want: &Written) {
    let names = |w: &Written| w.0.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(got), names(want), "{name}: the files");
    for ((file, bytes), (_, expected)) in got.0.iter().zip(&want.0) {
        let (got, want) = (
            String::from_utf8_lossy(bytes),
            String::from_utf8_lossy(expected),
        );
        assert!(
            got == want,
            "{name}: {}\n{got}\nwanted\n{want}",
            file.display()
        );
    }
    for ((file, frame), (_, expected)) in got.1.iter().zip(&want.1) {
        assert!(frame.equals_missing(expected), "{name}: {}", file.display());
    }
}

/// Every kept run analysed by 2 and 3 workers (on threads), a rank a part, each worker
/// but worker 0 encoding its block's rows and handing them to worker 0: worker 0 writes
/// the tables one process writes (the CSV files byte for byte, the Parquet files' rows),
/// CSV and Parquet, each alone and both, in batches (and row groups) of 7 rows as of
/// the default.
#[test]
fn the_tables_of_a_jobs_workers_are_the_tables_of_one_process() {
    let opts = Default::default();
    let mut handed = 0;
    let (csv, parquet) = (TableFormat::Csv, TableFormat::Parquet);
    for dir in crate::load::kept_run_dirs() {
        let out = tempfile::tempdir().expect("a directory");
        let write = |tag: &str, formats: &[TableFormat], batch: usize, ex: &dyn Exchange| {
            let paths: Vec<(PathBuf, TableFormat)> = (formats.iter())
                .map(|f| (out.path().join(format!("{tag}.{f:?}")), *f))
                .collect();
            let outputs: Vec<(&Path, TableFormat)> =
                paths.iter().map(|(p, f)| (p.as_path(), *f)).collect();
            let mut stream = TableStream::in_batches_of(&outputs, batch).expect("directories");
            let run = analyze_dir_in_parts_of(&dir, &opts, 1, ex, Some(&mut stream));
            let run = run.expect("analysed").expect("worker 0");
            stream.finish(&run.report).expect("written")
        };
        let one = read(&write("one", &[csv, parquet], super::ROWS, &Alone));
        for (workers, formats, batch) in [
            (2, vec![csv, parquet], 7),
            (3, vec![csv, parquet], super::ROWS),
            (2, vec![csv], 7),
            (3, vec![parquet], 7),
        ] {
            let tag = format!("{workers}-{formats:?}-{batch}");
            let got = Threads::run(workers, |ex: &dyn Exchange| {
                if ex.worker() == 0 {
                    return (Some(write(&tag, &formats, batch, ex)), 0);
                }
                // The rows set aside in a file on 2 workers, kept in memory on 3; in
                // row groups of as many rows as worker 0's.
                let mut recorder = CountingRecorder::new(&formats);
                if workers == 2 {
                    recorder.rows = RowRecorder::new(&formats);
                }
                recorder.rows = recorder.rows.in_groups_of(batch);
                let run = analyze_dir_in_parts_of(&dir, &opts, 1, ex, Some(&mut recorder));
                assert!(run.expect("analysed").is_none(), "only worker 0 reports");
                (None, recorder.pieces)
            });
            handed += got.iter().map(|g| g.1).sum::<usize>();
            let name = format!("{} on {workers} workers, {tag}", dir.display());
            let first = got.into_iter().next().and_then(|g| g.0);
            let mut written = first.expect("worker 0 writes");
            // Each format's files where `read` looks for them, the other's as one's.
            let (mut got, mut want) = (read(&[vec![], vec![]]), one.clone());
            for (format, files) in formats.iter().zip(written.drain(..)) {
                match format {
                    TableFormat::Csv => got.0 = read(&[files, vec![]]).0,
                    TableFormat::Parquet => got.1 = read(&[vec![], files]).1,
                }
            }
            if !formats.contains(&csv) {
                want.0.clear();
            }
            if !formats.contains(&parquet) {
                want.1.clear();
            }
            assert_same(&name, &got, &want);
        }
    }
    assert!(handed > 100, "pieces handed to worker 0: {handed}");
}

/// A worker whose rows cannot be handed on (its recorder fails), or that was started
/// without the tables worker 0 writes, fails the job at worker 0 with its error, as
/// worker 1 of 3; every worker returns (none waits for another), and no table is
/// written.
#[test]
fn a_worker_whose_rows_cannot_be_handed_on_fails_the_job() {
    let opts = Default::default();
    let run = crate::load::kept_run_copy("c-ring");
    let dir = run.path();
    let out = tempfile::tempdir().expect("a directory");
    for (case, said) in [
        (Some("the disk is full"), "the disk is full"),
        (None, "started without the tables"),
    ] {
        let tables = out.path().join("tables");
        let got = Threads::run(2, |ex: &dyn Exchange| {
            let mut recorder = CountingRecorder::new(&[TableFormat::Csv]);
            if ex.worker() == 0 {
                let outputs = [(tables.as_path(), TableFormat::Csv)];
                let mut stream = TableStream::new(&outputs).expect("the directory");
                let run = analyze_dir_in_parts_of(dir, &opts, 1, ex, Some(&mut stream));
                return Some(run.map(|_| ()).map_err(|e| (e.to_string(), e)));
            }
            recorder.fails = case.filter(|_| ex.worker() == 1);
            let rows: crate::analysis::Rows<'_> = match (case, ex.worker()) {
                (None, 1) => None,
                _ => Some(&mut recorder),
            };
            let run = analyze_dir_in_parts_of(dir, &opts, 1, ex, rows);
            assert!(run.is_err(), "worker 1 fails");
            None
        });
        let first = got.into_iter().next().flatten().expect("worker 0 returns");
        let (e, error) = first.expect_err("the job fails");
        assert!(e.contains(said), "{e}");
        let worker = matches!(
            error,
            crate::Error::Worker {
                worker: 1,
                workers: 2,
                ..
            }
        );
        assert!(worker, "{error:?}");
        assert!(!tables.exists(), "no table written");
    }
}

/// A [`RowRecorder`] that counts the pieces it hands on, or fails to hand them on.
struct CountingRecorder {
    rows: RowRecorder,
    pieces: usize,
    fails: Option<&'static str>,
}

impl CountingRecorder {
    /// A recorder keeping its pieces in memory, for a worker 0 writing `formats`.
    fn new(formats: &[TableFormat]) -> CountingRecorder {
        CountingRecorder {
            rows: RowRecorder::in_memory(formats),
            pieces: 0,
            fails: None,
        }
    }
}

impl crate::analysis::RowSink for CountingRecorder {
    fn calls(&mut self, part: &crate::model::Trace, sites: &crate::sites::SiteTable) {
        self.rows.calls(part, sites);
    }

    fn requests(
        &mut self,
        part: &crate::model::Trace,
        rows: &[crate::metrics::request_row::RequestRow],
    ) {
        self.rows.requests(part, rows);
    }

    fn wait_states(
        &mut self,
        part: &crate::model::Trace,
        sites: &crate::sites::SiteTable,
        waits: &[crate::metrics::WaitInstance],
    ) {
        self.rows.wait_states(part, sites, waits);
    }

    fn findings(
        &mut self,
        part: &crate::model::Trace,
        sites: &crate::sites::SiteTable,
        found: &[crate::metrics::Finding],
    ) {
        self.rows.findings(part, sites, found);
    }

    fn messages(
        &mut self,
        run: &crate::model::Trace,
        ends: &crate::metrics::message_ends::MessageEnds,
    ) {
        self.rows.messages(run, ends);
    }

    fn chains(&mut self, chains: &[crate::gpu::ChainRow]) {
        self.rows.chains(chains);
    }

    fn written(&mut self) -> crate::Result<crate::analysis::Written> {
        if let Some(reason) = self.fails {
            return Err(crate::Error::Table {
                reason: reason.into(),
            });
        }
        let written = self.rows.written()?;
        self.pieces += written.lengths.len();
        Ok(written)
    }

    fn take_written(&mut self, piece: &[u8]) {
        self.rows.take_written(piece);
    }
}

/// A piece of rows handed by a worker that cannot be read fails the tables of the
/// writer that takes it: none is written, and the directory made for them is gone.
#[test]
fn a_piece_handed_that_cannot_be_read_fails_the_tables() {
    use crate::analysis::RowSink;
    let out = tempfile::tempdir().expect("a directory");
    let dir = out.path().join("tables");
    let mut stream = TableStream::new(&[(dir.as_path(), TableFormat::Csv)]).expect("made");
    stream.take_written(&[0, 1, 2, 3]);
    let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports/c-calls/ranks");
    let trace = (crate::load::load_dir(&kept, &mut |_, _| {})).expect("a kept run");
    let report = analyze(&trace.trace, &Default::default()).0;
    let e = stream.finish(&report).expect_err("refused").to_string();
    assert!(e.contains("could not be read"), "{e}");
    assert!(!dir.exists(), "the directory made for the tables is gone");
}

/// A piece a worker handed that this writer cannot place fails its tables, saying why:
/// text for CSV files when it writes none, rows for Parquet files when it writes none,
/// text before its table's columns opened the files. A worker's text after its columns
/// follows the header its columns wrote.
#[test]
fn pieces_a_writer_cannot_place_fail_the_tables() {
    use crate::analysis::RowSink;
    use crate::tables::batches::Batches;
    use crate::tables::parts::Part;
    let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports/c-calls/ranks");
    let trace = (crate::load::load_dir(&kept, &mut |_, _| {})).expect("a kept run");
    let report = analyze(&trace.trace, &Default::default()).0;
    let pieces = |format: TableFormat| {
        let mut recorder = RowRecorder::in_memory(&[format]);
        let df = polars::df!("a" => [1i64, 2], "b" => ["x", "y,z"]).expect("a frame");
        recorder.batch(Part::Calls, Ok(df));
        let written = recorder.written().expect("written");
        written.pieces.map(|p| p.expect("held")).collect::<Vec<_>>()
    };
    let (text, rows) = (pieces(TableFormat::Csv), pieces(TableFormat::Parquet));
    assert_eq!(
        (text.len(), rows.len()),
        (2, 2),
        "columns, then text or row groups"
    );
    let out = tempfile::tempdir().expect("a directory");
    for (format, handed, said) in [
        (
            TableFormat::Parquet,
            &text[..],
            "no csv table is written here",
        ),
        (
            TableFormat::Csv,
            &rows[..],
            "no parquet table is written here",
        ),
        (
            TableFormat::Csv,
            &text[1..],
            "its columns did not come before",
        ),
    ] {
        let dir = out.path().join("tables");
        let mut stream = TableStream::new(&[(dir.as_path(), format)]).expect("made");
        handed.iter().for_each(|piece| stream.take_written(piece));
        let e = stream.finish(&report).expect_err("refused").to_string();
        assert!(e.contains(said), "{e}");
        assert!(!dir.exists(), "the directory made for the tables is gone");
    }
    let dir = out.path().join("tables");
    let mut stream = TableStream::new(&[(dir.as_path(), TableFormat::Csv)]).expect("made");
    text.iter().for_each(|piece| stream.take_written(piece));
    stream.finish(&report).expect("written");
    let calls = std::fs::read_to_string(dir.join("calls.csv")).expect("written");
    assert_eq!(calls, "a,b\n1,x\n2,\"y,z\"\n");
}
