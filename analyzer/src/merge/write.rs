//! The merged trace on disk: per-rank metadata and events, request lifetimes on async
//! tracks, message flows, and clock-suspect instants, all through the schema's writer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use overlap_format::output::{AtomicFile, OutputError};
use overlap_format::schema::wire::{
    event_to_wire, gpu_to_wire, Category, FlowBinding, InstantScope, MetaName, Micros, NameArgs,
    ObjectWriter, Phase, SortIndexArgs, WireEvent,
};
use overlap_format::schema::{
    stream_tid, stream_track_name, DumpReason, Event, Nanos, Op, ParamValue, RequestArgs,
    RequestKind, GPU_BACKEND_PARAM, HOST_EMULATED,
};

use super::matching::suspect_between;
use super::{call_at, AlignedRank, EventRef, Merged, RequestLife};
use crate::{Error, Result};

/// Where a flow leaves a slice: just inside its start, so that an arrow from a send to
/// a completion that ended after it never points backwards.
fn flow_out_point(e: &Event) -> Nanos {
    Nanos(e.start().0 + (e.end().0 - e.start().0).min(1))
}

/// Where a flow enters a slice: just inside its end (the moment the receive was known
/// to be complete).
fn flow_in_point(e: &Event) -> Nanos {
    Nanos(e.end().0 - (e.end().0 - e.start().0).min(1))
}

/// Writes the merged trace; returns the number of events written.
pub fn write_merged(merged: &Merged, path: &Path) -> Result<u64> {
    // Written whole or not at all: a full disk leaves no partial file to be read later.
    let file = AtomicFile::create(path)?;
    let write = |file: AtomicFile| -> std::io::Result<(AtomicFile, u64)> {
        let mut w = ObjectWriter::new(file, &merged.info)?;
        write_events(merged, &mut w)?;
        let n = w.written();
        Ok((w.finish()?, n))
    };
    let failed = |cause| {
        Error::Output(OutputError::Io {
            path: path.to_path_buf(),
            cause,
        })
    };
    let (file, n) = write(file).map_err(failed)?;
    file.commit()?;
    Ok(n)
}

fn write_events<W: std::io::Write>(
    merged: &Merged,
    w: &mut ObjectWriter<W>,
) -> std::io::Result<()> {
    for a in &merged.ranks {
        let pid = a.rank;
        let name = NameArgs {
            name: format!("rank {} ({})", a.rank, a.host),
        };
        w.write(&WireEvent::meta(MetaName::ProcessName, pid, 0, name))?;
        let sort = SortIndexArgs {
            sort_index: i64::from(pid),
        };
        w.write(&WireEvent::meta(MetaName::ProcessSortIndex, pid, 0, sort))?;
        for (tid, tname) in &a.threads {
            let n = NameArgs {
                name: tname.clone(),
            };
            w.write(&WireEvent::meta(MetaName::ThreadName, pid, *tid, n))?;
            let s = SortIndexArgs {
                sort_index: i64::from(*tid),
            };
            w.write(&WireEvent::meta(MetaName::ThreadSortIndex, pid, *tid, s))?;
        }
        for e in &a.events {
            w.write(&event_to_wire(pid, e))?;
        }
        write_gpu(merged, a, w)?;
    }
    write_in_flight(merged, w)?;
    // Where a request that never completed ends: its rank's last moment.
    let last_end: BTreeMap<u32, Nanos> = merged
        .ranks
        .iter()
        .map(|a| {
            (
                a.rank,
                a.events.iter().map(Event::end).max().unwrap_or_default(),
            )
        })
        .collect();
    for (index, life) in merged.requests.iter().enumerate() {
        let rank_end = last_end.get(&life.rank).copied().unwrap_or_default();
        write_request(&merged.ranks, life, index as u64 + 1, rank_end, w)?;
    }
    for m in &merged.messages {
        let (Some(send), Some(done)) = (merged.event(m.send), m.completion) else {
            continue;
        };
        let Some(done_ev) = merged.event(done) else {
            continue;
        };
        if m.clock_suspect {
            let args = suspect_between(m, send.start(), done_ev.end());
            let mut ev = WireEvent::new(
                "clock-suspect message",
                Phase::Instant,
                done.rank,
                done_ev.tid(),
            );
            ev.cat = Some(Category::Clock);
            ev.ts = Some(Micros(done_ev.end()));
            ev.s = Some(InstantScope::Thread);
            ev.args = Some(args);
            w.write(&ev)?;
            continue;
        }
        let mut s: WireEvent<'_, ()> =
            WireEvent::new("message", Phase::FlowStart, m.send.rank, send.tid());
        s.cat = Some(Category::Message);
        s.id = Some(m.id);
        s.ts = Some(Micros(flow_out_point(send)));
        w.write(&s)?;
        let mut f: WireEvent<'_, ()> =
            WireEvent::new("message", Phase::FlowEnd, done.rank, done_ev.tid());
        f.cat = Some(Category::Message);
        f.id = Some(m.id);
        f.bp = Some(FlowBinding::Enclosing);
        f.ts = Some(Micros(flow_in_point(done_ev)));
        w.write(&f)?;
    }
    write_chains(merged, w)
}

/// A rank's GPU work: one named track per device stream (after the host threads), the
/// device operations on it, host waits on the thread that waited.
fn write_gpu<W: std::io::Write>(
    merged: &Merged,
    a: &AlignedRank,
    w: &mut ObjectWriter<W>,
) -> std::io::Result<()> {
    let emulated = matches!(
        merged.info.params.get(GPU_BACKEND_PARAM),
        Some(ParamValue::Text(b)) if b == HOST_EMULATED
    );
    let streams: BTreeSet<(u32, u32)> = a
        .gpu
        .iter()
        .filter(|g| g.op.on_device())
        .map(|g| (g.device, g.stream))
        .collect();
    for (device, stream) in streams {
        let tid = stream_tid(device, stream);
        let mut name = stream_track_name(device, stream);
        if emulated {
            name.push_str(" (host-emulated)");
        }
        w.write(&WireEvent::meta(
            MetaName::ThreadName,
            a.rank,
            tid,
            NameArgs { name },
        ))?;
        let s = SortIndexArgs {
            sort_index: i64::from(tid),
        };
        w.write(&WireEvent::meta(MetaName::ThreadSortIndex, a.rank, tid, s))?;
    }
    for g in &a.gpu {
        w.write(&gpu_to_wire(a.rank, g))?;
    }
    Ok(())
}

/// First flow id of the chain flows: above every message's id (flow ids are global).
const CHAIN_FLOW_BASE: u64 = 1 << 48;

/// The staging chains as flows: each D2H into the send it enabled, and each receive's
/// completion into the H2D it started (the message flow joins the two).
fn write_chains<W: std::io::Write>(
    merged: &Merged,
    w: &mut ObjectWriter<W>,
) -> std::io::Result<()> {
    let rank_of = |r: u32| merged.ranks.binary_search_by_key(&r, |a| a.rank).ok();
    for c in crate::gpu::chains::build(&merged.timelines, &merged.messages) {
        let id = CHAIN_FLOW_BASE + 2 * c.message;
        if let (Some(i), Some(send)) = (c.d2h, merged.event(c.send)) {
            if let Some(copy) = rank_of(c.from).and_then(|r| merged.ranks[r].gpu.get(i)) {
                let from = stream_tid(copy.device, copy.stream);
                let at = Nanos(copy.end.0 - (copy.end.0 - copy.start.0).min(1));
                chain_flow(
                    w,
                    id,
                    (c.from, from, at),
                    (c.from, send.tid(), flow_out_point(send)),
                )?;
            }
        }
        if let (Some(i), Some(done)) = (c.h2d, c.completion.and_then(|d| merged.event(d))) {
            if let Some(copy) = rank_of(c.to).and_then(|r| merged.ranks[r].gpu.get(i)) {
                let to = stream_tid(copy.device, copy.stream);
                let at = Nanos(copy.start.0 + (copy.end.0 - copy.start.0).min(1));
                chain_flow(
                    w,
                    id + 1,
                    (c.to, done.tid(), flow_in_point(done)),
                    (c.to, to, at),
                )?;
            }
        }
    }
    Ok(())
}

/// One chain flow from (pid, tid, time) to (pid, tid, time).
fn chain_flow<W: std::io::Write>(
    w: &mut ObjectWriter<W>,
    id: u64,
    from: (u32, u32, Nanos),
    to: (u32, u32, Nanos),
) -> std::io::Result<()> {
    let mut s: WireEvent<'_, ()> = WireEvent::new("staging", Phase::FlowStart, from.0, from.1);
    s.cat = Some(Category::GpuChain);
    s.id = Some(id);
    s.ts = Some(Micros(from.2));
    w.write(&s)?;
    let mut f: WireEvent<'_, ()> = WireEvent::new("staging", Phase::FlowEnd, to.0, to.1);
    f.cat = Some(Category::GpuChain);
    f.id = Some(id);
    f.bp = Some(FlowBinding::Enclosing);
    f.ts = Some(Micros(to.2));
    w.write(&f)
}

fn write_request<W: std::io::Write>(
    ranks: &[AlignedRank],
    life: &RequestLife,
    id: u64,
    rank_end: Nanos,
    w: &mut ObjectWriter<W>,
) -> std::io::Result<()> {
    let post_ref = EventRef {
        rank: life.rank,
        index: life.post,
    };
    let Some(post) = call_at(ranks, post_ref) else {
        return Ok(());
    };
    let described = call_at(
        ranks,
        EventRef {
            rank: life.rank,
            index: life.args,
        },
    )
    .unwrap_or(post);
    let peer = described.args.peer.unwrap_or(-1);
    let short = |op: Op| op.mpi_name().trim_start_matches("MPI_");
    let mut name = match life.kind {
        RequestKind::Send => format!("{} → {peer}", short(post.op)),
        RequestKind::Recv => format!("{} ← {peer}", short(post.op)),
        RequestKind::Collective => short(post.op).to_string(),
        RequestKind::OneSided => format!("{} @ {peer}", short(post.op)),
    };
    let completion = life.completion.and_then(|i| {
        call_at(
            ranks,
            EventRef {
                rank: life.rank,
                index: i,
            },
        )
    });
    let end = match completion {
        Some(c) => c.end,
        None => {
            name.push_str(match life.freed {
                Some(_) => " (freed: end unknown)",
                None => " (never completed)",
            });
            rank_end.max(post.end)
        }
    };
    let args = RequestArgs {
        request: life.request,
        peer,
        tag: post.args.tag.unwrap_or(-1),
        bytes: post.args.bytes.unwrap_or(0),
        completed_by: completion.map(|c| c.op.mpi_name().to_string()),
    };
    let mut b = WireEvent::new(name.as_str(), Phase::AsyncBegin, life.rank, post.tid);
    b.cat = Some(Category::Request);
    b.id = Some(id);
    b.ts = Some(Micros(post.start));
    b.args = Some(args);
    w.write(&b)?;
    let mut e: WireEvent<'_, ()> =
        WireEvent::new(name.as_str(), Phase::AsyncEnd, life.rank, post.tid);
    e.cat = Some(Category::Request);
    e.id = Some(id);
    e.ts = Some(Micros(end));
    w.write(&e)
}

/// Each call a rank was inside at its last in-flight dump, as a slice from the call's
/// start to the dump.
fn write_in_flight<W: std::io::Write>(
    merged: &Merged,
    w: &mut ObjectWriter<W>,
) -> std::io::Result<()> {
    for r in &merged.info.ranks {
        let Some(dump) = &r.in_flight else { continue };
        for c in &dump.calls {
            // A stall says the call was blocked; a signal only that it was in progress.
            let name = match dump.reason {
                DumpReason::Stalled => {
                    format!("{} (blocked, in flight at dump)", c.call.mpi_name())
                }
                DumpReason::Signal => format!("{} (in flight at dump)", c.call.mpi_name()),
            };
            let (start, end) = (Nanos(c.start_ns), Nanos(dump.at_ns.max(c.start_ns)));
            let ev = WireEvent::complete(name, Category::Hang, r.rank, c.tid, start, end, c);
            w.write(&ev)?;
        }
    }
    Ok(())
}
