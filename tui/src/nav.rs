//! Moving about a timeline: the viewport (which time is at which column, at what zoom),
//! the lanes (one rank each, or a group of ranks when there are more ranks than rows),
//! and finding the event at a place or next to another. Pure state and arithmetic: the
//! drawing reads it, the key handling changes it, and both are tested apart.

use overlap_analyzer::model::{EventRef, Timeline};

use crate::run::Run;

/// The finest zoom: a tenth of a nanosecond per column.
const MIN_NS_PER_CELL: f64 = 0.1;

/// Which time each column shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Viewport {
    /// Time at the left edge of column 0, ns since the run's start.
    pub start: f64,
    /// ns per column.
    pub per_cell: f64,
}

impl Viewport {
    /// The whole of `[a, b)` in `width` columns.
    pub fn fit(a: u64, b: u64, width: u16) -> Viewport {
        let width = f64::from(width.max(1));
        Viewport {
            start: a as f64,
            per_cell: ((b.saturating_sub(a)) as f64 / width).max(MIN_NS_PER_CELL),
        }
    }

    /// The time range of column `col`.
    pub fn cell(&self, col: u16) -> (f64, f64) {
        let a = self.start + f64::from(col) * self.per_cell;
        (a, a + self.per_cell)
    }

    /// The column showing time `t`, if it is within `width` columns.
    pub fn column(&self, t: f64, width: u16) -> Option<u16> {
        let c = ((t - self.start) / self.per_cell).floor();
        (c >= 0.0 && c < f64::from(width)).then_some(c as u16)
    }

    /// The time at the middle of the view.
    pub fn middle(&self, width: u16) -> f64 {
        self.start + self.per_cell * f64::from(width) / 2.0
    }

    /// Zooms by `factor` (below 1: in), keeping time `anchor` at its column; never
    /// wider than twice `run_ns` over `width` columns, nor finer than a tenth of a
    /// nanosecond per column.
    pub fn zoom(&mut self, factor: f64, anchor: f64, run_ns: u64, width: u16) {
        let max_per_cell = run_ns as f64 * 2.0 / f64::from(width.max(1));
        let per_cell =
            (self.per_cell * factor).clamp(MIN_NS_PER_CELL, max_per_cell.max(MIN_NS_PER_CELL));
        let ratio = per_cell / self.per_cell;
        self.start = anchor - (anchor - self.start) * ratio;
        self.per_cell = per_cell;
    }

    /// Moves by `cells` columns (negative: to the left).
    pub fn pan(&mut self, cells: f64) {
        self.start += cells * self.per_cell;
    }

    /// Puts time `t` in the middle of `width` columns.
    pub fn center(&mut self, t: f64, width: u16) {
        self.start = t - self.per_cell * f64::from(width) / 2.0;
    }

    /// Shows `[a, b)`: left as it is when it is in view and at least a column wide (the
    /// view does not jump while stepping through events); else centred, zoomed out so it
    /// takes half the width when it is wider than the view, and zoomed in when it is
    /// narrower than a column, at most [`SHOW_ZOOM_STEP`] times per step (stepping
    /// through short events zooms in gradually, not from microseconds to nanoseconds
    /// per column at once).
    pub fn show(&mut self, a: f64, b: f64, width: u16) {
        let w = f64::from(width.max(1));
        let fits = b - a <= self.per_cell * w * 0.9
            && a >= self.start
            && b <= self.start + self.per_cell * w;
        if !fits || b - a < self.per_cell {
            if b - a > self.per_cell * w * 0.9 {
                self.per_cell = ((b - a) * 2.0 / w).max(MIN_NS_PER_CELL);
            } else if b - a < self.per_cell {
                let half_width = (b - a) * 2.0 / w;
                self.per_cell = half_width
                    .max(self.per_cell / SHOW_ZOOM_STEP)
                    .max(MIN_NS_PER_CELL);
            }
            self.center((a + b) / 2.0, width);
        }
    }
}

/// The most [`Viewport::show`] zooms in at once.
pub const SHOW_ZOOM_STEP: f64 = 8.0;

/// The lanes of a run: the positions (in `trace.ranks`) of `shown`, in its order,
/// `group` ranks per lane. A lane is a set of ranks: a filter keeps ranks that are not
/// next to each other ([`crate::filter`]).
pub fn lanes(shown: &[usize], group: usize) -> Vec<Vec<usize>> {
    shown.chunks(group.max(1)).map(<[usize]>::to_vec).collect()
}

/// Every rank of a run, in order: the lanes without a filter.
pub fn every_rank(run: &Run) -> Vec<usize> {
    (0..run.trace.ranks.len()).collect()
}

/// How a lane is labelled: `rank 3`; for a group, `r0-7` when its ranks follow each
/// other, `r3..41` when some between are not in it.
pub fn lane_label(run: &Run, lane: &[usize]) -> String {
    let rank = |p: usize| run.trace.ranks.get(p).map_or(0, |t| t.rank);
    match lane {
        [] => String::new(),
        [one] => format!("rank {}", rank(*one)),
        [first, .., last] => {
            let (a, b) = (rank(*first), rank(*last));
            let follow = lane.windows(2).all(|w| rank(w[1]) == rank(w[0]) + 1);
            if follow {
                format!("r{a}-{b}")
            } else {
                format!("r{}..{}", a.min(b), a.max(b))
            }
        }
    }
}

/// The event of `t` nearest to time `at`: one running then (the shortest, so that a call
/// inside a long span wins), else the closest within `tolerance` ns.
pub fn event_near(t: &Timeline, at: f64, tolerance: f64) -> Option<usize> {
    let i = t.spans.partition_point(|s| (s.start.0 as f64) <= at);
    let mut best: Option<(f64, u64, usize)> = None;
    let lo = i.saturating_sub(16);
    let hi = (i + 2).min(t.spans.len());
    for (k, s) in t.spans[lo..hi].iter().enumerate() {
        let (a, b) = (s.start.0 as f64, s.end.0 as f64);
        let distance = if at < a {
            a - at
        } else if at > b {
            at - b
        } else {
            0.0
        };
        if distance > tolerance {
            continue;
        }
        let key = (distance, s.duration().0, lo + k);
        if best.is_none_or(|b| (key.0, key.1) < (b.0, b.1)) {
            best = Some(key);
        }
    }
    best.map(|b| b.2)
}

/// The next (or previous) event of a rank after `from`, or the first one starting at
/// or after (before) `at` when nothing is selected there; only MPI calls when
/// `calls_only`.
pub fn step(
    t: &Timeline,
    from: Option<usize>,
    at: f64,
    forward: bool,
    calls_only: bool,
) -> Option<usize> {
    let ok = |i: usize| !calls_only || t.spans[i].op().is_some();
    match (from, forward) {
        (Some(i), true) => (i + 1..t.spans.len()).find(|k| ok(*k)),
        (Some(i), false) => (0..i.min(t.spans.len())).rev().find(|k| ok(*k)),
        (None, true) => {
            let i = t.spans.partition_point(|s| (s.start.0 as f64) < at);
            (i..t.spans.len()).find(|k| ok(*k))
        }
        (None, false) => {
            let i = t.spans.partition_point(|s| (s.start.0 as f64) < at);
            (0..i).rev().find(|k| ok(*k))
        }
    }
}

/// The lane holding `rank`, if one does.
pub fn lane_of(run: &Run, lanes: &[Vec<usize>], rank: u32) -> Option<usize> {
    let pos = run.position(rank)?;
    lanes.iter().position(|l| l.contains(&pos))
}

/// The event an [`EventRef`] names, as `(start, end)` ns.
pub fn bounds(run: &Run, e: EventRef) -> Option<(f64, f64)> {
    let s = run.trace.span(e)?;
    Some((s.start.0 as f64, s.end.0 as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoom_keeps_the_anchor_in_place() {
        let mut v = Viewport::fit(0, 1_000_000, 100);
        assert_eq!(v.per_cell, 10_000.0);
        let before = v.column(420_000.0, 100);
        v.zoom(0.5, 420_000.0, 1_000_000, 100);
        assert_eq!(v.per_cell, 5_000.0);
        assert_eq!(v.column(420_000.0, 100), before);
        v.zoom(1e-9, 0.0, 1_000_000, 100);
        assert_eq!(v.per_cell, MIN_NS_PER_CELL);
        v.zoom(1e9, 0.0, 1_000_000, 100);
        assert_eq!(v.per_cell, 20_000.0);
    }

    #[test]
    fn showing_an_event_zooms_only_when_needed() {
        let mut v = Viewport::fit(0, 1_000_000, 100);
        // A 50 us call is 5 columns wide and in view: nothing moves.
        v.show(300_000.0, 350_000.0, 100);
        assert_eq!((v.start, v.per_cell), (0.0, 10_000.0));
        // Out of view: centred, same zoom.
        v.show(2_000_000.0, 2_050_000.0, 100);
        assert_eq!((v.middle(100), v.per_cell), (2_025_000.0, 10_000.0));
        // A 100 ns call is narrower than a column: zoomed in 8 times per step, until
        // it is a column wide or more.
        v.show(500_000.0, 500_100.0, 100);
        assert_eq!(v.per_cell, 1_250.0);
        assert_eq!(v.column(500_050.0, 100), Some(50));
        v.show(500_000.0, 500_100.0, 100);
        assert_eq!(v.per_cell, 156.25);
        v.show(500_000.0, 500_100.0, 100);
        assert_eq!(v.per_cell, 19.53125, "5 columns wide");
        v.show(500_000.0, 500_100.0, 100);
        assert_eq!(v.per_cell, 19.53125, "then it stays");
    }
}
