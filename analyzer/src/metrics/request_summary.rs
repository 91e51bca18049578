//! The requests summarised for the report ([`RequestSummary`]): counts, mean overlap,
//! exposed wait, the non-blocking collectives' figures, overlap written but not
//! achieved, and the worst requests. The summary is folded over the requests a part at a
//! time, in request order ([`Fold`]), and folds of consecutive parts merge
//! ([`Fold::merge`]), so that analysis need not hold every request's row at once
//! ([`crate::analysis`]'s pass order) nor fold them in one place; every figure is the
//! one a single pass over all of them gives, to the bit (sums of `f64` are exact until
//! read, [`ExactSum`]; the worst are chosen as among all at once).

use rayon::prelude::*;
use serde::Serialize;

use super::collective_model::CollectiveModel;
use super::exact_sum::ExactSum;
use super::progress::{self, Verdicts};
use super::request_metrics::{RequestClass, RequestMetrics};
use super::request_row::{Listed, RequestRow};
use super::transfer::TransferModel;
use super::worst::{merged, smallest_kept};
use super::Options;
use crate::model::Trace;
use crate::sites::SiteTable;

/// Requests summarised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestSummary {
    /// Requests posted.
    pub count: u64,
    /// Of which point-to-point sends.
    pub sends: u64,
    /// Of which point-to-point receives.
    pub receives: u64,
    /// Of which non-blocking collectives.
    pub collectives: u64,
    /// Of which one-sided operations with a request.
    pub one_sided: u64,
    /// Requests that no call completed and the program did not free: lost from the
    /// trace's view (the rank ended, or died, with them in flight).
    pub never_completed: u64,
    /// Requests the program let go with `MPI_Request_free` before any call completed
    /// them: their end is unknown, and they have no overlap figures.
    pub freed: u64,
    /// Mean overlap of the requests that have one (0..1); none when no request has one.
    pub mean_overlap: Option<f64>,
    /// Requests that have an overlap figure.
    pub with_overlap: u64,
    /// Requests that overlapped nothing (overlap 0).
    pub zero_overlap: u64,
    /// Summed exposed wait, ns (a call completing several requests counts once).
    pub exposed_wait_ns: u64,
    /// The transfer model used for `t_pure` of messages and one-sided operations.
    pub transfer_model: TransferModel,
    /// The model used for `t_pure` of non-blocking collectives.
    pub collective_model: CollectiveModel,
    /// The non-blocking collectives' OSU-style figures; none without any.
    pub nbc: Option<CollectiveFigures>,
    /// Overlap written, not achieved ([`super::progress`]).
    pub written_not_achieved: progress::NotAchieved,
    /// The completed requests with the least overlap, and among equals the largest
    /// exposed wait, worst first.
    pub worst: Vec<RequestMetrics>,
}

/// The non-blocking collectives together, as the OSU benchmarks report one operation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollectiveFigures {
    /// Completed non-blocking collective requests.
    pub completed: u64,
    /// Mean overall time `t_ovrl`, ns.
    pub mean_overall_ns: u64,
    /// Mean pure communication time of those that have an estimate, ns; none when none
    /// has.
    pub mean_pure_ns: Option<u64>,
    /// Mean compute in the window, ns.
    pub mean_cpu_ns: u64,
    /// Mean OSU overlap (0..1) of those that have one.
    pub mean_osu_overlap: Option<f64>,
    /// Mean IMB overlap (0..1) of those that have one.
    pub mean_overlap: Option<f64>,
}

/// Summarises the requests of `trace` (its worst ones named from it with the sites of
/// `table`).
pub fn summarize(
    trace: &Trace,
    table: &SiteTable,
    reqs: &[RequestRow],
    model: &TransferModel,
    collective_model: &CollectiveModel,
    opts: &Options,
) -> RequestSummary {
    let mut fold = Fold::default();
    fold.add(reqs, opts, &|r| listed(trace, table, r));
    fold.finish(model, collective_model)
}

/// What the report lists of request row `r` of `trace` (its rank's timeline there),
/// its post and completion named with the sites of `table`; none when its post is not
/// a call of the trace.
pub(crate) fn listed(trace: &Trace, table: &SiteTable, r: &RequestRow) -> Option<RequestMetrics> {
    let mut m = r.metrics(trace)?;
    super::by_site::name_request(trace, table, &mut m);
    Some(m)
}

/// A count and an exact sum of `f64`s: a mean that does not depend on how the values
/// were grouped.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Mean {
    n: u64,
    sum: ExactSum,
}

impl Mean {
    fn push(&mut self, x: f64) {
        self.n += 1;
        self.sum.add(x);
    }

    fn merge(&mut self, other: Mean) {
        self.n += other.n;
        self.sum.merge(other.sum);
    }

    fn add(&mut self, v: impl IntoIterator<Item = f64>) {
        for x in v {
            self.push(x);
        }
    }

    fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum.value() / self.n as f64)
    }

    /// The mean rounded to a whole number, 0 when there is none.
    fn rounded(&self) -> u64 {
        self.get().map_or(0, |m| m.round() as u64)
    }
}

/// The completed non-blocking collectives' figures so far.
#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct CollectiveSums {
    completed: u64,
    overall: Mean,
    pure: Mean,
    cpu: Mean,
    osu: Mean,
    imb: Mean,
}

impl CollectiveSums {
    /// Takes the next requests: one pass, each mean's figures in request order.
    fn add(&mut self, reqs: &[RequestRow]) {
        let done = reqs
            .iter()
            .filter(|r| r.kind == RequestClass::Collective && r.completion_index().is_some());
        for r in done {
            self.completed += 1;
            self.overall.push(r.t_ovrl_ns as f64);
            self.pure.add(r.t_pure_ns().map(|p| p as f64));
            self.cpu.push(r.cpu_ns as f64);
            self.osu.add(r.osu_overlap());
            self.imb.add(r.overlap());
        }
    }

    fn merge(&mut self, later: CollectiveSums) {
        self.completed += later.completed;
        self.overall.merge(later.overall);
        self.pure.merge(later.pure);
        self.cpu.merge(later.cpu);
        self.osu.merge(later.osu);
        self.imb.merge(later.imb);
    }

    fn finish(self) -> Option<CollectiveFigures> {
        (self.completed > 0).then(|| CollectiveFigures {
            completed: self.completed,
            mean_overall_ns: self.overall.rounded(),
            mean_pure_ns: self.pure.get().map(|m| m.round() as u64),
            mean_cpu_ns: self.cpu.rounded(),
            mean_osu_overlap: self.osu.get(),
            mean_overlap: self.imb.get(),
        })
    }
}

/// The summary of the requests taken so far, a part at a time in request order (the
/// run's requests are in rank order).
#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Fold {
    count: u64,
    sends: u64,
    receives: u64,
    collectives: u64,
    one_sided: u64,
    never_completed: u64,
    freed: u64,
    /// The overlap figures of the requests that have one.
    overlap: Mean,
    /// Of those, the requests at 0.
    zero_overlap: u64,
    /// Exposed wait summed over completing calls whose rank is done.
    exposed_wait_ns: u64,
    /// `(rank, call, exposed wait)` of the completing calls of the last rank taken,
    /// sorted and unique: its requests may go on in the next part.
    open_rank_waits: Vec<(u32, usize, u64)>,
    nbc: CollectiveSums,
    verdicts: Verdicts,
    /// The worst so far, worst first.
    worst: Vec<Listed>,
}

impl Fold {
    /// Takes the next requests; `list` makes what the report lists of one that may be
    /// among the worst ([`listed`]).
    pub(crate) fn add(
        &mut self,
        reqs: &[RequestRow],
        opts: &Options,
        list: &(dyn Fn(&RequestRow) -> Option<RequestMetrics> + Sync),
    ) {
        let count = |k: RequestClass| reqs.iter().filter(|r| r.kind == k).count() as u64;
        self.count += reqs.len() as u64;
        self.sends += count(RequestClass::Send);
        self.receives += count(RequestClass::Receive);
        self.collectives += count(RequestClass::Collective);
        self.one_sided += count(RequestClass::OneSided);
        self.never_completed += reqs
            .iter()
            .filter(|r| r.completion_index().is_none() && !r.freed)
            .count() as u64;
        self.freed += reqs.iter().filter(|r| r.freed).count() as u64;
        for o in reqs.iter().filter_map(RequestRow::overlap) {
            self.zero_overlap += u64::from(o == 0.0);
            self.overlap.push(o);
        }
        self.add_exposed_waits(reqs);
        self.nbc.add(reqs);
        self.verdicts.add(reqs, opts, list);
        let completed = reqs.iter().filter(|r| r.completion_index().is_some());
        // Those kept so far come before the new ones, as they did among the requests.
        let kept = std::mem::take(&mut self.worst);
        let keep = |r: &RequestRow| (*r, list(r));
        self.worst = smallest_kept(kept, completed, opts.worst, |w| &w.0, worst_first, keep);
    }

    /// A call completing several requests counts once: its requests are neighbours once
    /// sorted by (rank, call). The ranks before the last one taken are done.
    fn add_exposed_waits(&mut self, reqs: &[RequestRow]) {
        let mut waits = std::mem::take(&mut self.open_rank_waits);
        waits.extend(
            reqs.iter()
                .filter_map(|r| Some((r.rank, r.completion_index()?, r.exposed_wait_ns))),
        );
        waits.par_sort_unstable();
        waits.dedup();
        let Some(open) = waits.last().map(|w| w.0) else {
            return;
        };
        let done = waits.partition_point(|w| w.0 < open);
        self.exposed_wait_ns += waits[..done].iter().map(|w| w.2).sum::<u64>();
        waits.drain(..done);
        self.open_rank_waits = waits;
    }

    /// Adds the fold of the requests after this one's (of later ranks: each fold's ranks
    /// whole): what taking them here gives.
    pub(crate) fn merge(&mut self, later: Fold, opts: &Options) {
        self.count += later.count;
        self.sends += later.sends;
        self.receives += later.receives;
        self.collectives += later.collectives;
        self.one_sided += later.one_sided;
        self.never_completed += later.never_completed;
        self.freed += later.freed;
        self.zero_overlap += later.zero_overlap;
        self.overlap.merge(later.overlap);
        // This fold's last rank is done: the later fold's ranks come after it.
        let open = std::mem::replace(&mut self.open_rank_waits, later.open_rank_waits);
        self.exposed_wait_ns += later.exposed_wait_ns + open.iter().map(|w| w.2).sum::<u64>();
        self.nbc.merge(later.nbc);
        self.verdicts.merge(later.verdicts, opts);
        let kept = std::mem::take(&mut self.worst);
        self.worst = merged(kept, later.worst, opts.worst, |a, b| {
            worst_first(&a.0, &b.0)
        });
    }

    /// The summary of every request taken.
    pub(crate) fn finish(
        self,
        model: &TransferModel,
        collective_model: &CollectiveModel,
    ) -> RequestSummary {
        let open: u64 = self.open_rank_waits.iter().map(|w| w.2).sum();
        let mean_overlap = self.overlap.get();
        RequestSummary {
            count: self.count,
            sends: self.sends,
            receives: self.receives,
            collectives: self.collectives,
            one_sided: self.one_sided,
            never_completed: self.never_completed,
            freed: self.freed,
            mean_overlap,
            with_overlap: self.overlap.n,
            zero_overlap: self.zero_overlap,
            exposed_wait_ns: self.exposed_wait_ns + open,
            transfer_model: model.clone(),
            collective_model: collective_model.clone(),
            nbc: self.nbc.finish(),
            written_not_achieved: self.verdicts.finish(),
            worst: self.worst.into_iter().filter_map(|w| w.1).collect(),
        }
    }
}

/// The worst first: least overlap, then largest exposed wait, then by rank and request.
fn worst_first(a: &RequestRow, b: &RequestRow) -> std::cmp::Ordering {
    let key = |r: &RequestRow| {
        (
            r.overlap().unwrap_or(1.0),
            std::cmp::Reverse(r.exposed_wait_ns),
        )
    };
    let (ka, kb) = (key(a), key(b));
    ka.0.total_cmp(&kb.0)
        .then(ka.1.cmp(&kb.1))
        .then((a.rank, a.request).cmp(&(b.rank, b.request)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::request_row::RequestIdentity;

    /// A completed request: rank, request id, kind, completing call, exposed wait,
    /// overlap (none: no `t_pure`), progress verdict.
    fn row(
        rank: u32,
        request: u64,
        kind: RequestClass,
        completion: Option<usize>,
        exposed: u64,
        overlap: Option<f64>,
        verdict: Option<bool>,
    ) -> RequestRow {
        let mut r = RequestRow::new(RequestIdentity {
            rank,
            request,
            kind,
            post: 1,
            args: 1,
            peer: Some(0),
            tag: Some(0),
            bytes: 8,
            t_pure_ns: overlap.map(|_| 100),
            freed: completion.is_none() && request.is_multiple_of(2),
        });
        if let Some(c) = completion {
            r.exposed_wait_ns = exposed;
            r.cpu_ns = exposed / 3;
            r.t_ovrl_ns = exposed + 7;
            r.set_overlaps(overlap, overlap.map(|o| o / 3.0));
            r.progress_wait_ns = exposed / 2;
            r.written_not_achieved = verdict;
            r.set_completion(c);
        }
        r
    }

    /// Three ranks' requests, in rank order: calls completing several requests (rank 1's
    /// call 9 completes four of them), ties in the worst keys (equal overlap, wait, rank
    /// and request id: MPICH's shared handles), collectives with and without `t_pure`,
    /// a freed and a lost request, and overlaps whose sum depends on its order.
    fn rows() -> Vec<RequestRow> {
        use RequestClass::*;
        vec![
            row(0, 7, Send, Some(3), 50, Some(0.1), Some(true)),
            row(0, 7, Receive, Some(3), 50, Some(0.1), Some(true)),
            row(0, 8, Collective, Some(5), 20, Some(0.7), None),
            row(0, 10, Send, None, 0, None, None),
            row(1, 7, Send, Some(9), 80, Some(0.0), Some(true)),
            row(1, 7, Send, Some(9), 80, Some(0.0), Some(true)),
            row(1, 7, Receive, Some(9), 80, Some(0.3), None),
            row(1, 9, Collective, Some(9), 80, None, None),
            row(1, 11, Collective, Some(12), 5, Some(1e-9), Some(false)),
            row(1, 13, OneSided, None, 0, None, None),
            row(2, 7, Send, Some(4), 80, Some(0.0), Some(true)),
            row(2, 7, Receive, Some(6), 33, Some(0.1), Some(true)),
        ]
    }

    fn fold(parts: &[&[RequestRow]]) -> Fold {
        let opts = Options {
            worst: 2,
            ..Options::default()
        };
        let mut f = Fold::default();
        for p in parts {
            f.add(p, &opts, &|_| None);
        }
        f
    }

    /// Folded a part at a time, cut anywhere (inside a rank, between requests that one
    /// call completed) or a request at a time, the summary is the one pass's, to the bit:
    /// counts, sums, means, the calls' exposed wait counted once, the worst kept.
    #[test]
    fn a_summary_folded_in_parts_is_the_one_pass_summary() {
        let all = rows();
        let one_pass = fold(&[&all]);
        // Counted by hand: calls (0,3) 50, (0,5) 20, (1,9) 80, (1,12) 5, (2,4) 80,
        // (2,6) 33.
        assert_eq!(
            one_pass.exposed_wait_ns + one_pass.open_rank_waits.iter().map(|w| w.2).sum::<u64>(),
            268
        );
        assert_eq!(
            (one_pass.count, one_pass.never_completed, one_pass.freed),
            (12, 1, 1)
        );
        let worst: Vec<(u32, u64, RequestClass)> = one_pass
            .worst
            .iter()
            .map(|(r, _)| (r.rank, r.request, r.kind))
            .collect();
        // Overlap 0 with wait 80: rank 1's two sends (equal keys, kept in order), then
        // rank 2's.
        assert_eq!(
            worst,
            [(1, 7, RequestClass::Send), (1, 7, RequestClass::Send)]
        );
        for cut in 0..=all.len() {
            let (a, b) = all.split_at(cut);
            assert_eq!(fold(&[a, b]), one_pass, "cut at {cut}");
        }
        let each: Vec<&[RequestRow]> = all.chunks(1).collect();
        assert_eq!(fold(&each), one_pass, "a request at a time");
        let by_rank: Vec<&[RequestRow]> = all.chunk_by(|a, b| a.rank == b.rank).collect();
        assert_eq!(fold(&by_rank), one_pass, "a rank at a time");
    }
}
