//! The generated halo run of the scale bench (see the bench's first paragraph): each
//! rank's timeline a pure function of (rank, iteration), written one rank's file at a
//! time as the recorder writes it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

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

use super::{common, Res};

/// One iteration, ns; every iteration starts at `i * PERIOD` on every rank.
const PERIOD: u64 = 200_000;
/// A post (Irecv, Isend) and the gap after it, ns.
const POST: u64 = 400;
const NAMES: [&str; 3] = ["pack", "imbalance", "interior"];

/// A deterministic hash of (rank, iteration, what), splitmix64.
fn hash(rank: u32, i: u64, what: u64) -> u64 {
    let mut z = (u64::from(rank) << 40 ^ i << 4 ^ what).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Neighbour offsets: a send in direction `d` goes to `rank + OFF[d]` with tag `10 + d`.
pub fn offsets(ranks: u32) -> Vec<u32> {
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

pub fn count_events(ranks: u32, iterations: u64) -> u64 {
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
pub fn generate(dir: &Path, ranks: u32, iterations: u64) -> Res<u64> {
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
