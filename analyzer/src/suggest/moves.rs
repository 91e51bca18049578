//! The moves that turn a rank's measured order into a new one, as few as possible, and
//! the same move in every iteration counted once.
//!
//! The operations that stay are a heaviest subsequence the two orders share (an
//! increasing subsequence of the new order's program positions, compute weighing twice
//! an MPI operation, so that a move is told as the call that moves), `O(n log n)`;
//! every other operation moved. A moved operation lands just before the next operation that
//! stayed (or at the end). Completions split from one Wait call that move together stay
//! one move. Two moves are the same pattern when they move the same operation of the
//! iteration to the same place of the iteration (or of the next).
//!
//! ```text
//!  measured  pack Irecv Isend Wr Ws unpack compute      new  pack Irecv Isend Wr unpack
//!  stayed    pack Irecv Isend Wr    unpack compute           compute Ws
//!  moved     Ws: from after Wr to the end (before the next iteration's pack)
//! ```

use std::collections::BTreeMap;

use crate::dag::Period;
use crate::ops::RankProgram;

/// One move: operations (one, or completions of one call) taken from their place to
/// another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// The operations moved, in their new order.
    pub ops: Vec<usize>,
    /// The operation they followed in the program (none: they were first).
    pub after: Option<usize>,
    /// The operation that stayed that they now precede (none: they are last).
    pub before: Option<usize>,
    /// The operation that stayed that they now follow (none: they are first).
    pub now_after: Option<usize>,
}

/// The same move, repeated in several iterations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// Its instance in the iteration shown (the middle one), or the first.
    pub shown: Move,
    /// Every instance.
    pub instances: Vec<Move>,
}

/// Operations that stay: the increasing subsequence of `order` of the largest weight
/// (`weight(op)`), by a Fenwick tree of prefix maxima, `O(n log n)`.
fn staying(order: &[usize], weight: impl Fn(usize) -> u64) -> Vec<bool> {
    let n = order.iter().map(|v| v + 1).max().unwrap_or(0);
    // tree[i]: (best weight, position in `order`) over a range of values ending at i.
    let mut tree: Vec<(u64, Option<usize>)> = vec![(0, None); n + 1];
    let mut parent: Vec<Option<usize>> = vec![None; order.len()];
    let mut best_at: Vec<u64> = vec![0; order.len()];
    for (pos, &v) in order.iter().enumerate() {
        // Best chain over values < v.
        let (mut best, mut from) = (0u64, None);
        let mut i = v;
        while i > 0 {
            if tree[i].0 > best {
                (best, from) = tree[i];
            }
            i &= i - 1;
        }
        parent[pos] = from;
        best_at[pos] = best + weight(v);
        let mut i = v + 1;
        while i <= n {
            if best_at[pos] > tree[i].0 {
                tree[i] = (best_at[pos], Some(pos));
            }
            i += i & i.wrapping_neg();
        }
    }
    let mut stays = vec![false; n];
    let mut at = (0..order.len()).max_by_key(|&p| (best_at[p], std::cmp::Reverse(p)));
    while let Some(p) = at {
        stays[order[p]] = true;
        at = parent[p];
    }
    stays
}

/// The moves from program order to `order` (a permutation of the rank's operations).
pub fn moves(rank: &RankProgram, order: &[usize]) -> Vec<Move> {
    // Compute weighs more: a move is told as the MPI call that moves, where either way
    // would do (compute never moves past compute).
    let stays = staying(order, |op| {
        if matches!(rank.ops[op].kind, crate::ops::OpKind::Compute { .. }) {
            2
        } else {
            1
        }
    });
    let mut out: Vec<Move> = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let m = order[i];
        if stays[m] {
            i += 1;
            continue;
        }
        // Completions of one call moved together stay one move.
        let mut ops = vec![m];
        let mut j = i + 1;
        while let Some(&next) = order.get(j) {
            let same_call = rank.ops[next].span == rank.ops[m].span
                && rank.ops[next].call.is_some()
                && rank.ops[next].call == rank.ops[m].call;
            if stays[next] || !same_call {
                break;
            }
            ops.push(next);
            j += 1;
        }
        let before = order[j..].iter().copied().find(|&x| stays[x]);
        let first = *ops.iter().min().expect("one op");
        out.push(Move {
            after: first.checked_sub(1),
            before,
            now_after: order[..i].iter().rev().copied().find(|&x| stays[x]),
            ops,
        });
        i = j;
    }
    out
}

/// What moves (offsets in the iteration) and from where.
type PatternKey = (Vec<usize>, Option<(usize, i64)>);

/// The moves grouped by pattern, in the order of their first instance.
pub fn patterns(moves: Vec<Move>, period: Option<Period>) -> Vec<Pattern> {
    let Some(p) = period else {
        return moves
            .into_iter()
            .map(|m| Pattern {
                shown: m.clone(),
                instances: vec![m],
            })
            .collect();
    };
    let inside = |i: usize| i >= p.start && i < p.end();
    let offset = |i: usize| (i - p.start) % p.length;
    // Key: (offsets of the ops, offset of the op they followed), for moves inside the
    // loop; moves outside it are their own pattern.
    let mut groups: BTreeMap<PatternKey, Vec<Move>> = BTreeMap::new();
    let mut loose: Vec<(usize, Vec<Move>)> = Vec::new();
    for m in moves {
        let first = m.ops[0];
        if !m.ops.iter().all(|&o| inside(o)) {
            loose.push((first, vec![m]));
            continue;
        }
        // What moves, and from where: the last iteration's instance, which lands after
        // the loop, is the same move.
        let key_ops: Vec<usize> = m.ops.iter().map(|&o| offset(o)).collect();
        let from = m.after.filter(|&a| inside(a)).map(|a| (offset(a), 0));
        groups.entry((key_ops, from)).or_default().push(m);
    }
    let middle = 1 + p.iterations as u32 / 2;
    let mut out: Vec<(usize, Pattern)> = groups
        .into_values()
        .map(|instances| {
            let shown = instances
                .iter()
                .find(|m| p.scope(m.ops[0]) == middle)
                .unwrap_or(&instances[0])
                .clone();
            (instances[0].ops[0], Pattern { shown, instances })
        })
        .chain(loose.into_iter().map(|(first, instances)| {
            (
                first,
                Pattern {
                    shown: instances[0].clone(),
                    instances,
                },
            )
        }))
        .collect();
    out.sort_by_key(|(first, _)| *first);
    out.into_iter().map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_longest_shared_subsequence_stays() {
        // 0 1 2 3 4 -> 0 2 3 1 4: 1 moved (one move), not 2 and 3.
        let s = staying(&[0, 2, 3, 1, 4], |_| 1);
        assert_eq!(s, [true, false, true, true, true]);
        // With 1 weighing three times the others, 2 and 3 move instead.
        let s = staying(&[0, 2, 3, 1, 4], |v| if v == 1 { 3 } else { 1 });
        assert_eq!(s, [true, true, false, false, true]);
    }
}
