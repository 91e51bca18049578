//! The host buffers a rank's GPU copies use, placed among its operations, so that a
//! reordering keeps them: a D2H copy writes its host destination from the operation that
//! enqueued it to the one during which it ended (after that, the host may read it, and
//! an `MPI_Isend` of it must stay there); an H2D copy reads its host source over the
//! same kind of span (a receive into it must not come before the copy is done).
//!
//! Where the host learned that a copy ended is not always recorded (an event poll is
//! not), so the copy's use ends with the operation in progress at its end: the earliest
//! moment the host could have known.

use crate::model::{Buffer, Timeline};
use crate::ops::{Operation, Touch};
use overlap_format::schema::{GpuOp, Nanos};

/// A host buffer used by a GPU copy, over operations `begin..=end` of its rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuUse {
    /// The host range.
    pub buf: Buffer,
    /// Written (a D2H's destination) or read (an H2D's source).
    pub used: Touch,
    /// The operation in progress when it was enqueued.
    pub begin: usize,
    /// The operation in progress when it ended (not before `begin`).
    pub end: usize,
}

/// The operation in progress at `at`: the last one that started by then (0 before the
/// first).
fn op_at(ops: &[Operation], at: Nanos) -> usize {
    ops.partition_point(|o| o.measured_start_ns <= at.0)
        .saturating_sub(1)
}

/// The uses of `t`'s D2H and H2D copies with a known host address, by `begin`.
pub fn gpu_uses(t: &Timeline, ops: &[Operation]) -> Vec<GpuUse> {
    if ops.is_empty() {
        return Vec::new();
    }
    let mut uses: Vec<GpuUse> = t
        .gpu
        .iter()
        .filter_map(|g| {
            let (addr, used) = match g.op {
                GpuOp::CopyD2H => (g.dst, Touch::Write),
                GpuOp::CopyH2D => (g.src, Touch::Read),
                _ => return None,
            };
            if addr == 0 || g.bytes == 0 {
                return None;
            }
            let begin = op_at(ops, g.issued);
            Some(GpuUse {
                buf: Buffer { addr, len: g.bytes },
                used,
                begin,
                end: op_at(ops, g.end).max(begin),
            })
        })
        .collect();
    uses.sort_by_key(|u| (u.begin, u.end));
    uses
}
