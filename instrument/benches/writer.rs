//! How fast the recorder's writer empties the rings into a real per-rank file: one or
//! two threads record Isend-like calls (`CallData::Post`, two clock reads each) as fast
//! as they can, and the writer streams them to a file in a temporary directory. A
//! thread that finds its ring full waits for the writer (a buffer stall), so the rate
//! below is the most a rank can log for long: events written / wall time from the first
//! record to the end of `finish()` (everything on disk). The same run into a `NullSink`
//! (the writer drains the rings and hands each event to a sink that drops it) shows what
//! the recording threads, the rings and the writer's draining allow without the file, so
//! a slow file can be told from a slow producer or drain.
//!
//! The goal: at least 30 M events/s to the file. Rounds alternate the four
//! configurations (1 or 2 threads, file or none); medians are reported. Environment:
//! `WRITER_EVENTS` (per run, split between the threads; default 2 000 000),
//! `WRITER_ROUNDS` (default 3). Run with `make bench` or
//! `cargo bench -p overlap-instrument --bench writer`.

use std::path::Path;
use std::sync::Barrier;
use std::time::Instant;

use overlap_instrument::clock::monotonic_now_ns;
use overlap_instrument::recorder::{
    CallData, FinishReport, NullSink, RankFileSink, Recorder, RecorderConfig, Sink, Transfer,
};
use overlap_instrument::schema::{CommId, Header, Op, Params, FORMAT_NAME, FORMAT_VERSION};

/// Where the events go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A per-rank file, as a traced rank writes it.
    File,
    /// Drained and dropped.
    Null,
}

/// One configuration's result.
struct Run {
    events: u64,
    secs: f64,
    stalls: u64,
    /// Size of the file written (none into the null sink).
    file_bytes: Option<u64>,
}

fn header() -> Header {
    Header {
        format: FORMAT_NAME.into(),
        format_version: FORMAT_VERSION,
        rank: 0,
        size: 1,
        host: "bench".into(),
        os_pid: std::process::id(),
        epoch_ns: monotonic_now_ns(),
        clock_domain: String::new(),
        program: "bench-writer".into(),
        params: Params::new(),
        run_id: String::new(),
        start_unix_ns: 0,
    }
}

/// The per-rank file sink, as a traced rank creates it.
fn file_sink(path: &Path) -> impl Sink {
    RankFileSink::create(path, &header()).expect("creating the trace file")
}

/// `threads` threads record `per_thread` Isend-like calls each into `sink`.
fn record(sink: impl Sink, threads: usize, per_thread: u64) -> (FinishReport, f64) {
    let rec = Recorder::new(sink, RecorderConfig::default()).expect("recorder");
    let start = Barrier::new(threads + 1);
    let buf = [0u64; 1];
    let t0 = std::thread::scope(|s| {
        for t in 0..threads {
            let (rec, start) = (&rec, &start);
            s.spawn(move || {
                let transfer = Transfer {
                    peer: 1 + t as i32,
                    tag: 7,
                    bytes: 8,
                    comm: CommId::WORLD,
                    buf: buf.as_ptr() as u64,
                    buf_len: 8,
                };
                start.wait();
                for _ in 0..per_thread {
                    let request = rec.next_request_id();
                    let begin = rec.stamp();
                    let data = CallData::Post { transfer, request };
                    rec.record_call(Op::Isend, begin, rec.stamp(), data, &[]);
                }
            });
        }
        start.wait();
        Instant::now()
    });
    let report = rec.finish().expect("finish");
    (report, t0.elapsed().as_secs_f64())
}

fn run(target: Target, threads: usize, events: u64) -> Run {
    let per_thread = events / threads as u64;
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir
        .path()
        .join(overlap_instrument::schema::rank_file_name(0));
    let (report, secs) = match target {
        Target::File => record(file_sink(&path), threads, per_thread),
        Target::Null => record(NullSink, threads, per_thread),
    };
    let expected = per_thread * threads as u64;
    assert_eq!(
        report.events, expected,
        "the writer wrote {} of the {expected} events recorded",
        report.events
    );
    Run {
        events: report.events,
        secs,
        stalls: report.buffer_stalls,
        file_bytes: (target == Target::File)
            .then(|| std::fs::metadata(&path).expect("the trace file").len()),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, got {v:?}")),
        Err(_) => default,
    }
}

fn main() {
    let events = env_or("WRITER_EVENTS", 2_000_000).max(2);
    let rounds = env_or("WRITER_ROUNDS", 3).max(1) as usize;
    let configs = [
        (1, Target::File),
        (1, Target::Null),
        (2, Target::File),
        (2, Target::Null),
    ];
    let mut results: Vec<Vec<Run>> = configs.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds {
        for (i, &(threads, target)) in configs.iter().enumerate() {
            results[i].push(run(target, threads, events));
        }
    }
    let ring = RecorderConfig::default();
    println!(
        "writer throughput: {events} Isend-like calls per run split between the threads, \
         rings of {} KiB per thread, medians of {rounds} alternating rounds",
        ring.ring_bytes / 1024
    );
    println!(
        "  {:<8} {:<16} {:>14} {:>14} {:>12}",
        "threads", "sink", "events/s", "buffer stalls", "bytes/event"
    );
    for (&(threads, target), runs) in configs.iter().zip(&results) {
        let rate = median(runs.iter().map(|r| r.events as f64 / r.secs).collect());
        let stalls = median(runs.iter().map(|r| r.stalls as f64).collect());
        let (sink, per_event) = match target {
            Target::File => {
                let b = median(
                    runs.iter()
                        .filter_map(|r| r.file_bytes)
                        .zip(runs.iter().map(|r| r.events))
                        .map(|(bytes, events)| bytes as f64 / events as f64)
                        .collect(),
                );
                ("per-rank file", format!("{b:.1}"))
            }
            Target::Null => ("none (NullSink)", "-".to_string()),
        };
        println!(
            "  {threads:<8} {sink:<16} {:>11.2} M/s {stalls:>14.0} {per_event:>12}",
            rate / 1e6
        );
    }
    println!(
        "  goal: >= 30 M events/s to the per-rank file; events/s = events written / wall \
         time from the first record to the end of finish()"
    );
}
