//! What `overlap analyze` says of the regions (`--full`, `--json`): per region, its
//! instances and how long the ranks spent in it, min / mean / max over the ranks that
//! entered it, and which ranks never did. Kept apart from the pairing, which the merge
//! uses too.

use serde::Serialize;

use super::{RankTime, RegionMark, RunRegions};
use crate::model::Trace;

/// Min, mean and max of a per-rank figure, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    /// The least.
    pub min_ns: u64,
    /// The mean.
    pub mean_ns: f64,
    /// The most.
    pub max_ns: u64,
}

/// One region, summed up.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RegionSummary {
    /// Its name (`pcontrol` for mpiP's unnamed on/off).
    pub name: String,
    /// The most instances a rank has.
    pub instances: u32,
    /// Instances never left (closed at their rank's last event).
    pub open: u32,
    /// The time each rank that entered it spent in it, all instances together.
    pub per_rank: Vec<RankTime>,
    /// Min, mean and max of that time over those ranks.
    pub time: Spread,
    /// Ranks of the run that never entered it.
    pub never_entered: Vec<u32>,
    /// The span of the run it covers, ns from the run's start: first enter...
    pub from_ns: u64,
    /// ...to last leave.
    pub to_ns: u64,
}

impl RunRegions {
    /// The regions of a loaded trace.
    pub fn of_trace(trace: &Trace) -> RunRegions {
        RunRegions::of(trace.ranks.iter().map(|t| {
            let end = t.spans.iter().map(|s| s.end).max().unwrap_or_default();
            (t.rank, t.pcontrol.as_slice() as &[RegionMark], end)
        }))
    }

    /// Each region summed up, in the order the run first entered them.
    pub fn summary(&self) -> Vec<RegionSummary> {
        self.regions
            .iter()
            .map(|r| {
                let per_rank = r.per_rank();
                let times: Vec<u64> = per_rank.iter().map(|t| t.ns).collect();
                let time = match (times.iter().min(), times.iter().max()) {
                    (Some(&min_ns), Some(&max_ns)) => Spread {
                        min_ns,
                        mean_ns: times.iter().sum::<u64>() as f64 / times.len() as f64,
                        max_ns,
                    },
                    _ => Spread::default(),
                };
                let never_entered = self
                    .ranks
                    .iter()
                    .copied()
                    .filter(|rank| per_rank.binary_search_by_key(rank, |t| t.rank).is_err())
                    .collect();
                RegionSummary {
                    name: r.name.clone(),
                    instances: r.instance_count(),
                    open: r.instances.iter().filter(|i| i.open).count() as u32,
                    time,
                    never_entered,
                    from_ns: r.instances.iter().map(|i| i.enter.0).min().unwrap_or(0),
                    to_ns: r.instances.iter().map(|i| i.leave.0).max().unwrap_or(0),
                    per_rank,
                }
            })
            .collect()
    }
}
