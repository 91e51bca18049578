//! Import plus every metric on a generated trace of 10 M events (the target:
//! 5 M events/s or more on one core, at most 2 GB of peak memory).
//!
//! The trace: 16 ranks in pairs, each iteration `compute, Irecv, Isend, Waitall(recv),
//! Waitall(send), compute, Barrier` (7 events), with jittered durations, written as the
//! recorder writes per-rank files (binary streams, `dir`), as version-3 JSON per-rank
//! files (`dir-json`, still read), and once more as one merged file (`merged`). Each
//! layout is measured in a fresh process (peak memory is per process): `cargo bench
//! --bench analyze` runs all three; `-- dir|dir-json|merged [EVENTS]` runs one; `-- write
//! EVENTS DIR` only writes the per-rank streams into DIR (to run `overlap` on them).
//!
//! Generation is not timed. Timed: reading every event, aligning, matching, and all of
//! `analysis::analyze`, on rayon's threads (`RAYON_NUM_THREADS=1` for one core). The
//! larger, more realistic runs (16 to 1 024 ranks, merge too) are `--bench scale`.

#[path = "common/mod.rs"]
mod common;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use overlap_analyzer::analysis::analyze;
use overlap_analyzer::load::{load_dir, load_merged};
use overlap_analyzer::metrics::Options;
use overlap_format::call_data::{CallData, Collective, Transfer};
use overlap_format::schema::wire::{event_to_wire, ArrayWriter, MetaName, ObjectWriter, WireEvent};
use overlap_format::schema::{
    CallArgs, CallEvent, CommId, Completion, ComputeEvent, Event, Footer, Header, MergedInfo,
    Nanos, Op, Params, RankClock, RequestId, SyncPhase, FORMAT_NAME, FORMAT_VERSION,
    LAST_JSON_RANK_VERSION,
};
use overlap_format::stream::codec::{
    encode_call, encode_completion, encode_compute, encode_string_head, encode_sync, Deltas,
};
use overlap_format::stream::varint::RecordBuf;
use overlap_format::stream::{file_start, footer_payload, frame, FrameKind, StampClock};
use overlap_format::testing::call;

const RANKS: u32 = 16;
const PER_ITERATION: u64 = 7;

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn around(&mut self, base: u64) -> u64 {
        base + self.next() % (base / 4 + 1)
    }
}

/// The events of `rank`, one iteration at a time.
fn rank_events(rank: u32, iterations: u64, mut each: impl FnMut(&Event)) {
    let peer = (rank ^ 1) as i32;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ u64::from(rank + 1));
    let mut t = 1_000u64;
    let mut req = 0u64;
    // Iterations start together (the barrier); jitter within.
    for i in 0..iterations {
        let it_start = 1_000 + i * 100_000;
        t = t.max(it_start);
        let c1 = rng.around(20_000);
        each(&Event::Compute(ComputeEvent {
            tid: 0,
            start: Nanos(t),
            end: Nanos(t + c1),
            name: "pack".into(),
            buffers: None,
        }));
        t += c1 + 100;
        let bytes = if (i + u64::from(rank)) % 2 == 0 {
            8 << 10
        } else {
            64 << 10
        };
        req += 1;
        let recv_req = req;
        each(&call(
            Op::Irecv,
            t,
            t + 500,
            CallArgs {
                peer: Some(peer),
                tag: Some(7),
                bytes: Some(64 << 10),
                comm: Some(0),
                buf: Some(0x10_0000),
                buf_len: Some(64 << 10),
                request: Some(recv_req),
                ..CallArgs::default()
            },
        ));
        t += 600;
        req += 1;
        let send_req = req;
        each(&call(
            Op::Isend,
            t,
            t + 700,
            CallArgs {
                peer: Some(peer),
                tag: Some(7),
                bytes: Some(bytes),
                comm: Some(0),
                buf: Some(0x20_0000),
                buf_len: Some(bytes),
                request: Some(send_req),
                ..CallArgs::default()
            },
        ));
        t += 800;
        let w = rng.around(5_000);
        let partner_bytes = if (i + u64::from(rank ^ 1)) % 2 == 0 {
            8 << 10
        } else {
            64 << 10
        };
        each(&call(
            Op::Waitall,
            t,
            t + w,
            CallArgs {
                completed: vec![Completion {
                    request: Some(recv_req),
                    source: Some(peer),
                    tag: Some(7),
                    bytes: Some(partner_bytes),
                }],
                ..CallArgs::default()
            },
        ));
        t += w + 100;
        let w2 = rng.around(3_000);
        each(&call(
            Op::Waitall,
            t,
            t + w2,
            CallArgs {
                completed: vec![Completion {
                    request: Some(send_req),
                    source: None,
                    tag: None,
                    bytes: None,
                }],
                ..CallArgs::default()
            },
        ));
        t += w2 + 100;
        let c2 = rng.around(40_000);
        each(&Event::Compute(ComputeEvent {
            tid: 0,
            start: Nanos(t),
            end: Nanos(t + c2),
            name: "compute".into(),
            buffers: None,
        }));
        t += c2 + 100;
        // Everyone leaves the barrier at the iteration's end.
        let end = it_start + 99_000;
        each(&call(
            Op::Barrier,
            t.min(end - 10),
            end,
            CallArgs {
                comm: Some(0),
                ..CallArgs::default()
            },
        ));
        t = end + 100;
    }
}

fn header(rank: u32) -> Header {
    Header {
        format: FORMAT_NAME.into(),
        format_version: FORMAT_VERSION,
        rank,
        size: RANKS,
        host: "bench".into(),
        os_pid: rank,
        epoch_ns: 0,
        clock_domain: "bench-boot".into(),
        program: "generated".into(),
        params: Params::new(),
        run_id: String::new(),
        start_unix_ns: 0,
    }
}

/// The call data the recorder would have recorded for a generated call.
fn call_data(c: &CallEvent) -> CallData {
    let a = &c.args;
    match c.op {
        Op::Isend | Op::Irecv => CallData::Post {
            transfer: Transfer {
                peer: a.peer.unwrap_or(0),
                tag: a.tag.unwrap_or(0),
                bytes: a.bytes.unwrap_or(0),
                comm: CommId(a.comm.unwrap_or(0)),
                buf: a.buf.unwrap_or(0),
                buf_len: a.buf_len.unwrap_or(0),
            },
            request: RequestId(a.request.unwrap_or(0)),
        },
        Op::Barrier => CallData::Collective(Collective {
            comm: CommId(a.comm.unwrap_or(0)),
            send_bytes: 0,
            recv_bytes: 0,
            root: None,
        }),
        _ => CallData::Complete { flag: None },
    }
}

/// Per-rank binary streams, as the recorder writes them: pages of at most 64 KiB.
fn write_stream_dir(dir: &Path, iterations: u64) -> std::io::Result<u64> {
    std::fs::create_dir_all(dir)?;
    let mut bytes = 0;
    for rank in 0..RANKS {
        let path = dir.join(format!("rank-{rank}.ovlp"));
        let mut file = BufWriter::with_capacity(1 << 20, std::fs::File::create(&path)?);
        let mut out = file_start(&header(rank));
        frame(
            &mut out,
            FrameKind::Clock,
            0,
            &[&[StampClock::Monotonic as u8]],
        );
        frame(&mut out, FrameKind::Thread, 0, &[b"main"]);
        let mut page: Vec<u8> = Vec::with_capacity(1 << 16);
        let mut d = Deltas::default();
        let mut names: Vec<String> = Vec::new();
        let mut b = RecordBuf::default();
        b.clear();
        encode_sync(&mut b, &common::zero_sync(SyncPhase::Init));
        page.extend_from_slice(b.as_bytes());
        let mut n = 0u64;
        let mut err = Ok(());
        rank_events(rank, iterations, |e| {
            n += 1;
            match e {
                Event::Call(c) => {
                    b.clear();
                    let done = &c.args.completed;
                    let (start, end) = (c.start.0, c.end.0);
                    encode_call(
                        &mut b,
                        &mut d,
                        c.op,
                        start,
                        end,
                        0x40_1000,
                        &call_data(c),
                        done.len() as u32,
                    );
                    page.extend_from_slice(b.as_bytes());
                    for x in done {
                        b.clear();
                        encode_completion(&mut b, &mut d, x);
                        page.extend_from_slice(b.as_bytes());
                    }
                }
                Event::Compute(c) => {
                    let id = match names.iter().position(|n| *n == c.name) {
                        Some(i) => i + 1,
                        None => {
                            names.push(c.name.clone());
                            b.clear();
                            encode_string_head(&mut b, names.len() as u32, c.name.len());
                            page.extend_from_slice(b.as_bytes());
                            page.extend_from_slice(c.name.as_bytes());
                            names.len()
                        }
                    };
                    b.clear();
                    encode_compute(&mut b, &mut d, id as u32, c.start.0, c.end.0);
                    page.extend_from_slice(b.as_bytes());
                }
                Event::Gpu(_) => unreachable!("the generated run has no GPU work"),
            }
            if page.len() >= 60 << 10 {
                frame(&mut out, FrameKind::Events, 0, &[&page]);
                page.clear();
                if err.is_ok() {
                    err = file.write_all(&out);
                }
                out.clear();
            }
        });
        err?;
        b.clear();
        encode_sync(&mut b, &common::zero_sync(SyncPhase::Final));
        page.extend_from_slice(b.as_bytes());
        frame(&mut out, FrameKind::Events, 0, &[&page]);
        let footer = Footer {
            events: n,
            threads: 1,
            buffer_stalls: 0,
        };
        frame(&mut out, FrameKind::Footer, 0, &[&footer_payload(&footer)]);
        file.write_all(&out)?;
        file.flush()?;
        bytes += std::fs::metadata(&path)?.len();
    }
    Ok(bytes)
}

/// Per-rank JSON files, as versions 1 to 3 of the recorder wrote them.
fn write_json_dir(dir: &Path, iterations: u64) -> std::io::Result<u64> {
    std::fs::create_dir_all(dir)?;
    let mut bytes = 0;
    for rank in 0..RANKS {
        let path = dir.join(format!("rank-{rank}.json"));
        let file = BufWriter::with_capacity(1 << 20, std::fs::File::create(&path)?);
        let mut w = ArrayWriter::new(file)?;
        let json_header = Header {
            format_version: LAST_JSON_RANK_VERSION,
            ..header(rank)
        };
        w.write(&WireEvent::meta(MetaName::Header, rank, 0, json_header))?;
        w.write(&WireEvent::meta(
            MetaName::ClockSync,
            rank,
            0,
            common::zero_sync(SyncPhase::Init),
        ))?;
        let mut err = Ok(());
        let mut n = 0u64;
        rank_events(rank, iterations, |e| {
            n += 1;
            if err.is_ok() {
                err = w.write(&event_to_wire(rank, e));
            }
        });
        err?;
        w.write(&WireEvent::meta(
            MetaName::ClockSync,
            rank,
            0,
            common::zero_sync(SyncPhase::Final),
        ))?;
        let footer = Footer {
            events: n,
            threads: 1,
            buffer_stalls: 0,
        };
        w.write(&WireEvent::meta(MetaName::Footer, rank, 0, footer))?;
        w.finish()?.flush()?;
        bytes += std::fs::metadata(&path)?.len();
    }
    Ok(bytes)
}

fn write_merged(path: &Path, iterations: u64) -> std::io::Result<u64> {
    let info = MergedInfo {
        format: FORMAT_NAME.into(),
        format_version: FORMAT_VERSION,
        program: "generated".into(),
        params: Params::new(),
        world_size: RANKS,
        ranks: (0..RANKS)
            .map(|rank| RankClock {
                rank,
                host: "bench".into(),
                shared_clock: true,
                init_offset_ns: 0,
                init_error_ns: 0,
                final_offset_ns: Some(0),
                final_error_ns: Some(0),
                drift_ppb: Some(0.0),
                code_maps: None,
                program_objects: None,
                cpu_affinity: None,
                online_cpus: None,
                in_flight: None,
                call_counts: None,
                call_paths: Vec::new(),
                source_sites: Vec::new(),
                events: {
                    let mut n = 0u64;
                    rank_events(rank, iterations, |_| n += 1);
                    n
                },
                complete: true,
            })
            .collect(),
        max_clock_error_ns: 0,
        messages: 0,
        unmatched_sends: 0,
        unmatched_receives: 0,
        clock_suspect: Vec::new(),
        incomplete: Vec::new(),
        missing_ranks: Vec::new(),
        run_id: String::new(),
        start_unix_ns: 0,
        clock_implausible: Vec::new(),
        peers_out_of_range: Vec::new(),
    };
    let file = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut w = ObjectWriter::new(file, &info)?;
    for rank in 0..RANKS {
        let mut err = Ok(());
        rank_events(rank, iterations, |e| {
            if err.is_ok() {
                err = w.write(&event_to_wire(rank, e));
            }
        });
        err?;
    }
    w.finish()?.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

fn run(layout: &str, events: u64) -> Result<(), Box<dyn std::error::Error>> {
    let iterations = events / (PER_ITERATION * u64::from(RANKS));
    let total = iterations * PER_ITERATION * u64::from(RANKS);
    let tmp = std::env::temp_dir().join(format!("overlap-bench-{}", std::process::id()));
    let (path, bytes): (PathBuf, u64) = match layout {
        "dir" => (
            tmp.join("ranks"),
            write_stream_dir(&tmp.join("ranks"), iterations)?,
        ),
        "dir-json" => (
            tmp.join("ranks"),
            write_json_dir(&tmp.join("ranks"), iterations)?,
        ),
        _ => {
            std::fs::create_dir_all(&tmp)?;
            let p = tmp.join("run.json");
            let b = write_merged(&p, iterations)?;
            (p, b)
        }
    };
    let before = common::peak_rss()?;
    let t0 = Instant::now();
    let loaded = if layout.starts_with("dir") {
        load_dir(&path, &mut |_, _| {})?
    } else {
        load_merged(&path, &mut |_, _| {})?
    };
    let t1 = Instant::now();
    let (report, _details) = analyze(&loaded.trace, &Options::default());
    let t2 = Instant::now();
    let secs = (t2 - t0).as_secs_f64();
    println!(
        "{layout:>8}: {total} events ({:.0} MiB, {:.1} B/event): import {:.2} s + metrics \
         {:.2} s = {:.2} s, {:.2} M events/s; peak memory {:.0} MiB (before import {:.0} \
         MiB); {} messages, {} findings",
        bytes as f64 / (1 << 20) as f64,
        bytes as f64 / total as f64,
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        secs,
        total as f64 / secs / 1e6,
        common::peak_rss()? as f64 / (1 << 20) as f64,
        before as f64 / (1 << 20) as f64,
        report.run.messages,
        report.false_overlap.count,
    );
    std::fs::remove_dir_all(&tmp)?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let events: u64 = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    match args.first().map(String::as_str) {
        Some(layout @ ("dir" | "dir-json" | "merged")) => run(layout, events),
        Some("write") => {
            let dir = PathBuf::from(args.get(2).ok_or("write EVENTS DIR")?);
            let iterations = events / (PER_ITERATION * u64::from(RANKS));
            write_stream_dir(&dir, iterations)?;
            Ok(())
        }
        _ => {
            // Each layout in its own process, so that peak memory is its own.
            let me = std::env::current_exe()?;
            for layout in ["dir", "dir-json", "merged"] {
                let status = std::process::Command::new(&me)
                    .arg(layout)
                    .arg(events.to_string())
                    .status()?;
                if !status.success() {
                    return Err(format!("{layout}: {status}").into());
                }
            }
            Ok(())
        }
    }
}
