//! Each rank's clock error bound, the one fact the clock alignment leaves every figure
//! that compares two ranks' times: a wait or a transfer no longer than the bounds of
//! its ranks is not told from the clocks' error. [`super::Trace::clock_error`] finds
//! one rank's in the run's description; [`ClockErrors`] reads them all once, for a
//! caller that looks one up per message or per wait (scanning the description each
//! time made those quadratic in the ranks: seconds at 1 024 ranks).

use overlap_format::schema::{MergedInfo, Nanos, RankClock};

use crate::fxhash::FxHashMap;

/// The clock error bound of the rank whose alignment is `r`, ns: 0 when it reads rank
/// 0's clock, else the larger of its two synchronisations' bounds.
pub(super) fn of_rank_clock(r: &RankClock) -> Nanos {
    if r.shared_clock {
        Nanos::ZERO
    } else {
        Nanos(r.init_error_ns.max(r.final_error_ns.unwrap_or(0)))
    }
}

/// Every rank's clock error bound, by rank.
pub struct ClockErrors {
    by_rank: FxHashMap<u32, Nanos>,
    /// The bound of a rank the description does not name: the run's largest.
    otherwise: Nanos,
}

impl ClockErrors {
    /// The bounds of the ranks of the run `info` describes.
    pub fn of(info: &MergedInfo) -> ClockErrors {
        let mut by_rank = FxHashMap::default();
        for r in &info.ranks {
            // The first time a rank is named, as a scan finds it.
            by_rank.entry(r.rank).or_insert_with(|| of_rank_clock(r));
        }
        ClockErrors {
            by_rank,
            otherwise: Nanos(info.max_clock_error_ns),
        }
    }

    /// The clock error bound of rank `rank`, ns.
    pub fn of_rank(&self, rank: u32) -> Nanos {
        self.by_rank.get(&rank).copied().unwrap_or(self.otherwise)
    }
}

#[cfg(test)]
mod tests {
    use overlap_format::schema::{Nanos, RankClock};
    use overlap_format::testing::{merged_info, rank_clock};

    use super::ClockErrors;
    use crate::model::Trace;

    fn clock(rank: u32, shared: bool, init: u64, last: Option<u64>) -> RankClock {
        RankClock {
            shared_clock: shared,
            init_error_ns: init,
            final_offset_ns: last.map(|_| 0),
            final_error_ns: last,
            ..rank_clock(rank)
        }
    }

    /// Each lookup gives what the scan of the description gives: a rank on rank 0's
    /// clock 0, another the larger of its bounds (with or without a final one), a rank
    /// named twice its first entry, a rank not named the run's largest.
    #[test]
    fn each_rank_is_looked_up_as_the_description_is_scanned() {
        let mut info = merged_info(
            4,
            vec![
                clock(0, true, 0, None),
                clock(1, false, 250, Some(120)),
                clock(2, false, 40, Some(300)),
                clock(3, false, 70, None),
                clock(3, false, 5_000, None),
            ],
        );
        info.max_clock_error_ns = 900;
        let trace = Trace {
            source: "run".into(),
            info,
            ranks: Vec::new(),
            messages: Vec::new(),
            requests: Vec::new(),
            compute: Vec::new(),
        };
        let errors = ClockErrors::of(&trace.info);
        let expected = [(0, 0), (1, 250), (2, 300), (3, 70), (4, 900), (77, 900)];
        for (rank, ns) in expected {
            assert_eq!(errors.of_rank(rank), Nanos(ns), "rank {rank}");
            assert_eq!(trace.clock_error(rank), Nanos(ns), "rank {rank}, scanned");
        }
    }
}
