//! Builders for hand-made per-rank traces.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use overlap_analyzer::model::RankTrace;
pub use overlap_format::testing::call;
use overlap_instrument::schema::wire::{event_to_wire, ArrayWriter, MetaName, NameArgs, WireEvent};
use overlap_instrument::schema::{
    CallArgs, ClockSync, Completion, ComputeEvent, Event, Footer, Header, Nanos, Op, Params,
    SyncPhase, FORMAT_NAME, LAST_JSON_RANK_VERSION,
};

pub fn header(rank: u32, size: u32, epoch_ns: u64, clock_domain: &str) -> Header {
    Header {
        format: FORMAT_NAME.into(),
        // Hand-built per-rank files are JSON, which versions 1 to 3 wrote.
        format_version: LAST_JSON_RANK_VERSION,
        rank,
        size,
        host: format!("node{rank}"),
        os_pid: 1000 + rank,
        epoch_ns,
        clock_domain: clock_domain.into(),
        program: "hand-built".into(),
        params: Params::new(),
        run_id: String::new(),
        start_unix_ns: 0,
    }
}

pub fn sync(phase: SyncPhase, local_ns: u64, offset_ns: i64, error_ns: u64) -> ClockSync {
    ClockSync {
        phase,
        local_ns,
        offset_ns,
        error_ns,
        rtt_ns: 2 * error_ns,
        rounds: 10,
    }
}

fn p2p(peer: i32, tag: i32, bytes: u64) -> CallArgs {
    CallArgs {
        peer: Some(peer),
        tag: Some(tag),
        bytes: Some(bytes),
        comm: Some(0),
        buf: Some(0x1000),
        buf_len: Some(bytes),
        ..CallArgs::default()
    }
}

pub fn isend(start: u64, end: u64, peer: i32, tag: i32, bytes: u64, request: u64) -> Event {
    call(
        Op::Isend,
        start,
        end,
        CallArgs {
            request: Some(request),
            ..p2p(peer, tag, bytes)
        },
    )
}

pub fn irecv(start: u64, end: u64, peer: i32, tag: i32, bytes: u64, request: u64) -> Event {
    call(
        Op::Irecv,
        start,
        end,
        CallArgs {
            request: Some(request),
            ..p2p(peer, tag, bytes)
        },
    )
}

pub fn send(start: u64, end: u64, peer: i32, tag: i32, bytes: u64) -> Event {
    call(Op::Send, start, end, p2p(peer, tag, bytes))
}

pub fn recv(start: u64, end: u64, peer: i32, tag: i32, bytes: u64) -> Event {
    let status = Completion {
        request: None,
        source: Some(peer),
        tag: Some(tag),
        bytes: Some(bytes),
    };
    call(
        Op::Recv,
        start,
        end,
        CallArgs {
            completed: vec![status],
            ..p2p(peer, tag, bytes)
        },
    )
}

/// A blocking MPI_Sendrecv sending `bytes` to `dest` and receiving as many from `source`,
/// both with tag `tag`.
pub fn sendrecv(start: u64, end: u64, dest: i32, source: i32, tag: i32, bytes: u64) -> Event {
    let status = Completion {
        request: None,
        source: Some(source),
        tag: Some(tag),
        bytes: Some(bytes),
    };
    call(
        Op::Sendrecv,
        start,
        end,
        CallArgs {
            recv_peer: Some(source),
            recv_tag: Some(tag),
            completed: vec![status],
            ..p2p(dest, tag, bytes)
        },
    )
}

/// A completion call (Wait or Waitall) completing `(request, Some(source))` for receives
/// and `(request, None)` for sends.
pub fn complete(op: Op, start: u64, end: u64, done: &[(u64, Option<(i32, i32)>)]) -> Event {
    let completed = done
        .iter()
        .map(|(r, src)| Completion {
            request: Some(*r),
            source: src.map(|s| s.0),
            tag: src.map(|s| s.1),
            bytes: src.map(|_| 8),
        })
        .collect();
    call(
        op,
        start,
        end,
        CallArgs {
            completed,
            ..CallArgs::default()
        },
    )
}

pub fn compute(start: u64, end: u64, name: &str) -> Event {
    Event::Compute(ComputeEvent {
        tid: 0,
        start: Nanos(start),
        end: Nanos(end),
        name: name.into(),
        buffers: None,
    })
}

pub fn barrier(start: u64, end: u64) -> Event {
    call(
        Op::Barrier,
        start,
        end,
        CallArgs {
            comm: Some(0),
            ..CallArgs::default()
        },
    )
}

/// `MPI_Pcontrol(level, region)`: a region marked (level 1 enters it, -1 leaves it, as
/// IPM reads them; `region` empty for a plain Pcontrol).
pub fn pcontrol(start: u64, end: u64, level: i32, region: &str) -> Event {
    call(
        Op::Pcontrol,
        start,
        end,
        CallArgs {
            level: Some(level),
            region: (!region.is_empty()).then(|| region.into()),
            ..CallArgs::default()
        },
    )
}

pub fn footer(events: u64) -> Footer {
    Footer {
        events,
        threads: 1,
        buffer_stalls: 0,
    }
}

/// A rank trace as the importer would produce it from a complete file.
pub fn rank_trace(header: Header, syncs: Vec<ClockSync>, events: Vec<Event>) -> RankTrace {
    let n = events.len() as u64;
    RankTrace {
        path: PathBuf::from(format!("rank-{}.json", header.rank)),
        header,
        threads: [(0, "main".to_string())].into(),
        syncs,
        sites: Vec::new(),
        events,
        footer: Some(footer(n)),
        problems: Vec::new(),
        notes: Vec::new(),
        in_flight: Vec::new(),
        damaged: false,
        call_counts: None,
        call_paths: Vec::new(),
    }
}

/// Writes a per-rank file the way the recorder does; `closed` adds the footer and `]`.
pub fn write_rank_file(dir: &Path, t: &RankTrace, closed: bool) -> PathBuf {
    let path = dir.join(format!("rank-{}.json", t.header.rank));
    let mut w = ArrayWriter::new(Vec::new()).expect("vec");
    let pid = t.header.rank;
    let name = NameArgs {
        name: format!("rank {pid} ({})", t.header.host),
    };
    w.write(&WireEvent::meta(MetaName::ProcessName, pid, 0, name))
        .expect("vec");
    w.write(&WireEvent::meta(MetaName::Header, pid, 0, &t.header))
        .expect("vec");
    w.write(&WireEvent::meta(
        MetaName::ThreadName,
        pid,
        0,
        NameArgs {
            name: "main".into(),
        },
    ))
    .expect("vec");
    for s in t.syncs.iter().filter(|s| s.phase == SyncPhase::Init) {
        w.write(&WireEvent::meta(MetaName::ClockSync, pid, 0, s))
            .expect("vec");
    }
    for s in &t.sites {
        w.write(&WireEvent::meta(MetaName::Site, pid, 0, s))
            .expect("vec");
    }
    for e in &t.events {
        w.write(&event_to_wire(pid, e)).expect("vec");
    }
    let bytes = if closed {
        for s in t.syncs.iter().filter(|s| s.phase == SyncPhase::Final) {
            w.write(&WireEvent::meta(MetaName::ClockSync, pid, 0, s))
                .expect("vec");
        }
        w.write(&WireEvent::meta(
            MetaName::Footer,
            pid,
            0,
            footer(t.events.len() as u64),
        ))
        .expect("vec");
        w.finish().expect("vec")
    } else {
        std::mem::take(w.get_mut().expect("vec"))
    };
    std::fs::write(&path, bytes).expect("write");
    path
}

/// The same call with its buffer at `addr`.
pub fn with_buf(mut e: Event, addr: u64) -> Event {
    if let Event::Call(c) = &mut e {
        c.args.buf = Some(addr);
    }
    e
}

/// Source sites of `file` at `lines`, numbered 1, 2... in that order (what [`at_site`]
/// names), as the Rust layer lists them.
pub fn source_sites(file: &str, lines: &[u32]) -> Vec<overlap_instrument::schema::SourceSite> {
    (lines.iter().enumerate())
        .map(|(k, &line)| overlap_instrument::schema::SourceSite {
            id: k as u64 + 1,
            file: file.into(),
            line,
            column: 1,
            function: None,
        })
        .collect()
}

/// The same call made at call site `site` (a source site's id, or a code address).
pub fn at_site(mut e: Event, site: u64) -> Event {
    if let Event::Call(c) = &mut e {
        c.args.site = Some(site);
    }
    e
}

/// An `MPI_Ibarrier` on communicator 0 posting `request`.
pub fn ibarrier(start: u64, end: u64, request: u64) -> Event {
    call(
        Op::Ibarrier,
        start,
        end,
        CallArgs {
            comm: Some(0),
            request: Some(request),
            ..CallArgs::default()
        },
    )
}

pub fn allreduce(start: u64, end: u64) -> Event {
    call(
        Op::Allreduce,
        start,
        end,
        CallArgs {
            comm: Some(0),
            send_bytes: Some(8),
            bytes: Some(8),
            ..CallArgs::default()
        },
    )
}

/// Ranks 0.. with the given events, all on one clock (times are the run's times),
/// merged and ready for analysis.
pub fn run(ranks: Vec<Vec<Event>>) -> overlap_analyzer::model::Trace {
    overlap_analyzer::merge::from_events("hand-built", Path::new("hand-built"), ranks)
}

/// The options the hand-built traces are analysed with: every wait counts (the traces'
/// times are a few ns).
pub fn opts() -> overlap_analyzer::metrics::Options {
    overlap_analyzer::metrics::Options {
        min_wait: Nanos(1),
        ..overlap_analyzer::metrics::Options::default()
    }
}

/// The report of a hand-built trace, analysed with [`opts`].
pub fn report(t: &overlap_analyzer::model::Trace) -> overlap_analyzer::analysis::Report {
    overlap_analyzer::analysis::analyze(t, &opts()).0
}

/// A wait state kind's total and count in a report.
pub fn kind(
    r: &overlap_analyzer::analysis::Report,
    k: overlap_analyzer::metrics::WaitKind,
) -> (u64, u64) {
    let s = r
        .wait_states
        .kinds
        .iter()
        .find(|x| x.kind == k)
        .expect("the kind is listed");
    (s.total_ns, s.count)
}

/// Two fractions equal up to rounding.
pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}
