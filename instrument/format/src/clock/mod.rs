//! The clock model: how one rank's local times map onto rank 0's clock, from the
//! offset estimates the recorder measured at Init and Finalize (Score-P's ping-pong
//! method, see `overlap-instrument`'s clock), and how raw time-stamp counter readings
//! turn into nanoseconds ([`TscConversion`]). Both are applied after the run, by whoever
//! reads a trace; the recorder only measures.

mod tsc;

use crate::schema::{ClockSync, SyncPhase};

pub use tsc::TscConversion;

/// Maps one rank's local times onto rank 0's clock: the offset is interpolated linearly
/// between the init and final estimates (and extrapolated along the same line outside
/// them); with only the init estimate, the offset is constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockModel {
    init: ClockSync,
    last: Option<ClockSync>,
}

impl ClockModel {
    /// A model from the init estimate and, when the rank finalised, the final one.
    pub fn new(init: ClockSync, last: Option<ClockSync>) -> ClockModel {
        let last = last.filter(|f| f.phase == SyncPhase::Final && f.local_ns > init.local_ns);
        ClockModel { init, last }
    }

    /// The identity: for rank 0, or a rank that has no estimate.
    pub fn identity() -> ClockModel {
        ClockModel::new(
            ClockSync {
                phase: SyncPhase::Init,
                local_ns: 0,
                offset_ns: 0,
                error_ns: 0,
                rtt_ns: 0,
                rounds: 0,
            },
            None,
        )
    }

    /// The init estimate.
    pub fn init(&self) -> ClockSync {
        self.init
    }

    /// The final estimate, when there is a usable one.
    pub fn last(&self) -> Option<ClockSync> {
        self.last
    }

    fn fraction(&self, local_ns: u64) -> Option<f64> {
        let last = self.last?;
        let span = (last.local_ns - self.init.local_ns) as f64;
        Some((local_ns as f64 - self.init.local_ns as f64) / span)
    }

    /// This rank's clock minus rank 0's at local time `local_ns`, ns (rounded).
    pub fn offset_at(&self, local_ns: u64) -> i64 {
        match (self.fraction(local_ns), self.last) {
            (Some(f), Some(last)) => {
                let a = self.init.offset_ns as f64;
                let b = last.offset_ns as f64;
                (a + (b - a) * f).round() as i64
            }
            _ => self.init.offset_ns,
        }
    }

    /// Error bound of [`ClockModel::offset_at`]: interpolated between the two estimates'
    /// bounds, and the larger of them outside.
    pub fn error_at(&self, local_ns: u64) -> u64 {
        match (self.fraction(local_ns), self.last) {
            (Some(f), Some(last)) if (0.0..=1.0).contains(&f) => {
                let a = self.init.error_ns as f64;
                let b = last.error_ns as f64;
                (a + (b - a) * f).ceil() as u64
            }
            (_, Some(last)) => self.init.error_ns.max(last.error_ns),
            _ => self.init.error_ns,
        }
    }

    /// Largest error bound over the whole run.
    pub fn max_error(&self) -> u64 {
        self.last
            .map_or(self.init.error_ns, |l| l.error_ns.max(self.init.error_ns))
    }

    /// Drift against rank 0 in parts per billion (positive: this clock runs fast), when
    /// both estimates exist.
    pub fn drift_ppb(&self) -> Option<f64> {
        let last = self.last?;
        let dt = (last.local_ns - self.init.local_ns) as f64;
        Some((last.offset_ns - self.init.offset_ns) as f64 / dt * 1e9)
    }

    /// Rank 0's absolute clock at this rank's local time `local_ns` (relative to the
    /// rank's absolute `epoch_ns`).
    pub fn to_reference(&self, epoch_ns: u64, local_ns: u64) -> i128 {
        epoch_ns as i128 + local_ns as i128 - self.offset_at(local_ns) as i128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync(phase: SyncPhase, local_ns: u64, offset_ns: i64, error_ns: u64) -> ClockSync {
        ClockSync {
            phase,
            local_ns,
            offset_ns,
            error_ns,
            rtt_ns: 2 * error_ns,
            rounds: 10,
        }
    }

    #[test]
    fn interpolation_is_linear_between_estimates_and_extrapolates() {
        //  local ns:    1_000                      1_001_000
        //  offset:       +500 ---------------------->  +1500   (1000 ns per ms: 1e6 ppb fast)
        //  error:          10 ---------------------->     30
        let m = ClockModel::new(
            sync(SyncPhase::Init, 1_000, 500, 10),
            Some(sync(SyncPhase::Final, 1_001_000, 1_500, 30)),
        );
        assert_eq!(m.offset_at(1_000), 500);
        assert_eq!(m.offset_at(501_000), 1_000);
        assert_eq!(m.offset_at(1_001_000), 1_500);
        assert_eq!(m.offset_at(1_501_000), 2_000);
        assert_eq!(m.error_at(501_000), 20);
        assert_eq!(m.error_at(2_000_000), 30);
        assert_eq!(m.max_error(), 30);
        assert_eq!(m.drift_ppb(), Some(1e6));
        assert_eq!(m.to_reference(10_000, 501_000), 10_000 + 501_000 - 1_000);
    }

    #[test]
    fn without_final_estimate_offset_is_constant() {
        let m = ClockModel::new(sync(SyncPhase::Init, 0, -250, 7), None);
        assert_eq!(m.offset_at(0), -250);
        assert_eq!(m.offset_at(10_000_000_000), -250);
        assert_eq!(m.error_at(5), 7);
        assert_eq!(m.drift_ppb(), None);
        // A "final" estimate taken before the init one is ignored.
        let m = ClockModel::new(
            sync(SyncPhase::Init, 100, 5, 1),
            Some(sync(SyncPhase::Final, 50, 9, 1)),
        );
        assert_eq!(m.offset_at(1_000), 5);
    }
}
