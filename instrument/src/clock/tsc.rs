//! The time-stamp counter as a clock: whether it can be trusted here, reading it, and
//! the calibration readings (pairs of TSC and `CLOCK_MONOTONIC` taken together) that the
//! writer thread puts in the stream as the run goes. Readers turn ticks into nanoseconds
//! with them (`overlap_format::clock::TscConversion`); the recorder converts nothing.

use super::monotonic_now_ns;

/// True when the TSC is a sound clock here: x86-64, constant and non-stop (invariant)
/// TSC, and the kernel trusts it as its own clock source (so it is synchronised across
/// cores).
pub fn tsc_usable() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or_default();
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    let source =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    has("constant_tsc") && has("nonstop_tsc") && source.trim() == "tsc"
}

#[inline]
pub(super) fn read_tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions on x86-64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_now_ns()
    }
}

/// The first two readings are at least this far apart, so the tick rate is known to a
/// few parts per million even for a short run.
const FIRST_SEGMENT_NS: u64 = 10_000_000;
/// Later readings are taken at most this often, so a rank's file grows by 16 bytes a
/// second for them.
const PAIR_INTERVAL_NS: u64 = 1_000_000_000;

/// A TSC reading with the monotonic time it happened at: of five tries, the one whose
/// surrounding monotonic reads were closest together.
pub(crate) fn pair() -> (u64, u64) {
    (0..5)
        .map(|_| {
            let a = monotonic_now_ns();
            let t = read_tsc();
            let b = monotonic_now_ns();
            (b - a, t, a + (b - a) / 2)
        })
        .min()
        .map(|(_, t, m)| (t, m))
        .unwrap_or((read_tsc(), monotonic_now_ns()))
}

/// Decides when the writer takes a calibration reading: at once, then when the first
/// segment is long enough, then once a second, and whenever asked (at the end).
#[derive(Debug, Default)]
pub(crate) struct Calibrator {
    last_ns: Option<u64>,
    taken: usize,
}

impl Calibrator {
    /// A reading, when one is due (or `force`).
    pub(crate) fn reading(&mut self, force: bool) -> Option<(u64, u64)> {
        let now = monotonic_now_ns();
        let due = match self.last_ns {
            None => true,
            Some(last) => {
                let gap = if self.taken < 2 {
                    FIRST_SEGMENT_NS
                } else {
                    PAIR_INTERVAL_NS
                };
                force || now.saturating_sub(last) >= gap
            }
        };
        if !due {
            return None;
        }
        let p = pair();
        self.last_ns = Some(p.1);
        self.taken += 1;
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use overlap_format::clock::TscConversion;

    #[test]
    fn readings_convert_tsc_stamps_to_the_monotonic_clock() {
        let mut c = Calibrator::default();
        let first = c.reading(false).expect("the first reading is due at once");
        assert_eq!(
            c.reading(false),
            None,
            "the second waits for the first segment"
        );
        std::thread::sleep(std::time::Duration::from_millis(11));
        let before = monotonic_now_ns();
        let stamp = read_tsc();
        let after = monotonic_now_ns();
        let second = c.reading(false).expect("due after 10 ms");
        assert_eq!(c.reading(false), None, "then once a second");
        let forced = c.reading(true).expect("forced at the end");
        if !tsc_usable() {
            return; // Stamps are not ticks here: nothing more to check.
        }
        let conv = TscConversion::new([first, second, forced]).expect("readings advance");
        let ns = conv.to_monotonic(stamp);
        // Within a microsecond of where the monotonic clock put it.
        assert!(
            ns + 1_000 >= before && ns <= after + 1_000,
            "{before} <= {ns} <= {after}"
        );
    }
}
