//! Collective instances. MPI has every member of a communicator call its collectives in
//! the same order, so the k-th collective call of each rank on one communicator belongs
//! to one instance: the unit Wait at Barrier / Wait at NxN and the ideal replay work on.
//! The collective calls on a window (Win_fence, Win_free) are ordered per window, not
//! per communicator (several windows may share one), so they are numbered per window;
//! window creation is a collective of the communicator and numbered with it.
//! Non-blocking collectives are numbered apart ([`nonblocking`]): their posts do not
//! block, so they are not members of blocking instances.
//!
//! ```text
//!  rank 0  |Barrier|....|Allreduce|      instance 0: both Barriers (comm 0, k = 0)
//!  rank 1  |Barrier|.|Allreduce|         instance 1: both Allreduces (comm 0, k = 1)
//! ```

use std::collections::BTreeMap;

use overlap_format::schema::{Op, OpClass, RequestKind};

use crate::model::compact::index_u32;
use crate::model::{CallInfo, EventRef, Trace};

/// What a collective call is ordered within.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Scope {
    /// A communicator (by id).
    Comm(u32),
    /// A window (by id): Win_fence and Win_free.
    Window(u32),
}

/// What the collective call `op` with arguments `c` is ordered within.
pub(crate) fn scope(op: Op, c: &CallInfo) -> Scope {
    match (op, c.win()) {
        (Op::WinFence | Op::WinFree, Some(w)) => Scope::Window(w),
        _ => Scope::Comm(c.comm),
    }
}

/// Every blocking collective instance of a trace.
pub struct Instances {
    /// The member calls of each instance, in rank order.
    pub members: Vec<Vec<EventRef>>,
    /// Per rank (position in `trace.ranks`): `(event, instance)` of each of its
    /// blocking collective calls, by event (collectives are few among a rank's events:
    /// a list of them, not an entry per event).
    by_rank: Vec<Vec<(u32, u32)>>,
}

impl Instances {
    /// The instance of the event at `index` of the rank at position `slot` of
    /// `trace.ranks`; none when it is not a blocking collective call.
    pub fn of(&self, slot: usize, index: usize) -> Option<u32> {
        let list = self.by_rank.get(slot)?;
        let at = list.binary_search_by_key(&index, |e| e.0 as usize).ok()?;
        Some(list[at].1)
    }
}

/// Groups the blocking collective calls of `trace` into instances.
pub fn instances(trace: &Trace) -> Instances {
    let mut members: Vec<Vec<EventRef>> = Vec::new();
    // Instance ids by scope, in call order.
    let mut ids: BTreeMap<Scope, Vec<u32>> = BTreeMap::new();
    let mut by_rank = Vec::with_capacity(trace.ranks.len());
    for t in &trace.ranks {
        let mut mine: Vec<(u32, u32)> = Vec::new();
        let mut seq: BTreeMap<Scope, usize> = BTreeMap::new();
        for i in 0..t.spans.len() {
            let Some((op, c)) = t.call(i) else { continue };
            if op.class() != OpClass::Collective {
                continue;
            }
            let key = scope(op, c);
            let k = seq.entry(key).or_default();
            let list = ids.entry(key).or_default();
            if list.len() <= *k {
                list.push(members.len() as u32);
                members.push(Vec::new());
            }
            let id = list[*k];
            members[id as usize].push(EventRef {
                rank: t.rank,
                index: i,
            });
            mine.push((index_u32(i), id));
            *k += 1;
        }
        mine.shrink_to_fit();
        by_rank.push(mine);
    }
    Instances { members, by_rank }
}

/// The instances of the non-blocking collectives (Ibcast..., and started persistent
/// collectives): the k-th collective request of each rank on one communicator (the
/// communicator of its post, or of its persistent init), as indices into
/// `trace.requests`, in rank order.
pub fn nonblocking(trace: &Trace) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut ids: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    let mut seq: BTreeMap<(u32, u32), usize> = BTreeMap::new();
    for (i, r) in trace.requests.iter().enumerate() {
        if r.kind != RequestKind::Collective {
            continue;
        }
        let Some((_, c)) = trace.rank(r.rank).and_then(|t| t.call(r.args())) else {
            continue;
        };
        let k = seq.entry((r.rank, c.comm)).or_default();
        let list = ids.entry(c.comm).or_default();
        if list.len() <= *k {
            list.push(out.len());
            out.push(Vec::new());
        }
        out[list[*k]].push(i);
        *k += 1;
    }
    out
}
