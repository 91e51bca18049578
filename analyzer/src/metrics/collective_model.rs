//! Pure communication time of non-blocking collectives, by operation and size: the
//! shortest time from the last member's post to a member's completion (the point-to-point
//! network is [`super::transfer`]).
//!
//! ```text
//!  rank 0  |Ibcast 0-1|.............|Wait 5-9|     instance: last post at 3;
//!  rank 1  |c 0-3|Ibcast 3-4|Wait 4 ------- 8|     observed 9 - 3 = 6 and 8 - 3 = 5
//!                                                  -> t_pure(Ibcast, class) = 5
//! ```

use std::collections::BTreeMap;

use overlap_format::schema::{Nanos, Op};
use serde::Serialize;

use super::collective_ends::CollectiveEnds;
use super::transfer::class_of;
use crate::model::Trace;

/// One (operation, size class) of the collective model.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct CollectiveClass {
    /// The operation's MPI name (the post, or a persistent collective's init).
    #[serde(deserialize_with = "crate::static_names::read")]
    pub call: crate::static_names::StaticName,
    /// Smallest byte count of the class (classes are powers of two).
    pub bytes: u64,
    /// Observations (members of complete instances).
    pub samples: u64,
    /// Shortest observation, ns: the class's pure communication time.
    pub min_ns: u64,
}

/// Pure communication time of non-blocking collectives, by operation and size.
///
/// An instance is the k-th non-blocking collective request of each rank on one
/// communicator ([`super::collectives::nonblocking`]). A member's observation is
/// `X(its completion) - max_j E(post_j)`: from the moment every member had started the
/// operation to the moment this member knew it done. Like a message's observed
/// transfer, that bounds the pure time from above (it also holds compute that ran
/// before the completion was entered, when the library made no progress meanwhile);
/// the shortest observation of each (operation, bytes power-of-two class) is taken.
/// There is no fit across sizes or operations: a class never observed has no estimate
/// (unknown), never 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct CollectiveModel {
    /// The classes observed, by operation then size.
    pub classes: Vec<CollectiveClass>,
}

impl CollectiveModel {
    /// Fits the model to the non-blocking collectives of `trace`.
    pub fn fit(trace: &Trace) -> CollectiveModel {
        CollectiveModel::fit_with(&CollectiveEnds::of(trace))
    }

    /// [`CollectiveModel::fit`], the instances' members already found.
    pub fn fit_with(ends: &CollectiveEnds) -> CollectiveModel {
        let mut classes: BTreeMap<(&'static str, u32), CollectiveClass> = BTreeMap::new();
        for members in &ends.nonblocking {
            let posted = || members.iter().filter(|r| r.posted.is_some());
            let Some(last) = posted().filter_map(|r| r.posted).map(|p| p.1).max() else {
                continue;
            };
            for r in posted() {
                let (Some((op, _, bytes)), Some(done)) = (r.call, r.done) else {
                    continue;
                };
                let end = done.end;
                if end < last {
                    continue;
                }
                let bytes = bytes.unwrap_or(0);
                let e =
                    classes
                        .entry((op.mpi_name(), class_of(bytes)))
                        .or_insert(CollectiveClass {
                            call: op.mpi_name(),
                            bytes,
                            samples: 0,
                            min_ns: u64::MAX,
                        });
                e.bytes = e.bytes.min(bytes);
                e.samples += 1;
                e.min_ns = e.min_ns.min((end - last).0);
            }
        }
        CollectiveModel {
            classes: classes.into_values().collect(),
        }
    }

    /// The pure communication time of `op` (post or persistent init) on `bytes`, if
    /// that class was observed.
    pub fn pure(&self, op: Op, bytes: u64) -> Option<Nanos> {
        let class = class_of(bytes);
        self.classes
            .iter()
            .find(|c| c.call == op.mpi_name() && class_of(c.bytes) == class)
            .map(|c| Nanos(c.min_ns))
    }
}
