//! Where a replay reads each rank's operations from, and in what order: a whole
//! [`Program`] in orders given (a permutation of each rank's operations, checked), or a
//! [`MeasuredProgram`] in its measured order, each rank's next operation decoded as the
//! one before ends.

use crate::ops::{MeasuredProgram, Program, ReplayRequest};
use crate::replay::ReplayError;

/// The operations each rank runs, in the order it runs them.
pub(in crate::replay) enum Source<'a> {
    /// A program's, each rank's in the order given: a permutation of its operation
    /// indices.
    Given(&'a Program, &'a [Vec<usize>]),
    /// As measured: each rank's operations in program order, decoded as they come.
    Measured(&'a MeasuredProgram),
}

impl<'a> Source<'a> {
    /// What links the ranks: the program, or the measured program's links.
    pub(super) fn links(&self) -> &'a Program {
        match self {
            Source::Given(p, _) => p,
            Source::Measured(m) => &m.links,
        }
    }

    /// How many operations rank slot `s` runs.
    pub(super) fn len(&self, s: usize) -> usize {
        match self {
            Source::Given(p, _) => p.ranks[s].ops.len(),
            Source::Measured(m) => m.ops[s].len(),
        }
    }

    /// How many requests the program has.
    pub(super) fn requests(&self) -> usize {
        match self {
            Source::Given(p, _) => p.requests.len(),
            Source::Measured(m) => m.requests.len(),
        }
    }

    /// What the replay reads of request `r`.
    pub(super) fn request(&self, r: usize) -> ReplayRequest {
        match self {
            Source::Given(p, _) => ReplayRequest::of(&p.requests[r]),
            Source::Measured(m) => m.requests[r],
        }
    }
}

/// Checks that `orders` hold one permutation of its operations per rank of `p`.
pub(super) fn check_orders(p: &Program, orders: &[Vec<usize>]) -> Result<(), ReplayError> {
    if orders.len() != p.ranks.len() {
        return Err(ReplayError::OrderCount {
            given: orders.len(),
            ranks: p.ranks.len(),
        });
    }
    for (r, order) in p.ranks.iter().zip(orders) {
        let bad = |reason: String| ReplayError::BadOrder {
            rank: r.rank,
            reason,
        };
        if order.len() != r.ops.len() {
            return Err(bad(format!(
                "{} positions for {} operations",
                order.len(),
                r.ops.len()
            )));
        }
        let mut seen = vec![false; r.ops.len()];
        for &i in order {
            match seen.get_mut(i) {
                None => return Err(bad(format!("operation {i} does not exist"))),
                Some(true) => return Err(bad(format!("operation {i} appears twice"))),
                Some(s) => *s = true,
            }
        }
    }
    Ok(())
}
