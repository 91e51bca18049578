//! The merged trace on disk: per-rank metadata and events, request lifetimes on async
//! tracks, message flows, and clock-suspect instants, all through the schema's writer.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

use overlap_format::output::{AtomicFile, OutputError};
use overlap_format::schema::wire::{
    event_to_wire, format_event, gpu_to_wire, Category, FlowBinding, InstantScope, MetaName,
    Micros, NameArgs, ObjectWriter, Phase, SortIndexArgs, WireEvent,
};
use overlap_format::schema::{
    stream_tid, stream_track_name, DumpReason, Event, Nanos, Op, ParamValue, RequestArgs,
    RequestKind, GPU_BACKEND_PARAM, HOST_EMULATED,
};

use super::matching::suspect_between;
use super::{EventRef, Merged, Message, RankEvents, RequestLife};
use crate::model::{CallInfo, Span, Timeline};
use crate::{Error, Result};

/// Where a flow leaves a slice: just inside its start, so that an arrow from a send to
/// a completion that ended after it never points backwards.
fn flow_out_point(s: &Span) -> Nanos {
    Nanos(s.start.0 + (s.end.0 - s.start.0).min(1))
}

/// Where a flow enters a slice: just inside its end (the moment the receive was known
/// to be complete).
fn flow_in_point(s: &Span) -> Nanos {
    Nanos(s.end.0 - (s.end.0 - s.start.0).min(1))
}

/// The span behind a reference, in timelines sorted by rank.
fn span_at(timelines: &[Timeline], r: EventRef) -> Option<&Span> {
    let i = timelines.binary_search_by_key(&r.rank, |t| t.rank).ok()?;
    timelines[i].spans.get(r.index)
}

/// The call behind a reference: its span, MPI function and arguments.
fn call_at(timelines: &[Timeline], r: EventRef) -> Option<(&Span, Op, &CallInfo)> {
    let i = timelines.binary_search_by_key(&r.rank, |t| t.rank).ok()?;
    let (op, call) = timelines[i].call(r.index)?;
    Some((timelines[i].spans.get(r.index)?, op, call))
}

/// Writes the merged trace; returns the number of events written.
pub fn write_merged(merged: &Merged, path: &Path) -> Result<u64> {
    // Written whole or not at all: a full disk leaves no partial file to be read later.
    let file = AtomicFile::create(path)?;
    let mut reread: Option<Error> = None;
    let write =
        |file: AtomicFile, reread: &mut Option<Error>| -> std::io::Result<(AtomicFile, u64)> {
            let mut w = ObjectWriter::new(file, &merged.info)?;
            write_events(merged, &mut w, reread)?;
            let n = w.written();
            Ok((w.finish()?, n))
        };
    let failed = |cause| {
        Error::Output(OutputError::Io {
            path: path.to_path_buf(),
            cause,
        })
    };
    let written = write(file, &mut reread);
    // A rank file that could not be read again (gone, or changed since the merge read
    // it) is the error to report, not the write it interrupted.
    if let Some(e) = reread {
        return Err(e);
    }
    let (file, n) = written.map_err(failed)?;
    file.commit()?;
    Ok(n)
}

/// Events read again from a rank file per block: formatted in parallel, then written
/// in order.
const BLOCK_EVENTS: usize = 1 << 14;

/// A rank's calls and compute spans, from memory or read again from its file a block
/// at a time, in the order of its timeline (by start, then thread). An error reading
/// the file is left in `reread` (and the write stopped).
fn write_rank_events<W: std::io::Write>(
    t: &Timeline,
    events: &RankEvents,
    w: &mut ObjectWriter<W>,
    reread: &mut Option<Error>,
) -> std::io::Result<()> {
    let pid = t.rank;
    let (path, align) = match events {
        RankEvents::Memory(events) => return write_block(pid, events, w),
        RankEvents::File { path, align } => (path, align),
    };
    let mut block: Vec<Event> = Vec::with_capacity(BLOCK_EVENTS);
    let mut order = InTimelineOrder::new(&t.spans);
    let mut failed: Option<std::io::Error> = None;
    let read = crate::import::each_event(path, |mut e| {
        if failed.is_some() || matches!(e, Event::Gpu(_)) || order.overrun() {
            return;
        }
        super::align_event(&mut e, |n| align.apply(n));
        order.push(e, &mut block);
        if block.len() >= BLOCK_EVENTS {
            failed = write_block(pid, &block, w).err();
            block.clear();
        }
    });
    if let Err(e) = read {
        *reread = Some(e);
        return Err(std::io::Error::other("a rank file could not be read again"));
    }
    if let Some(e) = failed {
        return Err(e);
    }
    if !order.finish() {
        *reread = Some(Error::Changed { path: path.clone() });
        return Err(std::io::Error::other(
            "a rank file changed since it was read",
        ));
    }
    write_block(pid, &block, w)
}

/// Puts the events of a rank file, as they are read (each thread's in recording order,
/// threads interleaved by page), back into the order of the rank's timeline: an event
/// goes out when it is the timeline's next, and waits otherwise. Only the events read
/// ahead of their turn are held (a page of another thread, the calls inside a compute
/// span recorded at its end), never the rank's whole run.
struct InTimelineOrder<'a> {
    spans: &'a [Span],
    next: usize,
    waiting: BTreeMap<(Nanos, u32), VecDeque<Event>>,
}

impl<'a> InTimelineOrder<'a> {
    fn new(spans: &'a [Span]) -> Self {
        InTimelineOrder {
            spans,
            next: 0,
            waiting: BTreeMap::new(),
        }
    }

    /// True when more events were read than the timeline has (the file changed): the
    /// rest is not held.
    fn overrun(&self) -> bool {
        self.waiting.len() > self.spans.len()
    }

    /// Takes the next event read; moves to `out` every event whose turn has come.
    fn push(&mut self, e: Event, out: &mut Vec<Event>) {
        let key = (e.start(), e.tid());
        let turn = self.spans.get(self.next).map(|s| (s.start, s.tid));
        if self.waiting.is_empty() && turn == Some(key) {
            out.push(e);
            self.next += 1;
            return;
        }
        self.waiting.entry(key).or_default().push_back(e);
        while let Some(s) = self.spans.get(self.next) {
            let Some(queue) = self.waiting.get_mut(&(s.start, s.tid)) else {
                break;
            };
            let Some(e) = queue.pop_front() else { break };
            if queue.is_empty() {
                self.waiting.remove(&(s.start, s.tid));
            }
            out.push(e);
            self.next += 1;
        }
    }

    /// True when every span of the timeline went out and nothing is left waiting: the
    /// file read as it did when the timeline was made of it.
    fn finish(self) -> bool {
        self.waiting.is_empty() && self.next == self.spans.len()
    }
}

/// Formats `events` on rayon's threads, then writes them in order.
fn write_block<W: std::io::Write>(
    pid: u32,
    events: &[Event],
    w: &mut ObjectWriter<W>,
) -> std::io::Result<()> {
    write_parallel(events, w, |_, e, text| {
        format_event(text, &event_to_wire(pid, e))?;
        Ok(1)
    })
}

/// Writes what `format` makes of each of `items` (given its index), in order: a block
/// at a time, each block formatted on rayon's threads. `format` appends the events with
/// [`format_event`] and says how many.
fn write_parallel<T: Sync, W: std::io::Write>(
    items: &[T],
    w: &mut ObjectWriter<W>,
    format: impl Fn(usize, &T, &mut Vec<u8>) -> std::io::Result<u64> + Sync,
) -> std::io::Result<()> {
    use rayon::prelude::*;
    const CHUNK: usize = 1024;
    for (b, block) in items.chunks(BLOCK_EVENTS).enumerate() {
        let texts: Vec<std::io::Result<(Vec<u8>, u64)>> = block
            .par_chunks(CHUNK)
            .enumerate()
            .map(|(c, chunk)| {
                let first = b * BLOCK_EVENTS + c * CHUNK;
                let mut text = Vec::with_capacity(chunk.len() * 256);
                let mut n = 0;
                for (k, item) in chunk.iter().enumerate() {
                    n += format(first + k, item, &mut text)?;
                }
                Ok((text, n))
            })
            .collect();
        for text in texts {
            let (text, n) = text?;
            w.write_formatted(&text, n)?;
        }
    }
    Ok(())
}

fn write_events<W: std::io::Write>(
    merged: &Merged,
    w: &mut ObjectWriter<W>,
    reread: &mut Option<Error>,
) -> std::io::Result<()> {
    for (t, events) in merged.timelines.iter().zip(&merged.events) {
        let pid = t.rank;
        let name = NameArgs {
            name: format!("rank {} ({})", t.rank, t.host),
        };
        w.write(&WireEvent::meta(MetaName::ProcessName, pid, 0, name))?;
        let sort = SortIndexArgs {
            sort_index: i64::from(pid),
        };
        w.write(&WireEvent::meta(MetaName::ProcessSortIndex, pid, 0, sort))?;
        for (tid, tname) in &t.threads {
            let n = NameArgs {
                name: tname.clone(),
            };
            w.write(&WireEvent::meta(MetaName::ThreadName, pid, *tid, n))?;
            let s = SortIndexArgs {
                sort_index: i64::from(*tid),
            };
            w.write(&WireEvent::meta(MetaName::ThreadSortIndex, pid, *tid, s))?;
        }
        write_rank_events(t, events, w, reread)?;
        write_gpu(merged, t, w)?;
    }
    write_in_flight(merged, w)?;
    // Where a request that never completed ends: its rank's last moment.
    let last_end: BTreeMap<u32, Nanos> = merged
        .timelines
        .iter()
        .map(|t| {
            (
                t.rank,
                t.spans.iter().map(|s| s.end).max().unwrap_or_default(),
            )
        })
        .collect();
    let timelines = &merged.timelines;
    write_parallel(&merged.requests, w, |index, life, text| {
        let rank_end = last_end.get(&life.rank).copied().unwrap_or_default();
        format_request(timelines, life, index as u64 + 1, rank_end, text)
    })?;
    write_parallel(&merged.messages, w, |_, m, text| {
        format_message(timelines, m, text)
    })?;
    write_chains(merged, w)
}

/// A message: a flow from its send to the call that completed its receive, or, when the
/// receive completed before the send (clock error), an instant on the receiver.
fn format_message(timelines: &[Timeline], m: &Message, text: &mut Vec<u8>) -> std::io::Result<u64> {
    let (Some(send), Some(done)) = (span_at(timelines, m.send), m.completion) else {
        return Ok(0);
    };
    let Some(done_span) = span_at(timelines, done) else {
        return Ok(0);
    };
    if m.clock_suspect {
        let args = suspect_between(m, send.start, done_span.end);
        let mut ev = WireEvent::new(
            "clock-suspect message",
            Phase::Instant,
            done.rank,
            done_span.tid,
        );
        ev.cat = Some(Category::Clock);
        ev.ts = Some(Micros(done_span.end));
        ev.s = Some(InstantScope::Thread);
        ev.args = Some(args);
        format_event(text, &ev)?;
        return Ok(1);
    }
    let mut s: WireEvent<'_, ()> =
        WireEvent::new("message", Phase::FlowStart, m.send.rank, send.tid);
    s.cat = Some(Category::Message);
    s.id = Some(m.id);
    s.ts = Some(Micros(flow_out_point(send)));
    format_event(text, &s)?;
    let mut f: WireEvent<'_, ()> =
        WireEvent::new("message", Phase::FlowEnd, done.rank, done_span.tid);
    f.cat = Some(Category::Message);
    f.id = Some(m.id);
    f.bp = Some(FlowBinding::Enclosing);
    f.ts = Some(Micros(flow_in_point(done_span)));
    format_event(text, &f)?;
    Ok(2)
}

/// A rank's GPU work: one named track per device stream (after the host threads), the
/// device operations on it, host waits on the thread that waited.
fn write_gpu<W: std::io::Write>(
    merged: &Merged,
    a: &Timeline,
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
    let timelines = &merged.timelines;
    let rank_of = |r: u32| timelines.binary_search_by_key(&r, |t| t.rank).ok();
    for c in crate::gpu::chains::build(timelines, &merged.messages) {
        let id = CHAIN_FLOW_BASE + 2 * c.message;
        if let (Some(i), Some(send)) = (c.d2h, span_at(timelines, c.send)) {
            if let Some(copy) = rank_of(c.from).and_then(|r| timelines[r].gpu.get(i)) {
                let from = stream_tid(copy.device, copy.stream);
                let at = Nanos(copy.end.0 - (copy.end.0 - copy.start.0).min(1));
                chain_flow(
                    w,
                    id,
                    (c.from, from, at),
                    (c.from, send.tid, flow_out_point(send)),
                )?;
            }
        }
        if let (Some(i), Some(done)) = (c.h2d, c.completion.and_then(|d| span_at(timelines, d))) {
            if let Some(copy) = rank_of(c.to).and_then(|r| timelines[r].gpu.get(i)) {
                let to = stream_tid(copy.device, copy.stream);
                let at = Nanos(copy.start.0 + (copy.end.0 - copy.start.0).min(1));
                chain_flow(
                    w,
                    id + 1,
                    (c.to, done.tid, flow_in_point(done)),
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

/// A request's lifetime: an async slice from its post to its completion.
fn format_request(
    timelines: &[Timeline],
    life: &RequestLife,
    id: u64,
    rank_end: Nanos,
    text: &mut Vec<u8>,
) -> std::io::Result<u64> {
    let at = |index| EventRef {
        rank: life.rank,
        index,
    };
    let Some((post_span, post_op, post)) = call_at(timelines, at(life.post)) else {
        return Ok(0);
    };
    let described = call_at(timelines, at(life.args)).map_or(post, |d| d.2);
    let peer = described.peer.unwrap_or(-1);
    let short = |op: Op| op.mpi_name().trim_start_matches("MPI_");
    let mut name = match life.kind {
        RequestKind::Send => format!("{} → {peer}", short(post_op)),
        RequestKind::Recv => format!("{} ← {peer}", short(post_op)),
        RequestKind::Collective => short(post_op).to_string(),
        RequestKind::OneSided => format!("{} @ {peer}", short(post_op)),
    };
    let completion = life.completion.and_then(|i| call_at(timelines, at(i)));
    let end = match completion {
        Some((span, _, _)) => span.end,
        None => {
            name.push_str(match life.freed {
                Some(_) => " (freed: end unknown)",
                None => " (never completed)",
            });
            rank_end.max(post_span.end)
        }
    };
    let args = RequestArgs {
        request: life.request,
        peer,
        tag: post.tag.unwrap_or(-1),
        bytes: post.bytes.unwrap_or(0),
        completed_by: completion.map(|(_, op, _)| op.mpi_name().to_string()),
    };
    let mut b = WireEvent::new(name.as_str(), Phase::AsyncBegin, life.rank, post_span.tid);
    b.cat = Some(Category::Request);
    b.id = Some(id);
    b.ts = Some(Micros(post_span.start));
    b.args = Some(args);
    format_event(text, &b)?;
    let mut e: WireEvent<'_, ()> =
        WireEvent::new(name.as_str(), Phase::AsyncEnd, life.rank, post_span.tid);
    e.cat = Some(Category::Request);
    e.id = Some(id);
    e.ts = Some(Micros(end));
    format_event(text, &e)?;
    Ok(2)
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
