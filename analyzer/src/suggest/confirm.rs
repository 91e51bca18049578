//! A re-run confirms a suggestion: the program changed as suggested, run again, traced.
//! The re-run's measured time (the median over its runs) is set against the predicted
//! time, and each rank's re-run iteration against the suggested one.
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

use serde::Serialize;

use crate::dag::{self, Period};
use crate::model::Trace;
use crate::ops::{Program, RankProgram};
use crate::sites::SiteTable;

use super::describe::Namer;
use super::Suggestion;

/// One rank's suggested iteration against the re-run's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OrderMatch {
    /// The rank.
    pub rank: u32,
    /// The iterations are the same operations in the same order (up to rotation).
    pub same: bool,
    /// Why not, when they are not.
    pub difference: Option<String>,
    /// The suggested iteration, and the re-run's, when they differ.
    pub iterations: Option<(Vec<String>, Vec<String>)>,
}

/// A suggestion against its re-run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Confirmation {
    /// The re-run traces.
    pub runs: Vec<String>,
    /// Their measured run times, ns.
    pub measured_ns: Vec<u64>,
    /// Their median, ns.
    pub median_ns: u64,
    /// The suggestion's predicted run time, ns (none when the order was rejected).
    pub predicted_ns: Option<u64>,
    /// `(predicted - median) / median`.
    pub error: Option<f64>,
    /// Per rank of the first re-run: its iteration against the suggested one.
    pub orders: Vec<OrderMatch>,
}

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

/// Sets `suggestion` (of the trace and program `ours` names) against re-runs.
pub fn confirm(
    suggestion: &Suggestion,
    ours: &Namer,
    reruns: &[(&Trace, &Program)],
) -> Confirmation {
    let program = ours.program;
    let measured_ns: Vec<u64> = reruns.iter().map(|(_, p)| p.measured_ns).collect();
    let mut sorted = measured_ns.clone();
    sorted.sort_unstable();
    let median_ns = match sorted.len() {
        0 => 0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    };
    let predicted_ns = suggestion.suggested.map(|p| p.ns);
    let error = predicted_ns
        .filter(|_| median_ns > 0)
        .map(|p| (p as f64 - median_ns as f64) / median_ns as f64);
    let mut orders = Vec::new();
    if let Some((rerun_trace, rerun)) = reruns.first() {
        let sites = SiteTable::build(rerun_trace);
        let theirs_namer = Namer {
            trace: rerun_trace,
            program: rerun,
            sites: &sites,
        };
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
            let mine = suggestion.orders.get(slot).and_then(|o| {
                iteration(ours, rank, o, dag::rank_period(program, ours.trace, rank))
            });
            let identity: Vec<usize> = (0..other.ops.len()).collect();
            let theirs = iteration(
                &theirs_namer,
                other,
                &identity,
                dag::rank_period(rerun, *rerun_trace, other),
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
                (Some(_), Some(_)) => (false, Some("the same operations in another order".into())),
                _ => (false, Some("no repeating iteration to compare".into())),
            };
            orders.push(OrderMatch {
                rank: rank.rank,
                same,
                difference,
                iterations: shown,
            });
        }
    }
    Confirmation {
        runs: reruns
            .iter()
            .map(|(t, _)| t.source.display().to_string())
            .collect(),
        measured_ns,
        median_ns,
        predicted_ns,
        error,
        orders,
    }
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
}
