//! Compute inferred from a gap between MPI calls, cut at the program's own first touches
//! of its buffers learned inside it ([`crate::dependence::cuts_inside`]). At call
//! granularity a gap that holds both work that leaves a buffer alone and the first use
//! of it is one operation, and a wait cannot move into it; cut at the touch, the part
//! before is proven free for that buffer and the part from the touch on holds the use.
//!
//! Each part keeps its measured length (a replay of the measured order is unchanged) and
//! the calls before and after the gap (`span`, `until_span`); a part that starts at a
//! touch is known by it ([`Cut`], [`super::RankProgram::cut_at`]): the iteration finder
//! keys it by the touch's symbolized line, reports name it by that line.
//!
//! ```text
//!  |Waitall r 0-10|......... gap 10-40 ..........|Irecv r 40-41|
//!                       ^ 25: first read of r (a fault: one instant)
//!  ops   Complete(r)  Compute 10-25  Compute 25-40 (from the read)  Post(r)
//!  cuts  [(op 2, the learned use of r)]
//! ```

use super::{CompactIndex, OpKind, Operation};
use crate::model::compact::index_u32;

/// A part of an inferred compute that starts at a learned first touch, in 8 bytes: the
/// operation and the learned use ([`super::RankProgram::learned`]) whose touch it starts
/// at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cut {
    op: u32,
    learned: u32,
}

impl Cut {
    /// Operation `op` starts at the first touch of the learned use `learned`.
    pub fn new(op: usize, learned: usize) -> Cut {
        Cut {
            op: index_u32(op),
            learned: index_u32(learned),
        }
    }

    /// The operation.
    pub fn op(&self) -> usize {
        self.op as usize
    }

    /// The learned use, by index in the rank's [`super::RankProgram::learned`].
    pub fn learned(&self) -> usize {
        self.learned as usize
    }
}

/// The compute named `name` inferred from the gap `[from, to)` after the call `after`
/// until the call `until` (none: the end of the rank's analysed part), cut at the times
/// `cuts` (ascending, strictly inside the gap): pushed onto `ops`, part by part, and the
/// index of each part that starts at a cut onto `starts`.
pub(super) fn push_gap(
    ops: &mut Vec<Operation>,
    name: u32,
    (from, to): (u64, u64),
    (after, until): (usize, Option<usize>),
    cuts: impl Iterator<Item = u64>,
    starts: &mut Vec<u32>,
) {
    let mut start = from;
    for at in cuts {
        debug_assert!(from < at && at < to, "a cut lies strictly inside its gap");
        ops.push(inferred(name, (start, at), (after, until)));
        starts.push(index_u32(ops.len()));
        start = at;
    }
    ops.push(inferred(name, (start, to), (after, until)));
}

/// Compute named `name`, inferred from `[from, to)`, part of the gap between the call
/// `after` and the call `until`.
fn inferred(
    name: u32,
    (from, to): (u64, u64),
    (after, until): (usize, Option<usize>),
) -> Operation {
    Operation {
        kind: OpKind::Compute {
            name,
            inferred: true,
            access: None,
            until_span: until.map(CompactIndex::new),
        },
        cost_ns: to - from,
        lead_in_ns: 0,
        measured_start_ns: from,
        measured_end_ns: to,
        span: index_u32(after),
        call: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gap 10-40 after call 3 and before call 4, cut at 25 and 31: three parts that
    /// add up to the gap, each between the same calls; the parts from 25 and 31 are
    /// listed.
    #[test]
    fn a_cut_gap_keeps_its_length_and_its_calls() {
        let mut ops = vec![inferred(0, (0, 10), (2, Some(3)))];
        let mut starts = Vec::new();
        push_gap(
            &mut ops,
            7,
            (10, 40),
            (3, Some(4)),
            [25, 31].into_iter(),
            &mut starts,
        );
        assert_eq!(starts, [2, 3]);
        let parts: Vec<(u64, u64, u64)> = ops[1..]
            .iter()
            .map(|o| (o.measured_start_ns, o.measured_end_ns, o.cost_ns))
            .collect();
        assert_eq!(parts, [(10, 25, 15), (25, 31, 6), (31, 40, 9)]);
        for o in &ops[1..] {
            assert_eq!(o.span, 3);
            assert!(matches!(
                o.kind,
                OpKind::Compute { name: 7, inferred: true, access: None, until_span: Some(u) }
                    if u.get() == 4
            ));
        }
    }
}
