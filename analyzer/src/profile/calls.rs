//! Time per MPI function and per call site, mpiP's two tables: for each, how often it
//! was called, on how many ranks, its total, mean, shortest and longest time (and where
//! the longest was), its share of all time in MPI, the time lost in it to wait states,
//! and the point-to-point bytes it sent and received.
//!
//! The tables are made a part of the run at a time ([`Fold`]: whole ranks, in rank
//! order): a message's bytes sent are charged in its sender's part, its bytes received
//! in its receiver's, each once.
//!
//! ```text
//!  rank 0  |Isend 0-1|......|Wait 5-9|        Isend: 1 call, 1 ns, sent 64 B
//!  rank 1  |Irecv 0-2|Wait 2 ---- 10|         Wait: 2 calls, 4 + 8 = 12 ns, max 8
//!                                              (rank 1), received 64 B (rank 1's)
//! ```

use std::collections::BTreeSet;

use overlap_format::schema::Op;
use serde::Serialize;

use crate::fxhash::FxHashMap;
use crate::metrics::WaitInstance;
use crate::model::{BySlot, MessagesByRank, PartMessages, Timeline, Trace, What};
use crate::sites::SiteTable;

/// One row of a table: the calls of one MPI function (at one site).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallStats {
    /// MPI function.
    pub call: &'static str,
    /// Calls.
    pub count: u64,
    /// Ranks that made them.
    pub ranks: u32,
    /// Time in them, ns.
    pub total_ns: u64,
    /// Mean time per call, ns.
    pub mean_ns: u64,
    /// The shortest call, ns.
    pub min_ns: u64,
    /// The longest call, ns.
    pub max_ns: u64,
    /// The rank that made the longest (the lowest, of equals).
    pub max_rank: u32,
    /// Share of all the run's time in MPI calls (0..1); `None` when that is 0.
    pub mpi_share: Option<f64>,
    /// Time lost in these calls to wait states beyond the clock error bound (Late
    /// Sender, Late Receiver, the collectives' waits...), ns.
    pub wait_state_ns: u64,
    /// Bytes of the matched point-to-point messages these calls sent.
    pub sent_bytes: u64,
    /// Bytes of the matched messages whose receive these calls completed.
    pub received_bytes: u64,
}

/// A row of the table by call site.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SiteStats {
    /// The site's label (`halo.c:57 (exchange)`); `None` when the calls recorded none.
    pub site: Option<String>,
    /// The calls made there.
    #[serde(flatten)]
    pub stats: CallStats,
}

/// What is summed per row.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Sum {
    count: u64,
    ranks: BTreeSet<u32>,
    total: u64,
    min: u64,
    max: (u64, u32),
    waits: u64,
    sent: u64,
    received: u64,
}

impl Sum {
    fn add(&mut self, rank: u32, ns: u64, call: &PerCall) {
        self.take_extremes(ns, (ns, rank));
        self.count += 1;
        self.ranks.insert(rank);
        self.total += ns;
        self.waits += call.waits;
        self.sent += call.sent;
        self.received += call.received;
    }

    /// Keeps `min` as the shortest and `max` (time, rank) as the longest when they are
    /// (of equal longest, the lowest rank's), before the calls they come from are counted.
    fn take_extremes(&mut self, min: u64, max: (u64, u32)) {
        if self.count == 0 || min < self.min {
            self.min = min;
        }
        let (m, r) = max;
        if self.count == 0 || m > self.max.0 || (m == self.max.0 && r < self.max.1) {
            self.max = max;
        }
    }

    /// Adds the sum of other calls: what adding those calls here gives.
    fn merge(&mut self, other: &Sum) {
        if other.count == 0 {
            return;
        }
        self.take_extremes(other.min, other.max);
        self.count += other.count;
        self.ranks.extend(&other.ranks);
        self.total += other.total;
        self.waits += other.waits;
        self.sent += other.sent;
        self.received += other.received;
    }

    fn stats(&self, op: Op, mpi_total: u64) -> CallStats {
        CallStats {
            call: op.mpi_name(),
            count: self.count,
            ranks: self.ranks.len() as u32,
            total_ns: self.total,
            mean_ns: self.total / self.count.max(1),
            min_ns: self.min,
            max_ns: self.max.0,
            max_rank: self.max.1,
            mpi_share: (mpi_total > 0).then(|| self.total as f64 / mpi_total as f64),
            wait_state_ns: self.waits,
            sent_bytes: self.sent,
            received_bytes: self.received,
        }
    }
}

/// What one call is charged beside its time.
#[derive(Clone, Copy, Default)]
struct PerCall {
    waits: u64,
    sent: u64,
    received: u64,
}

/// The tables by function and by (site, function), each largest total first (then by
/// name and site, so that equal rows keep one order).
pub fn tables(
    trace: &Trace,
    sites: &SiteTable,
    waits: &[WaitInstance],
) -> (Vec<CallStats>, Vec<SiteStats>) {
    tables_in(trace, sites, waits, None)
}

/// [`tables`] of the time window `[from, to)` (ns since the run's start; `None`: the
/// whole run): the calls that overlap it, their time clipped to it, the wait states of
/// the calls that started in it, the bytes of the messages whose sending (receiving)
/// call overlaps it. The whole trace is one part of a [`Fold`].
pub fn tables_in(
    trace: &Trace,
    sites: &SiteTable,
    waits: &[WaitInstance],
    window: Option<(u64, u64)>,
) -> (Vec<CallStats>, Vec<SiteStats>) {
    let mut fold = Fold::new(window);
    let index = MessagesByRank::of(&trace.messages);
    fold.add(trace, sites, waits, index.all());
    fold.finish(sites)
}

/// The tables of [`tables_in`], made a part of the run at a time: each part trace (whole
/// ranks, in rank order) adds its ranks' calls to the rows. A rank's calls are all in
/// its part, and each message is charged there: its bytes sent to the sending call in
/// the sender's part, its bytes received to the completing call in the receiver's.
/// Every row is a sum, a minimum or a maximum whose ties go to the lowest rank, so the
/// tables do not depend on where the parts are cut.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Fold {
    /// `[from, to)`, ns since the run's start (`[0, u64::MAX)` for the whole run).
    window: (u64, u64),
    by_op: FxHashMap<Op, Sum>,
    by_site: FxHashMap<(Option<u32>, Op), Sum>,
    /// Time in every call of the window, of all the parts added: the rows' shares.
    mpi_total: u64,
}

impl Fold {
    /// No part yet; the calls of `window` (see [`tables_in`]).
    pub(crate) fn new(window: Option<(u64, u64)>) -> Fold {
        Fold {
            window: window.unwrap_or((0, u64::MAX)),
            by_op: FxHashMap::default(),
            by_site: FxHashMap::default(),
            mpi_total: 0,
        }
    }

    /// Adds the calls of `part`'s ranks, their sites named by `sites` (the whole run's
    /// table), charged the wait states among `waits` of those ranks (others' are not
    /// this part's, and are ignored) and the bytes of the messages they sent or
    /// completed.
    pub(crate) fn add(
        &mut self,
        part: &Trace,
        sites: &SiteTable,
        waits: &[WaitInstance],
        messages: PartMessages,
    ) {
        let (from, to) = self.window;
        // Rank by rank: what each call of the rank is charged beside its time, dense by
        // event index (nearly every call of a message-heavy run is charged something),
        // for one rank at a time; the waits and messages charged are found by rank
        // first. Grouping by the part's slots leaves out those of other parts' ranks.
        let waits: Vec<&WaitInstance> = waits
            .iter()
            .filter(|w| !w.indeterminate && !w.descheduled)
            .filter(|w| (from..to).contains(&w.start_ns))
            .collect();
        let waits_of = BySlot::of(part, waits.iter().map(|w| w.rank));
        let run = &part.messages;
        let sends_of = BySlot::of_listed(part, messages.sent, |m| run[m as usize].send().rank);
        // A receive is completed on its receiver, when it is.
        let receiver = |m: u32| run[m as usize].recv_post().rank;
        let completions_of = BySlot::of_listed(part, messages.received, receiver);
        let messages = run;
        let mut charged: Vec<PerCall> = Vec::new();
        for (slot, t) in part.ranks.iter().enumerate() {
            charged.clear();
            charged.resize(t.spans.len(), PerCall::default());
            for &w in waits_of.of_slot(slot) {
                let w = waits[w as usize];
                if let Some(c) = charged.get_mut(w.index) {
                    c.waits += w.amount_ns;
                }
            }
            for &m in sends_of.of_slot(slot) {
                let m = &messages[m as usize];
                if let Some(c) = charged.get_mut(m.send().index) {
                    c.sent += m.bytes;
                }
            }
            for &m in completions_of.of_slot(slot) {
                let m = &messages[m as usize];
                if let Some(c) = m.completion().and_then(|d| charged.get_mut(d.index)) {
                    c.received += m.bytes;
                }
            }
            self.add_rank(t, &charged, sites);
        }
    }

    /// Adds the fold of other ranks (of the same window): what adding their parts here
    /// gives.
    pub(crate) fn merge(&mut self, other: Fold) {
        debug_assert_eq!(self.window, other.window, "folds of different windows");
        for (op, s) in &other.by_op {
            self.by_op.entry(*op).or_default().merge(s);
        }
        for (key, s) in &other.by_site {
            self.by_site.entry(*key).or_default().merge(s);
        }
        self.mpi_total += other.mpi_total;
    }

    /// Adds the calls of one rank `t` that overlap the window, each charged
    /// `charged[its index]`.
    fn add_rank(&mut self, t: &Timeline, charged: &[PerCall], sites: &SiteTable) {
        let (from, to) = self.window;
        // Consecutive calls mostly share a site: its id is looked up once per run of them.
        let mut last_site: Option<(u64, Option<u32>)> = None;
        for (index, span) in t.spans.iter().enumerate() {
            let What::Call(op, _) = span.what else {
                continue;
            };
            if t.is_edge_mark(index) {
                continue; // a call outside the window the trace was cut to
            }
            let (start, end) = (span.start.0.max(from), span.end.0.min(to));
            let overlaps = start < end || (start == end && (from..to).contains(&span.start.0));
            if !overlaps {
                continue;
            }
            let ns = end.saturating_sub(start);
            self.mpi_total += ns;
            let charge = charged[index];
            let raw = t
                .call(index)
                .and_then(|(_, c)| c.site)
                .map_or(0, |r| r.get());
            let site = match last_site {
                Some((r, id)) if r == raw => id,
                _ => {
                    let id = (raw != 0).then(|| sites.id(t.rank, raw)).flatten();
                    last_site = Some((raw, id));
                    id
                }
            };
            self.by_op.entry(op).or_default().add(t.rank, ns, &charge);
            self.by_site
                .entry((site, op))
                .or_default()
                .add(t.rank, ns, &charge);
        }
    }

    /// The tables of every part added, the sites labelled from `sites` (the table the
    /// parts were added with).
    pub(crate) fn finish(self, sites: &SiteTable) -> (Vec<CallStats>, Vec<SiteStats>) {
        let mpi_total = self.mpi_total;
        let mut functions: Vec<CallStats> = self
            .by_op
            .iter()
            .map(|(op, s)| s.stats(*op, mpi_total))
            .collect();
        functions.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.call.cmp(b.call)));
        let label = |id: Option<u32>| {
            id.and_then(|id| sites.sites().get(id as usize))
                .map(|s| s.label.clone())
        };
        let mut rows: Vec<SiteStats> = self
            .by_site
            .iter()
            .map(|((site, op), s)| SiteStats {
                site: label(*site),
                stats: s.stats(*op, mpi_total),
            })
            .collect();
        rows.sort_by(|a, b| {
            b.stats
                .total_ns
                .cmp(&a.stats.total_ns)
                .then(a.stats.call.cmp(b.stats.call))
                .then(a.site.cmp(&b.site))
        });
        (functions, rows)
    }
}
