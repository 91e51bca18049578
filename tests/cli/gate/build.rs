//! Hand-built two-rank traces for the gate's tests: per-rank JSON files written as the
//! recorder writes them, in the shapes drawn in `super`'s documentation.

use std::path::{Path, PathBuf};

use overlap_format::testing::call;
use overlap_instrument::schema::wire::{event_to_wire, ArrayWriter, MetaName, NameArgs, WireEvent};
use overlap_instrument::schema::{
    CallArgs, ClockSync, Completion, ComputeEvent, Event, Footer, Header, Nanos, Op, SyncPhase,
    FORMAT_NAME, LAST_JSON_RANK_VERSION,
};
use serde_json::{json, Value};

#[derive(Clone, Copy, PartialEq)]
pub enum Shape {
    Balanced,
    Imbalanced,
    /// Balanced, with one more Send/Recv pair: other work.
    MoreWork,
}

fn compute(start: u64, end: u64) -> Event {
    Event::Compute(ComputeEvent {
        tid: 0,
        start: Nanos(start),
        end: Nanos(end),
        name: "step".into(),
        buffers: None,
    })
}

fn p2p(op: Op, start: u64, end: u64, peer: i32, tag: i32) -> Event {
    let completed = if op == Op::Recv {
        vec![Completion {
            request: None,
            source: Some(peer),
            tag: Some(tag),
            bytes: Some(8),
        }]
    } else {
        Vec::new()
    };
    let args = CallArgs {
        peer: Some(peer),
        tag: Some(tag),
        bytes: Some(8),
        comm: Some(0),
        completed,
        ..CallArgs::default()
    };
    call(op, start, end, args)
}

fn barrier(start: u64, end: u64) -> Event {
    let args = CallArgs {
        comm: Some(0),
        ..CallArgs::default()
    };
    call(Op::Barrier, start, end, args)
}

/// Rank `rank`'s events, in ns.
pub fn events(shape: Shape, rank: u32) -> Vec<Event> {
    let init = call(Op::Init, 0, 1_000, CallArgs::default());
    let (op, peer) = if rank == 0 {
        (Op::Send, 1)
    } else {
        (Op::Recv, 0)
    };
    let mut v = vec![init];
    let end = match (shape, rank) {
        (Shape::Imbalanced, 0) => {
            v.extend([compute(1_000, 11_000), p2p(op, 11_000, 11_100, peer, 7)]);
            v.push(barrier(11_100, 21_200));
            21_200
        }
        (Shape::Imbalanced, _) => {
            v.extend([compute(1_000, 21_000), p2p(op, 21_000, 21_100, peer, 7)]);
            v.push(barrier(21_100, 21_200));
            21_200
        }
        _ => {
            v.extend([compute(1_000, 11_000), p2p(op, 11_000, 11_100, peer, 7)]);
            v.push(barrier(11_100, 11_200));
            if shape == Shape::MoreWork {
                v.push(p2p(op, 11_200, 11_300, peer, 8));
                11_300
            } else {
                11_200
            }
        }
    };
    v.push(call(Op::Finalize, end, end + 100, CallArgs::default()));
    v
}

/// A per-rank header, through serde so that fields added later keep their defaults.
pub fn header(rank: u32, size: u32, params: &Value) -> Header {
    serde_json::from_value(json!({
        "format": FORMAT_NAME,
        "format_version": LAST_JSON_RANK_VERSION,
        "rank": rank,
        "size": size,
        "host": format!("node{rank}"),
        "os_pid": 1000 + rank,
        "epoch_ns": 0,
        "clock_domain": "boot-1",
        "program": "gate-test",
        "params": params,
    }))
    .expect("a header")
}

/// Writes `rank-N.json` into `dir` as the recorder does; `closed` adds the footer.
pub fn write_rank(dir: &Path, header: &Header, events: &[Event], closed: bool) -> PathBuf {
    let pid = header.rank;
    let mut w = ArrayWriter::new(Vec::new()).expect("vec");
    let meta = |name, args: Value| WireEvent::meta(name, pid, 0, args);
    let name = json!({"name": format!("rank {pid}")});
    w.write(&meta(MetaName::ProcessName, name)).expect("vec");
    w.write(&WireEvent::meta(MetaName::Header, pid, 0, header))
        .expect("vec");
    let thread = NameArgs {
        name: "main".into(),
    };
    w.write(&WireEvent::meta(MetaName::ThreadName, pid, 0, thread))
        .expect("vec");
    let sync = ClockSync {
        phase: SyncPhase::Init,
        local_ns: 0,
        offset_ns: 0,
        error_ns: 0,
        rtt_ns: 0,
        rounds: 10,
    };
    w.write(&WireEvent::meta(MetaName::ClockSync, pid, 0, sync))
        .expect("vec");
    for e in events {
        w.write(&event_to_wire(pid, e)).expect("vec");
    }
    let bytes = if closed {
        let footer = Footer {
            events: events.len() as u64,
            threads: 1,
            buffer_stalls: 0,
        };
        w.write(&WireEvent::meta(MetaName::Footer, pid, 0, footer))
            .expect("vec");
        w.finish().expect("vec")
    } else {
        std::mem::take(w.get_mut().expect("vec"))
    };
    let path = dir.join(format!("rank-{pid}.json"));
    std::fs::write(&path, bytes).expect("write");
    path
}

/// A directory of `ranks` complete rank files of `shape` (world size `ranks`).
pub fn run_dir(root: &Path, name: &str, shape: Shape, ranks: u32, params: &Value) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir(&dir).expect("mkdir");
    for r in 0..ranks {
        let ev = if r < 2 {
            events(shape, r)
        } else {
            events(Shape::Balanced, 0)
        };
        write_rank(&dir, &header(r, ranks, params), &ev, true);
    }
    dir
}
