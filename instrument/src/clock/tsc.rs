//! The time-stamp counter as a clock: whether it can be trusted here, reading it, and
//! turning tick counts into `CLOCK_MONOTONIC` nanoseconds after the fact.
//!
//! The conversion is calibrated as the run goes, by pairs of (TSC, monotonic) readings.
//! The writer converts each batch of stamps with what it knows then, and a stamp taken
//! after the last reading is extrapolated along the last segment. When a new reading
//! arrives, the next segment starts where the stamps already converted ended, not at the
//! reading itself: a stamp never converts to a time earlier than one converted before it
//! (a thread's events never run backwards, across refreshes too), and a stamp converted
//! twice gets the same time both times.

use std::cell::Cell;

use super::monotonic_now_ns;
use crate::schema::Nanos;

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

/// One piece of the conversion: from tick `from_tsc` on (until the next segment), a
/// tick count `t` is `mono + (t - from_tsc) * ns_per_tick` absolute monotonic ns.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Segment {
    from_tsc: u64,
    mono: f64,
    ns_per_tick: f64,
}

impl Segment {
    fn at(&self, tsc: u64) -> f64 {
        self.mono + (tsc as i128 - self.from_tsc as i128) as f64 * self.ns_per_tick
    }
}

/// The TSC-to-monotonic conversion, calibrated by (TSC, `CLOCK_MONOTONIC`) readings
/// taken as the run goes (see the module's documentation).
#[derive(Debug)]
pub(crate) struct TscCalibration {
    epoch_ns: u64,
    /// The latest reading used: (tsc, monotonic ns).
    last: (u64, u64),
    /// The conversion, by starting tick; empty until a second reading exists.
    segments: Vec<Segment>,
    /// The largest tick count converted so far: conversions up to it are final.
    converted_up_to: Cell<u64>,
}

/// The first segment must span at least this much, so the tick rate is known to a few
/// parts per million before anything is converted.
const FIRST_SEGMENT_NS: u64 = 20_000_000;
/// Later readings are taken at most this often, so the list grows by 3600 an hour.
const PAIR_INTERVAL_NS: u64 = 1_000_000_000;

impl TscCalibration {
    pub(super) fn new(epoch_ns: u64) -> TscCalibration {
        Self::starting_at(epoch_ns, Self::pair())
    }

    fn starting_at(epoch_ns: u64, first: (u64, u64)) -> TscCalibration {
        TscCalibration {
            epoch_ns,
            last: first,
            segments: Vec::new(),
            converted_up_to: Cell::new(0),
        }
    }

    /// A TSC reading with the monotonic time it happened at: of five tries, the one whose
    /// surrounding monotonic reads were closest together.
    fn pair() -> (u64, u64) {
        (0..5)
            .map(|_| {
                let a = monotonic_now_ns();
                let t = read_tsc();
                let b = monotonic_now_ns();
                (b - a, t, a + (b - a) / 2)
            })
            .min()
            .map(|(_, t, m)| (t, m))
            .expect("five tries")
    }

    /// Takes a new reading when the last one is old enough (waiting for the first
    /// segment to be long enough to give the tick rate).
    pub(super) fn refresh(&mut self) {
        let since = monotonic_now_ns().saturating_sub(self.last.1);
        if self.segments.is_empty() && since < FIRST_SEGMENT_NS {
            std::thread::sleep(std::time::Duration::from_nanos(FIRST_SEGMENT_NS - since));
        } else if !self.segments.is_empty() && since < PAIR_INTERVAL_NS {
            return;
        }
        self.add_reading(Self::pair());
    }

    /// Extends the conversion with the reading `(tsc, mono)`: a new segment from the end
    /// of what was converted (or the last reading) to it. A reading that does not lie
    /// after what was converted is left out; a later one will do.
    fn add_reading(&mut self, (tsc, mono): (u64, u64)) {
        let (last_tsc, last_mono) = self.last;
        if tsc <= last_tsc || mono <= last_mono {
            return;
        }
        let seen = self.converted_up_to.get();
        let (from_tsc, from_mono) = match self.segments.last() {
            // Stamps past the last reading were extrapolated: pin them where they are.
            Some(s) if seen >= last_tsc => (seen, s.at(seen)),
            _ => (last_tsc, last_mono as f64),
        };
        if tsc <= from_tsc || mono as f64 <= from_mono {
            return;
        }
        self.segments.push(Segment {
            from_tsc,
            mono: from_mono,
            ns_per_tick: (mono as f64 - from_mono) / (tsc - from_tsc) as f64,
        });
        self.last = (tsc, mono);
    }

    /// `tsc` in ns since the epoch. Before a second reading exists there is no rate, and
    /// every stamp is the first reading's time: the writer refreshes before converting.
    pub(super) fn to_nanos(&self, tsc: u64) -> Nanos {
        let mono = match self.segments.as_slice() {
            [] => self.last.1 as f64,
            segments => {
                // The segment holding `tsc` (the first one for ticks before it).
                let i = segments.partition_point(|s| s.from_tsc <= tsc).max(1);
                segments[i - 1].at(tsc)
            }
        };
        if tsc > self.converted_up_to.get() {
            self.converted_up_to.set(tsc);
        }
        Nanos((mono.round() as i128 - self.epoch_ns as i128).max(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{ClockSource, Stamp, Timebase};

    #[test]
    fn tsc_stamps_convert_to_the_monotonic_clock() {
        if !tsc_usable() {
            return; // Nothing to check on this machine.
        }
        let epoch = monotonic_now_ns();
        let tb = Timebase::new(ClockSource::Tsc, epoch);
        let mut conv = tb.converter(epoch);
        conv.refresh();
        let before = monotonic_now_ns() - epoch;
        let stamp = tb.stamp();
        let after = monotonic_now_ns() - epoch;
        let ns = conv.to_nanos(stamp).0;
        // Within a microsecond of where the monotonic clock put it.
        assert!(
            ns + 1_000 >= before && ns <= after + 1_000,
            "{before} <= {ns} <= {after}"
        );
    }

    #[test]
    fn monotonic_stamps_are_nanoseconds_since_the_epoch() {
        let conv = Timebase::new(ClockSource::Monotonic, 0).converter(0);
        assert_eq!(conv.to_nanos(Stamp::from_nanos(Nanos(1234))), Nanos(1234));
        let mut calib = TscCalibration::starting_at(1_000, (100, 10_000));
        calib.add_reading((200, 20_000));
        calib.add_reading((300, 40_000));
        // 100 ticks = 10_000 ns on the first segment, 20_000 ns on the second.
        assert_eq!(calib.to_nanos(150), Nanos(15_000 - 1_000));
        assert_eq!(calib.to_nanos(250), Nanos(30_000 - 1_000));
        assert_eq!(calib.to_nanos(350), Nanos(50_000 - 1_000), "extrapolated");
        assert_eq!(
            calib.to_nanos(50),
            Nanos(5_000 - 1_000),
            "extrapolated back"
        );
    }

    /// Readings (tick, ns) and stamps, with ticks and ns on one axis for clarity:
    ///
    /// ```text
    ///  readings   (0,0)        (100,100)                  (200,180)
    ///  stamps                      120    150 | refresh |  160   190
    ///  old rule:                   120    150             148 <- backwards
    ///  pinned:                     120    150             156    174
    /// ```
    #[test]
    fn a_refresh_never_moves_time_backwards() {
        let mut c = TscCalibration::starting_at(0, (0, 0));
        c.add_reading((100, 100));
        assert_eq!(c.to_nanos(120), Nanos(120));
        assert_eq!(c.to_nanos(150), Nanos(150), "extrapolated at 1 ns/tick");
        // The forced refresh: the clock ran slower than extrapolated.
        c.add_reading((200, 180));
        assert_eq!(
            c.to_nanos(120),
            Nanos(120),
            "converted stamps keep their time"
        );
        assert_eq!(c.to_nanos(150), Nanos(150));
        // From (150, 150) to (200, 180): 0.6 ns a tick.
        assert_eq!(c.to_nanos(160), Nanos(156));
        assert_eq!(c.to_nanos(190), Nanos(174));
        assert_eq!(c.to_nanos(200), Nanos(180), "the reading itself");
    }

    #[test]
    fn a_reading_behind_the_extrapolation_waits_for_a_later_one() {
        let mut c = TscCalibration::starting_at(0, (0, 0));
        c.add_reading((100, 100));
        assert_eq!(c.to_nanos(190), Nanos(190));
        // Read at tick 200, the clock says 185: behind what tick 190 was given.
        c.add_reading((200, 185));
        assert_eq!(c.to_nanos(195), Nanos(195), "still extrapolated");
        c.add_reading((300, 290));
        assert_eq!(c.to_nanos(195), Nanos(195));
        assert_eq!(c.to_nanos(245), Nanos(240), "(195, 195) to (300, 290)");
    }

    /// Random tick rates and reading jitter, stamps interleaved with refreshes as the
    /// writer does it: every thread's times are non-decreasing, and converting a stamp
    /// again gives the same time.
    #[test]
    fn conversions_are_monotonic_and_final_under_random_refreshes() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200 {
            // The writer refreshes before its first batch, so a segment exists.
            let mut c = TscCalibration::starting_at(5, (1_000, 1_000));
            c.add_reading((2_000, 2_000));
            let mut tick = 2_000u64;
            let mut truth = 2_000f64;
            let mut emitted: Vec<(u64, Nanos)> = Vec::new();
            for _ in 0..50 {
                // A batch of stamps, then a reading with a drifting rate and jitter.
                for _ in 0..(next() % 5) {
                    tick += 1 + next() % 400;
                    let ns = c.to_nanos(tick);
                    if let Some(&(_, before)) = emitted.last() {
                        assert!(ns >= before, "{ns:?} after {before:?}");
                    }
                    emitted.push((tick, ns));
                }
                let step = 1 + next() % 1_000;
                let rate = 0.2 + (next() % 1_000) as f64 / 500.0;
                tick += step;
                truth += step as f64 * rate;
                let jitter = (next() % 40) as f64 - 20.0;
                c.add_reading((tick, (truth + jitter).max(0.0) as u64));
            }
            for &(t, ns) in &emitted {
                assert_eq!(c.to_nanos(t), ns, "tick {t} converted again");
            }
        }
    }
}
