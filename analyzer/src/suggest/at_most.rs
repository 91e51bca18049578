//! The most a move can gain whatever the network. Where no network is known nothing is
//! predicted, yet a move that only defers waits can still be shown to gain nothing
//! measurable, from what those waits took in the measured run.
//!
//! A rank that defers a wait past some of its work runs that work first, then waits for
//! what has not arrived by then: it saves at most the time it spent in the wait, and at
//! most the time of the work it crossed (its compute and calls, not the waits it
//! crosses: waiting in another call instead hides nothing). What it does after comes
//! earlier by no more
//! than that, so its partners, which depend on it only through what it sends and when
//! it calls MPI, gain no more than it saves. Summed over a pattern's instances and the
//! ranks of its group, that is the most the pattern can take off the run. A move of
//! anything else (a post moved earlier, a wait moved earlier, which may let a partner's
//! transfer progress sooner) has no such bound.
//!
//! ```text
//!  measured  |Wait 40 us|swap 3 us|Irecv ...     the wait deferred past the swap saves
//!  deferred  |swap 3 us|Wait 37 us|Irecv ...     at most 3 us (the swap), not 40
//! ```

use crate::dag::RankOrder;
use crate::ops::{OpKind, Operation, RankProgram};

use super::moves::{Move, Pattern};

/// The most deferring `m` saves, ns: the time its calls took in the measured run (each
/// call counted once, however many of its requests move), and no more than the measured
/// time of the work it crosses (`worked_before[i]`: the time of operations `0..i` that
/// are not completions); `None` when `m` does not only defer completions.
fn deferred_wait_ns(rank: &RankProgram, worked_before: &[u64], m: &Move) -> Option<u64> {
    let last = *m.ops.iter().max()?;
    let later = m.before.is_none_or(|b| b > last);
    let waits = (m.ops.iter()).all(|&i| matches!(rank.ops[i].kind, OpKind::Complete { .. }));
    if !(later && waits) {
        return None;
    }
    let mut spans: Vec<(u32, u64)> = (m.ops.iter())
        .map(|&i| (rank.ops[i].span, took(&rank.ops[i])))
        .collect();
    spans.sort_unstable();
    spans.dedup_by_key(|(span, _)| *span);
    let waited: u64 = spans.iter().map(|(_, took)| took).sum();
    let to = m.before.unwrap_or(rank.ops.len());
    let crossed = worked_before[to].saturating_sub(worked_before[last + 1]);
    Some(waited.min(crossed))
}

/// An operation's measured time, ns.
fn took(op: &Operation) -> u64 {
    op.measured_end_ns.saturating_sub(op.measured_start_ns)
}

/// The most `pattern` of `rank` can gain: its instances' deferred waits, summed.
fn pattern_ns(rank: &RankProgram, worked_before: &[u64], pattern: &Pattern) -> Option<u64> {
    (pattern.instances.iter())
        .map(|m| deferred_wait_ns(rank, worked_before, m))
        .sum::<Option<u64>>()
}

/// The measured time of the operations `0..i` of `rank` that are not completions, for
/// every `i` up to its length.
fn worked_before(rank: &RankProgram) -> Vec<u64> {
    let mut out = Vec::with_capacity(rank.ops.len() + 1);
    out.push(0);
    for op in &rank.ops {
        let work = match op.kind {
            OpKind::Complete { .. } => 0,
            _ => took(op),
        };
        out.push(out.last().copied().unwrap_or(0) + work);
    }
    out
}

/// Per rank slot and pattern, the most the pattern can gain when it is made in every rank
/// of the slot's group (`groups`: slots with the same moves, patterns in the same
/// order): the sum over the group's ranks.
pub(super) fn per_group(
    ranks: &[RankProgram],
    ranked: &[(RankOrder, Vec<Pattern>)],
    groups: &[Vec<usize>],
) -> Vec<Vec<Option<u64>>> {
    let mut out: Vec<Vec<Option<u64>>> = ranked.iter().map(|(_, p)| vec![None; p.len()]).collect();
    let worked: Vec<Vec<u64>> = ranks.iter().map(worked_before).collect();
    for group in groups {
        for k in 0..ranked[group[0]].1.len() {
            let most: Option<u64> = (group.iter())
                .map(|&slot| pattern_ns(&ranks[slot], &worked[slot], ranked[slot].1.get(k)?))
                .sum();
            for &slot in group {
                if let Some(m) = out[slot].get_mut(k) {
                    *m = most;
                }
            }
        }
    }
    out
}

/// Per rank slot, the operations of its patterns whose most (`at_most`, from
/// [`per_group`]) is no more than `floor_ns`: the moves to undo.
pub(super) fn too_short(
    ranked: &[(RankOrder, Vec<Pattern>)],
    at_most: &[Vec<Option<u64>>],
    floor_ns: u64,
) -> Vec<Vec<usize>> {
    (ranked.iter().zip(at_most))
        .map(|((_, patterns), most)| {
            (patterns.iter().zip(most))
                .filter(|(_, most)| most.is_some_and(|m| m <= floor_ns))
                .flat_map(|(p, _)| p.instances.iter().flat_map(|m| m.ops.iter().copied()))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: OpKind, span: u32, start: u64, end: u64) -> Operation {
        Operation {
            kind,
            cost_ns: end - start,
            lead_in_ns: 0,
            measured_start_ns: start,
            measured_end_ns: end,
            span,
            call: None,
        }
    }

    /// A gap between calls (inferred compute) whose span is `span`.
    fn gap(span: u32, start: u64, end: u64) -> Operation {
        let kind = OpKind::Compute {
            name: 0,
            inferred: true,
            access: None,
            until_span: None,
        };
        op(kind, span, start, end)
    }

    /// ```text
    ///  0 Irecv  1 Isend  2 Wait(r) 3 Wait(s) (one Waitall, 100-130)  4 compute 130-2130
    /// ```
    fn rank() -> RankProgram {
        RankProgram {
            ops: vec![
                op(OpKind::Post { request: 0 }, 0, 0, 10),
                op(OpKind::Post { request: 1 }, 1, 10, 20),
                op(OpKind::Complete { request: 0 }, 2, 100, 130),
                op(OpKind::Complete { request: 1 }, 2, 100, 130),
                gap(3, 130, 2130),
            ],
            ..RankProgram::default()
        }
    }

    fn moved(ops: Vec<usize>, before: Option<usize>) -> Move {
        Move {
            ops,
            after: Some(1),
            before,
            now_after: Some(4),
        }
    }

    #[test]
    fn a_deferred_wait_gains_at_most_its_call_and_what_it_crosses() {
        let r = rank();
        let took = worked_before(&r);
        // Both completions of the one Waitall (30 ns, counted once) past the compute
        // (2 000 ns) to the end: 30.
        assert_eq!(
            deferred_wait_ns(&r, &took, &moved(vec![2, 3], None)),
            Some(30)
        );
        // Past nothing (to just before the compute, where it is): 0.
        assert_eq!(
            deferred_wait_ns(&r, &took, &moved(vec![2, 3], Some(4))),
            Some(0)
        );
        // Moved earlier (before the Isend): no bound.
        assert_eq!(deferred_wait_ns(&r, &took, &moved(vec![2], Some(1))), None);
        // A post: no bound.
        assert_eq!(deferred_wait_ns(&r, &took, &moved(vec![1], None)), None);
        let pattern = Pattern {
            shown: moved(vec![2, 3], None),
            instances: vec![moved(vec![2, 3], None), moved(vec![2, 3], None)],
        };
        assert_eq!(pattern_ns(&r, &took, &pattern), Some(60));
    }

    #[test]
    fn a_long_wait_deferred_past_short_work_gains_at_most_the_work() {
        // 0 Irecv, 1 Wait 10-2010 (2 us), 2 swap 2010-2013 (3 ns), 3 Irecv 2013-2020.
        let mut r = rank();
        r.ops = vec![
            op(OpKind::Post { request: 0 }, 0, 0, 10),
            op(OpKind::Complete { request: 0 }, 1, 10, 2010),
            gap(2, 2010, 2013),
            op(OpKind::Post { request: 1 }, 3, 2013, 2020),
        ];
        let took = worked_before(&r);
        let m = Move {
            ops: vec![1],
            after: Some(0),
            before: Some(3),
            now_after: Some(2),
        };
        assert_eq!(deferred_wait_ns(&r, &took, &m), Some(3));
    }
}
