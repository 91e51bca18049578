//! What the merged trace draws between slices, one rank at a time: request lifetimes
//! (async slices from post to completion), message flows (an arrow from a send to the
//! call that completed its receive), clock-suspect instants, and GPU staging chains.
//!
//! A message's arrow is two events that each need only their own rank: its start on the
//! sender, its end on the receiver, bound by the message's id. So the writer can hold
//! one rank at a time; Perfetto (and our reader) pair the two by id, wherever they lie
//! in the file.
//!
//! ```text
//!  rank 0 section:  ... Isend slice ... {"ph":"s","id":7}             (flow start)
//!  rank 1 section:  ... Waitall slice ... {"ph":"f","id":7,"bp":"e"}  (flow end)
//! ```

use std::collections::BTreeMap;

use overlap_format::schema::wire::{
    format_event, Category, FlowBinding, InstantScope, Micros, Phase, WireEvent,
};
use overlap_format::schema::{
    stream_tid, GpuOp, Nanos, Op, RequestArgs, RequestKind, SuspectMessage,
};

use super::{Message, RequestLife};
use crate::model::copies::{recv_copy, send_copy, CopyIndex};
use crate::model::{CallInfo, Span, Timeline};

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

/// First flow id of the chain flows: above every message's id (flow ids are global).
pub(crate) const CHAIN_FLOW_BASE: u64 = 1 << 48;

/// One rank's ends of the run's messages: what it sent and what it received, each in
/// message order, a received clock-suspect message with its record; and when each was
/// sent and completed (on the run's timeline), which a window of the run needs of the
/// other rank's end. A section of the merged file needs no other messages.
#[derive(Debug, Default)]
pub(crate) struct RankMessages {
    pub(crate) sent: Vec<Message>,
    pub(crate) received: Vec<(Message, Option<SuspectMessage>)>,
    /// `sent[i]`'s send start and completion end (`None`: never completed).
    pub(crate) sent_at: Vec<(Nanos, Option<Nanos>)>,
    /// The same for `received[i]`.
    pub(crate) received_at: Vec<(Nanos, Option<Nanos>)>,
}

/// The run's messages by the rank that sent them and the rank that received them, so
/// that each rank's section finds its ends without a scan of every message.
pub(crate) struct MessagesByRank<'a> {
    messages: &'a [Message],
    /// The run's ranks, sorted by rank (for the times of each message's ends).
    timelines: &'a [Timeline],
    /// rank -> positions in `messages` of what it sent, and of what it received (4 B
    /// each: a run has fewer than 2^32 messages).
    by_rank: BTreeMap<u32, (Vec<u32>, Vec<u32>)>,
    /// position in `messages` -> its clock-suspect record.
    suspects: BTreeMap<u32, &'a SuspectMessage>,
}

impl<'a> MessagesByRank<'a> {
    /// `suspects` are the clock-suspect messages' records in the order of `messages`
    /// (as [`super::ends::Matched`] makes them); `timelines` the run's ranks, by rank.
    pub(crate) fn new(
        messages: &'a [Message],
        suspects: &'a [SuspectMessage],
        timelines: &'a [Timeline],
    ) -> Self {
        let mut by_rank: BTreeMap<u32, (Vec<u32>, Vec<u32>)> = BTreeMap::new();
        for (i, m) in (0u32..).zip(messages) {
            by_rank.entry(m.send().rank).or_default().0.push(i);
            by_rank.entry(m.recv_post().rank).or_default().1.push(i);
        }
        let suspect_positions = (0u32..).zip(messages).filter(|(_, m)| m.clock_suspect);
        MessagesByRank {
            messages,
            timelines,
            by_rank,
            suspects: suspect_positions.map(|(i, _)| i).zip(suspects).collect(),
        }
    }

    /// What `rank` sent and received.
    pub(crate) fn of(&self, rank: u32) -> RankMessages {
        let Some((sent, received)) = self.by_rank.get(&rank) else {
            return RankMessages::default();
        };
        let at = |i: &u32| self.messages[*i as usize];
        let span = |rank: u32, index: usize| {
            let t = self
                .timelines
                .binary_search_by_key(&rank, |t| t.rank)
                .ok()?;
            self.timelines[t].spans.get(index)
        };
        let times = |i: &u32| {
            let m = at(i);
            let sent = span(m.send().rank, m.send().index).map_or(Nanos(0), |s| s.start);
            let done = m
                .completion()
                .and_then(|c| span(c.rank, c.index))
                .map(|s| s.end);
            (sent, done)
        };
        RankMessages {
            sent: sent.iter().map(at).collect(),
            received: received
                .iter()
                .map(|i| (at(i), self.suspects.get(i).map(|s| (*s).clone())))
                .collect(),
            sent_at: sent.iter().map(times).collect(),
            received_at: received.iter().map(times).collect(),
        }
    }
}

/// Appends the start of the arrow of message `m`, sent by rank `t` (nothing for a
/// receive never completed, or completed before the send: see [`format_received`]).
pub(crate) fn format_sent(t: &Timeline, m: &Message, text: &mut Vec<u8>) -> std::io::Result<u64> {
    if m.clock_suspect || m.completion().is_none() {
        return Ok(0);
    }
    let Some(send) = t.spans.get(m.send().index) else {
        return Ok(0);
    };
    let mut s: WireEvent<'_, ()> = WireEvent::new("message", Phase::FlowStart, t.rank, send.tid);
    s.cat = Some(Category::Message);
    s.id = Some(m.id);
    s.ts = Some(Micros(flow_out_point(send)));
    format_event(text, &s)?;
    Ok(1)
}

/// Appends the end of the arrow of message `m`, received by rank `t`, or for a receive
/// completed before its send (clock error) an instant on the receiver, with the
/// message's `suspect` record, instead of an arrow going back in time.
pub(crate) fn format_received(
    t: &Timeline,
    m: &Message,
    suspect: Option<&SuspectMessage>,
    text: &mut Vec<u8>,
) -> std::io::Result<u64> {
    let Some(done) = m.completion().and_then(|c| t.spans.get(c.index)) else {
        return Ok(0);
    };
    if m.clock_suspect {
        let Some(args) = suspect else {
            return Ok(0);
        };
        let mut ev = WireEvent::new("clock-suspect message", Phase::Instant, t.rank, done.tid);
        ev.cat = Some(Category::Clock);
        ev.ts = Some(Micros(done.end));
        ev.s = Some(InstantScope::Thread);
        ev.args = Some(args);
        format_event(text, &ev)?;
    } else {
        let mut f: WireEvent<'_, ()> = WireEvent::new("message", Phase::FlowEnd, t.rank, done.tid);
        f.cat = Some(Category::Message);
        f.id = Some(m.id);
        f.bp = Some(FlowBinding::Enclosing);
        f.ts = Some(Micros(flow_in_point(done)));
        format_event(text, &f)?;
    }
    Ok(1)
}

/// The staging chains' halves on one rank: each D2H into the send it enabled, and each
/// receive's completion into the H2D it started (the message's arrow joins the two).
pub(crate) struct Chains {
    d2h: CopyIndex,
    h2d: CopyIndex,
}

impl Chains {
    /// `t`'s copies, indexed (`None` for a rank without GPU work).
    pub(crate) fn of(t: &Timeline) -> Option<Chains> {
        (!t.gpu.is_empty()).then(|| Chains {
            d2h: CopyIndex::new(t, GpuOp::CopyD2H),
            h2d: CopyIndex::new(t, GpuOp::CopyH2D),
        })
    }

    /// The D2H (its index in `t.gpu`) that filled `m`'s send buffer.
    pub(crate) fn sent_copy(&self, t: &Timeline, m: &Message) -> Option<usize> {
        send_copy(t, &self.d2h, m.send().index)
    }

    /// The H2D (its index in `t.gpu`) that `m`'s receive started, once completed.
    pub(crate) fn received_copy(&self, t: &Timeline, m: &Message) -> Option<usize> {
        let completion = m.completion().map(|c| c.index);
        recv_copy(t, &self.h2d, m.recv_post().index, completion)
    }

    /// Appends the flow from the D2H that filled `m`'s send buffer to its send.
    pub(crate) fn format_sent(
        &self,
        t: &Timeline,
        m: &Message,
        text: &mut Vec<u8>,
    ) -> std::io::Result<u64> {
        let (Some(i), Some(send)) = (self.sent_copy(t, m), t.spans.get(m.send().index)) else {
            return Ok(0);
        };
        let copy = &t.gpu[i];
        let at = Nanos(copy.end.0 - (copy.end.0 - copy.start.0).min(1));
        let from = (t.rank, stream_tid(copy.device, copy.stream), at);
        let to = (t.rank, send.tid, flow_out_point(send));
        chain_flow(text, CHAIN_FLOW_BASE + 2 * m.id, from, to)
    }

    /// Appends the flow from the call that completed `m`'s receive to the H2D it started.
    pub(crate) fn format_received(
        &self,
        t: &Timeline,
        m: &Message,
        text: &mut Vec<u8>,
    ) -> std::io::Result<u64> {
        let Some(i) = self.received_copy(t, m) else {
            return Ok(0);
        };
        let Some(done) = m.completion().and_then(|c| t.spans.get(c.index)) else {
            return Ok(0);
        };
        let copy = &t.gpu[i];
        let at = Nanos(copy.start.0 + (copy.end.0 - copy.start.0).min(1));
        let from = (t.rank, done.tid, flow_in_point(done));
        let to = (t.rank, stream_tid(copy.device, copy.stream), at);
        chain_flow(text, CHAIN_FLOW_BASE + 2 * m.id + 1, from, to)
    }
}

/// One chain flow from (pid, tid, time) to (pid, tid, time).
fn chain_flow(
    text: &mut Vec<u8>,
    id: u64,
    from: (u32, u32, Nanos),
    to: (u32, u32, Nanos),
) -> std::io::Result<u64> {
    let mut s: WireEvent<'_, ()> = WireEvent::new("staging", Phase::FlowStart, from.0, from.1);
    s.cat = Some(Category::GpuChain);
    s.id = Some(id);
    s.ts = Some(Micros(from.2));
    format_event(text, &s)?;
    let mut f: WireEvent<'_, ()> = WireEvent::new("staging", Phase::FlowEnd, to.0, to.1);
    f.cat = Some(Category::GpuChain);
    f.id = Some(id);
    f.bp = Some(FlowBinding::Enclosing);
    f.ts = Some(Micros(to.2));
    format_event(text, &f)?;
    Ok(2)
}

/// The call behind a span of `t`: its span, MPI function and arguments.
fn call_at(t: &Timeline, index: usize) -> Option<(&Span, Op, &CallInfo)> {
    let (op, call) = t.call(index)?;
    Some((t.spans.get(index)?, op, call))
}

/// What a request's slice shows: its name, the thread that posted it, its post and
/// its end, and its args.
pub(crate) struct RequestSlice {
    pub(crate) name: String,
    pub(crate) tid: u32,
    pub(crate) start: Nanos,
    pub(crate) end: Nanos,
    pub(crate) args: RequestArgs,
}

/// A request's lifetime on rank `t`: from its post to its completion (or to
/// `rank_end`, the rank's last moment, when it never completed); `None` when its post
/// is not on the timeline.
pub(crate) fn request_slice(
    t: &Timeline,
    life: &RequestLife,
    rank_end: Nanos,
) -> Option<RequestSlice> {
    let (post_span, post_op, post) = call_at(t, life.post())?;
    let (described_op, described) = call_at(t, life.args()).map_or((post_op, post), |d| (d.1, d.2));
    // An Isendrecv's request is its receive half's.
    let peer = match described_op.has_recv_half() {
        true => t.recv_half(described).and_then(|h| h.peer),
        false => described.peer(),
    }
    .unwrap_or(-1);
    let short = |op: Op| op.mpi_name().trim_start_matches("MPI_");
    let mut name = match life.kind {
        RequestKind::Send => format!("{} → {peer}", short(post_op)),
        RequestKind::Recv => format!("{} ← {peer}", short(post_op)),
        RequestKind::Collective => short(post_op).to_string(),
        RequestKind::OneSided => format!("{} @ {peer}", short(post_op)),
    };
    let completion = life.completion().and_then(|i| call_at(t, i));
    let end = match completion {
        Some((span, _, _)) => span.end,
        None => {
            name.push_str(match life.freed() {
                Some(_) => " (freed: end unknown)",
                None => " (never completed)",
            });
            rank_end.max(post_span.end)
        }
    };
    let args = RequestArgs {
        request: life.request(),
        peer,
        tag: post.tag().unwrap_or(-1),
        bytes: post.bytes().unwrap_or(0),
        completed_by: completion.map(|(_, op, _)| op.mpi_name().to_string()),
    };
    Some(RequestSlice {
        name,
        tid: post_span.tid,
        start: post_span.start,
        end,
        args,
    })
}

/// A request's lifetime on rank `t`: an async slice from its post to its completion
/// (or to `rank_end`, the rank's last moment, when it never completed).
pub(crate) fn format_request(
    t: &Timeline,
    life: &RequestLife,
    id: u64,
    rank_end: Nanos,
    text: &mut Vec<u8>,
) -> std::io::Result<u64> {
    let Some(r) = request_slice(t, life, rank_end) else {
        return Ok(0);
    };
    let mut b = WireEvent::new(r.name.as_str(), Phase::AsyncBegin, life.rank, r.tid);
    b.cat = Some(Category::Request);
    b.id = Some(id);
    b.ts = Some(Micros(r.start));
    b.args = Some(r.args);
    format_event(text, &b)?;
    let mut e: WireEvent<'_, ()> =
        WireEvent::new(r.name.as_str(), Phase::AsyncEnd, life.rank, r.tid);
    e.cat = Some(Category::Request);
    e.id = Some(id);
    e.ts = Some(Micros(r.end));
    format_event(text, &e)?;
    Ok(2)
}
