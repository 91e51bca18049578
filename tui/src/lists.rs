//! The state of the table views: which rows the Waits view shows (filtered by kind and
//! rank, worst first), how the Overlap view sorts its requests, and a cursor that keeps
//! the selected row on screen. Tables can hold a million rows: only the rows on screen
//! are ever built for drawing.

use std::cmp::Reverse;

use overlap_analyzer::metrics::{RequestRow, WaitKind};
use overlap_analyzer::model::Trace;

use crate::run::Run;

/// A selected row and the first row on screen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    /// The selected row.
    pub selected: usize,
    /// The first row shown.
    pub offset: usize,
}

impl Cursor {
    /// Moves by `delta` rows within `len` rows.
    pub fn step(&mut self, delta: isize, len: usize) {
        if len == 0 {
            *self = Cursor::default();
            return;
        }
        self.selected = self.selected.saturating_add_signed(delta).min(len - 1);
    }

    /// Goes to the first (`false`) or last (`true`) row.
    pub fn to_end(&mut self, last: bool, len: usize) {
        self.selected = if last { len.saturating_sub(1) } else { 0 };
    }

    /// The rows `offset..offset + height`, after scrolling so the selection is in them.
    pub fn window(&mut self, height: usize, len: usize) -> std::ops::Range<usize> {
        let height = height.max(1);
        self.selected = self.selected.min(len.saturating_sub(1));
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + height {
            self.offset = self.selected + 1 - height;
        }
        self.offset = self.offset.min(len.saturating_sub(height));
        self.offset..(self.offset + height).min(len)
    }
}

/// The Waits view: wait-state instances, worst first.
#[derive(Clone, Debug, Default)]
pub struct WaitsState {
    /// Only this kind (all when `None`).
    pub kind: Option<WaitKind>,
    /// Only this rank (all when `None`).
    pub rank: Option<u32>,
    /// Rows shown: indices into the run's `details.waits`.
    pub rows: Vec<usize>,
    /// The cursor.
    pub cursor: Cursor,
}

impl WaitsState {
    /// The view of `run` with no filter.
    pub fn new(run: &Run) -> WaitsState {
        let mut w = WaitsState::default();
        w.refilter(run);
        w
    }

    /// Recomputes the rows after a filter changed.
    pub fn refilter(&mut self, run: &Run) {
        let waits = &run.details.waits;
        self.rows = (0..waits.len())
            .filter(|i| {
                let w = &waits[*i];
                self.kind.is_none_or(|k| w.kind == k) && self.rank.is_none_or(|r| w.rank == r)
            })
            .collect();
        // Keys made once, sorted with the index (a million rows: tens of ms, where
        // comparing through the index would miss the cache at every step).
        self.rows.sort_by_cached_key(|i| {
            (
                Reverse(waits[*i].amount_ns),
                waits[*i].rank,
                waits[*i].index,
            )
        });
        self.cursor = Cursor::default();
    }

    /// The next kind filter: all, then each kind the run has, in report order.
    pub fn cycle_kind(&mut self, run: &Run) {
        let present: Vec<WaitKind> = WaitKind::ALL
            .into_iter()
            .filter(|k| run.details.waits.iter().any(|w| w.kind == *k))
            .collect();
        self.kind = cycle(self.kind, &present);
        self.refilter(run);
    }

    /// Shows the waits of `rank` only (`None`: of every rank).
    pub fn set_rank(&mut self, run: &Run, rank: Option<u32>) {
        self.rank = rank;
        self.refilter(run);
    }

    /// The next rank filter: all, then each rank.
    pub fn cycle_rank(&mut self, run: &Run) {
        let ranks: Vec<u32> = run.trace.ranks.iter().map(|t| t.rank).collect();
        self.rank = cycle(self.rank, &ranks);
        self.refilter(run);
    }
}

/// After `None`, the first of `all`; after each, the next; after the last, `None`.
fn cycle<T: Copy + PartialEq>(now: Option<T>, all: &[T]) -> Option<T> {
    match now {
        None => all.first().copied(),
        Some(x) => {
            let i = all.iter().position(|y| *y == x);
            i.and_then(|i| all.get(i + 1).copied())
        }
    }
}

/// How the requests table is sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RequestSort {
    /// Largest exposed wait first.
    #[default]
    ExposedWait,
    /// Least overlap first (unknown last).
    Overlap,
    /// Largest first.
    Size,
    /// By peer, then post time.
    Peer,
    /// By rank, then post time.
    Rank,
}

impl RequestSort {
    /// The next order.
    pub fn next(self) -> RequestSort {
        match self {
            RequestSort::ExposedWait => RequestSort::Overlap,
            RequestSort::Overlap => RequestSort::Size,
            RequestSort::Size => RequestSort::Peer,
            RequestSort::Peer => RequestSort::Rank,
            RequestSort::Rank => RequestSort::ExposedWait,
        }
    }

    /// As the table's title says it.
    pub fn title(self) -> &'static str {
        match self {
            RequestSort::ExposedWait => "exposed wait",
            RequestSort::Overlap => "overlap",
            RequestSort::Size => "size",
            RequestSort::Peer => "peer",
            RequestSort::Rank => "rank",
        }
    }

    fn sort(self, rows: &mut [usize], all: &[RequestRow], trace: &Trace) {
        // As for the waits: keys made once, and every key ends with its row, so equal
        // keys keep one order.
        let post_ns = |r: &RequestRow| r.post_span(trace).map_or(0, |s| s.start.0);
        let at = |i: usize| (all[i].rank, post_ns(&all[i]), i);
        match self {
            RequestSort::ExposedWait => {
                rows.sort_by_cached_key(|i| (Reverse(all[*i].exposed_wait_ns), at(*i)))
            }
            RequestSort::Overlap => rows.sort_by_cached_key(|i| {
                // Overlap is a fraction (0..1, never negative): its bits sort as it does.
                // Unknown goes last.
                (all[*i].overlap().map_or(u64::MAX, f64::to_bits), at(*i))
            }),
            RequestSort::Size => rows.sort_by_cached_key(|i| (Reverse(all[*i].bytes), at(*i))),
            RequestSort::Peer => {
                rows.sort_by_cached_key(|i| (all[*i].peer().unwrap_or(i32::MAX), at(*i)))
            }
            RequestSort::Rank => rows.sort_by_cached_key(|i| at(*i)),
        }
    }
}

/// Which table of the Overlap view has the keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OverlapPane {
    /// The false-overlap findings.
    #[default]
    Findings,
    /// The requests.
    Requests,
}

/// The Overlap view: false-overlap findings and the requests table.
#[derive(Clone, Debug, Default)]
pub struct OverlapState {
    /// The table with the keys.
    pub pane: OverlapPane,
    /// The requests' order.
    pub sort: RequestSort,
    /// Rows of the requests table: indices into the run's `details.requests`.
    pub rows: Vec<usize>,
    /// The requests table's cursor.
    pub requests: Cursor,
    /// The findings table's cursor.
    pub findings: Cursor,
    /// The findings table lists the by-site groups (`g`) instead of each finding.
    pub by_site: bool,
}

impl OverlapState {
    /// The view of `run`, requests by exposed wait.
    pub fn new(run: &Run) -> OverlapState {
        let mut o = OverlapState {
            rows: (0..run.details.requests.len()).collect(),
            ..OverlapState::default()
        };
        if run.report.false_overlap.is_empty() {
            o.pane = OverlapPane::Requests;
        }
        o.sort.sort(&mut o.rows, &run.details.requests, &run.trace);
        o
    }

    /// Sorts the requests the next way.
    pub fn next_sort(&mut self, run: &Run) {
        self.sort = self.sort.next();
        self.sort
            .sort(&mut self.rows, &run.details.requests, &run.trace);
        self.requests = Cursor::default();
    }

    /// The cursor of the table with the keys, and that table's length.
    pub fn focused(&mut self, run: &Run) -> (&mut Cursor, usize) {
        match self.pane {
            OverlapPane::Findings if self.by_site => {
                (&mut self.findings, run.report.by_site.false_overlap.len())
            }
            OverlapPane::Findings => (&mut self.findings, run.report.false_overlap.worst.len()),
            OverlapPane::Requests => (&mut self.requests, self.rows.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_stays_on_screen() {
        let mut c = Cursor::default();
        c.step(12, 100);
        assert_eq!(c.window(5, 100), 8..13);
        c.step(-10, 100);
        assert_eq!(c.window(5, 100), 2..7);
        c.to_end(true, 100);
        assert_eq!(c.window(5, 100), 95..100);
        c.step(5, 3);
        assert_eq!(c.window(5, 3), 0..3);
        assert_eq!(c.selected, 2);
    }

    #[test]
    fn filters_cycle_through_what_is_there() {
        assert_eq!(cycle(None, &[1, 2]), Some(1));
        assert_eq!(cycle(Some(1), &[1, 2]), Some(2));
        assert_eq!(cycle(Some(2), &[1, 2]), None);
        assert_eq!(cycle::<u32>(None, &[]), None);
    }
}
