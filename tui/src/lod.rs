//! The level-of-detail index: per rank, a pyramid of per-interval summaries built once
//! at load, so that drawing a cell costs the same whether it covers one call or a
//! million. Level 0 cuts the rank's time into `2^k` bins (about one per event, at most
//! 2^20); each level above sums pairs of the level below. A bin holds how much of its
//! time the rank spent computing, in MPI calls that do not wait, and in calls that wait
//! ([`overlap_format::schema::Op::is_waiting`], the definition the time budget
//! uses, and any other call the analysis charged a wait state to: an `MPI_Allreduce`
//! that waited for the last rank is drawn waiting); the rest is idle.
//!
//! A cell of the timeline covering `[t0, t1)` is summed from at most three bins of the
//! level whose bins are just narrower than the cell, the partial ones pro rata. A cell
//! narrower than a level-0 bin is summed from the events under it when there are few
//! (at most [`EXACT_EVENTS`]); in a denser place it takes its share of its bin.
//!
//! ```text
//!  level 2  [        c=6 m=1 w=1        ]
//!  level 1  [  c=4 m=0 w=0 ][ c=2 m=1 w=1 ]
//!  level 0  [ c=2 ][ c=2   ][ c=2 ][ m w ]   <- bins of width w0
//!  events    CCCCCCCCCCCCCCCCCCCCCCC  M W
//! ```

use overlap_analyzer::model::compute::RankCompute;

use overlap_analyzer::model::{Span, Timeline, What};
use overlap_format::schema::Nanos;

/// Below this many events under a cell narrower than a level-0 bin, the cell is summed
/// from the events themselves.
pub const EXACT_EVENTS: usize = 32;

/// Spans before a cell that are looked at for reaching into it (other threads' long
/// calls); the main thread's previous span is always the first of them.
pub(crate) const LOOK_BACK: usize = 8;

/// Largest number of level-0 bins of a rank.
const MAX_BINS: usize = 1 << 20;

/// What a cell shows: what took most of its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// Nothing recorded.
    Idle,
    /// Compute (recorded spans, or the gaps between MPI calls).
    Compute,
    /// MPI calls that do not wait (posts, local calls, data-moving collectives).
    Mpi,
    /// MPI calls whose job is to wait (Wait, Test, Barrier, blocking point-to-point).
    Waiting,
}

/// Time per activity in an interval, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Mix {
    /// Compute.
    pub compute: f64,
    /// In MPI, not waiting.
    pub mpi: f64,
    /// Waiting in MPI.
    pub waiting: f64,
}

impl Mix {
    fn add_scaled(&mut self, bin: &[f32; 3], share: f64) {
        self.compute += f64::from(bin[0]) * share;
        self.mpi += f64::from(bin[1]) * share;
        self.waiting += f64::from(bin[2]) * share;
    }

    /// Adds another interval's (or rank's) mix.
    pub fn add(&mut self, other: &Mix) {
        self.compute += other.compute;
        self.mpi += other.mpi;
        self.waiting += other.waiting;
    }

    /// What dominates an interval of `width` ns (summed over `lanes` ranks): the
    /// activity with the most time, idle for what is left. Ties go to waiting, then MPI,
    /// then compute: the rarer, more telling activity shows.
    pub fn dominant(&self, width: f64) -> Activity {
        let idle = (width - self.compute - self.mpi - self.waiting).max(0.0);
        let mut best = (Activity::Waiting, self.waiting);
        for (a, t) in [
            (Activity::Mpi, self.mpi),
            (Activity::Compute, self.compute),
            (Activity::Idle, idle),
        ] {
            if t > best.1 {
                best = (a, t);
            }
        }
        if best.1 <= 0.0 {
            Activity::Idle
        } else {
            best.0
        }
    }
}

/// The activity of one span; `waited`: the analysis charged a wait state to it.
pub fn activity(span: &Span, waited: bool) -> Activity {
    match span.what {
        What::Compute(_) => Activity::Compute,
        What::Call(op, _) if waited || op.is_waiting() => Activity::Waiting,
        What::Call(..) => Activity::Mpi,
    }
}

/// The pyramid of one rank.
#[derive(Clone, Debug)]
pub struct RankLod {
    /// Start of bin 0, ns.
    origin: u64,
    /// Width of a level-0 bin, ns: the rank's extent over the number of bins, so the
    /// bins end where the rank does.
    base: f64,
    /// `levels[k]`: bins of width `base << k`, each (compute, mpi, waiting) ns.
    levels: Vec<Vec<[f32; 3]>>,
    /// The calls wait states were charged to, by index, sorted.
    waited: Vec<usize>,
}

impl RankLod {
    /// Builds the pyramid of a timeline and its compute; `waited`: the calls (by index)
    /// the analysis charged a wait state to, drawn waiting whatever their op.
    pub fn build(t: &Timeline, compute: &RankCompute, mut waited: Vec<usize>) -> RankLod {
        waited.sort_unstable();
        waited.dedup();
        let Some((first, last)) = t
            .spans
            .first()
            .map(|s| s.start.0)
            .zip(t.spans.iter().map(|s| s.end.0).max())
        else {
            return RankLod {
                origin: 0,
                base: 1.0,
                levels: vec![vec![[0.0; 3]]],
                waited,
            };
        };
        let extent = (last - first).max(1) as f64;
        let bins = t.spans.len().clamp(64, MAX_BINS).next_power_of_two();
        let base = extent / bins as f64;
        let mut level0 = vec![[0f32; 3]; bins];
        for (i, s) in t.spans.iter().enumerate() {
            let slot = match activity(s, waited.binary_search(&i).is_ok()) {
                Activity::Mpi => 1,
                Activity::Waiting => 2,
                _ => continue,
            };
            let (a, b) = ((s.start.0 - first) as f64, (s.end.0 - first) as f64);
            let mut bin = ((a / base) as usize).min(bins - 1);
            while bin < bins && (bin as f64) * base < b {
                let (lo, hi) = (bin as f64 * base, (bin as f64 + 1.0) * base);
                level0[bin][slot] += (b.min(hi) - a.max(lo)).max(0.0) as f32;
                bin += 1;
            }
        }
        // Compute from the rank's intervals, counted once where threads overlap: each
        // bin's share of the compute up to its end, in whole ns.
        let mut before = 0u64;
        for (i, bin) in level0.iter_mut().enumerate() {
            let hi = first + ((i + 1) as f64 * base).round() as u64;
            let upto = compute.within(Nanos(first), Nanos(hi)).0 .0;
            bin[0] = upto.saturating_sub(before) as f32;
            before = before.max(upto);
        }
        let mut levels = vec![level0];
        while let Some(below) = levels.last().filter(|l| l.len() > 1) {
            let up = below
                .chunks(2)
                .map(|p| {
                    let (x, y) = (p[0], p.get(1).copied().unwrap_or([0.0; 3]));
                    [x[0] + y[0], x[1] + y[1], x[2] + y[2]]
                })
                .collect();
            levels.push(up);
        }
        RankLod {
            origin: first,
            base,
            levels,
            waited,
        }
    }

    /// Bins held, over all levels (for the memory it takes: 12 bytes each).
    pub fn bins(&self) -> usize {
        self.levels.iter().map(Vec::len).sum()
    }

    /// The time per activity of the rank in `[t0, t1)`.
    pub fn mix(&self, t: &Timeline, compute: &RankCompute, t0: f64, t1: f64) -> Mix {
        let width = t1 - t0;
        if width <= 0.0 {
            return Mix::default();
        }
        let base = self.base;
        if width < base {
            let (i0, i1) = (starting_before(t, t0), starting_before(t, t1));
            if i1 - i0 <= EXACT_EVENTS {
                return exact(t, compute, &self.waited, (t0, t1), (i0, i1));
            }
            return self.sum_level(0, t0, t1);
        }
        let level = ((width / base).log2().floor() as usize).min(self.levels.len() - 1);
        self.sum_level(level, t0, t1)
    }

    fn sum_level(&self, level: usize, t0: f64, t1: f64) -> Mix {
        let bins = &self.levels[level];
        let w = self.base * (1u64 << level) as f64;
        let (a, b) = (t0 - self.origin as f64, t1 - self.origin as f64);
        let mut mix = Mix::default();
        if b <= 0.0 {
            return mix;
        }
        let first = (a.max(0.0) / w).floor() as usize;
        let mut i = first;
        while i < bins.len() && (i as f64) * w < b {
            let (lo, hi) = (i as f64 * w, (i as f64 + 1.0) * w);
            let share = (b.min(hi) - a.max(lo)).max(0.0) / w;
            mix.add_scaled(&bins[i], share);
            i += 1;
        }
        mix
    }
}

/// The number of spans starting before `t` (an index into the sorted spans).
pub fn starting_before(t: &Timeline, at: f64) -> usize {
    t.spans.partition_point(|s| (s.start.0 as f64) < at)
}

/// The mix of `[t0, t1)` from the events: spans `i0..i1` start in it, and a few before
/// may reach into it.
fn exact(
    t: &Timeline,
    compute: &RankCompute,
    waited: &[usize],
    (t0, t1): (f64, f64),
    (i0, i1): (usize, usize),
) -> Mix {
    let mut mix = Mix::default();
    let (lo, hi) = (t0.max(0.0).round() as u64, t1.max(0.0).round() as u64);
    mix.compute = compute.within(Nanos(lo), Nanos(hi)).0 .0 as f64;
    let back = i0.saturating_sub(LOOK_BACK);
    for (i, s) in t.spans[back..i1].iter().enumerate() {
        let part = (s.end.0 as f64).min(t1) - (s.start.0 as f64).max(t0);
        if part <= 0.0 {
            continue;
        }
        match activity(s, waited.binary_search(&(back + i)).is_ok()) {
            Activity::Mpi => mix.mpi += part,
            Activity::Waiting => mix.waiting += part,
            _ => {}
        }
    }
    mix
}

#[cfg(test)]
mod tests {
    use super::*;
    use overlap_format::schema::{CallArgs, ComputeEvent, Event, Op};

    fn compute(start: u64, end: u64) -> Event {
        Event::Compute(ComputeEvent {
            tid: 0,
            start: Nanos(start),
            end: Nanos(end),
            name: "work".into(),
            buffers: None,
        })
    }

    fn call(op: Op, start: u64, end: u64) -> Event {
        overlap_format::testing::call(op, start, end, CallArgs::default())
    }

    /// ```text
    ///  0        600  700      1000      2000
    ///  |compute  |Isend|Wait    |  idle  |Barrier|
    /// ```
    fn rank() -> (Timeline, RankCompute) {
        let mut t = Timeline::new(0);
        for e in [
            compute(0, 600),
            call(Op::Isend, 600, 700),
            call(Op::Wait, 700, 1000),
            call(Op::Barrier, 2000, 2100),
        ] {
            t.push(&e);
        }
        t.sort();
        let c = RankCompute::of(&t);
        (t, c)
    }

    #[test]
    fn every_zoom_sums_the_same_time() {
        let (t, c) = rank();
        let lod = RankLod::build(&t, &c, Vec::new());
        let whole = lod.mix(&t, &c, 0.0, 2100.0);
        assert!((whole.compute - 600.0).abs() < 1.0, "{whole:?}");
        assert!((whole.mpi - 100.0).abs() < 1.0, "{whole:?}");
        assert!((whole.waiting - 400.0).abs() < 1.0, "{whole:?}");
        // Cell by cell at every width, the cells add up to the whole.
        for cells in [3usize, 7, 64, 500, 4000] {
            let w = 2100.0 / cells as f64;
            let mut sum = Mix::default();
            for i in 0..cells {
                sum.add(&lod.mix(&t, &c, i as f64 * w, (i + 1) as f64 * w));
            }
            assert!((sum.waiting - 400.0).abs() < 2.0, "{cells}: {sum:?}");
            assert!((sum.compute - 600.0).abs() < 2.0, "{cells}: {sum:?}");
        }
    }

    #[test]
    fn a_cell_shows_what_dominates_it() {
        let (t, c) = rank();
        let lod = RankLod::build(&t, &c, Vec::new());
        let at = |a: f64, b: f64| lod.mix(&t, &c, a, b).dominant(b - a);
        assert_eq!(at(0.0, 500.0), Activity::Compute);
        assert_eq!(at(610.0, 690.0), Activity::Mpi);
        assert_eq!(at(700.0, 1000.0), Activity::Waiting);
        assert_eq!(at(1100.0, 1900.0), Activity::Idle);
        assert_eq!(at(5000.0, 6000.0), Activity::Idle);
        // The whole run: compute (600) over waiting (400 with the Barrier) and idle.
        assert_eq!(at(0.0, 2100.0), Activity::Idle);
        assert_eq!(at(0.0, 1000.0), Activity::Compute);
    }

    /// ```text
    ///  |Allreduce 0-100|compute 100-200|    the Allreduce waited (a wait state on it)
    /// ```
    #[test]
    fn a_call_charged_a_wait_state_is_drawn_waiting_whatever_its_op() {
        let mut t = Timeline::new(0);
        for e in [call(Op::Allreduce, 0, 100), compute(100, 200)] {
            t.push(&e);
        }
        t.sort();
        let c = RankCompute::of(&t);
        let plain = RankLod::build(&t, &c, Vec::new());
        let waited = RankLod::build(&t, &c, vec![0]);
        for (lod, want) in [(&plain, Activity::Mpi), (&waited, Activity::Waiting)] {
            // From the pyramid (a wide cell) and from the events (a narrow one).
            assert_eq!(lod.mix(&t, &c, 0.0, 100.0).dominant(100.0), want);
            assert_eq!(lod.mix(&t, &c, 40.0, 41.0).dominant(1.0), want);
        }
    }

    #[test]
    fn a_huge_rank_keeps_a_bounded_pyramid() {
        let mut t = Timeline::new(0);
        for i in 0..100_000u64 {
            t.push(&call(Op::Test, i * 10, i * 10 + 5));
        }
        t.sort();
        let c = RankCompute::of(&t);
        let lod = RankLod::build(&t, &c, Vec::new());
        assert!(lod.bins() < 2 * 131_072 + 2);
        let m = lod.mix(&t, &c, 0.0, 1_000_000.0);
        assert!((m.waiting - 500_000.0).abs() < 100.0, "{m:?}");
        // Without compute spans, the gaps between the calls are the compute.
        assert!((m.compute - 499_995.0).abs() < 100.0, "{m:?}");
    }
}
