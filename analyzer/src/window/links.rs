//! The run cut to a window as a whole: which collective calls must stay as instants at
//! the edge, each rank cut ([`super::rank`]), then the messages and requests that link
//! calls, kept (renumbered) when every end is in the cut and counted as crossing the
//! edge otherwise, with the calls in the window that waited on them.

use std::collections::BTreeSet;

use super::rank::{cut_rank, is_compute, RankCut, AFTER, BEFORE};
use super::{Bounds, Crossing, Cut, UnknownWaits, WindowReport};
use crate::metrics::collectives;
use crate::model::{EventRef, RequestLife, RequestsByPost, Trace};

/// Where an end of a message or request is, against the cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// In the cut, at this index.
    In(usize),
    Before,
    After,
    /// On a rank left out.
    LeftOut,
}

/// The cut ranks, found by rank.
struct Cuts {
    ranks: Vec<RankCut>,
}

impl Cuts {
    fn end(&self, e: EventRef) -> End {
        let Some(slot) = crate::model::slot_of_rank(&self.ranks, e.rank, |c| c.timeline.rank)
        else {
            return End::LeftOut;
        };
        match self.ranks[slot].map.get(e.index).copied() {
            Some(BEFORE) => End::Before,
            Some(AFTER) | None => End::After,
            Some(i) => End::In(i as usize),
        }
    }
}

/// Counts one crossing with its ends.
fn count(c: &mut Crossing, ends: &[End]) {
    c.count += 1;
    c.before += u64::from(ends.contains(&End::Before));
    c.after += u64::from(ends.contains(&End::After));
    c.rank_left_out += u64::from(ends.contains(&End::LeftOut));
}

/// The indices of the calls outside the window that stay as instants, per rank of the
/// trace (by slot): every collective member on a rank kept of an instance that has a
/// member in the window, and the `MPI_*_init` describing a persistent request started
/// in it (its arguments are the request's); and how many of those collective instances
/// have members left out.
fn edge_marks(trace: &Trace, b: &Bounds) -> (Vec<Vec<usize>>, u64) {
    let mut partial = 0;
    let mut marks = vec![Vec::new(); trace.ranks.len()];
    let inside = |e: &EventRef| {
        trace.span(*e).is_some_and(|s| {
            matches!(
                super::rank::place(s.start, s.end, b),
                super::rank::Place::Inside(_)
            )
        })
    };
    for members in collectives::instances(trace).members {
        let kept: Vec<&EventRef> = members.iter().filter(|e| b.has_rank(e.rank)).collect();
        if !kept.iter().any(|e| inside(e)) {
            continue;
        }
        partial += u64::from(kept.len() < members.len());
        for e in kept.into_iter().filter(|e| !inside(e)) {
            if let Some(slot) = trace.slot(e.rank) {
                marks[slot].push(e.index);
            }
        }
    }
    for r in trace.requests.iter().filter(|r| r.args() != r.post()) {
        let (post, args) = (
            EventRef {
                rank: r.rank,
                index: r.post(),
            },
            EventRef {
                rank: r.rank,
                index: r.args(),
            },
        );
        if b.has_rank(r.rank) && inside(&post) && !inside(&args) {
            if let Some(slot) = trace.slot(r.rank) {
                marks[slot].push(r.args());
            }
        }
    }
    for m in &mut marks {
        m.sort_unstable();
        m.dedup();
    }
    (marks, partial)
}

/// Cuts `trace` to the window `b` (times and ranks already checked).
pub(crate) fn cut_trace(trace: Trace, b: &Bounds) -> Cut {
    let (marks, partial) = edge_marks(&trace, b);
    let nonblocking = collectives::nonblocking(&trace);
    let by_post = RequestsByPost::new(&trace.requests);
    let Trace {
        source,
        mut info,
        ranks,
        messages,
        requests,
        compute,
    } = trace;
    let mut report = WindowReport {
        collectives_partial: partial,
        ..WindowReport::default()
    };
    let mut clipped = Vec::new();
    let mut full_compute = Vec::new();
    let mut cuts = Vec::new();
    for ((t, marks), c) in ranks.into_iter().zip(marks).zip(compute) {
        if !b.has_rank(t.rank) {
            continue;
        }
        let rc = cut_rank(t, b, &marks);
        for k in &rc.clipped {
            let s = &rc.timeline.spans[k.at.index];
            match (k.edge, is_compute(s)) {
                (super::Edge::Outside, _) => report.edge_marks += 1,
                (_, true) => report.compute_cut += 1,
                (_, false) => report.calls_cut += 1,
            }
        }
        clipped.extend_from_slice(&rc.clipped);
        full_compute.push(c);
        cuts.push(rc);
    }
    let cuts = Cuts { ranks: cuts };

    // Requests: kept when every end is in the cut.
    let mut kept_requests: Vec<Option<RequestLife>> = requests
        .iter()
        .map(|r| {
            if !b.has_rank(r.rank) {
                return None;
            }
            let at = |index: usize| {
                cuts.end(EventRef {
                    rank: r.rank,
                    index,
                })
            };
            let ends: Vec<End> = [Some(r.post()), Some(r.args()), r.completion(), r.freed()]
                .into_iter()
                .flatten()
                .map(at)
                .collect();
            let inside: Vec<usize> = ends
                .iter()
                .filter_map(|e| match e {
                    End::In(i) => Some(*i),
                    _ => None,
                })
                .collect();
            if inside.len() == ends.len() {
                let new = |i: Option<usize>| {
                    i.and_then(|i| match at(i) {
                        End::In(n) => Some(n),
                        _ => None,
                    })
                };
                Some(RequestLife::new(
                    r.rank,
                    r.request(),
                    r.kind,
                    new(Some(r.post())).unwrap_or_default(),
                    new(Some(r.args())).unwrap_or_default(),
                    new(r.completion()),
                    new(r.freed()),
                ))
            } else {
                if !inside.is_empty() {
                    count(&mut report.requests, &ends);
                }
                None
            }
        })
        .collect();
    // A non-blocking collective instance crosses whole when a member on a rank kept
    // does: its requests are numbered per rank, and must pair up.
    for members in nonblocking {
        let on_kept: Vec<usize> = members
            .into_iter()
            .filter(|&i| b.has_rank(requests[i].rank))
            .collect();
        let n_kept = on_kept
            .iter()
            .filter(|&&i| kept_requests[i].is_some())
            .count();
        if n_kept == 0 || n_kept == on_kept.len() {
            continue;
        }
        for i in on_kept {
            if kept_requests[i].take().is_some() {
                report.requests.count += 1;
            }
        }
    }
    let requests_out: Vec<RequestLife> = kept_requests.into_iter().flatten().collect();

    // Messages: kept when every end is in the cut; the calls in it waiting on one that
    // crosses are said.
    let mut waiting: BTreeSet<EventRef> = BTreeSet::new();
    let mut messages_out = Vec::new();
    for m in &messages {
        let ends: Vec<(EventRef, End)> = [Some(m.send()), Some(m.recv_post()), m.completion()]
            .into_iter()
            .flatten()
            .map(|e| (e, cuts.end(e)))
            .collect();
        let inside = ends.iter().filter(|(_, e)| matches!(e, End::In(_))).count();
        if inside == ends.len() {
            messages_out.push(m.renumbered(|e| match cuts.end(e) {
                End::In(i) => i,
                _ => e.index,
            }));
            continue;
        }
        if inside == 0 {
            continue;
        }
        let only: Vec<End> = ends.iter().map(|(_, e)| *e).collect();
        count(&mut report.messages, &only);
        let mut wait_end = |e: EventRef| {
            if let End::In(index) = cuts.end(e) {
                waiting.insert(EventRef {
                    rank: e.rank,
                    index,
                });
            }
        };
        if let Some(done) = m.completion() {
            wait_end(done);
        }
        // The send's completion: the send itself when blocking, else the calls that
        // completed the requests it posted.
        let send = m.send();
        let posted: Vec<usize> = by_post.at(send).collect();
        if posted.is_empty() {
            wait_end(send);
        }
        for r in posted {
            if let Some(index) = requests[r].completion() {
                wait_end(EventRef {
                    rank: send.rank,
                    index,
                });
            }
        }
    }
    drop(messages);
    let mut unknown = UnknownWaits::default();
    for e in &waiting {
        let Some(slot) = crate::model::slot_of_rank(&cuts.ranks, e.rank, |c| c.timeline.rank)
        else {
            continue;
        };
        if let Some(s) = cuts.ranks[slot].timeline.spans.get(e.index) {
            unknown.calls += 1;
            unknown.ns += s.duration().0;
        }
    }
    report.unknown_waits = unknown;

    info.ranks.retain(|r| b.has_rank(r.rank));
    info.incomplete.retain(|r| b.has_rank(r.rank));
    info.messages = messages_out.len() as u64;
    let timelines: Vec<_> = cuts.ranks.into_iter().map(|c| c.timeline).collect();
    let mut trace = Trace::new(source, info, timelines, messages_out, requests_out);
    for ((c, t), full) in trace.compute.iter_mut().zip(&trace.ranks).zip(full_compute) {
        let (from, to) = t.window.unwrap_or((b.from, b.to));
        *c = full.clipped(from, to);
    }
    Cut {
        trace,
        report,
        clipped,
    }
}
