//! The simulation behind [`super::replay`]: events in global time order (a heap keyed by
//! time, then by insertion), one state machine per rank, and the messages, transfers and
//! collective instances that tie ranks together. A rank keeps running without touching
//! the heap while its next step is earlier than every pending event, so a replay costs
//! about `O(operations × log(ranks))`.
//!
//! A rendezvous transfer under [`super::ProgressMode::InMpi`] advances at rate 1 while its
//! sender or receiver is inside MPI and 0 otherwise: each time either flips, the
//! transfer's remaining work is brought up to date and its end rescheduled (older end
//! events carry a stale version and are ignored).

mod flow;
mod source;
mod state;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Assumed, Blocked, OpTime, RankReplay, Replay, ReplayConfig, ReplayError};
use crate::ops::{BlockingAt, OpReader, Program, ReplayKind, ReplayOp, RequestRole};
use source::check_orders;
pub(super) use source::Source;
use state::{MsgState, Posted, AT_ITS_POST, NO_SLOT, UNKNOWN};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// The rank (slot) resumes.
    Step(u32),
    /// A rendezvous handshake is done: the message's data transfer starts.
    Handshake(u32),
    /// A transfer may be done (transfer, version).
    TransferDone(u32, u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// About to start the operation at `pos` (its lead-in first).
    Next,
    /// Its lead-in is over: entering it.
    Enter,
    /// Inside a call that waits, entered at this time.
    Blocked(u64),
    /// The operation at `pos` ends now.
    Finish,
    /// Every operation done.
    Done,
}

struct RankState {
    pos: usize,
    /// The operation at `pos`, while there is one.
    op: ReplayOp,
    /// Where the messages of its last blocking call entered are.
    blocking: BlockingAt,
    stage: Stage,
    in_mpi: bool,
    /// Rendezvous transfers in flight with this rank as a party (in-MPI progress).
    active: Vec<u32>,
    end: u64,
}

/// The operation of a rank with none left (never run: a rank at its end is done).
const NO_OP: ReplayOp = ReplayOp {
    kind: ReplayKind::Local,
    cost_ns: 0,
    lead_in_ns: 0,
    call: None,
};

struct Transfer {
    msg: u32,
    remaining: u64,
    last: u64,
    moving: bool,
    version: u32,
    done: bool,
}

#[derive(Clone, Copy, Default)]
struct Instance {
    entered: usize,
    latest: u64,
    done: Option<u64>,
}

struct Sim<'a> {
    p: &'a Program,
    source: Source<'a>,
    /// Per rank slot, where its next operation is read (measured order only).
    readers: Vec<OpReader<'a>>,
    cfg: &'a ReplayConfig,
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
    ranks: Vec<RankState>,
    msgs: Vec<MsgState>,
    transfers: Vec<Transfer>,
    instances: Vec<Instance>,
    req_posted: Posted,
    /// Per rank, each operation's times; empty when not kept.
    times: Vec<Vec<OpTime>>,
    assumed: Assumed,
}

fn slot_of(p: &Program, rank: u32) -> Option<u32> {
    p.slot(rank).map(|s| s as u32)
}

/// A hint to the processor to bring `x`'s cache line in: no effect on any result.
#[inline(always)]
fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing into the program and cannot fault, whatever the
    // address; `x` is a valid reference besides.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Runs the replay (see [`super::replay`]); each operation's times are kept in the
/// result only with `op_times` (without, its ranks' `ops` are empty).
pub(super) fn run(
    source: Source,
    cfg: &ReplayConfig,
    op_times: bool,
) -> Result<Replay, ReplayError> {
    if let Source::Given(p, given) = source {
        check_orders(p, given)?;
    }
    let p = source.links();
    let readers = match source {
        Source::Given(..) => Vec::new(),
        Source::Measured(m) => m.ops.iter().map(|o| o.reader()).collect(),
    };
    let msgs = p
        .messages
        .iter()
        .map(|m| {
            let sender = slot_of(p, m.from().0).unwrap_or(NO_SLOT);
            let receiver = slot_of(p, m.to().0).unwrap_or(NO_SLOT);
            MsgState::new(sender, receiver, flow::protocol(cfg, m))
        })
        .collect();
    let mut sim = Sim {
        p,
        readers,
        cfg,
        heap: BinaryHeap::with_capacity(2 * p.ranks.len() + 16),
        seq: 0,
        ranks: p
            .ranks
            .iter()
            .map(|r| RankState {
                pos: 0,
                op: NO_OP,
                blocking: BlockingAt::default(),
                stage: Stage::Next,
                in_mpi: false,
                active: Vec::new(),
                end: r.start_ns,
            })
            .collect(),
        msgs,
        transfers: Vec::new(),
        instances: vec![Instance::default(); p.collectives.len()],
        req_posted: Posted::none(source.requests()),
        times: p
            .ranks
            .iter()
            .enumerate()
            .map(|(s, _)| vec![OpTime::default(); if op_times { source.len(s) } else { 0 }])
            .collect(),
        assumed: Assumed::default(),
        source,
    };
    for (s, r) in p.ranks.iter().enumerate() {
        sim.load(s);
        sim.push(r.start_ns, Event::Step(s as u32));
    }
    while let Some(Reverse((now, _, ev))) = sim.heap.pop() {
        sim.prefetch_next();
        match ev {
            Event::Step(s) => sim.advance(s as usize, now)?,
            Event::Handshake(m) => sim.start_transfer(m as usize, now),
            Event::TransferDone(x, v) => {
                let t = &sim.transfers[x as usize];
                if t.version == v && !t.done {
                    sim.transfer_done(x as usize, now);
                }
            }
        }
    }
    sim.finish()
}

impl<'a> Sim<'a> {
    /// Asks for the state of the rank due next (its operation with it) while this
    /// event is handled: with many ranks, the rank that resumes next has its state far
    /// from the last one's. Fetching its operation from the whole program's made the
    /// self check 15 % faster at 1 024 ranks; fetching its state, which now holds its
    /// decoded operation, 0 to 12 % (two alternating rounds). Reading that operation's
    /// request as well, or fetching the event after next's, gained nothing more.
    fn prefetch_next(&self) {
        if let Some(Reverse((_, _, Event::Step(s)))) = self.heap.peek() {
            prefetch(&self.ranks[*s as usize]);
        }
    }

    /// Reads the operation rank slot `s` runs at its position, if it has one left.
    fn load(&mut self, s: usize) {
        let pos = self.ranks[s].pos;
        if pos == self.source.len(s) {
            return;
        }
        self.ranks[s].op = match self.source {
            Source::Given(p, orders) => ReplayOp::of(&p.ranks[s].ops[orders[s][pos]]),
            // As many operations as it has: one is left.
            Source::Measured(_) => self.readers[s].next_op().unwrap_or(NO_OP),
        };
    }

    fn push(&mut self, at: u64, ev: Event) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    /// Lets rank `s` run on to `until` inline when nothing else is due before; otherwise
    /// schedules it and says to stop.
    fn sleep(&mut self, s: usize, until: u64) -> Option<u64> {
        match self.heap.peek() {
            Some(Reverse((t, _, _))) if *t <= until => {
                self.push(until, Event::Step(s as u32));
                None
            }
            _ => Some(until),
        }
    }

    /// The operation rank slot `s` is at: its index in the rank's operations, and what
    /// the replay reads of it.
    fn op(&self, s: usize) -> (usize, ReplayOp) {
        let pos = self.ranks[s].pos;
        let i = match self.source {
            Source::Given(_, orders) => orders[s][pos],
            Source::Measured(_) => pos,
        };
        (i, self.ranks[s].op)
    }

    fn mpi_cost(&self, op: &ReplayOp) -> u64 {
        if self.cfg.mpi_costs {
            op.cost_ns
        } else {
            0
        }
    }

    /// Runs rank `s` from `now` until it must wait for something.
    fn advance(&mut self, s: usize, mut now: u64) -> Result<(), ReplayError> {
        loop {
            match self.ranks[s].stage {
                Stage::Done | Stage::Blocked(_) => return Ok(()),
                Stage::Next => {
                    // Orders hold every operation once (checked).
                    if self.ranks[s].pos == self.source.len(s) {
                        // Its unmarked tail, outside MPI, ends it.
                        self.set_mpi(s, false, now);
                        self.ranks[s].stage = Stage::Done;
                        self.ranks[s].end = now + self.p.ranks[s].tail_ns;
                        return Ok(());
                    }
                    self.ranks[s].stage = Stage::Enter;
                    let lead = self.op(s).1.lead_in_ns;
                    if lead > 0 {
                        self.set_mpi(s, false, now);
                        match self.sleep(s, now + lead) {
                            Some(t) => now = t,
                            None => return Ok(()),
                        }
                    }
                }
                Stage::Enter => match self.enter(s, now)? {
                    Some(end) => {
                        self.ranks[s].stage = Stage::Finish;
                        match self.sleep(s, end) {
                            Some(t) => now = t,
                            None => return Ok(()),
                        }
                    }
                    None => return Ok(()),
                },
                Stage::Finish => {
                    let (i, _) = self.op(s);
                    if let Some(t) = self.times[s].get_mut(i) {
                        t.end_ns = now;
                    }
                    self.ranks[s].pos += 1;
                    self.load(s);
                    self.ranks[s].stage = Stage::Next;
                }
            }
        }
    }

    /// Enters the current operation of rank `s`: its end when known now, else `None`
    /// (the rank is blocked until [`Self::wake`] finds it can end).
    fn enter(&mut self, s: usize, now: u64) -> Result<Option<u64>, ReplayError> {
        let (i, op) = self.op(s);
        if let Some(t) = self.times[s].get_mut(i) {
            t.start_ns = now;
        }
        let cost = self.mpi_cost(&op);
        match op.kind {
            ReplayKind::Compute => {
                let c = op.cost_ns;
                self.set_mpi(s, false, now);
                return Ok(Some(now + c));
            }
            ReplayKind::Local => {
                self.set_mpi(s, true, now);
                return Ok(Some(now + cost));
            }
            ReplayKind::Post(request) => {
                self.set_mpi(s, true, now);
                self.post(request, now);
                return Ok(Some(now + cost));
            }
            ReplayKind::Complete(request) => {
                if !self.req_posted.has(request) {
                    return Err(ReplayError::BadOrder {
                        rank: self.p.ranks[s].rank,
                        reason: format!(
                            "operation {i} completes request {request} before it is posted"
                        ),
                    });
                }
            }
            ReplayKind::Blocking { null_peers } => {
                let p: &'a Program = self.p;
                let blocking = &p.ranks[s].blocking;
                let at = blocking.locate(i, self.ranks[s].blocking);
                self.ranks[s].blocking = at;
                let (sends, recvs) = (blocking.sends_at(at), blocking.recvs_at(at));
                if let Some(c) = op.call {
                    // Halves to or from MPI_PROC_NULL have no message by design.
                    let missing = u64::from(c.sends() && sends.clone().next().is_none())
                        + u64::from(c.receives_blocking() && recvs.clone().next().is_none());
                    self.assumed.unmatched += missing.saturating_sub(u64::from(null_peers));
                }
                self.set_mpi(s, true, now);
                for m in sends {
                    self.send_posted(m, now);
                }
                for m in recvs {
                    self.recv_posted(m, now);
                }
            }
            ReplayKind::Collective(instance) => {
                self.set_mpi(s, true, now);
                self.arrive(instance, now);
            }
        }
        self.set_mpi(s, true, now);
        self.ranks[s].stage = Stage::Blocked(now);
        Ok(self.ready(s, now))
    }

    /// When the blocked operation of rank `s`, entered at `entry`, can end; `None`
    /// while something it waits for is not done.
    fn ready(&self, s: usize, entry: u64) -> Option<u64> {
        let (_, op) = self.op(s);
        let done = match op.kind {
            ReplayKind::Complete(request) => self.request_done(request),
            ReplayKind::Blocking { .. } => {
                let (blocking, at) = (&self.p.ranks[s].blocking, self.ranks[s].blocking);
                (blocking.sends_at(at).map(|m| self.msgs[m].send_done))
                    .chain(blocking.recvs_at(at).map(|m| self.msgs[m].recv_done()))
                    .max()
                    .unwrap_or(entry)
            }
            ReplayKind::Collective(instance) => self
                .instances
                .get(instance)
                .and_then(|x| x.done)
                .unwrap_or(UNKNOWN),
            _ => entry,
        };
        (done != UNKNOWN).then(|| done.max(entry + self.mpi_cost(&op)))
    }

    /// When `request` is done ([`UNKNOWN`]: not yet): with its message, or with its
    /// collective instance; a request the replay has nothing to wait for is done at its
    /// post ([`AT_ITS_POST`]). Nothing is kept per request: what a request waits for
    /// keeps the time.
    fn request_done(&self, request: usize) -> u64 {
        let r = self.source.request(request);
        let instance = r.instance().and_then(|x| self.instances.get(x));
        match (r.role, r.message(), instance) {
            (RequestRole::Send, Some(m), _) => self.msgs[m].send_done,
            (RequestRole::Recv, Some(m), _) => self.msgs[m].recv_done(),
            (_, _, Some(Instance { done: Some(at), .. })) => *at,
            (RequestRole::Collective, _, Some(_)) => UNKNOWN,
            _ if self.req_posted.has(request) => AT_ITS_POST,
            _ => UNKNOWN,
        }
    }

    /// Rank `s` (if blocked) ends its operation once what it waits for is done.
    fn wake(&mut self, s: Option<u32>) {
        let Some(s) = s.map(|s| s as usize) else {
            return;
        };
        if let Stage::Blocked(entry) = self.ranks[s].stage {
            if let Some(end) = self.ready(s, entry) {
                self.ranks[s].stage = Stage::Finish;
                self.push(end, Event::Step(s as u32));
            }
        }
    }

    fn set_mpi(&mut self, s: usize, inside: bool, now: u64) {
        if self.ranks[s].in_mpi == inside {
            return;
        }
        self.ranks[s].in_mpi = inside;
        for k in 0..self.ranks[s].active.len() {
            let x = self.ranks[s].active[k] as usize;
            self.retime(x, now);
        }
    }

    fn finish(self) -> Result<Replay, ReplayError> {
        let blocked: Vec<Blocked> = (0..self.ranks.len())
            .filter(|&s| self.ranks[s].stage != Stage::Done)
            .map(|s| self.blocked(s))
            .collect();
        if !blocked.is_empty() {
            return Err(ReplayError::Deadlock { blocked });
        }
        let ranks: Vec<RankReplay> = self
            .p
            .ranks
            .iter()
            .zip(self.times)
            .zip(&self.ranks)
            .map(|((r, ops), st)| RankReplay {
                rank: r.rank,
                start_ns: r.start_ns,
                end_ns: st.end,
                ops,
            })
            .collect();
        let start_ns = ranks.iter().map(|r| r.start_ns).min().unwrap_or(0);
        let end_ns = ranks.iter().map(|r| r.end_ns).max().unwrap_or(0);
        Ok(Replay {
            ranks,
            start_ns,
            end_ns,
            makespan_ns: end_ns.saturating_sub(start_ns),
            assumed: self.assumed,
        })
    }

    /// Where rank `s` is stuck.
    fn blocked(&self, s: usize) -> Blocked {
        let (i, op) = self.op(s);
        let peer = |m: usize, of_send: bool| {
            let x = &self.p.messages[m];
            if of_send {
                format!("the receive of rank {}", x.to().0)
            } else {
                format!("a message from rank {}", x.from().0)
            }
        };
        let waits_for = match op.kind {
            ReplayKind::Complete(request) => {
                let r = self.source.request(request);
                match (r.role, r.message()) {
                    (RequestRole::Send, Some(m)) => peer(m, true),
                    (RequestRole::Recv, Some(m)) => peer(m, false),
                    _ => "the other members of its collective".to_string(),
                }
            }
            ReplayKind::Blocking { .. } => {
                let blocking = &self.p.ranks[s].blocking;
                let at = blocking.locate(i, self.ranks[s].blocking);
                (blocking.sends_at(at))
                    .filter(|&m| self.msgs[m].send_done == UNKNOWN)
                    .map(|m| peer(m, true))
                    .chain(
                        (blocking.recvs_at(at))
                            .filter(|&m| self.msgs[m].recv_done() == UNKNOWN)
                            .map(|m| peer(m, false)),
                    )
                    .collect::<Vec<_>>()
                    .join(" and ")
            }
            ReplayKind::Collective(instance) => {
                let n = (self.p.collectives.get(instance)).map_or(0, |c| c.members.len());
                let entered = self.instances.get(instance).map_or(0, |x| x.entered);
                format!("the other members of its collective ({entered} of {n} entered)")
            }
            _ => "nothing (it was never resumed)".to_string(),
        };
        Blocked {
            rank: self.p.ranks[s].rank,
            op: i,
            call: op.call,
            waits_for,
        }
    }
}
