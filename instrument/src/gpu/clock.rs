//! Device time on the host clock: [`DeviceClock`].
//!
//! A device times its work with its own timer (CUDA events), which says how long after
//! a *reference event* something happened, not when on the host's clock. So the clock
//! records a reference event on an idle stream and waits for it: the device passed it
//! at some host time within `[before, after]`, the host readings around the record and
//! the wait. That is an [`Anchor`]: host time `(before + after) / 2`, within half the
//! window. A device time `elapsed` after the reference is then the host time
//! `anchor + elapsed`, within
//!
//! ```text
//! error = half window + timer resolution + drift * elapsed + rounding of elapsed
//! ```
//!
//! where `drift` is the most the device timer and `CLOCK_MONOTONIC` may run apart
//! (an allowance, widened when two anchors show more) and the rounding is that of the
//! timer's `f32` milliseconds (24 bits: `elapsed * 2^-24`). The clock asks to be
//! re-anchored every [`ClockPolicy::reanchor_ns`] or [`ClockPolicy::reanchor_ops`]
//! operations, so that the drift term stays small. The bound is carried on every
//! record ([`crate::recorder::GpuWork::clock_error_ns`]), as the MPI clock alignment
//! carries its own.

/// How device times are put on the host clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockPolicy {
    /// Resolution of the device timer, ns (CUDA events: about 0.5 µs).
    pub resolution_ns: u64,
    /// The most the device timer may drift from the host clock, parts per million,
    /// before any is measured.
    pub drift_ppm: f64,
    /// Re-anchor when the anchor is this old, ns of host time.
    pub reanchor_ns: u64,
    /// Re-anchor after this many operations timed against one anchor.
    pub reanchor_ops: u32,
}

impl ClockPolicy {
    /// CUDA events: 0.5 µs resolution, 20 ppm drift allowance, re-anchored every 50 ms
    /// or 512 operations.
    pub const CUDA: ClockPolicy = ClockPolicy {
        resolution_ns: 500,
        drift_ppm: 20.0,
        reanchor_ns: 50_000_000,
        reanchor_ops: 512,
    };
}

impl Default for ClockPolicy {
    fn default() -> Self {
        ClockPolicy::CUDA
    }
}

/// A reference event's place on the host clock: the device passed it at `host_ns`,
/// within `half_window_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    /// Host ns (the recorder's clock) the reference event is put at.
    pub host_ns: u64,
    /// How far the truth may be from `host_ns`.
    pub half_window_ns: u64,
}

impl Anchor {
    /// The anchor of a reference event recorded after host time `before_ns` and known
    /// complete at `after_ns`.
    pub fn from_window(before_ns: u64, after_ns: u64) -> Anchor {
        let (lo, hi) = (before_ns.min(after_ns), before_ns.max(after_ns));
        let half = (hi - lo).div_ceil(2);
        Anchor {
            host_ns: lo + (hi - lo) / 2,
            half_window_ns: half,
        }
    }
}

/// A device time placed on the host clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    /// Host ns.
    pub ns: u64,
    /// How far the truth may be from `ns`.
    pub error_ns: u64,
}

/// Relative rounding of an `f32` (24-bit mantissa).
const F32_ROUNDING: f64 = 1.0 / (1u64 << 24) as f64;

/// Puts device times on the host clock (see the module's documentation).
#[derive(Clone, Debug)]
pub struct DeviceClock {
    policy: ClockPolicy,
    current: Option<Anchor>,
    ops: u32,
    drift_ppm: f64,
}

impl DeviceClock {
    /// A clock with no anchor yet.
    pub fn new(policy: ClockPolicy) -> DeviceClock {
        DeviceClock {
            policy,
            current: None,
            ops: 0,
            drift_ppm: policy.drift_ppm,
        }
    }

    /// The anchor operations are timed against now.
    pub fn current(&self) -> Option<Anchor> {
        self.current
    }

    /// The drift allowance in use, ppm: the policy's, or more when anchors showed more.
    pub fn drift_ppm(&self) -> f64 {
        self.drift_ppm
    }

    /// True when there is no anchor, or it is too old or has timed too many operations.
    pub fn needs_anchor(&self, host_now_ns: u64) -> bool {
        match self.current {
            None => true,
            Some(a) => {
                host_now_ns.saturating_sub(a.host_ns) >= self.policy.reanchor_ns
                    || self.ops >= self.policy.reanchor_ops
            }
        }
    }

    /// One more operation timed against the current anchor.
    pub fn note_op(&mut self) {
        self.ops = self.ops.saturating_add(1);
    }

    /// Anchors again: a new reference event recorded after `before_ns` and complete at
    /// `after_ns`. `device_since_previous_ns`, when known, is the device time between
    /// the previous reference event and this one: their disagreement with the host
    /// clock, beyond what the two windows and the resolution explain, is drift, and
    /// widens the allowance when it exceeds it. Returns the new anchor.
    pub fn anchor(
        &mut self,
        before_ns: u64,
        after_ns: u64,
        device_since_previous_ns: Option<f64>,
    ) -> Anchor {
        let next = Anchor::from_window(before_ns, after_ns);
        if let (Some(prev), Some(device)) = (self.current, device_since_previous_ns) {
            if device > 0.0 {
                let host = next.host_ns as f64 - prev.host_ns as f64;
                let explained = (prev.half_window_ns + next.half_window_ns) as f64
                    + self.policy.resolution_ns as f64
                    + device * F32_ROUNDING;
                let unexplained = ((host - device).abs() - explained).max(0.0);
                let measured_ppm = unexplained / device * 1e6;
                self.drift_ppm = self.drift_ppm.max(measured_ppm);
            }
        }
        self.current = Some(next);
        self.ops = 0;
        next
    }

    /// The host time of a device time `elapsed_ns` after `anchor`'s reference event
    /// (negative: before it), with its error bound.
    pub fn place(&self, anchor: &Anchor, elapsed_ns: f64) -> Placed {
        let at = anchor.host_ns as f64 + elapsed_ns;
        let span = elapsed_ns.abs();
        let error = anchor.half_window_ns as f64
            + self.policy.resolution_ns as f64
            + self.drift_ppm * 1e-6 * span
            + span * F32_ROUNDING;
        Placed {
            ns: at.max(0.0).round() as u64,
            error_ns: error.ceil() as u64,
        }
    }

    /// [`DeviceClock::place`] for a timer reading in milliseconds (a CUDA event's
    /// elapsed time).
    pub fn place_ms(&self, anchor: &Anchor, elapsed_ms: f32) -> Placed {
        self.place(anchor, f64::from(elapsed_ms) * 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> ClockPolicy {
        ClockPolicy {
            resolution_ns: 500,
            drift_ppm: 20.0,
            reanchor_ns: 1_000_000,
            reanchor_ops: 3,
        }
    }

    #[test]
    fn an_anchor_is_the_middle_of_its_window() {
        let a = Anchor::from_window(1_000, 3_001);
        assert_eq!(a.host_ns, 2_000);
        assert_eq!(a.half_window_ns, 1_001, "rounded up: the bound must hold");
        assert_eq!(Anchor::from_window(5, 5).half_window_ns, 0);
        // Given backwards, the same window.
        assert_eq!(Anchor::from_window(3_001, 1_000), a);
    }

    #[test]
    fn device_times_are_placed_after_the_anchor_with_the_error_bound() {
        let mut c = DeviceClock::new(policy());
        let a = c.anchor(10_000, 12_000, None);
        // 1 ms after the reference: 11_000 + 1_000_000.
        let p = c.place_ms(&a, 1.0);
        assert_eq!(p.ns, 1_011_000);
        // 1_000 (half window) + 500 (resolution) + 20 (20 ppm of 1 ms) + 1e6 * 2^-24.
        let rounding = (1e6 / (1u64 << 24) as f64).ceil() as u64;
        assert!(
            p.error_ns >= 1_520 && p.error_ns <= 1_520 + rounding,
            "{p:?}"
        );
        // At the reference itself, only the window and the resolution.
        assert_eq!(c.place(&a, 0.0).error_ns, 1_500);
        // Negative elapsed times (the resolution's jitter) never go below zero.
        let early = c.place(&Anchor::from_window(0, 0), -800.0);
        assert_eq!(early.ns, 0);
    }

    #[test]
    fn the_clock_asks_to_be_anchored_again_by_age_or_by_operations() {
        let mut c = DeviceClock::new(policy());
        assert!(c.needs_anchor(0), "no anchor yet");
        c.anchor(0, 2_000, None);
        assert!(!c.needs_anchor(500_000));
        assert!(c.needs_anchor(1_001_000), "older than 1 ms");
        for _ in 0..3 {
            c.note_op();
        }
        assert!(c.needs_anchor(2_000), "3 operations timed");
        c.anchor(2_000_000, 2_000_100, Some(1_999_000.0));
        assert!(!c.needs_anchor(2_000_100), "operations counted afresh");
    }

    #[test]
    fn anchors_that_disagree_beyond_their_windows_widen_the_drift_allowance() {
        let mut c = DeviceClock::new(policy());
        c.anchor(0, 0, None);
        // Host says 10 ms passed, the device 10 ms - 500 ns: explained by the resolution.
        c.anchor(10_000_000, 10_000_000, Some(9_999_500.0));
        assert_eq!(c.drift_ppm(), 20.0);
        // Host 10 ms later again, the device 9_999 µs: 1 µs, of which 0.5 µs is
        // resolution and ~0.6 ns rounding: ~50 ppm measured.
        c.anchor(20_000_000, 20_000_000, Some(9_999_000.0));
        assert!(
            c.drift_ppm() > 49.0 && c.drift_ppm() < 51.0,
            "{}",
            c.drift_ppm()
        );
        // The wider allowance is in every bound from now on.
        let a = c.current().expect("anchored");
        assert!(c.place(&a, 1e6).error_ns >= 500 + 49);
    }
}
