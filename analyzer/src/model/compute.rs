//! The one notion of compute the analysis uses: per rank, the intervals in which the
//! program computed. Everything that needs compute (a request's `t_cpu`, false overlap's
//! independent work, the budget's `compute_ns`) reads it from here, so that the figures
//! agree with one another.
//!
//! A thread that recorded compute spans (the bundled kernels, or a program instrumented
//! with the Rust layer) computes exactly in its spans. A thread without any compute span
//! (an unmodified program under the preload) is taken to compute in the gaps between its
//! consecutive MPI calls, clipped to the rank's analysed part ([`Timeline::extent`]:
//! outside MPI_Init and MPI_Finalize). The rule is per thread, so a rank may mix both
//! ([`ComputeSource::Both`]).
//!
//! ```text
//!  thread with spans     |Isend|..|compute 2-8|..|Wait|     compute: [2, 8)
//!  thread without spans  |Init|Isend 4-5|.......|Wait 9-10|Finalize|
//!                             ^ extent start 4           compute: [5, 9) (the gap)
//! ```

use overlap_format::schema::{GpuOp, Nanos};
use serde::Serialize;

use super::near::partition_point_near;
use super::span::What;
use super::timeline::Timeline;

/// Where a rank's compute comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComputeSource {
    /// Every thread recorded compute spans: compute is what they cover.
    #[default]
    Spans,
    /// No thread recorded a compute span: compute is inferred from the gaps between
    /// consecutive MPI calls of each thread.
    Gaps,
    /// Some threads recorded spans (their compute is the spans), others did not (their
    /// compute is inferred from their gaps).
    Both,
}

impl ComputeSource {
    /// The name in JSON and tables.
    pub fn key(self) -> &'static str {
        match self {
            ComputeSource::Spans => "spans",
            ComputeSource::Gaps => "gaps",
            ComputeSource::Both => "both",
        }
    }

    /// True when some compute was inferred rather than recorded.
    pub fn is_inferred(self) -> bool {
        self != ComputeSource::Spans
    }

    /// The source of several ranks (or threads) together.
    pub fn combine(sources: impl IntoIterator<Item = ComputeSource>) -> ComputeSource {
        let (mut spans, mut gaps) = (false, false);
        for s in sources {
            match s {
                ComputeSource::Spans => spans = true,
                ComputeSource::Gaps => gaps = true,
                ComputeSource::Both => (spans, gaps) = (true, true),
            }
        }
        match (spans, gaps) {
            (true, true) => ComputeSource::Both,
            (false, true) => ComputeSource::Gaps,
            _ => ComputeSource::Spans,
        }
    }
}

/// A rank's compute intervals, for sums over intervals in `O(log n)`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RankCompute {
    /// Where they come from (`Spans` for a rank without events: nothing inferred).
    source: ComputeSource,
    /// (start, end) of each interval, by start.
    intervals: Vec<(u64, u64)>,
    /// `prefix[i]`: summed durations of `intervals[..i]`.
    prefix: Vec<u64>,
    /// Largest end among `intervals[..=i]`.
    max_end: Vec<u64>,
    /// True when some intervals overlap (nested spans, several threads): sums then
    /// sweep the intervals in the range, counting covered time once.
    overlapping: bool,
}

/// Pushes the parts of `gap` on thread `tid` outside its host waits (`waits`: (tid,
/// start, end), sorted).
fn push_outside(out: &mut Vec<(u64, u64)>, gap: (u64, u64), tid: u32, waits: &[(u32, u64, u64)]) {
    let (mut from, to) = gap;
    let first = waits.partition_point(|w| (w.0, w.2) <= (tid, from));
    for &(_, ws, we) in waits[first..].iter().take_while(|w| w.0 == tid && w.1 < to) {
        if ws > from {
            out.push((from, ws));
        }
        from = from.max(we);
    }
    if to > from {
        out.push((from, to));
    }
}

impl RankCompute {
    /// The compute of a timeline (its spans sorted by start).
    pub fn of(t: &Timeline) -> RankCompute {
        // The threads, and those that recorded a compute span (a rank has few threads).
        let (mut threads, mut with_spans): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        for s in &t.spans {
            if !threads.contains(&s.tid) {
                threads.push(s.tid);
            }
            if matches!(s.what, What::Compute(_)) && !with_spans.contains(&s.tid) {
                with_spans.push(s.tid);
            }
        }
        threads.sort_unstable();
        with_spans.sort_unstable();
        let mut intervals: Vec<(u64, u64)> = t
            .spans
            .iter()
            .filter(|s| matches!(s.what, What::Compute(_)))
            .map(|s| (s.start.0, s.end.0))
            .collect();
        let gap_threads = threads.len() - with_spans.len();
        if gap_threads > 0 {
            let (lo, hi) = t.extent().unwrap_or((Nanos::ZERO, Nanos::ZERO));
            // Per thread without spans: the end of its latest call so far.
            let mut reach: Vec<(u32, Option<u64>)> = threads
                .iter()
                .filter(|tid| with_spans.binary_search(tid).is_err())
                .map(|tid| (*tid, None))
                .collect();
            // A host blocked on GPU work is not computing: its waits are cut out of the
            // gaps (by thread, sorted by start).
            let mut host_waits: Vec<(u32, u64, u64)> = t
                .gpu
                .iter()
                .filter(|g| g.op == GpuOp::HostWait)
                .map(|g| (g.tid, g.start.0, g.end.0))
                .collect();
            host_waits.sort_unstable();
            for s in &t.spans {
                let Ok(k) = reach.binary_search_by_key(&s.tid, |r| r.0) else {
                    continue;
                };
                if let Some(prev) = reach[k].1 {
                    let (a, b) = (prev.max(lo.0), s.start.0.min(hi.0));
                    if b > a {
                        push_outside(&mut intervals, (a, b), s.tid, &host_waits);
                    }
                }
                reach[k].1 = Some(reach[k].1.map_or(s.end.0, |r| r.max(s.end.0)));
            }
            intervals.sort_unstable();
        }
        let source = match (with_spans.is_empty(), gap_threads > 0) {
            (_, false) => ComputeSource::Spans,
            (true, true) => ComputeSource::Gaps,
            (false, true) => ComputeSource::Both,
        };
        RankCompute::of_intervals(source, intervals)
    }

    /// The compute of sorted `intervals` from `source`.
    fn of_intervals(source: ComputeSource, mut intervals: Vec<(u64, u64)>) -> RankCompute {
        // Kept while the rank's figures are made: none of the room its growth left.
        intervals.shrink_to_fit();
        let mut prefix = Vec::with_capacity(intervals.len() + 1);
        let mut max_end = Vec::with_capacity(intervals.len());
        let (mut sum, mut hi) = (0u64, 0u64);
        let mut overlapping = false;
        prefix.push(0);
        for (a, b) in &intervals {
            overlapping |= *a < hi;
            sum += b - a;
            hi = hi.max(*b);
            prefix.push(sum);
            max_end.push(hi);
        }
        RankCompute {
            source,
            intervals,
            prefix,
            max_end,
            overlapping,
        }
    }

    /// The compute inside `[from, to]` only, intervals that cross an edge cut to it:
    /// the compute of a window of the run ([`crate::window`]), the same time the whole
    /// run's figures use there (a gap that began before the window still is compute).
    pub fn clipped(&self, from: Nanos, to: Nanos) -> RankCompute {
        let intervals = self
            .intervals
            .iter()
            .map(|&(a, b)| (a.max(from.0), b.min(to.0)))
            .filter(|(a, b)| b > a)
            .collect();
        RankCompute::of_intervals(self.source, intervals)
    }

    /// Where the compute comes from (`Spans` for a rank without events: nothing was
    /// inferred).
    pub fn source(&self) -> ComputeSource {
        self.source
    }

    /// All compute time (covered time: overlapping intervals count once).
    pub fn total(&self) -> Nanos {
        self.within(Nanos::ZERO, Nanos(u64::MAX)).0
    }

    /// Compute time inside `[from, to)`, and how many intervals touch it.
    pub fn within(&self, from: Nanos, to: Nanos) -> (Nanos, usize) {
        let (a, b) = (from.0, to.0);
        if b <= a {
            return (Nanos::ZERO, 0);
        }
        // Intervals starting before `b`, minus those that ended by `a`.
        let hi = self.intervals.partition_point(|s| s.0 < b);
        let lo = self.max_end[..hi].partition_point(|e| *e <= a);
        self.sum_between(lo, hi, a, b)
    }

    /// A cursor for queries that come mostly in order, each searched for from where
    /// the last one was ([`ComputeCursor`]).
    pub fn cursor(&self) -> ComputeCursor<'_> {
        ComputeCursor {
            compute: self,
            hi: 0,
            ended: 0,
        }
    }

    /// The compute time inside each of `ranges`, summed: what [`RankCompute::within`]
    /// gives each, each searched for from the last ([`ComputeCursor`]): in one walk of
    /// the intervals when the ranges come in order (a rank's time in MPI, by start).
    pub fn within_each(&self, ranges: &[(u64, u64)]) -> Nanos {
        let mut cursor = self.cursor();
        let each = ranges
            .iter()
            .map(|&(a, b)| cursor.within(Nanos(a), Nanos(b)).0 .0);
        Nanos(each.sum())
    }

    /// The compute time inside `[a, b)` of `intervals[lo..hi]` (those that may touch
    /// it), and how many touch it.
    fn sum_between(&self, lo: usize, hi: usize, a: u64, b: u64) -> (Nanos, usize) {
        if lo >= hi {
            return (Nanos::ZERO, 0);
        }
        if self.overlapping {
            // Time covered by any interval (nested ones count once), by a sweep.
            let (mut total, mut reach) = (0u64, a);
            for &(s, e) in &self.intervals[lo..hi] {
                let (s, e) = (s.max(reach), e.min(b));
                if e > s {
                    total += e - s;
                    reach = e;
                }
            }
            return (Nanos(total), hi - lo);
        }
        let mut total = self.prefix[hi] - self.prefix[lo];
        // Clip the intervals that stick out of the range.
        for &(s, e) in &self.intervals[lo..hi] {
            if s >= a {
                break;
            }
            total -= e.min(a) - s;
        }
        for &(s, e) in self.intervals[lo..hi].iter().rev() {
            if e <= b {
                break;
            }
            total -= e - b.max(s);
        }
        (Nanos(total), hi - lo)
    }
}

/// [`RankCompute::within`] for queries that come mostly in order (the requests of a
/// rank by post, its calls by start): each query searches the intervals outward from
/// where the last one's edges fell, in steps of 1, 2, 4..., so that a query near the
/// last costs a few comparisons in memory already read, where `within` searches the
/// whole rank anew. Any order gives the same answers as `within`, a query far from the
/// last at about twice the comparisons.
pub struct ComputeCursor<'c> {
    compute: &'c RankCompute,
    /// The intervals starting before the last query's end.
    hi: usize,
    /// The intervals whose latest end so far came at or before the last query's start.
    ended: usize,
}

impl ComputeCursor<'_> {
    /// Compute time inside `[from, to)`, and how many intervals touch it: what
    /// [`RankCompute::within`] gives.
    pub fn within(&mut self, from: Nanos, to: Nanos) -> (Nanos, usize) {
        let (a, b) = (from.0, to.0);
        if b <= a {
            return (Nanos::ZERO, 0);
        }
        let c = self.compute;
        self.hi = partition_point_near(&c.intervals, self.hi, |s| s.0 < b);
        // `max_end` never falls: those of the first `hi` that ended by `a` are the
        // first `min(ended, hi)`.
        self.ended = partition_point_near(&c.max_end, self.ended, |e| *e <= a);
        c.sum_between(self.ended.min(self.hi), self.hi, a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use overlap_format::schema::{CallArgs, CallEvent, ComputeEvent, Event, Op};

    fn call(tid: u32, op: Op, start: u64, end: u64) -> Event {
        Event::Call(CallEvent {
            tid,
            start: Nanos(start),
            end: Nanos(end),
            op,
            args: CallArgs::default(),
        })
    }

    fn timeline(events: &[Event]) -> Timeline {
        let mut t = Timeline::new(0);
        for e in events {
            t.push(e);
        }
        t.sort();
        t
    }

    #[test]
    fn gaps_between_calls_inside_init_and_finalize() {
        // |Init 0-4|Isend 4-5|......|Wait 9-10|..|Barrier 12-13|Finalize 13-20|
        // compute: [5, 9) and [10, 12) = 6
        let t = timeline(&[
            call(0, Op::Init, 0, 4),
            call(0, Op::Isend, 4, 5),
            call(0, Op::Wait, 9, 10),
            call(0, Op::Barrier, 12, 13),
            call(0, Op::Finalize, 13, 20),
        ]);
        let c = RankCompute::of(&t);
        assert_eq!(c.source(), ComputeSource::Gaps);
        assert_eq!(c.total(), Nanos(6));
        assert_eq!(c.within(Nanos(5), Nanos(9)), (Nanos(4), 1));
        assert_eq!(c.within(Nanos(7), Nanos(11)), (Nanos(3), 2));
    }

    #[test]
    fn spans_rule_per_thread() {
        // thread 0: |Isend 0-1|compute 2-6|Wait 8-9|      compute [2, 6)
        // thread 1: |Recv 0-3|.....|Send 7-8|             compute [3, 7) (a gap)
        // union [2, 7) = 5
        let t = timeline(&[
            call(0, Op::Isend, 0, 1),
            Event::Compute(ComputeEvent {
                tid: 0,
                start: Nanos(2),
                end: Nanos(6),
                name: "c".into(),
                buffers: None,
            }),
            call(0, Op::Wait, 8, 9),
            call(1, Op::Recv, 0, 3),
            call(1, Op::Send, 7, 8),
        ]);
        let c = RankCompute::of(&t);
        assert_eq!(c.source(), ComputeSource::Both);
        assert_eq!(c.total(), Nanos(5));
        assert_eq!(
            ComputeSource::combine([ComputeSource::Spans, ComputeSource::Gaps]),
            ComputeSource::Both
        );
        assert_eq!(
            ComputeSource::combine([ComputeSource::Spans]),
            ComputeSource::Spans
        );
    }

    #[test]
    fn host_waits_on_gpu_work_are_not_compute() {
        // |Isend 0-1|..[host wait 3-5]..[host wait 6-7]..|Wait 9-10|
        // compute: [1, 3) [5, 6) [7, 9) = 5
        let wait = |start: u64, end: u64| {
            Event::Gpu(overlap_format::schema::GpuEvent {
                tid: 0,
                op: GpuOp::HostWait,
                device: 0,
                stream: 1,
                issued: Nanos(start),
                start: Nanos(start),
                end: Nanos(end),
                bytes: 0,
                src: 0,
                dst: 0,
                packet: None,
                name: String::new(),
                clock_error: Nanos(0),
            })
        };
        let t = timeline(&[
            call(0, Op::Isend, 0, 1),
            wait(3, 5),
            wait(6, 7),
            call(0, Op::Wait, 9, 10),
        ]);
        let c = RankCompute::of(&t);
        assert_eq!(c.total(), Nanos(5));
        assert_eq!(c.within(Nanos(2), Nanos(8)), (Nanos(3), 3));
    }

    proptest::proptest! {
        /// The cursor gives, query for query, what `within` gives (time and count):
        /// over disjoint and overlapping compute, queries in order (a rank's time in
        /// MPI), touching, nested, empty, or in any order; and the sum over ranges is
        /// the sum of theirs.
        #[test]
        fn the_cursor_answers_as_within_does(
            mut intervals in proptest::collection::vec((0u64..200, 0u64..40), 0..40),
            mut ranges in proptest::collection::vec((0u64..240, 0u64..30), 0..40),
            sorted in proptest::bool::ANY,
        ) {
            let mut intervals: Vec<(u64, u64)> =
                intervals.drain(..).map(|(a, len)| (a, a + len)).collect();
            intervals.sort_unstable();
            let c = RankCompute::of_intervals(ComputeSource::Spans, intervals);
            let mut ranges: Vec<(u64, u64)> =
                ranges.drain(..).map(|(a, len)| (a, a + len)).collect();
            if sorted {
                ranges.sort_unstable();
            }
            let mut cursor = c.cursor();
            for &(a, b) in &ranges {
                let (from, to) = (Nanos(a), Nanos(b));
                proptest::prop_assert_eq!(cursor.within(from, to), c.within(from, to));
            }
            let each: u64 = ranges.iter().map(|&(a, b)| c.within(Nanos(a), Nanos(b)).0 .0).sum();
            proptest::prop_assert_eq!(c.within_each(&ranges), Nanos(each));
        }
    }
}
