//! False overlap: a wait placed where nothing could overlap the transfer it waits for,
//! while work that does not need it runs right after.
//!
//! A blocking completion call `W` (Wait, Waitall) that completed at least one send is a
//! finding when all of these hold:
//!
//! 1. it cost time: the part of `W` spent on its sends, `lost` (all of `W`, less the
//!    Late Sender wait of any receive it also completed), is at least `min_wait`;
//! 2. the window of its sends was (nearly) empty: the compute between each send's post
//!    and `W` is less than `empty_window_share` of `lost`;
//! 3. work that does not depend on the sends ran after `W`: compute between the end of
//!    `W` and the point it can move to, at least `min_wait` of it;
//! 4. moving it could hide more than the model's uncertainty: `hideable`, the smaller
//!    of `lost` and that work, exceeds the uncertainty of the transfer it waits for (the
//!    network fit's range at its size) and `min_wait`.
//!
//! Where `W` can move comes from [`crate::dependence`], the rule `overlap suggest`'s
//! reordering uses ([`super::false_overlap_limit`]): the *proven* point is before the
//! first later work that may write a send's buffer (an MPI call naming an overlapping
//! buffer, a declared writer, the first touch the buffer watch learned, or compute whose
//! effect is unknown); the *possible* point before the first recorded use only, which a
//! finding reports with what it needs ("possible if the compute between a.c:49 and
//! a.c:53 does not write the send buffer"). Conditions 3 and 4 hold for the possible
//! point; the proven one is given when some work is proven independent.
//!
//! A wait that completed only receives is a finding on the same conditions (its `lost`
//! is all of it), at its proven point alone: a receive's buffer may be read by any
//! compute after the wait unless a watch or a declared span proves otherwise.
//!
//! ```text
//!  |Isend s|Irecv r|Waitall r|Waitall s 7|unpack 2|compute 20|pack 1|Isend s'|
//!                             ^ W: lost 7, window of s empty    ^ s's buffer reused
//!  possible: 23 of independent work, hideable 7, move before Isend s', if unpack,
//!  compute and pack do not write s; proven (pack declared to write s): before pack
//! ```

use crate::fxhash::FxHashMap as HashMap;

use overlap_format::schema::OpClass;
use serde::Serialize;

use super::false_overlap_limit::{compute_ref, stops, Guarded, Placed, Stop, Unit, Walk};
pub use super::false_overlap_limit::{ComputeRef, FirstUse, Limit};
use super::request_row::RequestRow;
use super::wait_kind::WaitKind;
use super::{CallRef, Options};
use crate::dependence::{Effect, Guard};
use crate::model::{Timeline, Trace, What};

/// A request of a finding.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct FindingRequest {
    /// Request id on its rank.
    pub request: u64,
    /// Its post.
    pub post: CallRef,
    /// Destination (world rank).
    pub peer: Option<i32>,
    /// Tag.
    pub tag: Option<i32>,
    /// Bytes.
    pub bytes: u64,
    /// Compute between its post and the wait, ns.
    pub window_cpu_ns: u64,
}

/// A point a wait can move to, and what moving it there could hide.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct WaitMove {
    /// The wait can move to just before this call (none: before compute, or to the end).
    pub move_before: Option<CallRef>,
    /// The wait can move to just before this compute.
    pub before_compute: Option<ComputeRef>,
    /// The same point named by the call after which the wait may go: the last MPI call
    /// of the waiting thread after it and before the point (`MPI_Finalize` excluded);
    /// none when only compute lies between. For a program without compute spans this
    /// is how the point reads in the source.
    pub move_after: Option<CallRef>,
    /// Why it cannot move further.
    pub limit: Limit,
    /// The first touch that limits it, when a watch learned it.
    pub first_use: Option<FirstUse>,
    /// Compute between the wait and the point, ns.
    pub independent_work_ns: u64,
    /// Compute spans (or gaps) in that work.
    pub independent_spans: u64,
    /// Names of the first compute spans of it (none for gaps).
    pub independent_names: Vec<String>,
    /// Time the move could hide: `min(lost, independent work)`, ns.
    pub hideable_ns: u64,
}

/// What a move past the proven point needs: the first compute there whose effect on
/// the buffer is unknown must leave it alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PossibleIf {
    /// The compute.
    pub compute: ComputeRef,
    /// What it must not do: `write` (a send's buffer), `read or write` (a receive's).
    #[serde(deserialize_with = "crate::static_names::read")]
    pub must_not: crate::static_names::StaticName,
    /// Which buffer: `the send buffer`, `the receive buffer`.
    #[serde(deserialize_with = "crate::static_names::read")]
    pub buffer: crate::static_names::StaticName,
    /// Its address, when recorded.
    pub addr: Option<u64>,
    /// Its length in bytes, when recorded.
    pub len: Option<u64>,
}

/// One false-overlap finding, with its evidence.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Finding {
    /// Rank.
    pub rank: u32,
    /// The call that waited.
    pub wait: CallRef,
    /// The requests it waited for that can move: its sends (its receives, for a wait of
    /// receives alone).
    pub requests: Vec<FindingRequest>,
    /// True when the wait also completed receives (only its sends can move).
    pub mixed: bool,
    /// Time the wait lost on those requests, ns.
    pub lost_ns: u64,
    /// The furthest the wait can move without crossing a recorded use of the buffers
    /// (the proven point, when nothing past it is unknown).
    pub possible: WaitMove,
    /// The furthest it can move crossing only work proven to leave the buffers alone;
    /// none when no work after it is (then the move is only possible, see `needs`).
    pub proven: Option<WaitMove>,
    /// What the possible move needs beyond the proven point; none when it is proven.
    pub needs: Option<PossibleIf>,
}

impl Finding {
    /// Every call the finding names, to give each its site.
    pub fn calls_mut(&mut self) -> Vec<&mut CallRef> {
        let mut out = vec![&mut self.wait];
        out.extend(self.requests.iter_mut().map(|r| &mut r.post));
        let moves = std::iter::once(&mut self.possible).chain(self.proven.as_mut());
        for m in moves {
            out.extend(m.move_before.as_mut());
            out.extend(m.move_after.as_mut());
            if let Some(c) = m.before_compute.as_mut() {
                out.extend(c.after.as_mut());
                out.extend(c.until.as_mut());
            }
        }
        if let Some(n) = self.needs.as_mut() {
            out.extend(n.compute.after.as_mut());
            out.extend(n.compute.until.as_mut());
        }
        out
    }

    /// The learned first uses it names, to give each its site.
    pub fn first_uses_mut(&mut self) -> impl Iterator<Item = &mut FirstUse> {
        let moves = std::iter::once(&mut self.possible).chain(self.proven.as_mut());
        let computes = moves
            .flat_map(|m| {
                let c = m.before_compute.as_mut();
                std::iter::once(&mut m.first_use).chain(c.into_iter().flat_map(ComputeRef::touches))
            })
            .chain(self.needs.iter_mut().flat_map(|n| n.compute.touches()));
        computes.filter_map(Option::as_mut)
    }
}

/// What one finding's requests are, as the rule asks about them.
struct Candidate<'a> {
    rank: u32,
    wait_index: usize,
    group: Vec<&'a RequestRow>,
    mixed: bool,
    lost: u64,
    /// What the walks ask of its rank.
    facts: &'a RankFacts,
}

/// What the walk after each wait asks of the wait's rank, found once for the rank.
struct RankFacts {
    rank: u32,
    /// The end of the rank's analysed part ([`Timeline::extent`]), if it has one.
    end: Option<u64>,
    /// The threads that recorded compute spans (the others' compute is the gaps between
    /// their calls), sorted.
    compute_tids: Vec<u32>,
}

impl RankFacts {
    fn of(t: &Timeline) -> RankFacts {
        let mut compute_tids: Vec<u32> = (t.spans.iter())
            .filter(|s| matches!(s.what, What::Compute(_)))
            .map(|s| s.tid)
            .collect();
        compute_tids.sort_unstable();
        compute_tids.dedup();
        RankFacts {
            rank: t.rank,
            end: t.extent().map(|e| e.1 .0),
            compute_tids,
        }
    }

    /// True when thread `tid` recorded no compute span.
    fn gaps(&self, tid: u32) -> bool {
        self.compute_tids.binary_search(&tid).is_err()
    }
}

/// The false-overlap findings of the trace, largest loss first. `uncertainty`: the
/// model's uncertainty on the transfer of a message of that many bytes, ns.
pub fn findings(
    trace: &Trace,
    reqs: &[RequestRow],
    late_sender: &HashMap<(u32, usize), u64>,
    opts: &Options,
    uncertainty: &(dyn Fn(u64) -> u64 + Sync),
) -> Vec<Finding> {
    let mut out = Vec::new();
    findings_into(trace, reqs, late_sender, opts, uncertainty, &mut |batch| {
        out.extend(batch)
    });
    sort_findings(&mut out);
    out
}

/// How many findings [`findings_into`] gives at a time.
const BATCH: usize = 4096;

/// [`findings`], given to `sink` a batch of at most [`BATCH`] at a time as they are
/// found, in no order: a rank whose waits are many false overlaps (a finding is about a
/// kilobyte) is then never held whole, for a fold that does not depend on their order.
pub fn findings_into(
    trace: &Trace,
    reqs: &[RequestRow],
    late_sender: &HashMap<(u32, usize), u64>,
    opts: &Options,
    uncertainty: &(dyn Fn(u64) -> u64 + Sync),
    sink: &mut dyn FnMut(Vec<Finding>),
) {
    findings_in_batches(trace, reqs, late_sender, opts, uncertainty, BATCH, sink);
}

/// [`findings_into`], `batch` findings at most at a time.
fn findings_in_batches(
    trace: &Trace,
    reqs: &[RequestRow],
    late_sender: &HashMap<(u32, usize), u64>,
    opts: &Options,
    uncertainty: &(dyn Fn(u64) -> u64 + Sync),
    batch: usize,
    sink: &mut dyn FnMut(Vec<Finding>),
) {
    // Requests by the call that completed them.
    let mut by_wait: Vec<((u32, usize), &RequestRow)> = reqs
        .iter()
        .filter_map(|r| Some(((r.rank, r.completion_index()?), r)))
        .collect();
    by_wait.sort_by_key(|(k, _)| *k);
    let mut out = Vec::new();
    // What the walks ask of the rank of the waits at hand, found once per rank (each a
    // pass over its timeline), not once per wait.
    let mut facts: Option<RankFacts> = None;
    for chunk in by_wait.chunk_by(|a, b| a.0 == b.0) {
        let (rank, wait_index) = chunk[0].0;
        let all: Vec<&RequestRow> = chunk.iter().map(|(_, r)| *r).collect();
        let Some(t) = trace.rank(rank) else { continue };
        if facts.as_ref().is_none_or(|f| f.rank != rank) {
            facts = Some(RankFacts::of(t));
        }
        let Some(facts) = facts.as_ref() else {
            continue;
        };
        let Some(w) = t.spans.get(wait_index) else {
            continue;
        };
        if !w.op().is_some_and(|op| op.blocks()) {
            continue;
        }
        let sends: Vec<&RequestRow> = all.iter().copied().filter(|r| r.is_send()).collect();
        let (group, mixed, lost) = if sends.is_empty() {
            (all, false, w.duration().0)
        } else {
            let mixed = sends.len() < all.len();
            let ls = if mixed {
                late_sender.get(&(rank, wait_index)).copied().unwrap_or(0)
            } else {
                0
            };
            (sends, mixed, w.duration().0.saturating_sub(ls))
        };
        if lost < opts.min_wait.0 {
            continue;
        }
        let window_cpu = group.iter().map(|r| r.cpu_ns).max().unwrap_or(0);
        if window_cpu as f64 >= opts.empty_window_share * lost as f64 {
            continue;
        }
        let c = Candidate {
            rank,
            wait_index,
            group,
            mixed,
            lost,
            facts,
        };
        if let Some(f) = finding(trace, t, &c, opts, uncertainty) {
            out.push(f);
            if out.len() >= batch {
                sink(std::mem::replace(&mut out, Vec::with_capacity(batch)));
            }
        }
    }
    if !out.is_empty() {
        sink(out);
    }
}

/// The finding of candidate `c` on rank timeline `t`, if it is one.
fn finding(
    trace: &Trace,
    t: &Timeline,
    c: &Candidate,
    opts: &Options,
    uncertainty: &(dyn Fn(u64) -> u64 + Sync),
) -> Option<Finding> {
    let w = t.spans.get(c.wait_index)?;
    let receives = !c.group[0].is_send();
    let from = w.end.0;
    // Each request's own watch: the learned use armed when this wait completed it (ids
    // are reused: the one of that id armed during the wait or before the thread's next
    // call, nearest its end).
    let next_call = (t.spans.iter().skip(c.wait_index + 1))
        .find(|s| s.tid == w.tid)
        .map_or(u64::MAX, |s| s.start.0);
    let watch = |id: u64| {
        let k = t.learned.partition_point(|u| u.from.0 < w.start.0);
        (t.learned[k..].iter().enumerate())
            .take_while(|(_, u)| u.from.0 <= next_call)
            .filter(|(_, u)| u.request == id)
            .min_by_key(|(_, u)| u.from.0.abs_diff(from))
            .map(|(j, u)| (k + j, u))
    };
    let guarded: Vec<Guarded> = c
        .group
        .iter()
        .filter_map(|r| {
            let (_, post) = t.call(r.args_index())?;
            let buf = post.buf();
            let watch = watch(r.request);
            Some(Guarded {
                buf,
                guard: if r.is_send() {
                    Guard::Writes
                } else {
                    Guard::Touches
                },
                peer_tag: (post.peer().zip(post.tag())).filter(|_| buf.is_none() && r.is_send()),
                watch: watch.map(|w| w.1),
                watch_index: watch.map(|w| w.0),
            })
        })
        .collect();
    let hi = c.facts.end.unwrap_or(from);
    let watches = guarded.iter().filter_map(|g| g.watch_index);
    let walked = stops(
        t,
        Walk::after(t, c.wait_index, hi, c.facts.gaps(w.tid), watches),
        &guarded,
        receives,
    );
    let cpu = trace.compute(c.rank)?;
    let by_peer_and_tag = guarded.iter().all(|g| g.buf.is_none());
    // The move to just before the unit `stop` (none: the end).
    let to = |stop: Option<Stop>| -> WaitMove {
        let at = stop.map(|s| &walked.units[s.unit]);
        let until = at.map_or(hi, |p| p.start);
        let (work, spans) = cpu.within(w.end, overlap_format::schema::Nanos(until));
        let last = at.map_or(t.spans.len(), Placed::index);
        let limit = stop.map_or(Limit::EndOfTrace, |s| Limit::of(s.effect, by_peer_and_tag));
        // The touch that stops it: of the buffer it stops for.
        let first_use = stop
            .filter(|_| limit == Limit::LearnedUse)
            .and_then(|s| FirstUse::of(guarded.get(s.guarded)?.watch?));
        WaitMove {
            move_before: at.and_then(|p| match p.unit {
                Unit::Call(i) => CallRef::of(trace, c.rank, i),
                _ => None,
            }),
            before_compute: at.and_then(|p| compute_ref(trace, t, p)),
            move_after: last_call_before(t, c.wait_index, last)
                .and_then(|i| CallRef::of(trace, c.rank, i)),
            limit,
            first_use,
            independent_work_ns: work.0,
            independent_spans: spans as u64,
            independent_names: names(t, c.wait_index, last),
            hideable_ns: c.lost.min(work.0),
        }
    };
    let proven = to(walked.proven);
    let possible = if receives {
        proven.clone()
    } else {
        to(walked.possible)
    };
    let worth = |m: &WaitMove| {
        let bytes = c.group.iter().map(|r| r.bytes).max().unwrap_or(0);
        m.independent_work_ns >= opts.min_wait.0
            && m.hideable_ns > opts.min_wait.0.max(uncertainty(bytes))
    };
    if !worth(&possible) {
        return None;
    }
    let needs = match walked.proven {
        Some(Stop {
            unit: k,
            effect: Effect::Unknown,
            ..
        }) if possible != proven => {
            let unit = &walked.units[k];
            let g = guarded.first()?;
            Some(PossibleIf {
                compute: compute_ref(trace, t, unit)?,
                must_not: g.guard.verb(),
                buffer: if receives {
                    "the receive buffer"
                } else {
                    "the send buffer"
                },
                addr: g.buf.map(|b| b.addr),
                len: g.buf.map(|b| b.len),
            })
        }
        _ => None,
    };
    Some(Finding {
        rank: c.rank,
        wait: CallRef::of(trace, c.rank, c.wait_index)?,
        requests: c
            .group
            .iter()
            .filter_map(|r| {
                Some(FindingRequest {
                    request: r.request,
                    post: CallRef::of(trace, r.rank, r.post_index())?,
                    peer: r.peer(),
                    tag: r.tag(),
                    bytes: r.bytes,
                    window_cpu_ns: r.cpu_ns,
                })
            })
            .collect(),
        mixed: c.mixed,
        lost_ns: c.lost,
        proven: worth(&proven).then_some(proven),
        possible,
        needs,
    })
}

/// The first three distinct names of the compute spans between the wait and event
/// `last`.
fn names(t: &Timeline, wait: usize, last: usize) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for s in t.spans.get(wait + 1..last).unwrap_or(&[]) {
        if let What::Compute(id) = s.what {
            let n = t.name(id);
            if !names.iter().any(|x| x == n) {
                names.push(n.to_string());
            }
            if names.len() >= 3 {
                break;
            }
        }
    }
    names
}

/// Findings in the report's order: largest loss first, then by rank and waiting call
/// (a finding's rank and call are its own: the order is total, whatever the order
/// given).
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by_key(report_order);
}

/// A finding's place in the report's order, as a key ([`sort_findings`]).
pub fn report_order(f: &Finding) -> (std::cmp::Reverse<u64>, u32, usize) {
    (std::cmp::Reverse(f.lost_ns), f.rank, f.wait.index)
}

/// The last MPI call of the waiting call's thread after `wait` and before event `limit`
/// (MPI_Finalize excluded: the analysed part ends where it starts).
fn last_call_before(t: &Timeline, wait: usize, limit: usize) -> Option<usize> {
    let tid = t.spans.get(wait)?.tid;
    let end = limit.min(t.spans.len());
    (wait + 1..end).rev().find(|&i| {
        t.spans[i].tid == tid
            && t.spans[i]
                .op()
                .is_some_and(|op| op.class() != OpClass::Environment)
    })
}

/// The Late Sender wait of each call, for [`findings`]: the whole of it, before any
/// split with a Late Receiver of the same call (the receives alone would have cost that
/// much, so that much of the wait cannot move with the sends).
pub fn late_sender_by_call(waits: &[super::WaitInstance]) -> HashMap<(u32, usize), u64> {
    waits
        .iter()
        .filter(|w| w.kind == WaitKind::LateSender)
        .map(|w| ((w.rank, w.index), w.split_from_ns.unwrap_or(w.amount_ns)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{collective_model::CollectiveModel, requests, wait_states, TransferModel};

    /// Given a few at a time, the findings of every kept run are those found at once,
    /// no batch larger than asked.
    #[test]
    fn findings_given_in_batches_are_all_the_findings() {
        let mut found = 0;
        for trace in crate::load::kept_runs() {
            let opts = Options::default();
            let model = TransferModel::fit(&trace);
            let rows = requests::per_request(&trace, &model, &CollectiveModel::fit(&trace), &opts);
            let late = late_sender_by_call(&wait_states::instances(&trace));
            let uncertainty = |_: u64| 0;
            let all = findings(&trace, &rows, &late, &opts, &uncertainty);
            for batch in [1, 2, 3] {
                let mut batched = Vec::new();
                findings_in_batches(&trace, &rows, &late, &opts, &uncertainty, batch, &mut |b| {
                    assert!(!b.is_empty() && b.len() <= batch);
                    batched.extend(b);
                });
                sort_findings(&mut batched);
                assert_eq!(batched, all, "{}", trace.source.display());
            }
            found += all.len();
        }
        assert!(found > 3, "findings in the kept runs: {found}");
    }
}
