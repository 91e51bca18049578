//! A re-run's iteration against the suggested one, rank by rank: the changed program
//! should run the order that was suggested.
//!
//! Iterations are compared as sequences of operations named by what they are and by
//! their symbolized call sites (raw code addresses and site ids differ from run to run),
//! up to rotation: the re-run's loop may start its iteration elsewhere (the deferred
//! wait of the previous iteration first).
//!
//! ```text
//!  suggested   pack Irecv Isend Wr unpack compute Ws | pack ...
//!  re-run      Ws pack Irecv Isend Wr unpack compute | Ws pack ...   same, rotated
//! ```

use crate::dag::{self, Period};
use crate::model::Trace;
use crate::ops::{Program, RankProgram};
use crate::sites::SiteTable;

use super::super::describe::Namer;
use super::super::Suggestion;
use super::confirmation::OrderMatch;

/// The middle iteration of `order` (a permutation of `rank`'s operations), named.
fn iteration(
    namer: &Namer,
    rank: &RankProgram,
    order: &[usize],
    period: Option<Period>,
) -> Option<Vec<String>> {
    let p = period?;
    let k = 1 + p.iterations as u32 / 2;
    Some(
        order
            .iter()
            .filter(|&&i| p.scope(i) == k)
            .map(|&i| namer.key(rank, i))
            .collect(),
    )
}

fn same_up_to_rotation<T: PartialEq>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len()
        && (a.is_empty() || (0..a.len()).any(|r| a[r..].iter().chain(&a[..r]).eq(b.iter())))
}

/// How two iterations of one length differ: in order only, or in what they hold (the
/// changed program's calls moved to other lines, or other operations).
fn unlike(suggested: &[String], rerun: &[String]) -> String {
    let mut left: Vec<&String> = rerun.iter().collect();
    let mut missing = Vec::new();
    for name in suggested {
        match left.iter().position(|n| *n == name) {
            Some(k) => {
                left.swap_remove(k);
            }
            None => missing.push(name),
        }
    }
    match missing.first() {
        None => "the same operations in another order".into(),
        Some(first) => format!(
            "{} of the suggested iteration's {} operations missing from the re-run's (the first: {first})",
            missing.len(),
            suggested.len()
        ),
    }
}

/// Per rank of `ours` (the analysed trace's program, named): `suggestion`'s iteration
/// against the one `rerun` ran.
pub fn orders(
    suggestion: &Suggestion,
    ours: &Namer,
    (rerun_trace, rerun): (&Trace, &Program),
) -> Vec<OrderMatch> {
    let program = ours.program;
    let sites = SiteTable::build(rerun_trace);
    let theirs_namer = Namer {
        trace: rerun_trace,
        program: rerun,
        sites: &sites,
    };
    let mut orders = Vec::new();
    for (slot, rank) in program.ranks.iter().enumerate() {
        let Some(other) = rerun.rank(rank.rank) else {
            orders.push(OrderMatch {
                rank: rank.rank,
                same: false,
                difference: Some("the re-run has no such rank".into()),
                iterations: None,
            });
            continue;
        };
        let mine = suggestion
            .orders
            .get(slot)
            .and_then(|o| iteration(ours, rank, o, dag::rank_period(program, ours, rank)));
        let identity: Vec<usize> = (0..other.ops.len()).collect();
        let theirs = iteration(
            &theirs_namer,
            other,
            &identity,
            dag::rank_period(rerun, &theirs_namer, other),
        );
        let shown = match (&mine, &theirs) {
            (Some(a), Some(b)) if !same_up_to_rotation(a, b) => Some((a.clone(), b.clone())),
            _ => None,
        };
        let (same, difference) = match (mine, theirs) {
            (Some(a), Some(b)) if same_up_to_rotation(&a, &b) => (true, None),
            (Some(a), Some(b)) if a.len() != b.len() => (
                false,
                Some(format!(
                    "the suggested iteration has {} operations, the re-run's {}",
                    a.len(),
                    b.len()
                )),
            ),
            (Some(a), Some(b)) => (false, Some(unlike(&a, &b))),
            _ => (false, Some("no repeating iteration to compare".into())),
        };
        orders.push(OrderMatch {
            rank: rank.rank,
            same,
            difference,
            iterations: shown,
        });
    }
    orders
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotations_are_the_same_iteration() {
        assert!(same_up_to_rotation(&[1, 2, 3], &[2, 3, 1]));
        assert!(same_up_to_rotation::<u8>(&[], &[]));
        assert!(!same_up_to_rotation(&[1, 2, 3], &[1, 3, 2]));
        assert!(!same_up_to_rotation(&[1, 2], &[1, 2, 2]));
    }

    #[test]
    fn a_difference_says_whether_only_the_order_differs() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let suggested = names(&["Irecv (a.c:5)", "Wait (a.c:9)", "Wait (a.c:9)"]);
        assert_eq!(
            unlike(
                &suggested,
                &names(&["Wait (a.c:9)", "Wait (a.c:9)", "Irecv (a.c:5)"])
            ),
            "the same operations in another order"
        );
        assert_eq!(
            unlike(&suggested, &names(&["Irecv (a.c:5)", "Wait (a.c:9)", "Wait (a.c:12)"])),
            "1 of the suggested iteration's 3 operations missing from the re-run's (the first: Wait (a.c:9))"
        );
    }
}
