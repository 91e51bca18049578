//! Per-packet staging chains: the device-to-host copy that filled a send buffer, the
//! send that carried it, the call that completed its receive, and the host-to-device
//! copy that took it from the receive buffer.
//!
//! The links are found from what was recorded, not from what a kernel says: a copy and
//! an MPI call are linked when the call's buffer lies inside the copy's host range.
//!
//! ```text
//!  rank 0   D2H[dst=0x1000..0x2000] ... Isend(buf=0x1000) ──message──┐
//!  rank 1                                    Irecv(buf=0x9000) ... Test(done) ... H2D[src=0x9000..]
//!           ├─ D2H ─┤├ wait until Isend ┤├──── transfer ─────┤├ wait until H2D ┤├ H2D ┤
//! ```
//!
//! - The send's copy is the last D2H of the sending rank enqueued before the send
//!   whose destination range holds the send buffer's address.
//! - The receive's copy is the first H2D of the receiving rank enqueued after the call
//!   that completed the receive started, whose source range holds the receive buffer's
//!   address.
//!
//! A chain needs at least one of the two copies; a side without one is unknown in the
//! breakdown, never zero.
//!
//! Each side is found on its own rank ([`sent_copy`], [`received_copy`]) and the two are
//! joined by message ([`chain_of`]), so the chains can be made a part of ranks at a time:
//! [`super::GpuFold`] keeps each part's copies and joins them once every part is in.

use overlap_format::schema::Nanos;

use crate::model::copies::{recv_copy, send_copy, CopyIndex};
use crate::model::{EventRef, Message, Timeline};

/// One packet's chain from the device of its sender to the device of its receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    /// The message.
    pub message: u64,
    /// Sending rank.
    pub from: u32,
    /// Receiving rank.
    pub to: u32,
    /// Tag.
    pub tag: i32,
    /// Bytes.
    pub bytes: u64,
    /// The packet index the copies were recorded with (the sender's D2H first).
    pub packet: Option<u32>,
    /// The send (the sending rank's event).
    pub send: EventRef,
    /// The call that completed the receive (the receiving rank's event), when one did.
    pub completion: Option<EventRef>,
    /// Index of the sender's D2H in its timeline's `gpu`.
    pub d2h: Option<usize>,
    /// Index of the receiver's H2D in its timeline's `gpu`.
    pub h2d: Option<usize>,
    /// Times of the chain's steps.
    pub times: ChainTimes,
}

/// The steps of a chain on the run's timeline. A step that was not recorded is `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChainTimes {
    /// The D2H enqueued.
    pub d2h_issued: Option<Nanos>,
    /// The D2H done: the data in host memory.
    pub d2h_end: Option<Nanos>,
    /// The send posted.
    pub send: Nanos,
    /// The receive known complete (end of the completing call).
    pub received: Option<Nanos>,
    /// The H2D enqueued.
    pub h2d_issued: Option<Nanos>,
    /// The H2D done: the data on the receiver's device.
    pub h2d_end: Option<Nanos>,
}

/// A chain's latency split into its five steps, ns. Each is `None` when a time it needs
/// was not recorded. Cross-rank steps (transfer) carry the clock error of both ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Breakdown {
    /// From the D2H enqueued to its end.
    pub d2h_ns: Option<u64>,
    /// From the D2H's end to the send's post.
    pub wait_send_ns: Option<u64>,
    /// From the send's post to the end of the call that completed the receive.
    pub transfer_ns: Option<u64>,
    /// From the receive known complete to the H2D enqueued.
    pub wait_h2d_ns: Option<u64>,
    /// From the H2D enqueued to its end.
    pub h2d_ns: Option<u64>,
    /// From the D2H enqueued to the H2D's end.
    pub total_ns: Option<u64>,
}

impl ChainTimes {
    /// The five steps.
    pub fn breakdown(&self) -> Breakdown {
        let span = |a: Option<Nanos>, b: Option<Nanos>| Some(b?.0.saturating_sub(a?.0));
        Breakdown {
            d2h_ns: span(self.d2h_issued, self.d2h_end),
            wait_send_ns: span(self.d2h_end, Some(self.send)),
            transfer_ns: span(Some(self.send), self.received),
            wait_h2d_ns: span(self.received, self.h2d_issued),
            h2d_ns: span(self.h2d_issued, self.h2d_end),
            total_ns: span(self.d2h_issued, self.h2d_end),
        }
    }
}

/// A copy that carried one side of a message, as its chain reads it: kept by the pass
/// that reads its rank until the other side's rank is read ([`super::GpuFold`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CopyEnd {
    /// Its index in its rank's timeline's `gpu`.
    pub index: usize,
    /// When it was enqueued.
    pub issued: Nanos,
    /// When it ended.
    pub end: Nanos,
    /// The packet it was recorded with.
    pub packet: Option<u32>,
}

impl CopyEnd {
    fn of(t: &Timeline, index: usize) -> CopyEnd {
        let g = &t.gpu[index];
        CopyEnd {
            index,
            issued: g.issued,
            end: g.end,
            packet: g.packet,
        }
    }
}

/// The sender's side of message `m`: the D2H that filled its send buffer ([`send_copy`];
/// `t` the sender's timeline, `d2h` its D2H copies).
pub fn sent_copy(t: &Timeline, d2h: &CopyIndex, m: &Message) -> Option<CopyEnd> {
    send_copy(t, d2h, m.send().index).map(|i| CopyEnd::of(t, i))
}

/// The receiver's side of message `m`: the H2D that took its data ([`recv_copy`]; `t`
/// the receiver's timeline, `h2d` its H2D copies).
pub fn received_copy(t: &Timeline, h2d: &CopyIndex, m: &Message) -> Option<CopyEnd> {
    let completion = m.completion().map(|c| c.index);
    recv_copy(t, h2d, m.recv_post().index, completion).map(|i| CopyEnd::of(t, i))
}

/// What a chain reads of its message's calls, each on its own rank: the send's entry
/// (`None`: the send is not in the trace) and the call that completed the receive with
/// its exit (when one did and is in the trace).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageCalls {
    /// The send's entry.
    pub send: Option<Nanos>,
    /// The call that completed the receive, and its exit.
    pub completion: Option<(EventRef, Nanos)>,
}

/// The chain of message `m` from its calls and its two sides' copies: `None` when it
/// has neither copy, or its send is not in the trace.
pub fn chain_of(
    m: &Message,
    calls: MessageCalls,
    d2h: Option<CopyEnd>,
    h2d: Option<CopyEnd>,
) -> Option<Chain> {
    if d2h.is_none() && h2d.is_none() {
        return None;
    }
    let send = calls.send?;
    Some(Chain {
        message: m.id,
        from: m.send().rank,
        to: m.recv_post().rank,
        tag: m.tag,
        bytes: m.bytes,
        packet: d2h.and_then(|c| c.packet).or(h2d.and_then(|c| c.packet)),
        send: m.send(),
        completion: calls.completion.map(|(c, _)| c),
        d2h: d2h.map(|c| c.index),
        h2d: h2d.map(|c| c.index),
        times: ChainTimes {
            d2h_issued: d2h.map(|c| c.issued),
            d2h_end: d2h.map(|c| c.end),
            send,
            received: calls.completion.map(|(_, end)| end),
            h2d_issued: h2d.map(|c| c.issued),
            h2d_end: h2d.map(|c| c.end),
        },
    })
}

/// Every chain of the run: one per message with a recorded copy on either side, in the
/// order of the messages, each made as [`super::GpuFold`] makes it a part at a time,
/// here with every rank at hand. Ranks are sorted by rank.
pub fn build(ranks: &[Timeline], messages: &[Message]) -> Vec<Chain> {
    if ranks.iter().all(|t| t.gpu.is_empty()) {
        return Vec::new();
    }
    // Each rank's copies indexed once, both directions.
    let index: Vec<(CopyIndex, CopyIndex)> = ranks.iter().map(CopyIndex::both).collect();
    let at = |r: u32| ranks.binary_search_by_key(&r, |t| t.rank).ok();
    let mut chains = Vec::new();
    for m in messages {
        let (Some(si), Some(ri)) = (at(m.send().rank), at(m.recv_post().rank)) else {
            continue;
        };
        let (st, rt) = (&ranks[si], &ranks[ri]);
        let calls = MessageCalls {
            send: st.spans.get(m.send().index).map(|s| s.start),
            completion: m
                .completion()
                .and_then(|c| rt.spans.get(c.index).map(|s| (c, s.end))),
        };
        let d2h = sent_copy(st, &index[si].0, m);
        let h2d = received_copy(rt, &index[ri].1, m);
        chains.extend(chain_of(m, calls, d2h, h2d));
    }
    chains
}
