//! Overlap written, not achieved: a request whose window held enough compute to hide
//! its whole transfer, yet whose completion still waited about as long as the transfer.
//! The program was written to overlap, but the MPI library moved no data while it
//! computed: MPICH's default without asynchronous progress, where a large
//! (rendezvous) message moves only inside MPI calls. The cure is to give the library
//! the CPU during the compute (call `MPI_Test` in the compute loop) or to turn on
//! asynchronous progress (`MPICH_ASYNC_PROGRESS=1`).
//!
//! The wait that a late partner explains is no progress problem: the wait counted,
//! `progress_wait`, is the completing call's duration less the part of it before the
//! last partner of any request it completed arrived (a receive's matching send, a
//! send's matching receive post, the last member's post of a collective; none for
//! one-sided operations):
//!
//! ```text
//! progress_wait = (X(wait) - E(wait)) - max(0, min(E(partner), X(wait)) - E(wait))
//! written, not achieved  <=>  the completion blocks (not a Test)
//!                             and t_pure > 0 (known)
//!                             and t_cpu >= t_pure   (the window could hide the transfer)
//!                             and progress_wait >= max(min_wait, SHARE * t_pure)
//!                             and progress_wait <= CEILING * t_pure + min_wait
//! unknown when the request never completed or t_pure is unknown; SHARE = 0.5,
//! CEILING = 4
//!
//! A transfer that did not progress during the compute takes about `t_pure` once the
//! wait starts; a wait far longer than that is not explained by it (a descheduled or
//! busy partner, on a machine with more ranks than cores), and is not counted: an
//! 8-byte message of a Fortran ring waited 3.96 ms against a `t_pure` of 1.6 us.
//!
//!  rank 0  |Isend 4 MiB|====== compute 30 ms ======|Wait 2 ms|   t_pure 2 ms:
//!  rank 1  |Irecv 4 MiB|====== compute 30 ms ======|Wait 2 ms|   both written, not achieved
//! ```

use overlap_format::schema::Nanos;
use serde::Serialize;

use super::request_metrics::RequestMetrics;
use super::request_row::RequestRow;
use super::Options;

/// The share of `t_pure` that a wait after a full window must reach to count as "about
/// as long as its transfer".
pub const SHARE: f64 = 0.5;

/// How many times its `t_pure` a wait may last and still be the transfer's own.
pub const CEILING: f64 = 4.0;

/// What the verdict needs to know of one completed request.
pub struct ProgressEvidence {
    /// The completing call blocks (a Wait, not a Test).
    pub blocking: bool,
    /// `E` and `X` of the completing call.
    pub wait_start: Nanos,
    /// `X` of the completing call.
    pub wait_end: Nanos,
    /// When the last partner of the requests the call completed entered its side.
    pub partner: Option<Nanos>,
    /// Pure transfer time; none when unknown.
    pub t_pure: Option<Nanos>,
    /// Compute in the window.
    pub t_cpu: Nanos,
    /// The rank's host had more ranks than CPUs ([`super::oversubscription`]).
    pub crowded: bool,
}

impl ProgressEvidence {
    /// The completing call's wait not explained by a late partner.
    pub fn progress_wait(&self) -> Nanos {
        let whole = self.wait_end.saturating_sub(self.wait_start);
        let late = self.partner.map_or(Nanos::ZERO, |p| {
            p.min(self.wait_end).saturating_sub(self.wait_start)
        });
        whole.saturating_sub(late)
    }

    /// The wait ran past the ceiling on a host with more ranks than CPUs: the scheduler
    /// explains it (docs/metrics.md, 3.8), not the transfer, and it is counted apart.
    pub fn descheduled(&self, opts: &Options) -> bool {
        let Some(t_pure) = self.t_pure.filter(|p| *p > Nanos::ZERO) else {
            return false;
        };
        let ceiling = CEILING * t_pure.0 as f64 + opts.min_wait.0 as f64;
        self.crowded && self.blocking && self.progress_wait().0 as f64 > ceiling
    }

    /// The verdict: none when it cannot be told.
    pub fn verdict(&self, opts: &Options) -> Option<bool> {
        let t_pure = self.t_pure.filter(|p| *p > Nanos::ZERO)?;
        let floor = (SHARE * t_pure.0 as f64).max(opts.min_wait.0 as f64);
        let ceiling = CEILING * t_pure.0 as f64 + opts.min_wait.0 as f64;
        let wait = self.progress_wait().0 as f64;
        Some(self.blocking && self.t_cpu >= t_pure && (floor..=ceiling).contains(&wait))
    }
}

/// The requests whose overlap was written, not achieved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NotAchieved {
    /// How many.
    pub count: u64,
    /// Completed requests whose wait ran past the ceiling on a host with more ranks than
    /// CPUs: the scheduler's, counted apart (none of them is in `count`).
    pub descheduled: u64,
    /// The distinct calls that completed them (a Waitall completing several counts once).
    pub calls: u64,
    /// Completed requests for which it could not be told (no `t_pure`).
    pub unknown: u64,
    /// Their calls' summed progress wait, ns: each call's once, however many of the
    /// requests it completed.
    pub wait_ns: u64,
    /// The worst of them (largest progress wait first), with their call sites.
    pub worst: Vec<RequestMetrics>,
    /// What to do about them.
    pub hint: &'static str,
}

/// The advice printed with them.
pub const HINT: &str = "call MPI_Test on the request inside the compute loop, or enable \
asynchronous progress (MPICH_ASYNC_PROGRESS=1)";

/// The verdicts of requests taken a part at a time, in request order: what
/// [`NotAchieved`] counts, and its worst so far (as choosing them among all the requests
/// at once would give them).
#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct Verdicts {
    count: u64,
    descheduled: u64,
    unknown: u64,
    /// Calls and their progress wait summed over the ranks that are done.
    calls: u64,
    wait_ns: u64,
    /// `(rank, call, progress wait)` of the last rank taken's calls that completed a
    /// request written but not achieved, sorted and unique: its requests may go on in
    /// the next part.
    open_rank_calls: Vec<(u32, usize, u64)>,
    /// The worst so far, worst first.
    worst: Vec<super::request_row::Listed>,
}

/// The order of the worst: the longest progress wait first, then by rank and request.
fn worst_first(a: &RequestRow, b: &RequestRow) -> std::cmp::Ordering {
    let key = |r: &RequestRow| (std::cmp::Reverse(r.progress_wait_ns), r.rank, r.request);
    key(a).cmp(&key(b))
}

impl Verdicts {
    /// Takes the next requests; `list` makes what the report lists of one that may be
    /// among the worst.
    pub(super) fn add(
        &mut self,
        reqs: &[RequestRow],
        opts: &Options,
        list: &(dyn Fn(&RequestRow) -> Option<RequestMetrics> + Sync),
    ) {
        let hits = || reqs.iter().filter(|r| r.written_not_achieved == Some(true));
        self.count += hits().count() as u64;
        self.descheduled += reqs.iter().filter(|r| r.descheduled).count() as u64;
        self.unknown += reqs
            .iter()
            .filter(|r| r.completion_index().is_some() && r.written_not_achieved.is_none())
            .count() as u64;
        self.add_calls(
            hits().filter_map(|r| Some((r.rank, r.completion_index()?, r.progress_wait_ns))),
        );
        // Those kept so far come before the new ones, as they did among the requests.
        let kept = std::mem::take(&mut self.worst);
        let keep = |r: &RequestRow| (*r, list(r));
        self.worst =
            super::worst::smallest_kept(kept, hits(), opts.worst, |w| &w.0, worst_first, keep);
    }

    /// Adds the verdicts of the requests after this one's (of later ranks: each fold's
    /// ranks whole): what taking them here gives.
    pub(super) fn merge(&mut self, later: Verdicts, opts: &Options) {
        self.count += later.count;
        self.descheduled += later.descheduled;
        self.unknown += later.unknown;
        // This fold's last rank is done: the later fold's ranks come after it.
        let open = std::mem::replace(&mut self.open_rank_calls, later.open_rank_calls);
        self.calls += later.calls + open.len() as u64;
        self.wait_ns += later.wait_ns + open.iter().map(|c| c.2).sum::<u64>();
        let kept = std::mem::take(&mut self.worst);
        let order = |a: &super::request_row::Listed, b: &super::request_row::Listed| {
            worst_first(&a.0, &b.0)
        };
        self.worst = super::worst::merged(kept, later.worst, opts.worst, order);
    }

    /// Takes the calls of the next requests: a call completing several of them counts
    /// once (its requests are neighbours once sorted by rank and call; they all have the
    /// call's progress wait). The ranks before the last one taken are done.
    fn add_calls(&mut self, calls: impl Iterator<Item = (u32, usize, u64)>) {
        let mut open = std::mem::take(&mut self.open_rank_calls);
        open.extend(calls);
        open.sort_unstable();
        open.dedup_by_key(|c| (c.0, c.1));
        let Some(last) = open.last().map(|c| c.0) else {
            return;
        };
        let done = open.partition_point(|c| c.0 < last);
        self.calls += done as u64;
        self.wait_ns += open[..done].iter().map(|c| c.2).sum::<u64>();
        open.drain(..done);
        self.open_rank_calls = open;
    }

    /// The verdicts of every request taken.
    pub(super) fn finish(self) -> NotAchieved {
        let open = &self.open_rank_calls;
        NotAchieved {
            count: self.count,
            descheduled: self.descheduled,
            calls: self.calls + open.len() as u64,
            unknown: self.unknown,
            wait_ns: self.wait_ns + open.iter().map(|c| c.2).sum::<u64>(),
            worst: self.worst.into_iter().filter_map(|w| w.1).collect(),
            hint: HINT,
        }
    }
}
