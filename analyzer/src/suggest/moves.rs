//! The moves that turn a rank's measured order into a new one, as few as possible, and
//! the same move in every iteration counted once.
//!
//! The operations that stay are a longest subsequence the two orders share (a longest
//! increasing subsequence of the new order's program positions, `O(n log n)`); every
//! other operation moved. A moved operation lands just before the next operation that
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
    /// The operation they now follow.
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

/// Positions that stay: a longest increasing subsequence of `order`.
fn staying(order: &[usize]) -> Vec<bool> {
    let n = order.len();
    // tails[k]: index in `order` of the smallest tail of an increasing run of k + 1.
    let mut tails: Vec<usize> = Vec::new();
    let mut parent: Vec<Option<usize>> = vec![None; n];
    for (i, &v) in order.iter().enumerate() {
        let k = tails.partition_point(|&t| order[t] < v);
        parent[i] = k.checked_sub(1).map(|p| tails[p]);
        if k == tails.len() {
            tails.push(i);
        } else {
            tails[k] = i;
        }
    }
    let mut stays = vec![false; n.max(order.iter().map(|v| v + 1).max().unwrap_or(0))];
    let mut at = tails.last().copied();
    while let Some(i) = at {
        stays[order[i]] = true;
        at = parent[i];
    }
    stays
}

/// The moves from program order to `order` (a permutation of the rank's operations).
pub fn moves(rank: &RankProgram, order: &[usize]) -> Vec<Move> {
    let stays = staying(order);
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
            now_after: i.checked_sub(1).map(|p| order[p]),
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
        let s = staying(&[0, 2, 3, 1, 4]);
        assert_eq!(s, [true, false, true, true, true]);
    }
}
