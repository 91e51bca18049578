//! Collective instances. MPI has every member of a communicator call its collectives in
//! the same order, so the k-th collective call of each rank on one communicator belongs
//! to one instance: the unit Wait at Barrier / Wait at NxN and the ideal replay work on.
//!
//! ```text
//!  rank 0  |Barrier|....|Allreduce|      instance 0: both Barriers (comm 0, k = 0)
//!  rank 1  |Barrier|.|Allreduce|         instance 1: both Allreduces (comm 0, k = 1)
//! ```

use std::collections::BTreeMap;

use overlap_instrument::schema::OpClass;

use crate::model::{EventRef, Trace};

/// No instance: the event is not a collective.
pub const NONE: u32 = u32::MAX;

/// Every collective instance of a trace.
pub struct Instances {
    /// The member calls of each instance, in rank order.
    pub members: Vec<Vec<EventRef>>,
    /// Per rank (position in `trace.ranks`) and event: its instance, or [`NONE`].
    pub of: Vec<Vec<u32>>,
}

/// Groups the collective calls of `trace` into instances.
pub fn instances(trace: &Trace) -> Instances {
    let mut members: Vec<Vec<EventRef>> = Vec::new();
    // Instance ids by communicator, in call order.
    let mut ids: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut of = Vec::with_capacity(trace.ranks.len());
    for t in &trace.ranks {
        let mut mine = vec![NONE; t.spans.len()];
        let mut seq: BTreeMap<u32, usize> = BTreeMap::new();
        for (i, slot) in mine.iter_mut().enumerate() {
            let Some((op, c)) = t.call(i) else { continue };
            if op.class() != OpClass::Collective {
                continue;
            }
            let k = seq.entry(c.comm).or_default();
            let list = ids.entry(c.comm).or_default();
            if list.len() <= *k {
                list.push(members.len() as u32);
                members.push(Vec::new());
            }
            let id = list[*k];
            members[id as usize].push(EventRef {
                rank: t.rank,
                index: i,
            });
            *slot = id;
            *k += 1;
        }
        of.push(mine);
    }
    Instances { members, of }
}
