//! The essential edges of a rank's operations: what any order must respect for the
//! program to stay correct (data dependence in the seed's words).
//!
//! - A request's post comes before its completion.
//! - Compute, blocking calls, collectives and the other MPI calls keep their program
//!   order (the anchors: only posts and completions move).
//! - Recorded uses of buffers: an operation that writes a buffer comes after every
//!   earlier operation that reads or writes it, and one that reads comes after the
//!   earlier writer. A send reads its buffer from its post to its completion, a receive
//!   writes it over the same time. The uses are MPI's (requests, blocking calls, the
//!   buffers collectives and other calls name, taken to be written), what compute spans
//!   declared, GPU copies' host buffers ([`crate::ops::gpu_uses`]), and
//!   the first touch the buffer watch learned ([`crate::ops::learned`]). Two MPI uses of
//!   overlapping buffers that were not in flight together keep their order (a buffer
//!   handed to MPI again stays after the completion that gave it back). A conflicting
//!   operation that the program placed while a request was in flight stays between its
//!   post and its completion.
//! - MPI's matching order: sends to one (peer, tag, communicator) keep their order, so
//!   do receives (a wildcard receive keeps its place among all receives of its
//!   communicator); point-to-point posts keep their order with the blocking calls of
//!   their communicator, and collectives (blocking or not) theirs per communicator.
//! - Compute whose effect on a request's buffer is not known ([`crate::dependence`]):
//!   in [`Mode::Proven`] it may touch it, so the request's post stays after the nearest
//!   such compute before it, its completion before the nearest one after it, and those
//!   in flight stay in flight; compute proven free by a learned watch is skipped. One
//!   edge each way per request: the compute chain gives the rest. In
//!   [`Mode::Permissive`] it has no edge.
//!
//! ```text
//!  program   pack(w sbuf) Irecv(rbuf) Isend(sbuf) Wait(r) Wait(s) unpack(r rbuf) compute
//!  edges     pack -> Isend (writer first)   Isend -> Wait(s)     Irecv -> Wait(r)
//!            Wait(r) -> unpack (reader after the receive)    pack -> unpack -> compute
//!  proven, compute unknown:  Wait(s) -> compute (the nearest that may write sbuf)
//! ```

use std::collections::{BTreeMap, BTreeSet};

use crate::dependence::{Guard, Mode};
use crate::model::Buffer;
use crate::ops::{Knowledge, OpKind, Program, RankProgram, RequestRole, Touch};

use super::graph::Dag;

/// True for an operation that keeps its program order with the other anchors.
pub fn is_anchor(kind: &OpKind) -> bool {
    kind.is_anchor()
}

/// One use of a buffer, over operations `begin..=end`.
#[derive(Clone, Copy)]
struct Accessor {
    begin: usize,
    end: usize,
}

/// A recorded use: the buffer, how, over which operations, and whether MPI's.
struct Used {
    buf: Buffer,
    touch: Touch,
    acc: Accessor,
    mpi: bool,
}

#[derive(Default)]
struct Users {
    /// The last writer, and those still in use when it began (requests in flight).
    writers: Vec<Accessor>,
    /// The readers since, and those still in use when it began.
    readers: Vec<Accessor>,
    /// MPI uses no later MPI use has followed yet, by (end, begin).
    mpi_pending: BTreeSet<(usize, usize)>,
    /// The latest end of the MPI uses a later one followed.
    mpi_followed: Option<usize>,
}

/// The recorded users of the rank's buffers, by exact range; the ranges overlapping a
/// buffer are found from the longest range seen.
#[derive(Default)]
struct BufferUsers {
    by_range: BTreeMap<(u64, u64), Users>,
    longest: u64,
}

impl BufferUsers {
    /// Adds the edges `u` needs after the earlier uses, and records it.
    fn add(&mut self, g: &mut Dag, u: Used) {
        let (buf, acc) = (u.buf, u.acc);
        let end = buf.addr.saturating_add(buf.len);
        for ((addr, len), prior) in self.by_range.range(..(end, 0)).rev() {
            if addr.saturating_add(self.longest) <= buf.addr {
                break;
            }
            if !buf.overlaps(&Buffer {
                addr: *addr,
                len: *len,
            }) {
                continue;
            }
            let conflicting = prior.writers.iter().chain(match u.touch {
                Touch::Write => prior.readers.as_slice(),
                Touch::Read => &[],
            });
            for p in conflicting {
                if p.end < acc.begin {
                    forward(g, p.end, acc.begin);
                } else {
                    // Inside the other's use (a compute while a request is in flight):
                    // it stays inside.
                    forward(g, p.begin, acc.begin);
                    forward(g, acc.end, p.end);
                }
            }
            // Handed to MPI again: after the completions that gave it back (each use
            // ended before this one, not yet followed, and the latest of those that were).
            if u.mpi {
                for &(end, _) in prior.mpi_pending.range(..(acc.begin, 0)) {
                    forward(g, end, acc.begin);
                }
                if let Some(end) = prior.mpi_followed {
                    forward(g, end, acc.begin);
                }
            }
        }
        self.longest = self.longest.max(buf.len);
        let entry = self.by_range.entry((buf.addr, buf.len)).or_default();
        match u.touch {
            Touch::Write => {
                // A use that ended before this one began is followed through it; one
                // still going on when it began (a request in flight) is not.
                entry.writers.retain(|w| w.end >= acc.begin);
                entry.writers.push(acc);
                entry.readers.retain(|r| r.end >= acc.begin);
            }
            Touch::Read => entry.readers.push(acc),
        }
        if u.mpi {
            let going_on = entry.mpi_pending.split_off(&(acc.begin, 0));
            let followed = std::mem::replace(&mut entry.mpi_pending, going_on);
            if let Some(&(end, _)) = followed.last() {
                entry.mpi_followed = Some(entry.mpi_followed.map_or(end, |e| e.max(end)));
            }
            entry.mpi_pending.insert((acc.end, acc.begin));
        }
    }
}

/// Adds `a -> b` when it goes forward in program order.
fn forward(g: &mut Dag, a: usize, b: usize) {
    if a < b {
        g.add_forward(a, b);
    }
}

/// MPI's matching order and the order of calls per communicator.
#[derive(Default)]
struct Matching {
    last_send: BTreeMap<(i32, i32, u32), usize>,
    last_recv: BTreeMap<(u32, i32, i32), usize>,
    /// Per communicator: its last wildcard receive, and the receives posted since.
    last_wildcard: BTreeMap<u32, usize>,
    recvs_since_wildcard: BTreeMap<u32, Vec<usize>>,
    last_blocking: BTreeMap<u32, usize>,
    posts_since_blocking: BTreeMap<u32, Vec<usize>>,
    last_collective: BTreeMap<u32, usize>,
}

impl Matching {
    /// A point-to-point post `i` of `(peer, tag)` on `comm`.
    fn post(&mut self, g: &mut Dag, i: usize, send: bool, (peer, tag): (i32, i32), comm: u32) {
        if send {
            if let Some(p) = self.last_send.insert((peer, tag, comm), i) {
                forward(g, p, i);
            }
        } else if peer < 0 || tag < 0 {
            // A wildcard may match what any earlier receive of its communicator could:
            // it follows them all (those before the last wildcard through it).
            let since = self.recvs_since_wildcard.entry(comm).or_default();
            for p in since.drain(..) {
                forward(g, p, i);
            }
            if let Some(&w) = self.last_wildcard.get(&comm) {
                forward(g, w, i);
            }
            self.last_wildcard.insert(comm, i);
        } else {
            if let Some(p) = self.last_recv.insert((comm, peer, tag), i) {
                forward(g, p, i);
            }
            if let Some(&w) = self.last_wildcard.get(&comm) {
                forward(g, w, i);
            }
            self.recvs_since_wildcard.entry(comm).or_default().push(i);
        }
        if let Some(&b) = self.last_blocking.get(&comm) {
            forward(g, b, i);
        }
        self.posts_since_blocking.entry(comm).or_default().push(i);
    }

    fn blocking(&mut self, g: &mut Dag, i: usize, comm: u32) {
        for p in self.posts_since_blocking.remove(&comm).unwrap_or_default() {
            forward(g, p, i);
        }
        self.last_blocking.insert(comm, i);
    }

    fn collective(&mut self, g: &mut Dag, i: usize, comm: u32) {
        if let Some(p) = self.last_collective.insert(comm, i) {
            forward(g, p, i);
        }
    }
}

/// The rank's essential graph: one node per operation.
pub fn essential(program: &Program, rank: &RankProgram, mode: Mode) -> Dag {
    let ops = &rank.ops;
    let mut g = Dag::new(ops.len());
    let mut last_anchor: Option<usize> = None;
    let mut users = BufferUsers::default();
    let mut matching = Matching::default();
    // The host buffers of GPU copies, by the operation that enqueued them.
    let mut gpu = rank.gpu_uses.iter().peekable();
    // The first touches learned, by the operation that holds them.
    let mut touches: Vec<(usize, Buffer, Touch)> = (rank.learned.iter())
        .filter_map(|l| Some((l.until()?, l.touched()?)))
        .map(|(at, (buf, t))| (at, buf, t))
        .collect();
    touches.sort_unstable_by_key(|t| t.0);
    let mut touches = touches.into_iter().peekable();
    // The buffers collectives and other calls named, by operation.
    let mut named = rank.call_buffers.iter().peekable();
    let mut uses: Vec<Used> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let here = Accessor { begin: i, end: i };
        let used = |buf, touch, acc, mpi| Used {
            buf,
            touch,
            acc,
            mpi,
        };
        while let Some(u) = gpu.next_if(|u| u.begin <= i) {
            let acc = Accessor {
                begin: u.begin.max(i),
                end: u.end.max(i),
            };
            uses.push(used(u.buf, u.used, acc, false));
        }
        while let Some((_, buf, t)) = touches.next_if(|t| t.0 <= i) {
            uses.push(used(buf, t, here, false));
        }
        while let Some(&(_, buf)) = named.next_if(|n| n.0 as usize <= i) {
            uses.push(used(buf, Touch::Write, here, true));
        }
        if is_anchor(&op.kind) {
            if let Some(prev) = last_anchor {
                forward(&mut g, prev, i);
            }
            last_anchor = Some(i);
        }
        match &op.kind {
            OpKind::Compute { .. } => {
                if let Some(a) = rank.access(op) {
                    for r in &a.reads {
                        uses.push(used(r.buf, Touch::Read, here, false));
                    }
                    for w in &a.writes {
                        uses.push(used(w.buf, Touch::Write, here, false));
                    }
                }
            }
            OpKind::Post { request } => {
                let q = &program.requests[*request];
                if let Some(c) = q.complete() {
                    forward(&mut g, i, c);
                }
                let end = q.complete().unwrap_or(i);
                if let Some(b) = q.buffer() {
                    let t = if q.role == RequestRole::Send {
                        Touch::Read
                    } else {
                        Touch::Write
                    };
                    uses.push(used(b, t, Accessor { begin: i, end }, true));
                }
                match q.role {
                    RequestRole::Send | RequestRole::Recv => {
                        let key = (q.peer().unwrap_or(-1), q.tag().unwrap_or(-1));
                        let send = q.role == RequestRole::Send;
                        matching.post(&mut g, i, send, key, q.comm);
                    }
                    RequestRole::Collective => matching.collective(&mut g, i, q.comm),
                    RequestRole::Other => {}
                }
            }
            OpKind::Complete { .. } | OpKind::Local => {}
            OpKind::Blocking {
                transfers, comm, ..
            } => {
                for (b, t) in &transfers.buffers {
                    uses.push(used(*b, *t, here, true));
                }
                matching.blocking(&mut g, i, *comm);
            }
            OpKind::Collective { comm, .. } => matching.collective(&mut g, i, *comm),
        }
        for u in uses.drain(..) {
            users.add(&mut g, u);
        }
    }
    if mode == Mode::Proven {
        proven(program, rank, &mut g);
    }
    g
}

/// The compute that may touch a request's buffer, ascending: every compute of unknown
/// effect, and for a request whose buffer is not recorded, every compute that declared
/// a use that conflicts (it may be that buffer).
struct Stoppers {
    unknown: Vec<usize>,
    declared_write: Vec<usize>,
    declared_any: Vec<usize>,
}

impl Stoppers {
    fn of(rank: &RankProgram) -> Stoppers {
        let mut s = Stoppers {
            unknown: Vec::new(),
            declared_write: Vec::new(),
            declared_any: Vec::new(),
        };
        for (i, op) in rank.ops.iter().enumerate() {
            if !matches!(op.kind, OpKind::Compute { .. }) {
                continue;
            }
            match rank.access(op) {
                None => {
                    s.unknown.push(i);
                    s.declared_write.push(i);
                    s.declared_any.push(i);
                }
                Some(a) => {
                    if !a.writes.is_empty() {
                        s.declared_write.push(i);
                    }
                    if !a.writes.is_empty() || !a.reads.is_empty() {
                        s.declared_any.push(i);
                    }
                }
            }
        }
        s
    }
}

/// The end of the stretch of `free` that holds operation `i`, if one does.
fn stretch_end(free: &[(u32, u32)], i: usize) -> Option<usize> {
    let k = free.partition_point(|s| s.0 as usize <= i);
    (k > 0 && i < free[k - 1].1 as usize).then(|| free[k - 1].1 as usize)
}

/// The first of `list` in `from..to` not in a stretch of `free`.
fn first_stopper(list: &[usize], free: &[(u32, u32)], from: usize, to: usize) -> Option<usize> {
    let mut k = list.partition_point(|&x| x < from);
    while let Some(&u) = list.get(k).filter(|&&u| u < to) {
        match stretch_end(free, u) {
            Some(end) => k = list.partition_point(|&x| x < end),
            None => return Some(u),
        }
    }
    None
}

/// The last of `list` in `from..to` not in a stretch of `free`.
fn last_stopper(list: &[usize], free: &[(u32, u32)], from: usize, to: usize) -> Option<usize> {
    let mut k = list.partition_point(|&x| x < to);
    while k > 0 && list[k - 1] >= from {
        let u = list[k - 1];
        let start = free.partition_point(|s| s.0 as usize <= u);
        match stretch_end(free, u) {
            Some(_) => k = list.partition_point(|&x| x < free[start - 1].0 as usize),
            None => return Some(u),
        }
    }
    None
}

/// [`Mode::Proven`]'s edges: each request's post after the nearest compute before it
/// that may touch its buffer, its completion before the nearest after it, and the first
/// and last such compute in flight kept in flight.
fn proven(program: &Program, rank: &RankProgram, g: &mut Dag) {
    let stoppers = Stoppers::of(rank);
    let mut knowledge = Knowledge::new(program, rank);
    let n = rank.ops.len();
    for (i, op) in rank.ops.iter().enumerate() {
        let OpKind::Post { request } = op.kind else {
            continue;
        };
        let q = &program.requests[request];
        if !q.moves_data() {
            continue;
        }
        let guard = q.guard();
        let (list, free): (&[usize], &[(u32, u32)]) = match q.buffer() {
            Some(b) => (&stoppers.unknown, knowledge.free(b, guard)),
            None if guard == Guard::Writes => (&stoppers.declared_write, &[]),
            None => (&stoppers.declared_any, &[]),
        };
        let end = q.complete().unwrap_or(n);
        if let Some(u) = last_stopper(list, free, 0, i) {
            forward(g, u, i);
        }
        if let Some(u) = first_stopper(list, free, i + 1, end) {
            forward(g, i, u);
        }
        if let Some(c) = q.complete() {
            if let Some(u) = last_stopper(list, free, i + 1, c) {
                forward(g, u, c);
            }
            if let Some(u) = first_stopper(list, free, c + 1, n) {
                forward(g, c, u);
            }
        }
    }
}
