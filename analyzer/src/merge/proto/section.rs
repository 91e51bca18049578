//! One rank's part of the protobuf trace: its tracks, then its calls and compute spans
//! (read again from its file a block at a time, as the JSON's are), its GPU work, its
//! learned buffer uses, its requests and counters; each on a sequence of its own, in
//! time order.
//!
//! A message's arrow is two flow ids: on the begin of the send's slice (the flow starts
//! there) and on the end of the slice of the call that completed its receive (the flow
//! ends there). Both ends need only their own rank, as the JSON's `s`/`f` events do;
//! Perfetto pairs them by id wherever they are in the file. A staging chain's flows go
//! the same way: from the D2H copy's slice to the send's, from the receive's completion
//! to the H2D copy's.

use std::collections::BTreeSet;
use std::io::Write;

use overlap_format::pftrace::{Sequence, Slice, SourceLocation, Track};
use overlap_format::region::{region_tid, region_track_name};
use overlap_format::schema::wire::{Category, ComputeArgs, EventArgs};
use overlap_format::schema::{
    stream_tid, stream_track_name, Event, GpuArgs, MergedInfo, Nanos, ParamValue, SuspectMessage,
    GPU_BACKEND_PARAM, HOST_EMULATED,
};

use super::window::{write_slice, CutMessage, Window};
use super::{io_error, ProtoOut};
use crate::fxhash::FxHashMap;
use crate::merge::links::{Chains, RankMessages, CHAIN_FLOW_BASE};
use crate::merge::section::{write_rank_events, RankSection};
use crate::model::Message;
use crate::sites::Site;
use crate::Error;

/// Args left out: a call's `site`, where its source location is written.
const SITE: &[&str] = &["site"];
/// No args left out.
const NOTHING: &[&str] = &[];

/// Flow ids by the index of the slice they leave or enter.
type Flows = FxHashMap<usize, Vec<u64>>;

/// Where each flow of a rank's section goes: by span (calls) and by GPU work.
#[derive(Default)]
struct RankFlows {
    out: Flows,
    into: Flows,
    gpu_out: Flows,
    gpu_into: Flows,
    /// Received clock-suspect messages, by the span that completed them.
    suspects: FxHashMap<usize, Vec<SuspectMessage>>,
    /// Messages the window cut, by the span of their end in it, with that end's time.
    cut: FxHashMap<usize, Vec<(Nanos, CutMessage)>>,
}

/// When a message was sent (its send's start) and completed (its completion's end).
type Times = (Nanos, Option<Nanos>);

impl RankFlows {
    fn of(s: &RankSection<'_>, messages: &RankMessages, window: &Window) -> RankFlows {
        let t = s.t;
        let mut f = RankFlows::default();
        // A message keeps its arrow when both its ends are written: both ranks, its send
        // and its completion in the window. Both sections decide alike.
        let kept = |m: &Message, (sent, done): Times| {
            window.has_rank(m.send().rank)
                && window.has_rank(m.recv_post().rank)
                && window.holds(sent)
                && done.is_some_and(|d| window.holds(d))
        };
        let cut = |m: &Message, peer: u32, (sent, done): Times| CutMessage {
            message: m.id,
            peer,
            peer_written: window.has_rank(peer),
            sent_ns: sent.0,
            completed_ns: done.unwrap_or_default().0,
        };
        let no_time: Times = (Nanos(0), None);
        for (i, m) in messages.sent.iter().enumerate() {
            if m.clock_suspect || m.completion().is_none() || m.send().index >= t.spans.len() {
                continue;
            }
            let at = messages.sent_at.get(i).copied().unwrap_or(no_time);
            if kept(m, at) {
                f.out.entry(m.send().index).or_default().push(m.id);
            } else if window.holds(at.0) {
                let mark = (at.0, cut(m, m.recv_post().rank, at));
                f.cut.entry(m.send().index).or_default().push(mark);
            }
        }
        for (i, (m, suspect)) in messages.received.iter().enumerate() {
            let Some(c) = m.completion().filter(|c| c.index < t.spans.len()) else {
                continue;
            };
            let at = messages.received_at.get(i).copied().unwrap_or(no_time);
            match (m.clock_suspect, suspect) {
                (false, _) if kept(m, at) => f.into.entry(c.index).or_default().push(m.id),
                (false, _) => {
                    if let Some(done) = at.1.filter(|d| window.holds(*d)) {
                        let mark = (done, cut(m, m.send().rank, at));
                        f.cut.entry(c.index).or_default().push(mark);
                    }
                }
                (true, Some(s)) => f.suspects.entry(c.index).or_default().push(s.clone()),
                (true, None) => {}
            }
        }
        let Some(chains) = Chains::of(t) else {
            return f;
        };
        // A chain's flow keeps its arrow when both its slices are in the window.
        let span_in = |i: usize| {
            t.spans
                .get(i)
                .is_some_and(|s| window.clip(s.start, s.end).is_some())
        };
        let gpu_in = |i: usize| window.clip(t.gpu[i].start, t.gpu[i].end).is_some();
        for m in &messages.sent {
            let send = m.send().index;
            if let Some(i) = chains
                .sent_copy(t, m)
                .filter(|i| span_in(send) && gpu_in(*i))
            {
                let id = CHAIN_FLOW_BASE + 2 * m.id;
                f.gpu_out.entry(i).or_default().push(id);
                f.into.entry(send).or_default().push(id);
            }
        }
        for (m, _) in &messages.received {
            let done = m.completion().map(|c| c.index).filter(|i| span_in(*i));
            let copy = chains.received_copy(t, m).filter(|i| gpu_in(*i));
            if let (Some(i), Some(done)) = (copy, done) {
                let id = CHAIN_FLOW_BASE + 2 * m.id + 1;
                f.out.entry(done).or_default().push(id);
                f.gpu_into.entry(i).or_default().push(id);
            }
        }
        f
    }
}

/// Where a site is, as Perfetto's `SourceLocation` holds it: its file and line, its
/// function (with the call path's callers after `←`); the label when there is no file.
fn source_of(raw: u64, site: &Site) -> SourceLocation {
    let mut function = site.function.clone();
    if !site.callers.is_empty() {
        let callers = site.callers.join(" ← ");
        function = Some(match function {
            Some(f) => format!("{f} ← {callers}"),
            None => format!("← {callers}"),
        });
    }
    SourceLocation {
        id: raw,
        file: site.file.clone().unwrap_or_else(|| site.label.clone()),
        function,
        line: site.line,
    }
}

/// Writes the section of `s` (the rank's metadata is in `info`; the ends of its
/// messages in `messages`). An error reading its file again is left in `reread`.
pub(crate) fn write_section<W: Write + Send>(
    s: &RankSection<'_>,
    info: &MergedInfo,
    messages: &RankMessages,
    out: &mut ProtoOut<W>,
    reread: &mut Option<Error>,
) -> std::io::Result<()> {
    let t = s.t;
    let window = out.window().clone();
    if !window.has_rank(t.rank) {
        return Ok(());
    }
    let process = out.process(t.rank, &format!("rank {} ({})", t.rank, t.host))?;
    let tids: BTreeSet<u32> = t
        .threads
        .keys()
        .copied()
        .chain(t.spans.iter().map(|s| s.tid))
        .chain(t.gpu.iter().filter(|g| !g.op.on_device()).map(|g| g.tid))
        .collect();
    let mut threads = FxHashMap::default();
    for tid in tids {
        let name = t.threads.get(&tid).map_or("", String::as_str);
        threads.insert(tid, out.thread(t.rank, tid, name)?);
    }
    let flows = RankFlows::of(s, messages, &window);
    write_spans(s, &flows, &threads, &window, out, reread)?;
    write_gpu(info, s, &flows, process, &threads, &window, out)?;
    write_learned(s, &threads, &window, out)?;
    write_regions(s, &window, out)?;
    super::requests::write_requests(t, s.requests, process, &window, out)
}

/// The rank's calls and compute spans, in timeline order: the k-th event read is the
/// timeline's k-th span, which the flows are indexed by.
fn write_spans<W: Write + Send>(
    s: &RankSection<'_>,
    flows: &RankFlows,
    threads: &FxHashMap<u32, u64>,
    window: &Window,
    out: &mut ProtoOut<W>,
    reread: &mut Option<Error>,
) -> std::io::Result<()> {
    let sources: FxHashMap<u64, SourceLocation> = s
        .labels
        .iter()
        .map(|(raw, site)| (*raw, source_of(*raw, site)))
        .collect();
    // Most events are on the rank's busiest thread: the sequence's default track.
    let mut per_thread: FxHashMap<u32, usize> = FxHashMap::default();
    for span in &s.t.spans {
        *per_thread.entry(span.tid).or_default() += 1;
    }
    let busiest = per_thread
        .iter()
        .max_by_key(|(tid, n)| (**n, std::cmp::Reverse(**tid)));
    let mut seq = match busiest.and_then(|(tid, _)| threads.get(tid)) {
        Some(track) => out.sequence_on(*track),
        None => out.sequence(),
    };
    let mut k = 0usize;
    let none: &[u64] = &[];
    let mut block = |out: &mut ProtoOut<W>, events: &[Event]| -> std::io::Result<()> {
        for e in events {
            let index = k;
            k += 1;
            let (name, category, args, source, skip_args) = match e {
                Event::Call(c) => (
                    c.op.mpi_name(),
                    Category::Mpi,
                    EventArgs::Call(&c.args),
                    c.args.site.and_then(|site| sources.get(&site)),
                    SITE,
                ),
                Event::Compute(c) => (
                    c.name.as_str(),
                    Category::Compute,
                    match &c.buffers {
                        Some(b) => EventArgs::Buffers(b),
                        None => EventArgs::Compute(ComputeArgs {}),
                    },
                    None,
                    NOTHING,
                ),
                Event::Gpu(_) => continue,
            };
            let track = thread_track(threads, e.tid())?;
            let slice = Slice {
                track,
                name,
                category,
                start: e.start(),
                end: e.end(),
                args: Some(&args),
                source,
                flows_out: flows.out.get(&index).map_or(none, Vec::as_slice),
                flows_in: flows.into.get(&index).map_or(none, Vec::as_slice),
                // A call's site where the source location says where it is.
                skip_args: if source.is_some() { skip_args } else { NOTHING },
                counters: (&[], &[]),
            };
            if !write_slice(&mut seq, window, &slice).map_err(io_error)? {
                continue;
            }
            let at = e.end().max(e.start());
            for m in flows.suspects.get(&index).into_iter().flatten() {
                if window.holds(at) {
                    seq.instant(track, "clock-suspect message", Category::Clock, at, Some(m))
                        .map_err(io_error)?;
                }
            }
            for (at, m) in flows.cut.get(&index).into_iter().flatten() {
                let name = "message cut by the window";
                seq.instant(track, name, Category::Message, *at, Some(m))
                    .map_err(io_error)?;
            }
        }
        out.drain(&mut seq)
    };
    write_rank_events(s.t, s.events, out, reread, &mut block)?;
    out.finish_sequence(&mut seq)
}

/// The track of thread `tid` (described with the rank's other threads).
fn thread_track(threads: &FxHashMap<u32, u64>, tid: u32) -> std::io::Result<u64> {
    threads.get(&tid).copied().ok_or_else(|| {
        std::io::Error::other(format!("thread {tid} has no track (the file changed?)"))
    })
}

/// The rank's GPU work: a thread track per device stream (after the host threads), the
/// device operations on it, host waits on the thread that waited.
fn write_gpu<W: Write>(
    info: &MergedInfo,
    s: &RankSection<'_>,
    flows: &RankFlows,
    process: u64,
    threads: &FxHashMap<u32, u64>,
    window: &Window,
    out: &mut ProtoOut<W>,
) -> std::io::Result<()> {
    let t = s.t;
    if t.gpu.is_empty() {
        return Ok(());
    }
    let emulated = matches!(
        info.params.get(GPU_BACKEND_PARAM),
        Some(ParamValue::Text(b)) if b == HOST_EMULATED
    );
    let streams: BTreeSet<(u32, u32)> = t
        .gpu
        .iter()
        .filter(|g| g.op.on_device())
        .map(|g| (g.device, g.stream))
        .collect();
    let mut stream_tracks = FxHashMap::default();
    for (device, stream) in streams {
        let tid = stream_tid(device, stream);
        let mut name = stream_track_name(device, stream);
        if emulated {
            name.push_str(" (host-emulated)");
        }
        let uuid = out.uuid();
        out.track(&Track::Thread {
            uuid,
            parent: process,
            pid: t.rank,
            tid,
            name: &name,
            order: i64::from(tid),
        })?;
        stream_tracks.insert(tid, uuid);
    }
    let mut order: Vec<usize> = (0..t.gpu.len()).collect();
    order.sort_by_key(|i| t.gpu[*i].start);
    let mut seq = out.sequence();
    let none: &[u64] = &[];
    for i in order {
        let g = &t.gpu[i];
        let track = match g.op.on_device() {
            true => stream_tracks.get(&stream_tid(g.device, g.stream)).copied(),
            false => threads.get(&g.tid).copied(),
        };
        let Some(track) = track else { continue };
        let slice = Slice {
            track,
            name: &g.display_name(),
            category: Category::Gpu,
            start: g.start,
            end: g.end.max(g.start),
            args: Some(&GpuArgs::of(g)),
            source: None,
            flows_out: flows.gpu_out.get(&i).map_or(none, Vec::as_slice),
            flows_in: flows.gpu_into.get(&i).map_or(none, Vec::as_slice),
            skip_args: &[],
            counters: (&[], &[]),
        };
        write_slice(&mut seq, window, &slice).map_err(io_error)?;
    }
    out.finish_sequence(&mut seq)
}

/// What the rank learned of its requests' buffers: an instant per fact on the thread
/// that completed the request.
fn write_learned<W: Write>(
    s: &RankSection<'_>,
    threads: &FxHashMap<u32, u64>,
    window: &Window,
    out: &mut ProtoOut<W>,
) -> std::io::Result<()> {
    let mut facts = crate::merge::learned::learned_instants(s.t);
    facts.retain(|(_, args)| window.holds(args.at().0));
    if facts.is_empty() {
        return Ok(());
    }
    let mut seq: Sequence = out.sequence();
    for (tid, args) in &facts {
        let track = match threads.get(tid) {
            Some(t) => *t,
            None => out.thread(s.t.rank, *tid, "")?,
        };
        let at = args.at().0;
        seq.instant(track, &args.title(), Category::Buffer, at, Some(args))
            .map_err(io_error)?;
    }
    out.finish_sequence(&mut seq)
}

/// The rank's regions: a slice per instance on its tracks of regions (thread tracks
/// placed after its recording threads), as the JSON's.
fn write_regions<W: Write>(
    s: &RankSection<'_>,
    window: &Window,
    out: &mut ProtoOut<W>,
) -> std::io::Result<()> {
    let slices = crate::merge::section::region_slices(s.t);
    if slices.is_empty() {
        return Ok(());
    }
    let lanes = slices.iter().map(|r| r.lane + 1).max().unwrap_or(0);
    let mut tracks = Vec::with_capacity(lanes as usize);
    for lane in 0..lanes {
        tracks.push(out.thread(s.t.rank, region_tid(lane), &region_track_name(lane))?);
    }
    let mut seq = out.sequence();
    for r in &slices {
        let slice = Slice {
            track: tracks[r.lane as usize],
            name: &r.args.region,
            category: Category::Region,
            start: r.start,
            end: r.end,
            args: Some(&r.args),
            source: None,
            flows_out: &[],
            flows_in: &[],
            skip_args: &[],
            counters: (&[], &[]),
        };
        write_slice(&mut seq, window, &slice).map_err(io_error)?;
    }
    out.finish_sequence(&mut seq)
}
