//! The GPU analysis at scale: a generated bulk-staged halo exchange (each rank sends
//! `PACKETS` packets to its right neighbour and receives as many from its left every
//! iteration: D2H copies, a wait on the copy stream, Isends, a Waitall, H2D copies, a
//! wait), merged in memory, then timed: the staging chains alone, and the whole GPU
//! section. Run at two sizes, the time per event should not grow.
//!
//! `cargo build --release -p overlap-analyzer --bench gpu` and run
//! `target/release/deps/gpu-*` with the iterations as its argument (default 20000, and
//! a tenth of it).

use std::path::Path;
use std::time::Instant;

use overlap_format::schema::{CallArgs, Completion, Event, GpuEvent, GpuOp, Nanos, Op};
use overlap_format::testing::call;

const RANKS: u32 = 4;
const PACKETS: u64 = 4;
const BYTES: u64 = 65536;

fn gpu(op: GpuOp, stream: u32, issued: u64, start: u64, end: u64, host: u64, p: u64) -> Event {
    let (src, dst) = match op {
        GpuOp::CopyD2H => (0x7000_0000 + p * BYTES, host),
        GpuOp::CopyH2D => (host, 0x7100_0000 + p * BYTES),
        _ => (0, 0),
    };
    Event::Gpu(GpuEvent {
        tid: 0,
        op,
        device: 0,
        stream,
        issued: Nanos(issued),
        start: Nanos(start),
        end: Nanos(end),
        bytes: if op.is_copy() { BYTES } else { 0 },
        src,
        dst,
        packet: op.is_copy().then_some(p as u32),
        name: String::new(),
        clock_error: Nanos(0),
    })
}

fn rank_events(rank: u32, iterations: u64) -> Vec<Event> {
    let (right, left) = ((rank + 1) % RANKS, (rank + RANKS - 1) % RANKS);
    let send_base = 0x1000_0000;
    let recv_base = 0x2000_0000;
    let mut ev = Vec::new();
    let mut request = 0u64;
    for it in 0..iterations {
        let t = it * 100_000;
        let mut posted = Vec::new();
        for p in 0..PACKETS {
            request += 1;
            ev.push(call(
                Op::Irecv,
                t + p * 10,
                t + p * 10 + 5,
                CallArgs {
                    peer: Some(left as i32),
                    tag: Some(p as i32),
                    bytes: Some(BYTES),
                    comm: Some(0),
                    request: Some(request),
                    buf: Some(recv_base + p * BYTES),
                    ..CallArgs::default()
                },
            ));
            posted.push((request, Some((left as i32, p as i32))));
        }
        for p in 0..PACKETS {
            let at = t + 100 + p * 2_000;
            ev.push(gpu(
                GpuOp::CopyD2H,
                1,
                t + 50 + p,
                at,
                at + 2_000,
                send_base + p * BYTES,
                p,
            ));
        }
        let copies_end = t + 100 + PACKETS * 2_000;
        ev.push(gpu(
            GpuOp::HostWait,
            1,
            t + 60,
            t + 70,
            copies_end + 10,
            0,
            0,
        ));
        for p in 0..PACKETS {
            request += 1;
            let at = copies_end + 20 + p * 20;
            ev.push(call(
                Op::Isend,
                at,
                at + 10,
                CallArgs {
                    peer: Some(right as i32),
                    tag: Some(p as i32),
                    bytes: Some(BYTES),
                    comm: Some(0),
                    request: Some(request),
                    buf: Some(send_base + p * BYTES),
                    ..CallArgs::default()
                },
            ));
            posted.push((request, None));
        }
        let wait_end = t + 40_000;
        ev.push(call(
            Op::Waitall,
            copies_end + 200,
            wait_end,
            CallArgs {
                completed: posted
                    .iter()
                    .map(|(r, src)| Completion {
                        request: Some(*r),
                        source: src.map(|s| s.0),
                        tag: src.map(|s| s.1),
                        bytes: src.map(|_| BYTES),
                    })
                    .collect(),
                ..CallArgs::default()
            },
        ));
        for p in 0..PACKETS {
            let at = wait_end + 100 + p * 2_000;
            ev.push(gpu(
                GpuOp::CopyH2D,
                2,
                wait_end + 10 + p,
                at,
                at + 2_000,
                recv_base + p * BYTES,
                p,
            ));
        }
        ev.push(gpu(
            GpuOp::HostWait,
            2,
            wait_end + 20,
            wait_end + 30,
            wait_end + 100 + PACKETS * 2_000,
            0,
            0,
        ));
    }
    ev
}

fn main() {
    let arg: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    for iterations in [arg / 10, arg] {
        let ranks: Vec<Vec<Event>> = (0..RANKS).map(|r| rank_events(r, iterations)).collect();
        let events: usize = ranks.iter().map(Vec::len).sum();
        let trace =
            overlap_analyzer::merge::from_events("gpu-bench", Path::new("gpu-bench"), ranks);
        let t0 = Instant::now();
        let chains = overlap_analyzer::gpu::chains::build(&trace.ranks, &trace.messages);
        let t_chains = t0.elapsed();
        let t1 = Instant::now();
        let (report, _) = overlap_analyzer::gpu::analyze(&trace).expect("GPU work");
        let t_all = t1.elapsed();
        println!(
            "{events} events, {} messages, {} chains: chains {:.1} ms, gpu section {:.1} ms ({:.2} M events/s), {} findings",
            trace.messages.len(),
            chains.len(),
            t_chains.as_secs_f64() * 1e3,
            t_all.as_secs_f64() * 1e3,
            events as f64 / t_all.as_secs_f64() / 1e6,
            report.findings.len()
        );
    }
}
