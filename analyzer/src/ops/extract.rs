//! Builds a [`Program`] from a [`Trace`]: each rank's operations in program order,
//! requests and messages linked, collective instances with their fitted cost.
//!
//! ```text
//!  timeline (thread without spans)  |Isend 2-3|....|Waitall 7-9|..|Barrier 10-11|
//!  operations   Post(s) 1ns, Compute "compute" 4ns (inferred), Complete(s) 2ns,
//!               Compute 1ns (inferred), Collective
//! ```

use std::collections::BTreeMap;

use overlap_format::schema::{Op, OpClass, RequestKind};

use crate::fxhash::FxHashMap;
use crate::metrics::collectives;
use crate::metrics::transfer::{class_of, CollectiveModel};
use crate::model::compact::index_u32;
use crate::model::{Timeline, Trace, What};

use super::{
    CollectiveOp, MessageOp, OpKind, Operation, Program, RankProgram, RequestOp, RequestRole,
    Transfers, Use,
};

/// Why a trace cannot become a program.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// The trace has no events in any rank.
    #[error("{}: no rank has any event to replay", path.display())]
    Empty {
        /// The trace.
        path: std::path::PathBuf,
    },
}

/// The name given to compute inferred from the gaps between MPI calls.
pub const INFERRED_NAME: &str = "compute";

/// The program of every rank of `trace`.
pub fn extract(trace: &Trace) -> Result<Program, ExtractError> {
    let mut program = Program::default();
    // At most one program request per request, one message per message: never grown.
    program.requests.reserve_exact(trace.requests.len());
    program.messages.reserve_exact(trace.messages.len());
    let mut names: FxHashMap<String, u32> = FxHashMap::default();
    // (rank, request id) -> request index, to link completions.
    let mut request_of: FxHashMap<(u32, u64), usize> = FxHashMap::default();
    let posted_at = posts_by_rank(trace);
    let blocking = collectives::instances(trace);
    let nb_instances = collectives::nonblocking(trace);
    let mut nb_instance_of: FxHashMap<usize, usize> = FxHashMap::default();
    let nb_model = CollectiveModel::fit(trace);
    // Trace request index -> program request index (NONE: not in the program).
    let mut program_request: Vec<usize> = vec![NONE; trace.requests.len()];
    // Per rank slot: span index -> op index (of the first op made of that span; NONE:
    // the span made no op).
    let mut op_of_span: Vec<Vec<usize>> = Vec::with_capacity(trace.ranks.len());
    // Blocking collective instance (trace) -> program instance.
    let mut blocking_instance: FxHashMap<u32, usize> = FxHashMap::default();
    for (k, members) in nb_instances.iter().enumerate() {
        for &m in members {
            nb_instance_of.insert(m, k);
        }
    }
    let mut nb_program_instance: FxHashMap<usize, usize> = FxHashMap::default();
    let mut first_start = u64::MAX;
    let mut last_end = 0u64;
    for (slot, t) in trace.ranks.iter().enumerate() {
        let Some((lo, hi)) = t.extent() else {
            program.ranks.push(RankProgram {
                rank: t.rank,
                complete: t.complete,
                ..RankProgram::default()
            });
            op_of_span.push(Default::default());
            continue;
        };
        first_start = first_start.min(lo.0);
        last_end = last_end.max(hi.0);
        let main = main_thread(t);
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
        let mut span_ops: Vec<usize> = vec![NONE; t.spans.len()];
        let mut prev_end = lo.0;
        let mut prev_call: Option<usize> = None;
        for (i, s) in t.spans.iter().enumerate() {
            if s.tid != main || s.start < lo || s.start >= hi || s.end <= lo {
                continue;
            }
            if matches!(s.op(), Some(Op::Init | Op::InitThread | Op::Finalize)) {
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
                    ops.push(inferred(
                        &mut program,
                        &mut names,
                        prev_end,
                        s.start.0,
                        prev_call.unwrap_or(i),
                        Some(i),
                    ));
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
                site: None,
            };
            match s.what {
                What::Compute(name) => {
                    let id = name_id(&mut program, &mut names, t.name(name));
                    span_ops[i] = ops.len();
                    ops.push(Operation {
                        kind: OpKind::Compute {
                            name: id,
                            inferred: false,
                            access: t.access(i).cloned().map(Box::new),
                            until_span: None,
                        },
                        ..base
                    });
                }
                What::Call(op, _) => {
                    let (_, c) = t.call(i).expect("a call span has its call");
                    let site = c.site;
                    span_ops[i] = ops.len();
                    let shortest = min_cost.get(&op).copied().unwrap_or(0).min(end - start);
                    match op.class() {
                        OpClass::Post => {
                            let posted = posted_at_span(&posted_at[slot], i);
                            let n = posted.len().max(1) as u64;
                            for (k, &(_, ti)) in posted.iter().enumerate() {
                                let life = &trace.requests[ti];
                                let (role, desc) = match life.kind {
                                    RequestKind::Send => (RequestRole::Send, t.call(life.args())),
                                    RequestKind::Recv => (RequestRole::Recv, t.call(life.args())),
                                    RequestKind::Collective => {
                                        (RequestRole::Collective, t.call(life.args()))
                                    }
                                    RequestKind::OneSided => {
                                        (RequestRole::Other, t.call(life.args()))
                                    }
                                };
                                let desc = desc.map(|d| d.1);
                                let rid = program.requests.len();
                                program_request[ti] = rid;
                                request_of.insert((t.rank, life.request), rid);
                                let instance = nb_instance_of.get(&ti).map(|&k| {
                                    *nb_program_instance
                                        .entry(k)
                                        .or_insert_with(|| new_instance(&mut program, op))
                                });
                                if let Some(inst) = instance {
                                    let cop = &mut program.collectives[inst];
                                    let bytes = desc.and_then(|d| d.bytes()).unwrap_or(0);
                                    cop.bytes = cop.bytes.max(bytes);
                                    cop.members.push((t.rank, ops.len()));
                                    let args_op = t.call(life.args()).map_or(op, |a| a.0);
                                    cop.op = args_op;
                                    cop.cost_ns = nb_model.pure(args_op, cop.bytes).map(|n| n.0);
                                }
                                let mut q = RequestOp::new(t.rank, role, ops.len());
                                q.set_instance(instance);
                                let peer = desc.and_then(|d| d.peer());
                                q.set_peer_and_tag(peer, desc.and_then(|d| d.tag()));
                                q.comm = desc.map_or(0, |d| d.comm);
                                q.bytes = desc.and_then(|d| d.bytes()).unwrap_or(0);
                                q.buffer = desc.and_then(|d| d.buf);
                                // A send names its peer; a receive's status says (set at
                                // its completion).
                                q.proc_null =
                                    role == RequestRole::Send && peer.is_some_and(|p| p < 0);
                                program.requests.push(q);
                                let share = (end - start) / n;
                                ops.push(Operation {
                                    kind: OpKind::Post { request: rid },
                                    cost_ns: share,
                                    lead_in_ns: if k == 0 { lead_in } else { 0 },
                                    site,
                                    ..base.clone()
                                });
                            }
                            if posted.is_empty() {
                                ops.push(Operation { site, ..base });
                            }
                        }
                        OpClass::Completion => {
                            let mut done: Vec<usize> = Vec::new();
                            for d in t.completions(c) {
                                let Some(rid) = d
                                    .request()
                                    .and_then(|r| request_of.get(&(t.rank, r)).copied())
                                else {
                                    continue;
                                };
                                // A receive completed from MPI_PROC_NULL has a negative source.
                                if d.source().is_some_and(|s| s < 0) {
                                    program.requests[rid].proc_null = true;
                                }
                                done.push(rid);
                            }
                            if done.is_empty() {
                                ops.push(Operation {
                                    site,
                                    ..base.clone()
                                });
                            }
                            let n = done.len().max(1) as u64;
                            for (k, rid) in done.iter().enumerate() {
                                program.requests[*rid].set_complete(ops.len());
                                ops.push(Operation {
                                    kind: OpKind::Complete { request: *rid },
                                    cost_ns: shortest / n,
                                    lead_in_ns: if k == 0 { lead_in } else { 0 },
                                    site,
                                    ..base.clone()
                                });
                            }
                        }
                        OpClass::BlockingPointToPoint if op != Op::Probe => {
                            let mut buffers = Vec::new();
                            if let Some(b) = c.buf {
                                let u = if op.receives_blocking() && !op.is_sendrecv() {
                                    Use::Write
                                } else {
                                    Use::Read
                                };
                                buffers.push((b, u));
                            }
                            if let Some(b) = t.recv_half(c).and_then(|h| h.buf) {
                                buffers.push((b, Use::Write));
                            }
                            let null_send = op.sends() && c.peer().is_some_and(|p| p < 0);
                            let null_recv = op.receives_blocking()
                                && t.completions(c)
                                    .first()
                                    .and_then(|d| d.source())
                                    .is_some_and(|s| s < 0);
                            ops.push(Operation {
                                kind: OpKind::Blocking {
                                    transfers: Box::new(Transfers {
                                        buffers,
                                        ..Transfers::default()
                                    }),
                                    comm: c.comm,
                                    null_peers: u8::from(null_send) + u8::from(null_recv),
                                },
                                cost_ns: shortest,
                                site,
                                ..base
                            });
                        }
                        OpClass::Collective => {
                            let id = blocking.of[slot][i];
                            if id == collectives::NONE {
                                ops.push(Operation { site, ..base });
                            } else {
                                let inst = *blocking_instance
                                    .entry(id)
                                    .or_insert_with(|| new_instance(&mut program, op));
                                let cop = &mut program.collectives[inst];
                                cop.bytes = cop.bytes.max(c.bytes().unwrap_or(0));
                                cop.members.push((t.rank, ops.len()));
                                ops.push(Operation {
                                    kind: OpKind::Collective {
                                        instance: inst,
                                        comm: c.win().unwrap_or(c.comm),
                                    },
                                    cost_ns: shortest,
                                    site,
                                    ..base
                                });
                            }
                        }
                        _ => ops.push(Operation { site, ..base }),
                    }
                    prev_call = Some(i);
                }
            }
            prev_end = prev_end.max(end);
        }
        let mut tail_ns = 0;
        if hi.0 > prev_end {
            if spans_mode || prev_call.is_none() {
                tail_ns = hi.0 - prev_end;
            } else {
                ops.push(inferred(
                    &mut program,
                    &mut names,
                    prev_end,
                    hi.0,
                    prev_call.unwrap_or(0),
                    None,
                ));
            }
        }
        ops.shrink_to_fit();
        program.ranks.push(RankProgram {
            rank: t.rank,
            start_ns: lo.0,
            gpu_uses: super::gpu_uses(t, &ops),
            ops,
            complete: t.complete,
            inferred_compute: !spans_mode,
            other_threads,
            tail_ns,
        });
        op_of_span.push(span_ops);
    }
    if first_start == u64::MAX {
        return Err(ExtractError::Empty {
            path: trace.source.clone(),
        });
    }
    program.measured_ns = last_end.saturating_sub(first_start);
    link_messages(
        trace,
        &mut program,
        &op_of_span,
        &posted_at,
        &program_request,
    );
    fit_blocking_costs(&mut program);
    Ok(program)
}

/// A new collective instance of `op`, without members yet; its index.
fn new_instance(program: &mut Program, op: Op) -> usize {
    program.collectives.push(CollectiveOp {
        op,
        bytes: 0,
        members: Vec::new(),
        cost_ns: None,
    });
    program.collectives.len() - 1
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

fn name_id(program: &mut Program, names: &mut FxHashMap<String, u32>, name: &str) -> u32 {
    if let Some(id) = names.get(name) {
        return *id;
    }
    let id = program.names.len() as u32;
    program.names.push(name.to_string());
    names.insert(name.to_string(), id);
    id
}

/// Compute inferred from the gap `[from, to)` between the call `after` and the call
/// `until` (none: the end of the rank's analysed part).
fn inferred(
    program: &mut Program,
    names: &mut FxHashMap<String, u32>,
    from: u64,
    to: u64,
    after: usize,
    until: Option<usize>,
) -> Operation {
    Operation {
        kind: OpKind::Compute {
            name: name_id(program, names, INFERRED_NAME),
            inferred: true,
            access: None,
            until_span: until.map(index_u32),
        },
        cost_ns: to - from,
        lead_in_ns: 0,
        measured_start_ns: from,
        measured_end_ns: to,
        span: index_u32(after),
        call: None,
        site: None,
    }
}

/// "None" in the index vectors of [`extract`].
const NONE: usize = usize::MAX;

/// Per rank slot of `trace`: `(post span, request index)` of each request, by post span
/// (requests posted by one call keep their order).
fn posts_by_rank(trace: &Trace) -> Vec<Vec<(usize, usize)>> {
    let mut posted_at: Vec<Vec<(usize, usize)>> = vec![Vec::new(); trace.ranks.len()];
    for (i, r) in trace.requests.iter().enumerate() {
        if let Ok(slot) = trace.ranks.binary_search_by_key(&r.rank, |t| t.rank) {
            posted_at[slot].push((r.post(), i));
        }
    }
    for list in &mut posted_at {
        list.sort_by_key(|p| p.0);
    }
    posted_at
}

/// The requests posted by the call at `span`, from a rank's [`posts_by_rank`].
fn posted_at_span(posts: &[(usize, usize)], span: usize) -> &[(usize, usize)] {
    let from = posts.partition_point(|p| p.0 < span);
    let to = from + posts[from..].partition_point(|p| p.0 == span);
    &posts[from..to]
}

/// Links every matched message to the operations that sent and received it.
fn link_messages(
    trace: &Trace,
    program: &mut Program,
    op_of_span: &[Vec<usize>],
    posted_at: &[Vec<(usize, usize)>],
    program_request: &[usize],
) {
    let slot = |rank: u32| trace.ranks.binary_search_by_key(&rank, |t| t.rank).ok();
    // The program requests posted by the call at a span of a rank slot.
    let posts = |slot: usize, span: usize| {
        posted_at_span(&posted_at[slot], span)
            .iter()
            .map(|&(_, ti)| program_request[ti])
            .filter(|&rid| rid != NONE)
    };
    let op_at =
        |slot: usize, span: usize| op_of_span[slot].get(span).copied().filter(|&op| op != NONE);
    for m in &trace.messages {
        let (Some(ss), Some(rs)) = (slot(m.send.rank), slot(m.recv_post.rank)) else {
            continue;
        };
        let (Some(sop), Some(rop)) = (op_at(ss, m.send.index), op_at(rs, m.recv_post.index)) else {
            continue;
        };
        let id = program.messages.len();
        let send_req = posts(ss, m.send.index).find(|&r| {
            let q = &program.requests[r];
            q.role == RequestRole::Send
                && q.message().is_none()
                && q.peer() == Some(m.recv_post.rank as i32)
                && q.tag() == Some(m.tag)
        });
        let recv_req = posts(rs, m.recv_post.index).find(|&r| {
            let q = &program.requests[r];
            q.role == RequestRole::Recv
                && q.message().is_none()
                && q.peer().is_none_or(|p| p < 0 || p == m.send.rank as i32)
        });
        let from_op = send_req.map_or(sop, |r| program.requests[r].post());
        let to_op = recv_req.map_or(rop, |r| program.requests[r].post());
        for (rid, rank, op) in [
            (send_req, m.send.rank, sop),
            (recv_req, m.recv_post.rank, rop),
        ] {
            match rid {
                Some(r) => program.requests[r].set_message(id),
                None => {
                    // Ranks are in the trace's order, sorted by rank.
                    let Ok(p) = program.ranks.binary_search_by_key(&rank, |p| p.rank) else {
                        continue;
                    };
                    let pr = &mut program.ranks[p];
                    if let Some(OpKind::Blocking { transfers, .. }) =
                        pr.ops.get_mut(op).map(|o| &mut o.kind)
                    {
                        if rank == m.send.rank && op == sop {
                            transfers.sends.push(id);
                        } else {
                            transfers.recvs.push(id);
                        }
                    }
                }
            }
        }
        program.messages.push(MessageOp {
            from: (m.send.rank, from_op),
            to: (m.recv_post.rank, to_op),
            bytes: m.bytes,
            tag: m.tag,
        });
    }
}

/// Each blocking collective instance's pure time: the shortest, over the instances of
/// the same call and size class, of a member's exit after the last member's entry.
fn fit_blocking_costs(program: &mut Program) {
    let mut best: FxHashMap<(Op, u32), u64> = FxHashMap::default();
    let mut observed: Vec<Option<u64>> = Vec::with_capacity(program.collectives.len());
    for c in &program.collectives {
        let times: Vec<(u64, u64)> = c
            .members
            .iter()
            .filter_map(|&(rank, i)| {
                let o = program.rank(rank)?.ops.get(i)?;
                matches!(o.kind, OpKind::Collective { .. })
                    .then_some((o.measured_start_ns, o.measured_end_ns))
            })
            .collect();
        if times.is_empty() || times.len() != c.members.len() {
            observed.push(None);
            continue;
        }
        let last = times.iter().map(|t| t.0).max().unwrap_or(0);
        let shortest = times.iter().map(|t| t.1.saturating_sub(last)).min();
        observed.push(shortest);
        if let Some(s) = shortest {
            let e = best.entry((c.op, class_of(c.bytes))).or_insert(s);
            *e = (*e).min(s);
        }
    }
    for (c, seen) in program.collectives.iter_mut().zip(observed) {
        if seen.is_some() {
            c.cost_ns = best.get(&(c.op, class_of(c.bytes))).copied();
        }
    }
}
