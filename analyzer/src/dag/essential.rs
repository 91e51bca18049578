//! The essential edges of a rank's operations: what any order must respect for the
//! program to stay correct (data dependence in the seed's words).
//!
//! - A request's post comes before its completion.
//! - Compute, blocking calls, collectives and the other MPI calls keep their program
//!   order (the anchors: only posts and completions move).
//! - Buffers: an operation that writes a buffer comes after every earlier operation
//!   that reads or writes it, and one that reads comes after the earlier writer. A send
//!   reads its buffer from its post to its completion, a receive writes it over the same
//!   time, so a compute that writes a send buffer comes before the send's post or after
//!   its completion, whichever it was in the program.
//! - MPI's matching order: sends to one (peer, tag, communicator) keep their order, so
//!   do receives (a wildcard receive keeps its place among all receives of its
//!   communicator); point-to-point posts keep their order with the blocking calls of
//!   their communicator, and collectives (blocking or not) theirs per communicator.
//! - A GPU copy uses its host buffer from the operation that enqueued it to the one in
//!   progress when it ended ([`crate::ops::gpu_uses`]): a D2H writes its destination,
//!   an H2D reads its source, so the send of a staged packet stays after its copy.
//! - Compute whose buffers are unknown (inferred from gaps, or a span that declared
//!   none) has no buffer edge: moves across it need an assumption, which the
//!   suggestion states; in conservative mode it is taken to read and write every
//!   buffer instead. A conflicting operation that the program placed while a request
//!   was in flight (between its post and its completion) stays between them.
//!
//! ```text
//!  program   pack(w sbuf) Irecv(rbuf) Isend(sbuf) Wait(r) Wait(s) unpack(r rbuf) compute
//!  edges     pack -> Isend (writer first)   Isend -> Wait(s)     Irecv -> Wait(r)
//!            Wait(r) -> unpack (reader after the receive)    pack -> unpack -> compute
//! ```

use std::collections::BTreeMap;

use crate::model::Buffer;
use crate::ops::{OpKind, Program, RankProgram, RequestRole, Use};

use super::graph::Dag;

/// Everything: the buffer of a compute whose accesses are unknown, in conservative mode.
const EVERYTHING: Buffer = Buffer {
    addr: 0,
    len: u64::MAX,
};

/// True for an operation that keeps its program order with the other anchors.
pub fn is_anchor(kind: &OpKind) -> bool {
    !matches!(kind, OpKind::Post { .. } | OpKind::Complete { .. })
}

/// One use of a buffer, from the operation that starts it to the one that ends it.
struct Accessor {
    begin: usize,
    end: usize,
}

#[derive(Default)]
struct Users {
    writer: Option<(usize, usize)>,
    readers: Vec<(usize, usize)>,
}

/// The rank's essential graph: one node per operation.
pub fn essential(program: &Program, rank: &RankProgram, conservative: bool) -> Dag {
    let ops = &rank.ops;
    let mut g = Dag::new(ops.len());
    let mut last_anchor: Option<usize> = None;
    // Buffer users by exact range (overlaps are found by scanning: programs have few
    // distinct buffers).
    let mut users: BTreeMap<(u64, u64), Users> = BTreeMap::new();
    let mut last_send: BTreeMap<(i32, i32, u32), usize> = BTreeMap::new();
    let mut last_recv: BTreeMap<(u32, i32, i32), usize> = BTreeMap::new();
    let mut last_blocking: BTreeMap<u32, usize> = BTreeMap::new();
    let mut posts_since_blocking: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    let mut last_collective: BTreeMap<u32, usize> = BTreeMap::new();
    let add = |g: &mut Dag, a: usize, b: usize| {
        if a < b {
            g.add_forward(a, b);
        }
    };
    // The host buffers of GPU copies, by the operation that enqueued them.
    let mut gpu = rank.gpu_uses.iter().peekable();
    for (i, op) in ops.iter().enumerate() {
        let mut uses: Vec<(Buffer, Use, Accessor)> = Vec::new();
        while let Some(u) = gpu.next_if(|u| u.begin <= i) {
            let (begin, end) = (u.begin.max(i), u.end.max(i));
            uses.push((u.buf, u.used, Accessor { begin, end }));
        }
        if is_anchor(&op.kind) {
            if let Some(prev) = last_anchor {
                add(&mut g, prev, i);
            }
            last_anchor = Some(i);
        }
        let here = Accessor { begin: i, end: i };
        match &op.kind {
            OpKind::Compute { .. } => match rank.access(op) {
                Some(a) => {
                    for r in &a.reads {
                        uses.push((r.buf, Use::Read, Accessor { begin: i, end: i }));
                    }
                    for w in &a.writes {
                        uses.push((w.buf, Use::Write, Accessor { begin: i, end: i }));
                    }
                }
                None if conservative => uses.push((EVERYTHING, Use::Write, here)),
                None => {}
            },
            OpKind::Post { request } => {
                let q = &program.requests[*request];
                if let Some(c) = q.complete() {
                    add(&mut g, i, c);
                }
                let end = q.complete().unwrap_or(i);
                if let Some(b) = q.buffer() {
                    let u = if q.role == RequestRole::Recv {
                        Use::Write
                    } else {
                        Use::Read
                    };
                    uses.push((b, u, Accessor { begin: i, end }));
                }
                match q.role {
                    RequestRole::Send | RequestRole::Recv => {
                        let (peer, tag) = (q.peer().unwrap_or(-1), q.tag().unwrap_or(-1));
                        if q.role == RequestRole::Send {
                            if let Some(p) = last_send.insert((peer, tag, q.comm), i) {
                                add(&mut g, p, i);
                            }
                        } else {
                            let wildcard = peer < 0 || tag < 0;
                            for (&(comm, p, t), &prev) in last_recv.iter() {
                                let could_match =
                                    p < 0 || t < 0 || wildcard || (p == peer && t == tag);
                                if comm == q.comm && could_match {
                                    add(&mut g, prev, i);
                                }
                            }
                            last_recv.insert((q.comm, peer, tag), i);
                        }
                        if let Some(&b) = last_blocking.get(&q.comm) {
                            add(&mut g, b, i);
                        }
                        posts_since_blocking.entry(q.comm).or_default().push(i);
                    }
                    RequestRole::Collective => {
                        if let Some(p) = last_collective.insert(q.comm, i) {
                            add(&mut g, p, i);
                        }
                    }
                    RequestRole::Other => {}
                }
            }
            OpKind::Complete { .. } => {}
            OpKind::Blocking {
                transfers, comm, ..
            } => {
                for (b, u) in &transfers.buffers {
                    uses.push((*b, *u, Accessor { begin: i, end: i }));
                }
                for p in posts_since_blocking.remove(comm).unwrap_or_default() {
                    add(&mut g, p, i);
                }
                last_blocking.insert(*comm, i);
            }
            OpKind::Collective { comm, .. } => {
                if let Some(p) = last_collective.insert(*comm, i) {
                    add(&mut g, p, i);
                }
            }
            OpKind::Local => {}
        }
        for (buf, u, acc) in uses {
            for (_, prior) in users
                .iter()
                .filter(|((a, l), _)| buf.overlaps(&Buffer { addr: *a, len: *l }))
            {
                let before: Vec<(usize, usize)> = match u {
                    Use::Write => prior.writer.iter().chain(&prior.readers).copied().collect(),
                    Use::Read => prior.writer.iter().copied().collect(),
                };
                for (begin, end) in before {
                    if end < acc.begin {
                        add(&mut g, end, acc.begin);
                    } else {
                        // Inside the other's use (a compute while a request is in
                        // flight): it stays inside.
                        add(&mut g, begin, acc.begin);
                        add(&mut g, acc.end, end);
                    }
                }
            }
            let entry = users.entry((buf.addr, buf.len)).or_default();
            match u {
                Use::Write => {
                    entry.writer = Some((acc.begin, acc.end));
                    entry.readers.clear();
                }
                Use::Read => entry.readers.push((acc.begin, acc.end)),
            }
        }
    }
    g
}
