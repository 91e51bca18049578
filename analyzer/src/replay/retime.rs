//! A trace with the replayed times in place of the measured ones, so that the normal
//! analysis (`analysis::analyze`, the report) describes the predicted run in the shape
//! it describes a measured one: `overlap whatif` shows a run on another network as
//! `overlap analyze` would have shown it.
//!
//! Each call or compute span takes the replayed times of its operations (the earliest
//! start and the latest end: a Waitall split into completions becomes one span again).
//! Inferred compute has no span of its own (it is the gap between two calls), and
//! spans without an operation (MPI_Init, other threads) keep their length and move
//! with the rank's preceding span. Spans are kept sorted by start; when the replay
//! changed their order, the references of messages and requests are renumbered.
//!
//! ```text
//!  measured  |Isend 0-1|Wait 1 ---- 9|c 9-14|     replayed op times: Isend 0-1,
//!  retimed   |Isend 0-1|Wait 1-3|c 3-8|           Wait 1-3, c 3-8
//! ```

use overlap_format::schema::Nanos;

use super::Replay;
use crate::model::{EventRef, RequestLife, Trace};
use crate::ops::{OpKind, Program};

/// `trace` with the times of `replay` (a replay of `program`, extracted from `trace`).
pub fn retimed(trace: &Trace, program: &Program, replay: &Replay) -> Trace {
    let mut ranks = trace.ranks.clone();
    let mut renumber: Vec<Option<Vec<usize>>> = vec![None; ranks.len()];
    for (slot, t) in ranks.iter_mut().enumerate() {
        let (Some(p), Some(r)) = (
            program.rank(t.rank),
            replay.ranks.iter().find(|r| r.rank == t.rank),
        ) else {
            continue;
        };
        let mut times: Vec<Option<(u64, u64)>> = vec![None; t.spans.len()];
        for (op, time) in p.ops.iter().zip(&r.ops) {
            if matches!(op.kind, OpKind::Compute { inferred: true, .. }) {
                continue;
            }
            if let Some(slot) = times.get_mut(op.span as usize) {
                let (s, e) = slot.get_or_insert((time.start_ns, time.end_ns));
                *s = (*s).min(time.start_ns);
                *e = (*e).max(time.end_ns);
            }
        }
        let mut delta: i128 = 0;
        for (span, time) in t.spans.iter_mut().zip(&times) {
            let shift = |ns: Nanos, d: i128| Nanos((i128::from(ns.0) + d).max(0) as u64);
            match time {
                Some((s, e)) => {
                    delta = i128::from(*e) - i128::from(span.end.0);
                    span.start = Nanos(*s);
                    span.end = Nanos((*e).max(*s));
                }
                None => {
                    span.start = shift(span.start, delta);
                    span.end = shift(span.end, delta);
                }
            }
        }
        if t.spans.windows(2).any(|w| w[1].start < w[0].start) {
            let mut order: Vec<usize> = (0..t.spans.len()).collect();
            order.sort_by_key(|&i| (t.spans[i].start, i));
            let mut new_of = vec![0; order.len()];
            for (new, &old) in order.iter().enumerate() {
                new_of[old] = new;
            }
            t.spans = order.iter().map(|&i| t.spans[i]).collect();
            renumber[slot] = Some(new_of);
        }
    }
    let slot_of = |rank: u32| trace.slot(rank);
    let new_index = |e: EventRef| match slot_of(e.rank).map(|s| &renumber[s]) {
        Some(Some(map)) => map.get(e.index).copied().unwrap_or(e.index),
        _ => e.index,
    };
    let messages: Vec<_> = trace
        .messages
        .iter()
        .map(|m| m.renumbered(new_index))
        .collect();
    let mut requests = trace.requests.clone();
    for q in &mut requests {
        let Some(Some(map)) = slot_of(q.rank).map(|s| &renumber[s]) else {
            continue;
        };
        let at = |i: usize| map.get(i).copied().unwrap_or(i);
        *q = RequestLife::new(
            q.rank,
            q.request(),
            q.kind,
            at(q.post()),
            at(q.args()),
            q.completion().map(at),
            q.freed().map(at),
        );
    }
    Trace::new(
        trace.source.clone(),
        trace.info.clone(),
        ranks,
        messages,
        requests,
    )
}
