//! The Profile view's state: the table by MPI function or by call site (`s`), its order
//! (`o`: total, calls, mean, max, wait states, bytes), its cursor, its time span
//! (`w`: the whole run, or the window the Timeline shows), and the part of the
//! communication matrix shown ([`MatrixView`]). The rows are the report's
//! profile ([`overlap_analyzer::profile`]), or the same tables of the window, ordered
//! here by index.

use overlap_analyzer::profile::calls::tables_in;
use overlap_analyzer::profile::{CallStats, Profile, SiteStats};

use crate::lists::Cursor;
use crate::run::Run;

/// What the table lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProfileRows {
    /// A row per MPI function.
    #[default]
    Functions,
    /// A row per (call site, function).
    Sites,
}

/// The table's order, largest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProfileSort {
    /// Time in the calls.
    #[default]
    Total,
    /// Calls made.
    Calls,
    /// Mean time per call.
    Mean,
    /// The longest call.
    Max,
    /// Time lost in wait states.
    WaitStates,
    /// Bytes sent and received.
    Bytes,
}

impl ProfileSort {
    /// The next order.
    pub fn next(self) -> ProfileSort {
        match self {
            ProfileSort::Total => ProfileSort::Calls,
            ProfileSort::Calls => ProfileSort::Mean,
            ProfileSort::Mean => ProfileSort::Max,
            ProfileSort::Max => ProfileSort::WaitStates,
            ProfileSort::WaitStates => ProfileSort::Bytes,
            ProfileSort::Bytes => ProfileSort::Total,
        }
    }

    /// How the view's title names it.
    pub fn title(self) -> &'static str {
        match self {
            ProfileSort::Total => "total",
            ProfileSort::Calls => "calls",
            ProfileSort::Mean => "mean",
            ProfileSort::Max => "max",
            ProfileSort::WaitStates => "wait states",
            ProfileSort::Bytes => "bytes",
        }
    }

    fn key(self, s: &CallStats) -> u64 {
        match self {
            ProfileSort::Total => s.total_ns,
            ProfileSort::Calls => s.count,
            ProfileSort::Mean => s.mean_ns,
            ProfileSort::Max => s.max_ns,
            ProfileSort::WaitStates => s.wait_state_ns,
            ProfileSort::Bytes => s.sent_bytes + s.received_bytes,
        }
    }
}

/// The Profile view.
#[derive(Clone, Debug, Default)]
pub struct ProfileState {
    /// Functions or sites.
    pub rows: ProfileRows,
    /// The order.
    pub sort: ProfileSort,
    /// The rows in order: indices into the profile's functions or sites.
    pub order: Vec<usize>,
    /// The table's cursor.
    pub cursor: Cursor,
    /// The window shown, ns since the run's start, and its tables (`None`: the whole
    /// run, the report's own).
    pub window: Option<Window>,
    /// The part of the communication matrix shown.
    pub matrix: MatrixView,
}

/// The part of the communication matrix the heat map shows (`+`/`-` zoom, `[`/`]` move
/// the senders, `{`/`}` the receivers): `span` ranks from `rows` (senders) by `span`
/// from `cols` (receivers). At 1 000 ranks the whole matrix groups ranks into cells;
/// zoomed in, a cell is a rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixView {
    /// The first sender shown.
    pub rows: u32,
    /// The first receiver shown.
    pub cols: u32,
    /// Ranks shown on each side (the whole world at most).
    pub span: u32,
}

impl Default for MatrixView {
    fn default() -> Self {
        MatrixView {
            rows: 0,
            cols: 0,
            span: u32::MAX,
        }
    }
}

impl MatrixView {
    /// Zooms in (`factor` 0.5) or out (2) on a matrix of `ranks`, keeping the middle of
    /// the part shown; never fewer than 2 ranks a side, nor more than all.
    pub fn zoom(&mut self, factor: f64, ranks: u32) {
        let span = self.span.min(ranks).max(1);
        let new = ((f64::from(span) * factor).round() as u32).clamp(2.min(ranks), ranks.max(1));
        let keep = |first: u32| (first + span / 2).saturating_sub(new / 2);
        (self.rows, self.cols, self.span) = (keep(self.rows), keep(self.cols), new);
        self.clamp(ranks);
    }

    /// Moves the senders (`rows`) or the receivers by half the part shown, `forward` or
    /// back.
    pub fn pan(&mut self, rows: bool, forward: bool, ranks: u32) {
        let step = (self.span.min(ranks) / 2).max(1);
        let first = if rows { &mut self.rows } else { &mut self.cols };
        *first = if forward {
            first.saturating_add(step)
        } else {
            first.saturating_sub(step)
        };
        self.clamp(ranks);
    }

    /// Keeps the part shown inside a matrix of `ranks`.
    fn clamp(&mut self, ranks: u32) {
        let span = self.span.min(ranks);
        let last = ranks.saturating_sub(span);
        self.rows = self.rows.min(last);
        self.cols = self.cols.min(last);
    }

    /// True when it shows the whole matrix of `ranks`.
    pub fn is_whole(&self, ranks: u32) -> bool {
        self.span >= ranks
    }
}

/// The tables of a time window.
#[derive(Clone, Debug)]
pub struct Window {
    /// From, to: ns since the run's start.
    pub span: (u64, u64),
    /// Its table by function.
    pub functions: Vec<CallStats>,
    /// Its table by site.
    pub sites: Vec<SiteStats>,
}

impl ProfileState {
    /// The view of `p`: functions by total time.
    pub fn new(p: &Profile) -> ProfileState {
        let mut s = ProfileState::default();
        s.reorder(p);
        s
    }

    /// The stats of the table's `i`-th row.
    pub fn row<'p>(&'p self, p: &'p Profile, i: usize) -> Option<&'p CallStats> {
        let at = *self.order.get(i)?;
        let (functions, sites) = self.tables(p);
        match self.rows {
            ProfileRows::Functions => functions.get(at),
            ProfileRows::Sites => sites.get(at).map(|s| &s.stats),
        }
    }

    /// The site of the table's `i`-th row (by site only).
    pub fn site<'p>(&'p self, p: &'p Profile, i: usize) -> Option<&'p str> {
        let at = *self.order.get(i)?;
        self.tables(p).1.get(at)?.site.as_deref()
    }

    /// The tables shown: the window's, or the whole run's.
    fn tables<'p>(&'p self, p: &'p Profile) -> (&'p [CallStats], &'p [SiteStats]) {
        match &self.window {
            Some(w) => (&w.functions, &w.sites),
            None => (&p.functions, &p.sites),
        }
    }

    /// Shows the window `span` of `run` (ns since its start), or the whole run.
    pub fn set_window(&mut self, run: &Run, span: Option<(u64, u64)>) {
        self.window = span.map(|span| {
            let d = &run.details;
            let (functions, sites) = tables_in(&run.trace, &d.sites, &d.waits, Some(span));
            Window {
                span,
                functions,
                sites,
            }
        });
        self.cursor = Cursor::default();
        self.reorder(&run.report.profile);
    }

    /// Shows functions, or sites.
    pub fn toggle_rows(&mut self, p: &Profile) {
        self.rows = match self.rows {
            ProfileRows::Functions => ProfileRows::Sites,
            ProfileRows::Sites => ProfileRows::Functions,
        };
        self.cursor = Cursor::default();
        self.reorder(p);
    }

    /// Orders the rows the next way.
    pub fn next_sort(&mut self, p: &Profile) {
        self.sort = self.sort.next();
        self.cursor = Cursor::default();
        self.reorder(p);
    }

    fn reorder(&mut self, p: &Profile) {
        let (functions, sites) = self.tables(p);
        let stats: Vec<&CallStats> = match self.rows {
            ProfileRows::Functions => functions.iter().collect(),
            ProfileRows::Sites => sites.iter().map(|s| &s.stats).collect(),
        };
        let mut order: Vec<usize> = (0..stats.len()).collect();
        // Stable: rows of equal keys keep the report's order (total, then name).
        order.sort_by_key(|&i| std::cmp::Reverse(self.sort.key(stats[i])));
        self.order = order;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(call: &'static str, count: u64, total_ns: u64) -> CallStats {
        CallStats {
            call,
            count,
            ranks: 1,
            total_ns,
            mean_ns: total_ns / count,
            min_ns: 0,
            max_ns: total_ns,
            max_rank: 0,
            mpi_share: None,
            wait_state_ns: 0,
            sent_bytes: 0,
            received_bytes: 0,
        }
    }

    #[test]
    fn the_table_sorts_by_each_column_and_cycles() {
        let p = Profile {
            functions: vec![stats("MPI_Wait", 2, 90), stats("MPI_Isend", 10, 20)],
            ..Profile::default()
        };
        let mut s = ProfileState::new(&p);
        assert_eq!(s.row(&p, 0).map(|r| r.call), Some("MPI_Wait"));
        s.next_sort(&p);
        assert_eq!(s.sort, ProfileSort::Calls);
        assert_eq!(s.row(&p, 0).map(|r| r.call), Some("MPI_Isend"));
        for _ in 0..5 {
            s.next_sort(&p);
        }
        assert_eq!(s.sort, ProfileSort::Total, "six orders, then round again");
        s.toggle_rows(&p);
        assert_eq!(s.rows, ProfileRows::Sites);
        assert_eq!(s.row(&p, 0), None, "no site rows in this profile");
    }

    /// 1 000 ranks: zoomed in around the middle, moved, kept inside, zoomed out whole.
    #[test]
    fn the_matrix_zooms_and_moves_inside_the_ranks() {
        let mut m = MatrixView::default();
        assert!(m.is_whole(1000));
        m.zoom(0.5, 1000);
        assert_eq!((m.rows, m.cols, m.span), (250, 250, 500));
        m.zoom(0.5, 1000);
        assert_eq!((m.rows, m.cols, m.span), (375, 375, 250));
        m.pan(true, true, 1000);
        assert_eq!((m.rows, m.cols), (500, 375));
        for _ in 0..10 {
            m.pan(false, true, 1000);
        }
        assert_eq!(m.cols, 750, "the last 250 receivers");
        for _ in 0..20 {
            m.zoom(0.5, 1000);
        }
        assert_eq!(m.span, 2);
        for _ in 0..20 {
            m.zoom(2.0, 1000);
        }
        assert_eq!((m.rows, m.cols, m.span), (0, 0, 1000));
        assert!(m.is_whole(1000));
    }
}
