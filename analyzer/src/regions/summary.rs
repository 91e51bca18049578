//! What `overlap analyze` says of the regions (`--full`, `--json`): per region, its
//! instances and how long the ranks spent in it, min / mean / max over the ranks that
//! entered it, and which ranks never did. Kept apart from the pairing, which the merge
//! uses too.

use serde::Serialize;

use super::{RankTime, RegionMark, RunRegions};
use overlap_format::schema::Nanos;

use crate::model::{Timeline, Trace};

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

/// What the regions read of a rank: its marks and its last call's exit (where a region
/// never left ends). An analysis that never holds the run keeps these of each rank.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RankMarks {
    rank: u32,
    marks: Vec<RegionMark>,
    end: Nanos,
}

impl RankMarks {
    /// The marks of rank timeline `t`.
    pub fn of(t: &Timeline) -> RankMarks {
        RankMarks {
            rank: t.rank,
            marks: t.pcontrol.clone(),
            end: t.spans.iter().map(|s| s.end).max().unwrap_or_default(),
        }
    }
}

/// Why a trace's regions cannot be told, if they cannot ([`super::unrecorded_marks`]).
fn regions_unknown(trace: &Trace) -> Option<String> {
    super::unrecorded_marks(trace.info.ranks.iter().map(|r| r.call_counts.as_ref()))
}

impl RunRegions {
    /// The regions of a loaded trace.
    pub fn of_trace(trace: &Trace) -> RunRegions {
        let marks: Vec<RankMarks> = trace.ranks.iter().map(RankMarks::of).collect();
        RunRegions::of_marks(trace, &marks)
    }

    /// The regions of the run `trace` describes (its ranks are not read), each rank's
    /// marks being `marks`.
    pub fn of_marks(trace: &Trace, marks: &[RankMarks]) -> RunRegions {
        let mut regions = RunRegions::of(marks.iter().map(|m| (m.rank, m.marks.as_slice(), m.end)));
        regions.unknown = regions_unknown(trace);
        regions
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

#[cfg(test)]
mod tests {
    use super::*;
    use overlap_format::schema::CallCounts;
    use overlap_format::testing::{merged_info, rank_clock};

    /// A trace of two ranks whose files counted, without recording, the calls `counted`
    /// (by name) on rank 1; rank 0 has no counts at all.
    fn trace(counted: &[(&str, u64)]) -> Trace {
        let mut info = merged_info(2, Vec::new());
        for rank in 0..2u32 {
            let mut r = rank_clock(rank);
            r.call_counts = (rank == 1).then(|| CallCounts {
                unrecorded: counted.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
                unseen_completions: 0,
            });
            info.ranks.push(r);
        }
        let timelines = (0..2).map(crate::model::Timeline::new).collect();
        Trace::new("t".into(), info, timelines, Vec::new(), Vec::new())
    }

    #[test]
    fn pcontrol_calls_only_counted_make_the_regions_unknown_not_none() {
        let old = trace(&[("MPI_Pcontrol", 4), ("MPI_Comm_rank", 2)]);
        let regions = RunRegions::of_trace(&old);
        assert!(regions.is_empty());
        let why = regions.unknown.expect("unknown");
        assert!(why.contains("MPI_Pcontrol 4 time(s)"), "{why}");
        // Counted and never called, or not counted at all: no region is an answer.
        let new = RunRegions::of_trace(&trace(&[("MPI_Comm_rank", 2)]));
        assert_eq!(new.unknown, None);
    }
}
