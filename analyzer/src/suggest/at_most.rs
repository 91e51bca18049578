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
use super::tell::positions;

/// The most deferring `m` saves, ns: the time its calls took in the measured run (each
/// call counted once, however many of its requests move), and no more than the measured
/// time of the work it now follows and did not before: the operations after it in the
/// program that the new order (`order`, each operation's place in it `position`) puts
/// before it, completions left out (waiting elsewhere hides nothing). They are looked
/// for back from its new place to the first compute or blocking call it followed in the
/// program too: those keep their order, so only a post could come from beyond, and it
/// would have crossed that call as well. `None` when `m` does not only defer
/// completions.
fn deferred_wait_ns(rank: &RankProgram, (order, position): Order, m: &Move) -> Option<u64> {
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
    let mut crossed = 0u64;
    for (seen, &o) in order[..position[last]].iter().rev().enumerate() {
        let kind = &rank.ops[o].kind;
        if o < last && kind.is_anchor() {
            break;
        }
        if seen == SCAN_LIMIT {
            // A stretch of posts and waits too long to tell: no bound.
            return None;
        }
        if o > last && !matches!(kind, OpKind::Complete { .. }) {
            crossed += took(&rank.ops[o]);
        }
    }
    Some(waited.min(crossed))
}

/// The most operations looked at back from a deferred wait's new place (a run of posts
/// and completions with no compute between them is this long at most before the bound
/// is given up, so that a pattern's bound costs its instances times this at worst).
const SCAN_LIMIT: usize = 4096;

/// A rank's new order, and each operation's place in it.
type Order<'a> = (&'a [usize], &'a [usize]);

/// An operation's measured time, ns.
fn took(op: &Operation) -> u64 {
    op.measured_end_ns.saturating_sub(op.measured_start_ns)
}

/// The most `pattern` of `rank` can gain: its instances' deferred waits, summed.
fn pattern_ns(rank: &RankProgram, order: Order, pattern: &Pattern) -> Option<u64> {
    (pattern.instances.iter())
        .map(|m| deferred_wait_ns(rank, order, m))
        .sum::<Option<u64>>()
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
    let position: Vec<Vec<usize>> = (ranks.iter().zip(ranked))
        .map(|(rank, (order, _))| positions(rank, &order.consensus.order))
        .collect();
    for group in groups {
        for k in 0..ranked[group[0]].1.len() {
            let most: Option<u64> = (group.iter())
                .map(|&slot| {
                    let order = (
                        ranked[slot].0.consensus.order.as_slice(),
                        &position[slot][..],
                    );
                    pattern_ns(&ranks[slot], order, ranked[slot].1.get(k)?)
                })
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

    /// `rank`'s operations in `order`, and their places.
    fn placed(r: &RankProgram, order: &[usize]) -> (Vec<usize>, Vec<usize>) {
        (order.to_vec(), positions(r, order))
    }

    #[test]
    fn a_deferred_wait_gains_at_most_its_call_and_what_it_crosses() {
        let r = rank();
        // The Waitall (both completions, 30 ns, counted once) after the compute
        // (2 000 ns): 30.
        let (order, position) = placed(&r, &[0, 1, 4, 2, 3]);
        let at = (&order[..], &position[..]);
        assert_eq!(deferred_wait_ns(&r, at, &moved(vec![2, 3], None)), Some(30));
        // Moved earlier (before the Isend): no bound.
        let (order, position) = placed(&r, &[0, 2, 1, 3, 4]);
        let at = (&order[..], &position[..]);
        assert_eq!(deferred_wait_ns(&r, at, &moved(vec![2], Some(1))), None);
        // A post: no bound.
        assert_eq!(deferred_wait_ns(&r, at, &moved(vec![1], None)), None);
        let (order, position) = placed(&r, &[0, 1, 4, 2, 3]);
        let pattern = Pattern {
            shown: moved(vec![2, 3], None),
            instances: vec![moved(vec![2, 3], None), moved(vec![2, 3], None)],
        };
        assert_eq!(
            pattern_ns(&r, (&order[..], &position[..]), &pattern),
            Some(60)
        );
    }

    /// ```text
    ///  program  0 Irecv  1 Wait 10-2010 (2 us)  2 swap 2010-2013  3 Irecv 2013-2020
    ///           4 compute 2020-3020  5 Isend 3020-3500
    ///  new      0 Irecv  2 swap  5 Isend  1 Wait  3 Irecv  4 compute
    /// ```
    /// The Wait deferred past the swap (3 ns) and the next Isend, moved in from beyond
    /// (480 ns): at most 483, not the 2 us it waited; the compute it did not cross.
    #[test]
    fn a_long_wait_deferred_past_short_work_gains_at_most_the_work() {
        let mut r = rank();
        r.ops = vec![
            op(OpKind::Post { request: 0 }, 0, 0, 10),
            op(OpKind::Complete { request: 0 }, 1, 10, 2010),
            gap(2, 2010, 2013),
            op(OpKind::Post { request: 1 }, 3, 2013, 2020),
            gap(4, 2020, 3020),
            op(OpKind::Post { request: 2 }, 5, 3020, 3500),
        ];
        let (order, position) = placed(&r, &[0, 2, 5, 1, 3, 4]);
        let m = Move {
            ops: vec![1],
            after: Some(0),
            before: Some(3),
            now_after: Some(5),
        };
        let at = (&order[..], &position[..]);
        assert_eq!(deferred_wait_ns(&r, at, &m), Some(483));
    }
}
