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
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
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
    /// The instance of each blocking collective call.
    pub calls: CallInstances,
}

/// The instance of each blocking collective call of a run: per rank (position in
/// `trace.ranks`), `(event, instance)` of each of its blocking collective calls, by
/// event (collectives are few among a rank's events: a list of them, not an entry per
/// event). The first pass of the analysis that holds one rank at a time makes it too.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallInstances {
    by_rank: Vec<Vec<(u32, u32)>>,
}

impl CallInstances {
    /// Adds the next rank's calls, `(event, instance)` by event.
    pub(crate) fn push_rank(&mut self, mut calls: Vec<(u32, u32)>) {
        calls.shrink_to_fit();
        self.by_rank.push(calls);
    }

    /// The instance of the event at `index` of the rank at position `slot` of
    /// `trace.ranks`; none when it is not a blocking collective call.
    pub fn of(&self, slot: usize, index: usize) -> Option<u32> {
        let list = self.by_rank.get(slot)?;
        let at = list.binary_search_by_key(&index, |e| e.0 as usize).ok()?;
        Some(list[at].1)
    }
}

/// The rule that makes instances of collective calls: the k-th call of each rank in a
/// scope belongs to the scope's k-th instance. Instances are numbered in order of first
/// meeting, the ranks given in rank order ([`Numbering::rank`]), each rank's calls in
/// its order ([`RankNumbering::next`]).
pub(crate) struct Numbering<K> {
    /// Per scope, its instances' ids in order.
    ids: BTreeMap<K, Vec<usize>>,
    /// Instances numbered so far.
    count: usize,
}

/// One rank's calls being numbered ([`Numbering::rank`]).
pub(crate) struct RankNumbering<'a, K> {
    run: &'a mut Numbering<K>,
    /// Per scope, how many of the rank's calls were numbered.
    seq: BTreeMap<K, usize>,
}

impl<K: Ord + Copy> Numbering<K> {
    pub(crate) fn new() -> Numbering<K> {
        Numbering {
            ids: BTreeMap::new(),
            count: 0,
        }
    }

    /// The next rank's calls, to be numbered in its order.
    pub(crate) fn rank(&mut self) -> RankNumbering<'_, K> {
        RankNumbering {
            run: self,
            seq: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Copy> RankNumbering<'_, K> {
    /// The instance of the rank's next call in `scope`, and whether this call is the
    /// instance's first member (the instance is new).
    pub(crate) fn next(&mut self, scope: K) -> (usize, bool) {
        let k = self.seq.entry(scope).or_default();
        let list = self.run.ids.entry(scope).or_default();
        let new = list.len() <= *k;
        if new {
            list.push(self.run.count);
            self.run.count += 1;
        }
        let id = list[*k];
        *k += 1;
        (id, new)
    }
}

/// Groups the blocking collective calls of `trace` into instances.
pub fn instances(trace: &Trace) -> Instances {
    let mut members: Vec<Vec<EventRef>> = Vec::new();
    let mut numbering = Numbering::new();
    let mut calls = CallInstances::default();
    for t in &trace.ranks {
        let mut mine: Vec<(u32, u32)> = Vec::new();
        let mut rank = numbering.rank();
        for i in 0..t.spans.len() {
            let Some((op, c)) = t.call(i) else { continue };
            if op.class() != OpClass::Collective {
                continue;
            }
            let (id, new) = rank.next(scope(op, c));
            if new {
                members.push(Vec::new());
            }
            members[id].push(EventRef {
                rank: t.rank,
                index: i,
            });
            mine.push((index_u32(i), index_u32(id)));
        }
        calls.push_rank(mine);
    }
    Instances { members, calls }
}

/// The instances of the non-blocking collectives (Ibcast..., and started persistent
/// collectives): the k-th collective request of each rank on one communicator (the
/// communicator of its post, or of its persistent init), as indices into
/// `trace.requests`, in rank order.
pub fn nonblocking(trace: &Trace) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut numbering = Numbering::new();
    // The requests are in rank order (`Trace::new`): each rank's numbered in its order.
    debug_assert!(trace.requests.is_sorted_by_key(|r| r.rank), "Trace::new");
    let mut first = 0;
    for same in trace.requests.chunk_by(|a, b| a.rank == b.rank) {
        let mut rank = numbering.rank();
        for (k, r) in same.iter().enumerate() {
            if r.kind != RequestKind::Collective {
                continue;
            }
            let Some((_, c)) = trace.rank(r.rank).and_then(|t| t.call(r.args())) else {
                continue;
            };
            let (id, new) = rank.next(c.comm);
            if new {
                out.push(Vec::new());
            }
            out[id].push(first + k);
        }
        first += same.len();
    }
    out
}
