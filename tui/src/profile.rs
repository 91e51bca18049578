//! The Profile view's state: the table by MPI function or by call site (`s`), its order
//! (`o`: total, calls, mean, max, wait states, bytes), its cursor, and its time span
//! (`w`: the whole run, or the window the Timeline shows). The rows are the report's
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
}
