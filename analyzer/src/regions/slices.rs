//! A rank's region instances as the merged trace draws them: a slice each, on tracks of
//! the rank's own ([`overlap_format::region::region_tid`]). Instances that nest share a
//! track, as slices must on one; one that overlaps another without nesting (IPM lets a
//! program leave `a` while `b`, entered inside it, is still open) takes the next track.
//!
//! ```text
//!  regions     |setup|  |step ..................|  |step ...|
//!                          |halo|    |halo|
//!  regions 2                     |io ..........|        (io left after step ended)
//! ```

use std::cmp::Reverse;

use overlap_format::schema::{Nanos, RegionArgs};

use super::{rank_instances, RegionMark};

/// One instance of a region on one rank, as a slice of the merged trace.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionSlice {
    /// The track it goes on, from 0: its thread id is `region_tid(lane)`.
    pub lane: u32,
    /// When the call that entered the region was entered.
    pub start: Nanos,
    /// When the call that left it returned (the rank's end when it never did).
    pub end: Nanos,
    /// Its region, instance and whether it was left.
    pub args: RegionArgs,
}

/// The slices of rank `rank`'s regions (its Pcontrol calls `marks` in time order; `end`
/// when its trace ends), by start, each on the first track where it nests.
pub fn rank_slices(rank: u32, marks: &[RegionMark], end: Nanos) -> Vec<RegionSlice> {
    let mut slices: Vec<RegionSlice> = rank_instances(rank, marks, end)
        .into_iter()
        .map(|(region, i)| RegionSlice {
            lane: 0,
            start: i.enter,
            end: i.leave.max(i.enter),
            args: RegionArgs {
                region,
                instance: i.index,
                open: i.open,
            },
        })
        .collect();
    // Outer before inner at the same start, so that the inner nests.
    slices.sort_by_key(|s| (s.start, Reverse(s.end)));
    // Per track, the ends of the slices still open at the current start, innermost last.
    let mut tracks: Vec<Vec<Nanos>> = Vec::new();
    for s in &mut slices {
        let fits = |open: &mut Vec<Nanos>| {
            while open.last().is_some_and(|e| *e <= s.start) {
                open.pop();
            }
            open.last().is_none_or(|e| *e >= s.end)
        };
        let lane = match tracks.iter_mut().position(fits) {
            Some(lane) => lane,
            None => {
                tracks.push(Vec::new());
                tracks.len() - 1
            }
        };
        tracks[lane].push(s.end);
        s.lane = lane as u32;
    }
    slices
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(at: u64, level: i32, name: &str) -> RegionMark {
        RegionMark {
            start: Nanos(at),
            end: Nanos(at + 1),
            level,
            name: (!name.is_empty()).then(|| name.to_string()),
        }
    }

    #[test]
    fn nested_regions_share_a_track_and_a_crossing_one_takes_the_next() {
        //  0    10   20   30   40   50   60
        //  |step .........................|      track 0
        //       |halo|                           track 0 (nested)
        //                 |io .................| track 1: it outlives step
        //  (io is left at 70, after step at 61)
        let marks = [
            mark(0, 1, "step"),
            mark(10, 1, "halo"),
            mark(20, -1, "halo"),
            mark(30, 1, "io"),
            mark(60, -1, "step"),
            mark(70, -1, "io"),
        ];
        let slices = rank_slices(0, &marks, Nanos(100));
        let got: Vec<(&str, u32, u64, u64)> = slices
            .iter()
            .map(|s| (s.args.region.as_str(), s.lane, s.start.0, s.end.0))
            .collect();
        assert_eq!(
            got,
            vec![("step", 0, 0, 61), ("halo", 0, 10, 21), ("io", 1, 30, 71)]
        );
        assert!(slices.iter().all(|s| !s.args.open && s.args.instance == 1));
    }

    #[test]
    fn a_region_never_left_ends_with_the_rank_and_says_so() {
        let slices = rank_slices(3, &[mark(5, 1, "")], Nanos(50));
        assert_eq!(slices.len(), 1);
        assert_eq!((slices[0].start, slices[0].end), (Nanos(5), Nanos(50)));
        assert!(slices[0].args.open);
        assert_eq!(slices[0].args.region, "pcontrol");
    }
}
