//! Import plus every metric on a generated trace of 10 M events (the target:
//! 5 M events/s or more on one core, at most 2 GB of peak memory).
//!
//! The trace: 16 ranks in pairs, each iteration `compute, Irecv, Isend, Waitall(recv),
//! Waitall(send), compute, Barrier` (7 events), with jittered durations, written the way
//! the recorder writes per-rank files, and once more as one merged file. Each layout is
//! measured in a fresh process (peak memory is per process): `cargo bench --bench
//! analyze` runs both; `-- dir|merged [EVENTS]` runs one.
//!
//! Generation is not timed. Timed: reading every event, aligning, matching, and all of
//! `metrics::analyze` (single-threaded throughout).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use overlap_analyzer::import::{load_dir, load_merged};
use overlap_analyzer::metrics::{analyze, Options};
use overlap_format::schema::wire::{event_to_wire, ArrayWriter, MetaName, ObjectWriter, WireEvent};
use overlap_format::schema::{
    CallArgs, CallEvent, ClockSync, Completion, ComputeEvent, Event, Footer, Header, MergedInfo,
    Nanos, Op, Params, RankClock, SyncPhase, FORMAT_NAME, FORMAT_VERSION,
};

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

fn call(op: Op, start: u64, end: u64, args: CallArgs) -> Event {
    Event::Call(CallEvent {
        tid: 0,
        start: Nanos(start),
        end: Nanos(end),
        op,
        args,
    })
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
    }
}

fn sync(phase: SyncPhase) -> ClockSync {
    ClockSync {
        phase,
        local_ns: 0,
        offset_ns: 0,
        error_ns: 0,
        rtt_ns: 0,
        rounds: 0,
    }
}

fn write_dir(dir: &Path, iterations: u64) -> std::io::Result<u64> {
    std::fs::create_dir_all(dir)?;
    let mut bytes = 0;
    for rank in 0..RANKS {
        let path = dir.join(format!("rank-{rank}.json"));
        let file = BufWriter::with_capacity(1 << 20, std::fs::File::create(&path)?);
        let mut w = ArrayWriter::new(file)?;
        w.write(&WireEvent::meta(MetaName::Header, rank, 0, header(rank)))?;
        w.write(&WireEvent::meta(
            MetaName::ClockSync,
            rank,
            0,
            sync(SyncPhase::Init),
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
            sync(SyncPhase::Final),
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
                source_sites: Vec::new(),
            })
            .collect(),
        max_clock_error_ns: 0,
        messages: 0,
        unmatched_sends: 0,
        unmatched_receives: 0,
        clock_suspect: Vec::new(),
        incomplete: Vec::new(),
        missing_ranks: Vec::new(),
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

/// Peak resident memory of this process, bytes (Linux's VmHWM).
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn run(layout: &str, events: u64) -> Result<(), Box<dyn std::error::Error>> {
    let iterations = events / (PER_ITERATION * u64::from(RANKS));
    let total = iterations * PER_ITERATION * u64::from(RANKS);
    let tmp = std::env::temp_dir().join(format!("overlap-bench-{}", std::process::id()));
    let (path, bytes): (PathBuf, u64) = match layout {
        "dir" => (
            tmp.join("ranks"),
            write_dir(&tmp.join("ranks"), iterations)?,
        ),
        _ => {
            std::fs::create_dir_all(&tmp)?;
            let p = tmp.join("run.json");
            let b = write_merged(&p, iterations)?;
            (p, b)
        }
    };
    let before = peak_rss();
    let t0 = Instant::now();
    let loaded = if layout == "dir" {
        load_dir(&path, &mut |_, _| {})?
    } else {
        load_merged(&path, &mut |_, _| {})?
    };
    let t1 = Instant::now();
    let (report, _details) = analyze(&loaded.trace, &Options::default());
    let t2 = Instant::now();
    let secs = (t2 - t0).as_secs_f64();
    println!(
        "{layout:>6}: {total} events ({:.0} MiB of JSON): import {:.2} s + metrics {:.2} s = \
         {:.2} s, {:.2} M events/s; peak memory {:.0} MiB (before import {:.0} MiB); \
         {} messages, {} findings",
        bytes as f64 / (1 << 20) as f64,
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        secs,
        total as f64 / secs / 1e6,
        peak_rss() as f64 / (1 << 20) as f64,
        before as f64 / (1 << 20) as f64,
        report.run.messages,
        report.false_overlap.len(),
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
        Some(layout @ ("dir" | "merged")) => run(layout, events),
        _ => {
            // Each layout in its own process, so that peak memory is its own.
            let me = std::env::current_exe()?;
            for layout in ["dir", "merged"] {
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
