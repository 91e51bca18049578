//! One rank's operations, built on its own so that ranks are built in parallel: its
//! operations, its requests written in place into its share of the program's (counted
//! first, [`requests_in_program`]), compute names with rank-local ids, and its
//! collective memberships, which only the whole program can number into instances
//! ([`super::extract`] does, in rank order, as one pass over the ranks would).

use std::collections::BTreeMap;

use overlap_format::schema::{Op, OpClass, RequestKind};

use crate::fxhash::FxHashMap;
use crate::metrics::collectives;
use crate::model::compact::{index_u32, NO_INDEX};
use crate::model::{ById, RequestLife, Span, Timeline, What};

use super::super::cuts::push_gap;
use super::super::{
    CompactIndex, OpKind, Operation, RankProgram, RequestOp, RequestRole, Touch, Transfers,
};
use super::posts::RankPosts;
use crate::dependence;

/// The name given to compute inferred from the gaps between MPI calls.
pub const INFERRED_NAME: &str = "compute";

/// What every rank's build reads.
pub(super) struct Shared<'a> {
    /// Per rank slot: where its requests are among the run's.
    pub request_ranges: &'a [std::ops::Range<usize>],
    /// Per rank slot: its requests by the call that posted them.
    pub posted_at: &'a [RankPosts],
    /// The blocking collective instance of each call.
    pub blocking: &'a collectives::CallInstances,
    /// Trace request index -> its non-blocking collective instance (of
    /// [`collectives::nonblocking`]).
    pub nonblocking_of: &'a FxHashMap<usize, usize>,
}

/// A rank's part in a collective instance, in operation order.
pub(super) struct Member {
    /// Its instance in the trace.
    pub instance: TraceInstance,
    /// The call that made it (a Start makes a persistent collective's): a new program
    /// instance is of this call.
    pub call: Op,
    /// Its bytes.
    pub bytes: u64,
    /// Its operation (a non-blocking one's post).
    pub at: usize,
}

/// A collective instance of the trace, as a member knows it.
pub(super) enum TraceInstance {
    /// A blocking collective's, in [`collectives::instances`]; its operation's kind is
    /// given the program's instance once numbered.
    Blocking(u32),
    /// A non-blocking collective's, in [`collectives::nonblocking`], with the collective
    /// its request described and the request (given the program's instance once
    /// numbered).
    Nonblocking {
        id: usize,
        described: Op,
        request: usize,
    },
}

impl TraceInstance {
    /// Its key among all the trace's instances.
    pub fn key(&self) -> (bool, usize) {
        match *self {
            TraceInstance::Blocking(id) => (false, id as usize),
            TraceInstance::Nonblocking { id, .. } => (true, id),
        }
    }
}

/// One rank's program; its names and collective instances not yet numbered.
pub(super) struct RankPart {
    /// Its operations; `Compute` names rank-local names, `Collective` not yet numbered
    /// instances.
    pub program: RankProgram,
    /// Aligned with the rank's `posted_at`: each trace request's program request, or
    /// `NO_INDEX` when it is not in the program.
    pub posted: Vec<u32>,
    /// Compute names, in order of first use.
    pub names: Vec<String>,
    /// Its collective memberships, in operation order.
    pub members: Vec<Member>,
    /// Span index -> index of the first operation made of it (`NO_INDEX`: none).
    pub op_of_span: Vec<u32>,
    /// Its first and last time, when it has events.
    pub extent: Option<(u64, u64)>,
}

/// The part of a rank that makes its program: the thread that makes its MPI calls and
/// its analysed extent. Found once per rank, for the count and the build.
pub(super) struct Scope {
    main: u32,
    lo: u64,
    hi: u64,
}

impl Scope {
    /// The rank's scope; `None` when it has no events.
    pub(super) fn of(t: &Timeline) -> Option<Scope> {
        let (lo, hi) = t.extent()?;
        Some(Scope {
            main: main_thread(t),
            lo: lo.0,
            hi: hi.0,
        })
    }

    /// Whether the span makes operations (compute nested in the compute before it
    /// excepted): the main thread's, inside the extent, not Init or Finalize.
    fn takes(&self, s: &Span) -> bool {
        s.tid == self.main
            && s.start.0 >= self.lo
            && s.start.0 < self.hi
            && s.end.0 > self.lo
            && !matches!(s.op(), Some(Op::Init | Op::InitThread | Op::Finalize))
    }
}

/// How many requests of the rank in `slot` its program posts: one per request whose
/// post is a call that makes operations.
pub(super) fn requests_in_program(
    shared: &Shared,
    slot: usize,
    t: &Timeline,
    scope: &Scope,
) -> usize {
    let posts = |span: u32| {
        t.spans
            .get(span as usize)
            .is_some_and(|s| scope.takes(s) && s.op().is_some_and(|op| op.class() == OpClass::Post))
    };
    shared.posted_at[slot]
        .list
        .iter()
        .filter(|p| posts(p.0))
        .count()
}

/// A rank to build: its slot in the trace, its timeline and its request lifetimes (the
/// run's, from `shared.request_ranges[slot].start` on).
pub(super) struct Rank<'a> {
    pub slot: usize,
    pub t: &'a Timeline,
    pub requests: &'a [RequestLife],
}

/// The operations of `rank` (`scope`: its [`Scope`], none when it has no events). Its
/// requests are written into `requests`, which holds exactly [`requests_in_program`] of
/// them and starts at the program's request `first`.
pub(super) fn build(
    shared: &Shared,
    rank: &Rank,
    scope: Option<&Scope>,
    requests: &mut [RequestOp],
    first: usize,
) -> RankPart {
    let (slot, t) = (rank.slot, rank.t);
    let requests_from = shared.request_ranges[slot].start;
    let posted_at = &shared.posted_at[slot];
    let mut part = RankPart {
        program: RankProgram {
            rank: t.rank,
            complete: t.complete,
            ..RankProgram::default()
        },
        posted: vec![NO_INDEX; posted_at.list.len()],
        names: Vec::new(),
        members: Vec::new(),
        op_of_span: Vec::new(),
        extent: None,
    };
    let Some(scope) = scope else {
        return part;
    };
    let (lo, hi) = (scope.lo, scope.hi);
    part.extent = Some((lo, hi));
    part.op_of_span = vec![NO_INDEX; t.spans.len()];
    // Requests written so far.
    let mut written = 0usize;
    let mut names: FxHashMap<String, u32> = FxHashMap::default();
    // Request id -> index in `requests`, to link completions (a request started again
    // is linked to its latest post).
    let mut request_of: ById<usize> = ById::default();
    let main = scope.main;
    let spans_mode = t
        .spans
        .iter()
        .any(|s| s.tid == main && matches!(s.what, What::Compute(_)));
    let mut other_threads: Vec<u32> = t
        .spans
        .iter()
        .map(|s| s.tid)
        .filter(|tid| *tid != main)
        .collect();
    other_threads.sort_unstable();
    other_threads.dedup();
    let min_cost = shortest_calls(t, main);
    let mut ops: Vec<Operation> = Vec::new();
    let mut accesses = Vec::new();
    let mut access_of: FxHashMap<std::num::NonZeroU32, CompactIndex> = FxHashMap::default();
    let mut prev_end = lo;
    let mut prev_call: Option<usize> = None;
    // The requests a completion call completed (one vector for all of them).
    let mut done: Vec<(usize, u64)> = Vec::new();
    // Each completion operation with its request's id, to place the learned uses.
    let mut completed: Vec<(u64, u32)> = Vec::new();
    let mut call_buffers: Vec<(u32, crate::model::Buffer)> = Vec::new();
    // Where the gaps are cut: at the first touches of buffers whose request a call of
    // this thread completed before the gap (the uses the operations place).
    let touch_cuts = dependence::touch_cuts(&t.learned);
    let mut completed_ids: FxHashMap<u64, ()> = FxHashMap::default();
    let mut cut_starts: Vec<u32> = Vec::new();
    let mut push_inferred =
        |ops: &mut Vec<Operation>, name, (from, to), calls, done: &FxHashMap<u64, ()>| {
            let keep = |c: &dependence::TouchCut| done.contains_key(&t.learned[c.learned].request);
            let cuts = dependence::cuts_inside(&touch_cuts, (from, to), keep).map(|c| c.at);
            push_gap(ops, name, (from, to), calls, cuts, &mut cut_starts);
        };
    for (i, s) in t.spans.iter().enumerate() {
        if !scope.takes(s) {
            continue;
        }
        let start = s.start.0.max(prev_end);
        let end = s.end.0.max(start);
        if s.end.0 <= prev_end && matches!(s.what, What::Compute(_)) {
            continue; // nested inside the previous compute
        }
        let gap = s.start.0.saturating_sub(prev_end);
        let mut lead_in = 0;
        if gap > 0 {
            if spans_mode {
                lead_in = gap;
            } else {
                let name = name_id(&mut part.names, &mut names, INFERRED_NAME);
                let calls = (prev_call.unwrap_or(i), Some(i));
                push_inferred(&mut ops, name, (prev_end, s.start.0), calls, &completed_ids);
            }
        }
        let base = Operation {
            kind: OpKind::Local,
            cost_ns: end - start,
            lead_in_ns: lead_in,
            measured_start_ns: start,
            measured_end_ns: end,
            span: index_u32(i),
            call: s.op(),
        };
        match s.what {
            What::Compute(name) => {
                let id = name_id(&mut part.names, &mut names, t.name(name));
                part.op_of_span[i] = index_u32(ops.len());
                ops.push(Operation {
                    kind: OpKind::Compute {
                        name: id,
                        inferred: false,
                        // Each distinct list once, as the timeline keeps them.
                        access: s.access.and_then(|id| {
                            let a = t.access(i)?;
                            Some(*access_of.entry(id).or_insert_with(|| {
                                accesses.push(a.clone());
                                CompactIndex::new(accesses.len() - 1)
                            }))
                        }),
                        until_span: None,
                    },
                    ..base
                });
            }
            What::Call(op, _) => {
                let (_, c) = t.call(i).expect("a call span has its call");
                part.op_of_span[i] = index_u32(ops.len());
                let shortest = min_cost.get(&op).copied().unwrap_or(0).min(end - start);
                match op.class() {
                    OpClass::Post => {
                        let range = posted_at.at(i);
                        let n = range.len().max(1) as u64;
                        for (k, p) in range.clone().enumerate() {
                            let ti = posted_at.list[p].1 as usize;
                            let life = &rank.requests[ti - requests_from];
                            let role = match life.kind {
                                RequestKind::Send => RequestRole::Send,
                                RequestKind::Recv => RequestRole::Recv,
                                RequestKind::Collective => RequestRole::Collective,
                                RequestKind::OneSided => RequestRole::Other,
                            };
                            let described = t.call(life.args());
                            let desc = described.map(|d| d.1);
                            let local = written;
                            written += 1;
                            let rid = first + local;
                            part.posted[p] = index_u32(rid);
                            request_of.insert(life.request(), local);
                            let bytes = desc.and_then(|d| d.bytes()).unwrap_or(0);
                            if let Some(&id) = shared.nonblocking_of.get(&ti) {
                                part.members.push(Member {
                                    instance: TraceInstance::Nonblocking {
                                        id,
                                        described: described.map_or(op, |a| a.0),
                                        request: rid,
                                    },
                                    call: op,
                                    bytes,
                                    at: ops.len(),
                                });
                            }
                            let mut q = RequestOp::new(t.rank, role, ops.len());
                            let peer = desc.and_then(|d| d.peer());
                            q.set_peer_and_tag(peer, desc.and_then(|d| d.tag()));
                            q.comm = desc.map_or(0, |d| d.comm);
                            q.bytes = bytes;
                            q.set_buffer(desc.and_then(|d| d.buf()));
                            // A send names its peer; a receive's status says (set at
                            // its completion).
                            q.proc_null = role == RequestRole::Send && peer.is_some_and(|p| p < 0);
                            requests[local] = q;
                            let share = (end - start) / n;
                            ops.push(Operation {
                                kind: OpKind::Post { request: rid },
                                cost_ns: share,
                                lead_in_ns: if k == 0 { lead_in } else { 0 },
                                ..base.clone()
                            });
                        }
                        if range.is_empty() {
                            ops.push(base);
                        }
                    }
                    OpClass::Completion => {
                        done.clear();
                        for d in t.completions(c) {
                            let Some((id, local)) =
                                d.request().and_then(|r| Some((r, request_of.get(r)?)))
                            else {
                                continue;
                            };
                            // A receive completed from MPI_PROC_NULL has a negative source.
                            if d.source().is_some_and(|s| s < 0) {
                                requests[local].proc_null = true;
                            }
                            done.push((local, id));
                        }
                        if done.is_empty() {
                            ops.push(base.clone());
                        }
                        let n = done.len().max(1) as u64;
                        for (k, &(local, id)) in done.iter().enumerate() {
                            if !t.learned.is_empty() {
                                completed.push((id, index_u32(ops.len())));
                                completed_ids.insert(id, ());
                            }
                            requests[local].set_complete(ops.len());
                            ops.push(Operation {
                                kind: OpKind::Complete {
                                    request: first + local,
                                },
                                cost_ns: shortest / n,
                                lead_in_ns: if k == 0 { lead_in } else { 0 },
                                ..base.clone()
                            });
                        }
                    }
                    OpClass::BlockingPointToPoint if !op.is_probe() => {
                        let mut buffers = Vec::new();
                        if let Some(b) = c.buf() {
                            let u = if op.receives_blocking() && !op.is_sendrecv() {
                                Touch::Write
                            } else {
                                Touch::Read
                            };
                            buffers.push((b, u));
                        }
                        if let Some(b) = t.recv_half(c).and_then(|h| h.buf) {
                            buffers.push((b, Touch::Write));
                        }
                        let null_send = op.sends() && c.peer().is_some_and(|p| p < 0);
                        let null_recv = op.receives_blocking()
                            && t.completions(c)
                                .first()
                                .and_then(|d| d.source())
                                .is_some_and(|s| s < 0);
                        ops.push(Operation {
                            kind: OpKind::Blocking {
                                transfers: Box::new(Transfers { buffers }),
                                comm: c.comm,
                                null_peers: u8::from(null_send) + u8::from(null_recv),
                            },
                            cost_ns: shortest,
                            ..base
                        });
                    }
                    OpClass::Collective => {
                        if let Some(id) = shared.blocking.of(slot, i) {
                            part.members.push(Member {
                                instance: TraceInstance::Blocking(id),
                                call: op,
                                bytes: c.bytes().unwrap_or(0),
                                at: ops.len(),
                            });
                            ops.push(Operation {
                                // Numbered by the whole program.
                                kind: OpKind::Collective {
                                    instance: usize::MAX,
                                    comm: c.win().unwrap_or(c.comm),
                                },
                                cost_ns: shortest,
                                ..base
                            });
                        } else {
                            ops.push(base);
                        }
                    }
                    _ => ops.push(base),
                }
                // A collective's or another call's buffers, which no request holds.
                let last = ops.len() - 1;
                if matches!(ops[last].kind, OpKind::Collective { .. } | OpKind::Local) {
                    for b in [c.buf(), t.recv_half(c).and_then(|h| h.buf)]
                        .into_iter()
                        .flatten()
                    {
                        call_buffers.push((index_u32(last), b));
                    }
                }
                prev_call = Some(i);
            }
        }
        prev_end = prev_end.max(end);
    }
    let mut tail_ns = 0;
    if hi > prev_end {
        if spans_mode || prev_call.is_none() {
            tail_ns = hi - prev_end;
        } else {
            let name = name_id(&mut part.names, &mut names, INFERRED_NAME);
            let calls = (prev_call.unwrap_or(0), None);
            push_inferred(&mut ops, name, (prev_end, hi), calls, &completed_ids);
        }
    }
    debug_assert_eq!(written, requests.len(), "requests_in_program counts them");
    ops.shrink_to_fit();
    accesses.shrink_to_fit();
    completed.sort_unstable();
    let (learned, cuts) = super::super::learned::place(&t.learned, &ops, &completed, &cut_starts);
    part.program = RankProgram {
        rank: t.rank,
        start_ns: lo,
        gpu_uses: super::super::gpu_uses(t, &ops),
        ops,
        accesses,
        learned,
        cuts,
        call_buffers,
        // Filled once the run's messages are linked.
        blocking: Default::default(),
        complete: t.complete,
        inferred_compute: !spans_mode,
        other_threads,
        tail_ns,
    };
    part
}

/// The thread whose operations make the rank's program: the one with the most MPI calls
/// (the lowest tid among equals; the only thread when there is one).
fn main_thread(t: &Timeline) -> u32 {
    let mut calls: BTreeMap<u32, usize> = BTreeMap::new();
    for s in &t.spans {
        *calls.entry(s.tid).or_default() += usize::from(s.op().is_some());
    }
    calls
        .iter()
        .max_by_key(|(tid, n)| (**n, std::cmp::Reverse(**tid)))
        .map_or(0, |(tid, _)| *tid)
}

/// The shortest measured length of each MPI call of `tid`: what the call costs when it
/// has nothing to wait for.
fn shortest_calls(t: &Timeline, tid: u32) -> FxHashMap<Op, u64> {
    let mut min: FxHashMap<Op, u64> = FxHashMap::default();
    for s in t.spans.iter().filter(|s| s.tid == tid) {
        if let Some(op) = s.op() {
            let d = s.duration().0;
            min.entry(op).and_modify(|m| *m = (*m).min(d)).or_insert(d);
        }
    }
    min
}

/// The id of `name` in `list` (added at its end when new).
pub(super) fn name_id(list: &mut Vec<String>, ids: &mut FxHashMap<String, u32>, name: &str) -> u32 {
    if let Some(id) = ids.get(name) {
        return *id;
    }
    let id = list.len() as u32;
    list.push(name.to_string());
    ids.insert(name.to_string(), id);
    id
}
