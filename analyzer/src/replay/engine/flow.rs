//! How messages, transfers and collective instances move in the replay: posts, eager
//! arrivals, rendezvous handshakes and transfers (their progress retimed each time a
//! party enters or leaves MPI), and collective entries. The rank state machine that
//! calls these is the parent module.

use overlap_format::schema::Op;

use super::state::{Protocol, RECV_POSTED, SEND_POSTED};
use super::{slot_of, Event, Sim, Transfer};
use crate::ops::{MessageOp, RequestRole};
use crate::replay::{ProgressMode, ReplayConfig};

/// The protocol of message `m` (its send's call and its size decide).
pub(super) fn protocol(cfg: &ReplayConfig, m: &MessageOp) -> Protocol {
    let eager = m.bytes <= cfg.network.eager_limit;
    match m.send_call {
        Some(Op::Bsend | Op::Ibsend) => Protocol::Eager,
        Some(Op::Ssend | Op::Issend) if eager => Protocol::EagerSync,
        _ if !eager => Protocol::Rendezvous,
        _ if cfg.synchronous_sends => Protocol::EagerSync,
        _ => Protocol::Eager,
    }
}

impl Sim<'_> {
    pub(super) fn post(&mut self, request: usize, now: u64) {
        self.req_posted.set(request);
        let r = self.source.request(request);
        match (r.role, r.message(), r.instance()) {
            (RequestRole::Send, Some(m), _) => self.send_posted(m, now),
            (RequestRole::Recv, Some(m), _) => self.recv_posted(m, now),
            (RequestRole::Send | RequestRole::Recv, None, _) => {
                // To or from MPI_PROC_NULL there is no message by design.
                self.assumed.unmatched += u64::from(!r.proc_null);
            }
            (RequestRole::Collective, _, Some(x)) if x < self.instances.len() => {
                self.arrive(x, now);
            }
            (RequestRole::Collective, _, _) => {
                self.assumed.unmatched_collectives += 1;
            }
            (RequestRole::Other, _, _) => {
                self.assumed.other_requests += 1;
            }
        }
    }

    /// A member enters (or posts) collective instance `x`.
    pub(super) fn arrive(&mut self, x: usize, now: u64) {
        let Some(c) = self.p.collectives.get(x) else {
            return;
        };
        let inst = &mut self.instances[x];
        inst.entered += 1;
        inst.latest = inst.latest.max(now);
        if inst.entered < c.members.len().max(1) || inst.done.is_some() {
            return;
        }
        let cost = if self.cfg.collective_costs {
            c.cost_ns.unwrap_or_else(|| {
                self.assumed.collectives_without_cost += 1;
                0
            })
        } else {
            0
        };
        let done = self.instances[x].latest + cost;
        self.instances[x].done = Some(done);
        // A member's request (a non-blocking one's) is done with the instance, before its
        // rank is woken ([`Sim::request_done`]).
        for &(rank, _) in &c.members {
            self.wake(slot_of(self.p, rank));
        }
    }

    pub(super) fn send_posted(&mut self, m: usize, now: u64) {
        let net = &self.cfg.network;
        let bytes = self.p.messages[m].bytes;
        let x = &mut self.msgs[m];
        x.mark(SEND_POSTED);
        match x.protocol {
            Protocol::Eager | Protocol::EagerSync => {
                let arrival = now + net.transfer_ns(bytes);
                if x.protocol == Protocol::Eager {
                    x.send_done = now;
                }
                if x.is(RECV_POSTED) {
                    // `recv` holds the receive's post.
                    x.set_recv_done(arrival.max(x.recv));
                    if x.protocol == Protocol::EagerSync {
                        x.send_done = x.recv;
                    }
                } else {
                    x.recv = arrival;
                }
            }
            Protocol::Rendezvous => {
                if x.is(RECV_POSTED) {
                    self.handshake(m, now);
                }
            }
        }
        self.notify(m);
    }

    pub(super) fn recv_posted(&mut self, m: usize, now: u64) {
        let x = &mut self.msgs[m];
        x.mark(RECV_POSTED);
        if !x.is(SEND_POSTED) {
            x.recv = now;
            return;
        }
        match x.protocol {
            Protocol::Eager | Protocol::EagerSync => {
                // `recv` holds the data's arrival.
                x.set_recv_done(x.recv.max(now));
                if x.protocol == Protocol::EagerSync {
                    x.send_done = x.recv;
                }
            }
            Protocol::Rendezvous => self.handshake(m, now),
        }
        self.notify(m);
    }

    pub(super) fn notify(&mut self, m: usize) {
        let (a, b) = (self.msgs[m].sender(), self.msgs[m].receiver());
        self.wake(a);
        if b != a {
            self.wake(b);
        }
    }

    pub(super) fn handshake(&mut self, m: usize, now: u64) {
        let latency = self.cfg.network.latency();
        if latency == 0 {
            self.start_transfer(m, now);
        } else {
            self.push(now + latency, Event::Handshake(m as u32));
        }
    }

    pub(super) fn start_transfer(&mut self, m: usize, now: u64) {
        let work = self.cfg.network.data_ns(self.p.messages[m].bytes);
        if work == 0 {
            self.message_done(m, now);
            return;
        }
        let x = self.transfers.len();
        self.transfers.push(Transfer {
            msg: m as u32,
            remaining: work,
            last: now,
            moving: false,
            version: 0,
            done: false,
        });
        if self.cfg.progress == ProgressMode::InMpi {
            let (a, b) = (self.msgs[m].sender(), self.msgs[m].receiver());
            for s in [a, b.filter(|b| Some(*b) != a)].into_iter().flatten() {
                self.ranks[s as usize].active.push(x as u32);
            }
        }
        self.retime(x, now);
    }

    /// Brings transfer `x` up to `now` and schedules its end at its current rate.
    pub(super) fn retime(&mut self, x: usize, now: u64) {
        let m = self.transfers[x].msg as usize;
        let inside = |s: Option<u32>| s.is_some_and(|s| self.ranks[s as usize].in_mpi);
        let moving = self.cfg.progress == ProgressMode::Async
            || inside(self.msgs[m].sender())
            || inside(self.msgs[m].receiver());
        let t = &mut self.transfers[x];
        if t.moving {
            t.remaining = t.remaining.saturating_sub(now - t.last);
        }
        t.last = now;
        t.moving = moving;
        t.version += 1;
        if moving {
            let (at, v) = (now + t.remaining, t.version);
            self.push(at, Event::TransferDone(x as u32, v));
        }
    }

    pub(super) fn transfer_done(&mut self, x: usize, now: u64) {
        self.transfers[x].done = true;
        let m = self.transfers[x].msg as usize;
        for s in [self.msgs[m].sender(), self.msgs[m].receiver()]
            .into_iter()
            .flatten()
        {
            self.ranks[s as usize].active.retain(|&t| t as usize != x);
        }
        self.message_done(m, now);
    }

    pub(super) fn message_done(&mut self, m: usize, now: u64) {
        self.msgs[m].send_done = now;
        self.msgs[m].set_recv_done(now);
        self.notify(m);
    }
}
