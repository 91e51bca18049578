//! A location's clock offsets, every one of them: Score-P measures one at
//! initialisation, one at finalisation and, with periodic synchronisation, more in
//! between; Scalasca and the OTF2 reader interpolate linearly between successive ones.
//! overlap's alignment draws a line through the first and the last (the rank's init
//! and final synchronisations); the ones in between bend that line, and each time read
//! is moved by the bend at its time, so that the rank is aligned piecewise-linearly.
//!
//! ```text
//!  offset  ^        o  (measured at 1000: +100)
//!          |      /   \
//!          |    /       \
//!          o - - - - - - - o   the line through the first and the last
//!          0      1000    2000 local ticks: a time at 1000 moves by +100
//! ```
//!
//! Before the first offset and after the last there is nothing to bend: the line (and
//! its drift) applies as it does to a rank file. The error bound of the alignment is
//! the largest standard deviation of all the offsets, not only of the two ends.

use overlap_otf2::ClockOffset;

/// The bend of a location's clock offsets beyond the line through the first and the
/// last (none with two or fewer).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Bend {
    /// The offsets (local ticks, global minus local ticks), in time order.
    points: Vec<(u64, i64)>,
}

impl Bend {
    /// The bend of `offsets` (in time order), `None` when they draw no more than a
    /// line.
    pub fn of(offsets: &[ClockOffset]) -> Option<Bend> {
        if offsets.len() <= 2 {
            return None;
        }
        let points: Vec<(u64, i64)> = offsets.iter().map(|o| (o.time, o.offset)).collect();
        let bend = Bend { points };
        bend.points
            .iter()
            .any(|(t, _)| bend.at(*t) != 0)
            .then_some(bend)
    }

    /// The offset interpolated between the measurements at `t` minus the line's,
    /// ticks (0 outside the measurements).
    fn at(&self, t: u64) -> i64 {
        let (Some(&first), Some(&last)) = (self.points.first(), self.points.last()) else {
            return 0;
        };
        if t <= first.0 || t >= last.0 {
            return 0;
        }
        let Some(i) = self
            .points
            .windows(2)
            .position(|w| w[0].0 <= t && t < w[1].0)
        else {
            return 0;
        };
        let (a, b) = (self.points[i], self.points[i + 1]);
        interpolate(a, b, t) - interpolate(first, last, t)
    }

    /// Local `ticks` moved by the bend at their time.
    pub fn apply(&self, ticks: u64) -> u64 {
        ticks.saturating_add_signed(self.at(ticks))
    }
}

/// The offset on the line through `a` and `b` at `t` (between them).
fn interpolate(a: (u64, i64), b: (u64, i64), t: u64) -> i64 {
    if b.0 <= a.0 {
        return a.1;
    }
    let span = i128::from(b.0 - a.0);
    let along = i128::from(t.saturating_sub(a.0));
    let rise = i128::from(b.1) - i128::from(a.1);
    let off = i128::from(a.1) + rise * along / span;
    i64::try_from(off).unwrap_or(a.1)
}

/// The error bound of the offsets: the largest standard deviation of them all, ticks.
pub(super) fn spread(offsets: &[ClockOffset]) -> f64 {
    offsets.iter().map(|o| o.std_dev.abs()).fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The drawing of the module: measured 0 at 0, +100 at 1000, 0 at 2000.
    #[test]
    fn offsets_between_the_ends_bend_the_line() {
        let offsets = [
            ClockOffset::new(0, 0, 1.0),
            ClockOffset::new(1000, 100, 7.0),
            ClockOffset::new(2000, 0, 2.0),
        ];
        let bend = Bend::of(&offsets).expect("a bend");
        assert_eq!(bend.apply(1000), 1100);
        assert_eq!(bend.apply(500), 550);
        assert_eq!(bend.apply(1500), 1550);
        // At the ends and beyond them the line applies, unbent.
        assert_eq!(bend.apply(0), 0);
        assert_eq!(bend.apply(2000), 2000);
        assert_eq!(bend.apply(5000), 5000);
        assert_eq!(spread(&offsets), 7.0);
    }

    #[test]
    fn a_rising_line_with_a_dip_bends_by_the_difference() {
        // The line through the ends: -10 at 0, +30 at 4000 (+10 per 1000); measured
        // -10 at 2000, where the line says +10: a bend of -20 there.
        let offsets = [
            ClockOffset::new(0, -10, 0.0),
            ClockOffset::new(2000, -10, 0.0),
            ClockOffset::new(4000, 30, 0.0),
        ];
        let bend = Bend::of(&offsets).expect("a bend");
        assert_eq!(bend.apply(2000), 1980);
        assert_eq!(bend.apply(1000), 990);
        assert_eq!(bend.apply(3000), 2990);
    }

    #[test]
    fn offsets_on_the_line_or_too_few_do_not_bend() {
        assert_eq!(
            Bend::of(&[ClockOffset::new(0, 5, 0.0), ClockOffset::new(100, 9, 0.0)]),
            None
        );
        let on_line = [
            ClockOffset::new(0, 0, 0.0),
            ClockOffset::new(50, 5, 0.0),
            ClockOffset::new(100, 10, 0.0),
        ];
        assert_eq!(Bend::of(&on_line), None);
        assert_eq!(spread(&[]), 0.0);
    }
}
