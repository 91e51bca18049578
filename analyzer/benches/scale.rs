//! Merge and analysis at scale: how fast `merge` and `analyze` go, and how much memory
//! they need, on generated runs of 16, 256 and 1024 ranks and 10 M events or more, one
//! thread or two (`RAYON_NUM_THREADS`). The run looks like a real halo code so that the
//! analyses find what they look for: each iteration packs, posts an `Irecv` from and an
//! `Isend` to each of its ring neighbours (±1, and ±4 from 16 ranks up), waits for the
//! receives (a Late Sender when a neighbour was slow: one rank-iteration in ten computes
//! longer before its sends), computes its interior, then waits for the sends; ranks
//! with `rank % 8 == 3` wait for their sends right after posting them (false overlap).
//! Every 4th iteration ends in an `Allreduce` and every 16th (of the others) in a
//! `Barrier`, left by all at the period's end (wait at collective).
//!
//! Each rank's timeline is a pure function of (rank, iteration), so the files are
//! written one rank at a time, streamed to disk. Generation is not timed. Each
//! measurement runs in a fresh process so that its peak memory (VmHWM) is its own.
//!
//! `cargo bench -p overlap-analyzer --bench scale [-- --ranks 16,256,1024 --events
//! 10000000 --threads 1,2 --only merge,merge-in-memory,analyze --keep DIR]`; `--keep` writes the runs
//! under DIR and reuses them when they are there.

#[path = "common/mod.rs"]
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use overlap_analyzer::import::load_dir;
use overlap_analyzer::merge::{merge_dir, merge_to_file, write_merged};
use overlap_analyzer::metrics::{analyze, Options, WaitKind};
use overlap_format::call_data::{CallData, Collective, Transfer};
use overlap_format::schema::{
    CommId, Completion, Footer, Header, Op, Params, RequestId, SyncPhase, FORMAT_NAME,
    FORMAT_VERSION,
};
use overlap_format::stream::codec::{
    encode_call, encode_completion, encode_compute, encode_string_head, encode_sync, Deltas,
};
use overlap_format::stream::varint::RecordBuf;
use overlap_format::stream::{file_start, footer_payload, frame, FrameKind, StampClock};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Counts live heap bytes and their peak, only in the `stages` measurement (elsewhere it
/// passes straight to the system allocator, so the other figures are not its cost).
struct Counting;
static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            if new_size >= layout.size() {
                let grow = new_size - layout.size();
                let live = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
                PEAK.fetch_max(live, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One iteration, ns; every iteration starts at `i * PERIOD` on every rank.
const PERIOD: u64 = 200_000;
/// A post (Irecv, Isend) and the gap after it, ns.
const POST: u64 = 400;
const NAMES: [&str; 3] = ["pack", "imbalance", "interior"];
const MIB: f64 = (1 << 20) as f64;

/// A deterministic hash of (rank, iteration, what), splitmix64.
fn hash(rank: u32, i: u64, what: u64) -> u64 {
    let mut z = (u64::from(rank) << 40 ^ i << 4 ^ what).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Neighbour offsets: a send in direction `d` goes to `rank + OFF[d]` with tag `10 + d`.
fn offsets(ranks: u32) -> Vec<u32> {
    if ranks >= 16 {
        vec![1, ranks - 1, 4, ranks - 4]
    } else {
        vec![1, ranks - 1]
    }
}

/// Message bytes in direction `d`: 64 KiB to the ring neighbours, 16 KiB to the others.
fn bytes(d: usize) -> u64 {
    [64 << 10, 64 << 10, 16 << 10, 16 << 10][d]
}

fn transfer_ns(d: usize) -> u64 {
    2_000 + bytes(d) / 16
}

fn slow(rank: u32, i: u64) -> bool {
    hash(rank, i, 2).is_multiple_of(10)
}

fn false_overlap(rank: u32) -> bool {
    rank % 8 == 3
}

fn collective(i: u64) -> Option<Op> {
    match (i % 4, i % 16) {
        (0, _) => Some(Op::Allreduce),
        (_, 2) => Some(Op::Barrier),
        _ => None,
    }
}

/// Pack start and end, and when the first Isend of `rank` in iteration `i` starts.
fn plan(rank: u32, i: u64, n: u64) -> (u64, u64, u64) {
    let pack = i * PERIOD + 1_000 + hash(rank, i, 0) % 2_000;
    let pack_end = pack + 5_000 + hash(rank, i, 1) % 2_000;
    let mut sends = pack_end + n * POST;
    if slow(rank, i) {
        sends += 40_000 + hash(rank, i, 3) % 20_000 + 100;
    }
    (pack, pack_end, sends)
}

fn events_of(rank: u32, i: u64, n: u64) -> u64 {
    2 * n + 4 + u64::from(slow(rank, i)) + u64::from(collective(i).is_some())
}

fn count_events(ranks: u32, iterations: u64) -> u64 {
    let n = offsets(ranks).len() as u64;
    (0..ranks)
        .map(|r| (0..iterations).map(|i| events_of(r, i, n)).sum::<u64>())
        .sum()
}

/// One rank's file, written as the recorder writes it: pages of at most 64 KiB.
struct RankFile {
    file: BufWriter<File>,
    out: Vec<u8>,
    page: Vec<u8>,
    b: RecordBuf,
    d: Deltas,
    events: u64,
}

impl RankFile {
    fn create(path: &Path, header: &Header) -> Res<RankFile> {
        let mut out = file_start(header);
        let clock = [StampClock::Monotonic as u8];
        frame(&mut out, FrameKind::Clock, 0, &[&clock]);
        frame(&mut out, FrameKind::Thread, 0, &[b"main"]);
        let mut f = RankFile {
            file: BufWriter::with_capacity(1 << 20, File::create(path)?),
            out,
            page: Vec::with_capacity(1 << 16),
            b: RecordBuf::default(),
            d: Deltas::default(),
            events: 0,
        };
        f.sync(SyncPhase::Init);
        for (k, name) in NAMES.iter().enumerate() {
            f.b.clear();
            encode_string_head(&mut f.b, k as u32 + 1, name.len());
            f.page.extend_from_slice(f.b.as_bytes());
            f.page.extend_from_slice(name.as_bytes());
        }
        Ok(f)
    }

    fn sync(&mut self, phase: SyncPhase) {
        self.b.clear();
        encode_sync(&mut self.b, &common::zero_sync(phase));
        self.page.extend_from_slice(self.b.as_bytes());
    }

    fn end_record(&mut self) -> Res<()> {
        self.events += 1;
        if self.page.len() >= 60 << 10 {
            frame(&mut self.out, FrameKind::Events, 0, &[&self.page]);
            self.page.clear();
            self.file.write_all(&self.out)?;
            self.out.clear();
        }
        Ok(())
    }

    /// A call (`at`: start, end and call site) and the completions that follow it.
    fn call(&mut self, op: Op, at: [u64; 3], data: CallData, done: &[Completion]) -> Res<()> {
        let (b, d) = (&mut self.b, &mut self.d);
        b.clear();
        encode_call(b, d, op, at[0], at[1], at[2], &data, done.len() as u32);
        for c in done {
            encode_completion(b, d, c);
        }
        self.page.extend_from_slice(self.b.as_bytes());
        self.end_record()
    }

    /// `name`: 1-based into [`NAMES`].
    fn compute(&mut self, name: u32, start: u64, end: u64) -> Res<()> {
        self.b.clear();
        encode_compute(&mut self.b, &mut self.d, name, start, end);
        self.page.extend_from_slice(self.b.as_bytes());
        self.end_record()
    }

    fn finish(mut self) -> Res<u64> {
        self.sync(SyncPhase::Final);
        frame(&mut self.out, FrameKind::Events, 0, &[&self.page]);
        let footer = footer_payload(&Footer {
            events: self.events,
            threads: 1,
            buffer_stalls: 0,
        });
        frame(&mut self.out, FrameKind::Footer, 0, &[&footer]);
        self.file.write_all(&self.out)?;
        self.file.flush()?;
        Ok(self.events)
    }
}

/// One iteration of `rank`: pack, Irecv from each neighbour, (imbalance,) Isend to
/// each, Waitall(receives), interior, Waitall(sends) (false overlap: right after the
/// Isends), and maybe a collective that everyone leaves at the period's end.
fn iteration(f: &mut RankFile, rank: u32, ranks: u32, i: u64) -> Res<()> {
    let off = offsets(ranks);
    let n = off.len() as u64;
    let (pack, pack_end, sends) = plan(rank, i, n);
    f.compute(1, pack, pack_end)?;
    // Direction d: receive from `rank - off[d]` what it sends in direction d (tag 10 + d).
    let post = |d: usize, recv: bool| {
        let (peer, base, request) = match recv {
            true => ((rank + ranks - off[d]) % ranks, 0x1000_0000, d as u64),
            false => ((rank + off[d]) % ranks, 0x2000_0000, n + d as u64),
        };
        let transfer = Transfer {
            peer: peer as i32,
            tag: 10 + d as i32,
            bytes: bytes(d),
            comm: CommId(0),
            buf: base + d as u64 * 0x10_0000,
            buf_len: bytes(d),
        };
        let request = RequestId(i * 2 * n + request + 1);
        let data = CallData::Post { transfer, request };
        let done = Completion {
            request: Some(request.0),
            source: recv.then_some(peer as i32),
            tag: recv.then_some(10 + d as i32),
            bytes: recv.then_some(bytes(d)),
        };
        (peer, data, done)
    };
    let (mut recvs, mut sent, mut arrival) = (Vec::new(), Vec::new(), 0u64);
    for d in 0..off.len() {
        let (peer, data, done) = post(d, true);
        let at = pack_end + d as u64 * POST;
        f.call(Op::Irecv, [at, at + 300, 0x40_1010], data, &[])?;
        recvs.push(done);
        let (_, _, peer_sends) = plan(peer, i, n);
        arrival = arrival.max(peer_sends + d as u64 * POST + transfer_ns(d));
    }
    if slow(rank, i) {
        f.compute(2, pack_end + n * POST, sends - 100)?;
    }
    for d in 0..off.len() {
        let (_, data, done) = post(d, false);
        let at = sends + d as u64 * POST;
        f.call(Op::Isend, [at, at + 350, 0x40_1020], data, &[])?;
        sent.push(done);
    }
    let wait = CallData::Complete { flag: None };
    let mut t = sends + n * POST;
    if false_overlap(rank) {
        // Nothing between the posts and the wait: it waits for the whole transfer.
        let end = t + 8_000 + hash(rank, i, 6) % 4_000;
        f.call(Op::Waitall, [t, end, 0x40_1040], wait, &sent)?;
        t = end + 100;
    }
    let end = (t + 500 + hash(rank, i, 4) % 500).max(arrival);
    f.call(Op::Waitall, [t, end, 0x40_1030], wait, &recvs)?;
    t = end + 100;
    let end = t + 30_000 + hash(rank, i, 5) % 10_000;
    f.compute(3, t, end)?;
    t = end + 100;
    if !false_overlap(rank) {
        let end = t + 800 + hash(rank, i, 6) % 400;
        f.call(Op::Waitall, [t, end, 0x40_1040], wait, &sent)?;
        t = end + 100;
    }
    if let Some(op) = collective(i) {
        let bytes = if op == Op::Allreduce { 8 } else { 0 };
        let data = CallData::Collective(Collective {
            comm: CommId(0),
            send_bytes: bytes,
            recv_bytes: bytes,
            root: None,
        });
        f.call(op, [t, (i + 1) * PERIOD - 1_000, 0x40_1050], data, &[])?;
    }
    Ok(())
}

/// Writes the run, one rank's file at a time; returns its bytes.
fn generate(dir: &Path, ranks: u32, iterations: u64) -> Res<u64> {
    std::fs::create_dir_all(dir)?;
    let mut total = 0;
    for rank in 0..ranks {
        let header = Header {
            format: FORMAT_NAME.into(),
            format_version: FORMAT_VERSION,
            rank,
            size: ranks,
            host: "bench".into(),
            os_pid: rank,
            epoch_ns: 0,
            clock_domain: "bench-boot".into(),
            program: "generated-halo".into(),
            params: Params::new(),
            run_id: String::new(),
            start_unix_ns: 0,
        };
        let path = dir.join(format!("rank-{rank}.ovlp"));
        let mut f = RankFile::create(&path, &header)?;
        for i in 0..iterations {
            iteration(&mut f, rank, ranks, i)?;
        }
        f.finish()?;
        total += std::fs::metadata(&path)?.len();
    }
    Ok(total)
}

/// One measurement, in this (fresh) process: prints a line for people, then
/// `#fig SECONDS PEAK_BYTES` for the parent.
fn child(kind: &str, dir: &Path, label: &str, events: u64) -> Res<()> {
    let e = events as f64;
    let t0 = Instant::now();
    let (secs, line) = if kind == "merge" {
        // What `overlap merge` does: one rank at a time.
        let out = dir.with_extension("merged.json");
        let written = merge_to_file(dir, &out)?;
        let secs = t0.elapsed().as_secs_f64();
        let info = &written.info;
        let counted: u64 = info.ranks.iter().map(|r| r.events).sum();
        let size = std::fs::metadata(&out)?.len() as f64 / MIB;
        std::fs::remove_file(&out)?;
        let line = format!(
            "{counted} events: merged one rank at a time in {secs:.2} s; output {size:.0} \
             MiB; {} messages, unmatched {} sends {} receives",
            info.messages, info.unmatched_sends, info.unmatched_receives,
        );
        (secs, line)
    } else if kind == "merge-in-memory" {
        // The library's merge that keeps every rank (what `analyze DIR` builds on).
        let out = dir.with_extension("merged.json");
        let outcome = merge_dir(dir)?;
        let first = t0.elapsed().as_secs_f64();
        write_merged(&outcome.merged, &out)?;
        let second = t0.elapsed().as_secs_f64() - first;
        let info = &outcome.merged.info;
        let counted: u64 = info.ranks.iter().map(|r| r.events).sum();
        let size = std::fs::metadata(&out)?.len() as f64 / MIB;
        std::fs::remove_file(&out)?;
        let line = format!(
            "{counted} events: read+merge {first:.2} s + write {second:.2} s; output \
             {size:.0} MiB; {} messages, unmatched {} sends {} receives",
            info.messages, info.unmatched_sends, info.unmatched_receives,
        );
        (first + second, line)
    } else if kind == "stages" {
        return stages(dir, label, events);
    } else {
        let loaded = load_dir(dir, &mut |_, _| {})?;
        let first = t0.elapsed().as_secs_f64();
        let (report, _details) = analyze(&loaded.trace, &Options::default());
        let second = t0.elapsed().as_secs_f64() - first;
        let (w, run) = (&report.wait_states, &report.run);
        let of = |k: WaitKind| {
            let s = w.kinds.iter().find(|s| s.kind == k);
            s.map_or((0, 0.0), |s| (s.count, s.total_ns as f64 / 1e9))
        };
        let ((ls, ls_s), (nxn, nxn_s), (bar, bar_s)) = (
            of(WaitKind::LateSender),
            of(WaitKind::WaitAtNxN),
            of(WaitKind::WaitAtBarrier),
        );
        let line = format!(
            "{} events: import {first:.2} s + metrics {second:.2} s; {} messages \
             (unmatched {} sends {} receives); wait states {:.3} s: late sender {ls} \
             ({ls_s:.3} s), wait at NxN {nxn} ({nxn_s:.3} s), at barrier {bar} ({bar_s:.3} \
             s); {} false-overlap findings",
            run.events,
            run.messages,
            run.unmatched_sends,
            run.unmatched_receives,
            w.total_ns as f64 / 1e9,
            report.false_overlap.len(),
        );
        (first + second, line)
    };
    let peak = common::peak_rss()?;
    println!(
        "{kind:<15} {label}: {}; total {secs:.2} s, {:.2} M events/s, peak {:.0} MiB \
         ({:.0} B/event)",
        line,
        e / secs / 1e6,
        peak as f64 / MIB,
        peak as f64 / e,
    );
    println!("#fig {secs} {peak}");
    Ok(())
}

/// Where analyze's memory goes: its steps one after another on this thread, each with
/// its time, the heap it keeps (what it returns, held until the end as `analyze` holds
/// it) and the heap's peak while it ran, both counted by the allocator.
fn stages(dir: &Path, label: &str, events: u64) -> Res<()> {
    use overlap_analyzer::metrics::wait_states;
    use overlap_analyzer::metrics::{budget, false_overlap, ideal, requests, transfer};
    COUNTING.store(true, Ordering::Relaxed);
    let e = events as f64;
    let mut before = 0usize;
    let mut step = |name: &str, t: Instant| {
        let live = LIVE.load(Ordering::Relaxed);
        let peak = PEAK.swap(live, Ordering::Relaxed);
        println!(
            "stages {label} {name:<22} {:>7.2} s  keeps {:>7.0} MiB ({:>5.1} B/event)  \
             peak {:>7.0} MiB ({:>5.1} B/event)",
            t.elapsed().as_secs_f64(),
            (live as f64 - before as f64) / MIB,
            (live as f64 - before as f64) / e,
            peak as f64 / MIB,
            peak as f64 / e,
        );
        before = live;
    };
    let opts = Options::default();
    let t = Instant::now();
    let trace = load_dir(dir, &mut |_, _| {})?.trace;
    step("load", t);
    let t = Instant::now();
    let budgets = budget::budgets(&trace);
    step("budgets", t);
    let t = Instant::now();
    let waits = wait_states::instances(&trace);
    step("wait states", t);
    let t = Instant::now();
    let model = transfer::TransferModel::fit(&trace);
    let collective = transfer::CollectiveModel::fit(&trace);
    step("models", t);
    let t = Instant::now();
    let reqs = requests::per_request(&trace, &model, &collective, &opts);
    step("per request", t);
    let t = Instant::now();
    let _sites = overlap_analyzer::sites::SiteTable::build(&trace);
    step("sites", t);
    let t = Instant::now();
    let ls = false_overlap::late_sender_by_call(&waits);
    let found = false_overlap::findings(&trace, &reqs, &ls, &opts);
    step("false overlap", t);
    let t = Instant::now();
    let program = overlap_analyzer::ops::extract(&trace).ok();
    step("operations", t);
    let t = Instant::now();
    let ideal = program.as_ref().and_then(ideal::replay);
    step("ideal replay", t);
    let t = Instant::now();
    let check = program
        .as_ref()
        .and_then(|p| overlap_analyzer::replay::self_check(&trace, p));
    step("self-check replay", t);
    println!(
        "stages {label}: {} waits, {} requests, {} findings, ideal {ideal:?}, self check {}; \
         {} budgets",
        waits.len(),
        reqs.len(),
        found.len(),
        check.is_some(),
        budgets.0.len(),
    );
    println!("#fig 0 {}", common::peak_rss()?);
    Ok(())
}

/// Runs one measurement in a fresh process; returns (seconds, peak bytes).
fn measure(kind: &str, dir: &Path, label: &str, threads: u32, events: u64) -> Res<(f64, u64)> {
    let out = Command::new(std::env::current_exe()?)
        .args(["--child", kind, label, &events.to_string()])
        .arg(dir)
        .env("RAYON_NUM_THREADS", threads.to_string())
        .stderr(std::process::Stdio::inherit())
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("{}: {text}", out.status).into());
    }
    let mut fig = None;
    for line in text.lines() {
        match line.strip_prefix("#fig ") {
            Some(f) => {
                let mut w = f.split_whitespace();
                let secs: f64 = w.next().ok_or("no seconds")?.parse()?;
                let peak: u64 = w.next().ok_or("no peak")?.parse()?;
                fig = Some((secs, peak));
            }
            None => println!("{line}"),
        }
    }
    Ok(fig.ok_or("the child printed no figures")?)
}

fn list<T: std::str::FromStr>(s: &str) -> Res<Vec<T>> {
    s.split(',')
        .map(|x| x.trim().parse().map_err(|_| format!("bad list {s}").into()))
        .collect()
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("--child") {
        let [_, kind, label, events, dir] = args.as_slice() else {
            return Err("--child merge|merge-in-memory|analyze LABEL EVENTS DIR".into());
        };
        return child(kind, Path::new(dir), label, events.parse()?);
    }
    let (mut ranks, mut events, mut threads) =
        (vec![16u32, 256, 1024], 10_000_000u64, vec![1u32, 2]);
    let (mut only, mut keep): (Option<String>, Option<PathBuf>) = (None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--ranks" => ranks = list(value()?)?,
            "--events" => events = value()?.parse()?,
            "--threads" => threads = list(value()?)?,
            "--only" => only = Some(value()?.clone()),
            "--keep" => keep = Some(PathBuf::from(value()?)),
            _ => return Err(format!("unknown argument {a}").into()),
        }
    }
    let kinds: Vec<&str> = match only.as_deref() {
        None => vec!["merge", "analyze"],
        Some(list) => {
            let kinds: Vec<&str> = list.split(',').map(str::trim).collect();
            if let Some(k) = kinds
                .iter()
                .find(|k| !matches!(**k, "merge" | "merge-in-memory" | "analyze" | "stages"))
            {
                return Err(
                    format!("--only merge|merge-in-memory|analyze|stages[,...], not {k}").into(),
                );
            }
            kinds
        }
    };

    let root = match &keep {
        Some(k) => k.clone(),
        None => std::env::temp_dir().join(format!("overlap-scale-{}", std::process::id())),
    };
    // (ranks, threads, kind) -> (seconds, peak bytes), and the events of each run.
    let mut figs: BTreeMap<(u32, u32, &str), (f64, u64)> = BTreeMap::new();
    let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
    for &r in &ranks {
        if r < 3 {
            return Err("at least 3 ranks".into());
        }
        // Events per rank-iteration on average: see `events_of` (slow: 1 in 10;
        // collectives: 1 in 4 plus 1 in 16).
        let per = 2.0 * offsets(r).len() as f64 + 4.0 + 0.1 + 0.25 + 1.0 / 16.0;
        let iterations = ((events as f64 / (f64::from(r) * per)) as u64).max(1);
        let total = count_events(r, iterations);
        counts.insert(r, total);
        let dir = root.join(format!("ranks-{r}-events-{events}"));
        if dir.is_dir() {
            println!("R={r}: reusing {} ({total} events)", dir.display());
        } else {
            let partial = dir.with_extension("partial");
            if partial.exists() {
                std::fs::remove_dir_all(&partial)?;
            }
            let t0 = Instant::now();
            let bytes = generate(&partial, r, iterations)?;
            std::fs::rename(&partial, &dir)?;
            println!(
                "R={r}: generated {total} events ({iterations} iterations, {:.0} MiB, {:.1} \
                 B/event) in {:.1} s: {}",
                bytes as f64 / MIB,
                bytes as f64 / total as f64,
                t0.elapsed().as_secs_f64(),
                dir.display(),
            );
        }
        for &t in &threads {
            for kind in &kinds {
                let label = format!("R={r} E={total} T={t}");
                // A failed measurement (out of memory...) is reported; the rest goes on.
                match measure(kind, &dir, &label, t, total) {
                    Ok(fig) => _ = figs.insert((r, t, kind), fig),
                    Err(e) => println!("{kind:<15} {label}: failed: {e}"),
                }
            }
        }
        if keep.is_none() {
            std::fs::remove_dir_all(&dir)?;
        }
    }
    if keep.is_none() {
        std::fs::remove_dir_all(&root)?;
    }
    println!("\nR ranks, E events, T threads; Me/s: million events per second; MiB, B/ev:");
    println!("peak memory, in all and per event; x: speed with T threads over 1 thread");
    println!(
        "{:>5} {:>10} {:>2} {:>10} {:>9} {:>10} {:>10} {:>9} {:>7} {:>7}",
        "R",
        "E",
        "T",
        "merge Me/s",
        "merge MiB",
        "in-mem MiB",
        "anal Me/s",
        "anal B/ev",
        "merge x",
        "anal x"
    );
    let show = |x: Option<f64>, digits: usize| x.map_or("-".into(), |x| format!("{x:.digits$}"));
    for &r in &ranks {
        let n = counts.get(&r).copied().unwrap_or(0);
        for &t in &threads {
            let fig = |k: &str| figs.get(&(r, t, k)).copied();
            let rate = |k: &str| fig(k).map(|f| n as f64 / f.0 / 1e6);
            let speedup = |k: &str| Some(figs.get(&(r, 1, k))?.0 / fig(k)?.0).filter(|_| t != 1);
            println!(
                "{r:>5} {n:>10} {t:>2} {:>10} {:>9} {:>10} {:>10} {:>9} {:>7} {:>7}",
                show(rate("merge"), 2),
                show(fig("merge").map(|f| f.1 as f64 / MIB), 0),
                show(fig("merge-in-memory").map(|f| f.1 as f64 / MIB), 0),
                show(rate("analyze"), 2),
                show(fig("analyze").map(|f| f.1 as f64 / n as f64), 0),
                show(speedup("merge"), 2),
                show(speedup("analyze"), 2),
            );
        }
    }
    Ok(())
}
