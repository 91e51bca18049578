//! How much each non-blocking request overlapped, after the Intel MPI Benchmarks' NBC
//! formula applied to one request of a trace:
//!
//! - window `[X(post), E(wait)]`: where the program could compute while the transfer
//!   runs; `t_cpu` is the compute inside it ([`crate::model::compute`]: recorded spans, or the
//!   gaps between MPI calls);
//! - exposed wait: the duration of the call that completed the request;
//! - `t_ovrl = X(wait) - E(post)`;
//! - `t_pure`: the transfer time of the request on its own ([`super::transfer`]: the
//!   network fitted to clean transfers, for messages and one-sided operations;
//!   [`super::collective_model`] for non-blocking collectives, by the size the post
//!   recorded); unknown (none) when there is no estimate;
//! - `overlap = max(0, min(1, (t_pure + t_cpu - t_ovrl) / min(t_pure, t_cpu)))`,
//!   0 when nothing was computed in the window, none when `t_pure` is unknown;
//! - the OSU figure `osu_overlap = max(0, 1 - (t_ovrl - t_cpu) / t_pure)` next to it.
//!
//! ```text
//!  |Isend 1|..compute 10..|Wait 2|     t_cpu 10, t_ovrl 13, t_pure 4:
//!  0       1             11     13    IMB (4 + 10 - 13) / min(4, 10) = 0.25
//!                                      OSU 1 - (13 - 10) / 4 = 0.25
//! ```

use overlap_format::schema::{Nanos, RequestKind};
use rayon::prelude::*;

use super::collective_ends::Request;
use super::collective_model::CollectiveModel;
use super::cross_rank::CrossRank;
use super::message_ends::MessageEnds;
use super::progress::ProgressEvidence;
use super::request_metrics::RequestClass;
use super::request_row::{RequestIdentity, RequestRow};
use super::transfer::TransferModel;
use super::Options;
use crate::model::compact::{index_u32, some_index, NO_INDEX};
use crate::model::compute::ComputeCursor;
use crate::model::{RequestsByPost, Trace};

/// The figures of every request of the trace, in rank and post order.
pub fn per_request(
    trace: &Trace,
    model: &TransferModel,
    collectives: &CollectiveModel,
    opts: &Options,
) -> Vec<RequestRow> {
    let cross = CrossRank::of(trace);
    RequestPass::new(trace, &cross, model, collectives, opts).rows(trace, 0..trace.requests.len())
}

/// What making a request's row needs of the whole run (its message's bytes and its
/// completing call's latest partner), gathered once; rows are then made for any run of
/// the trace's requests ([`RequestPass::rows`]), from the whole trace or from a part of
/// it that holds their ranks ([`Trace::part`]).
pub struct RequestPass<'a> {
    model: &'a TransferModel,
    collectives: &'a CollectiveModel,
    opts: &'a Options,
    columns: PassColumns,
}

/// What a [`RequestPass`] gathered of the run (beside the models and options it reads),
/// for the requests of the trace it was gathered from: the run's, or a block of ranks'.
struct PassColumns {
    /// By request: the message its post sent or received (`NO_INDEX` for none).
    /// Where one call posted several requests of a kind (a Startall), each of them has
    /// the last message, in message order, that call sent or received.
    message: Vec<u32>,
    /// By request: the latest partner arrival of any request its completing call
    /// completed (`NO_TIME` for none: 8 bytes a request, not an `Option`'s 16). The
    /// call's wait until then is explained by a late partner, not by progress.
    call_partner: Vec<u64>,
    /// The ranks on hosts with more ranks than CPUs, sorted.
    crowded: Vec<u32>,
}

/// The last member's post of the non-blocking collective of each request of a range
/// of the run's requests that is a member of one, by its index within the range
/// (sorted): what a collective request's completing call waits for of its partners. A
/// worker of a job is given its block's ([`LastPosts::of_blocks`]) to gather its
/// requests' pass where they are kept.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct LastPosts(Vec<(u64, Nanos)>);

impl LastPosts {
    /// The last posts of the members of the non-blocking instances `nonblocking`
    /// (members by run request index) among each of `blocks` (consecutive ranges of the
    /// run's requests, in order), in one pass over the members.
    pub(crate) fn of_blocks(
        nonblocking: &[Vec<Request>],
        blocks: &[std::ops::Range<usize>],
    ) -> Vec<LastPosts> {
        let mut each: Vec<Vec<(u64, Nanos)>> = vec![Vec::new(); blocks.len()];
        for members in nonblocking {
            let Some(post) = members.iter().filter_map(|r| r.posted).map(|p| p.1).max() else {
                continue;
            };
            for r in members {
                let b = blocks.partition_point(|b| b.end <= r.request);
                if let Some(block) = blocks.get(b).filter(|b| b.contains(&r.request)) {
                    each[b].push(((r.request - block.start) as u64, post));
                }
            }
        }
        // A request is a member of one instance.
        (each.into_iter())
            .map(|mut last| {
                last.sort_unstable_by_key(|m| m.0);
                LastPosts(last)
            })
            .collect()
    }

    /// The last post of the instance of the request at `k` within the range.
    fn get(&self, k: usize) -> Option<Nanos> {
        let at = self.0.binary_search_by_key(&(k as u64), |m| m.0).ok()?;
        Some(self.0[at].1)
    }
}

impl<'a> RequestPass<'a> {
    /// Gathers what the rows of `trace`'s requests need, what crosses its ranks being
    /// `cross` (which the pass does not keep). Only the trace's messages, requests and
    /// description are read: no rank's events.
    pub fn new(
        trace: &Trace,
        cross: &CrossRank,
        model: &'a TransferModel,
        collectives: &'a CollectiveModel,
        opts: &'a Options,
    ) -> RequestPass<'a> {
        let nonblocking = &cross.collectives.nonblocking;
        let all = 0..trace.requests.len();
        let last_posts = LastPosts::of_blocks(nonblocking, std::slice::from_ref(&all));
        let last_posts = last_posts.into_iter().next().unwrap_or_default();
        let ends = (&cross.messages, &cross.requests_by_post, &last_posts);
        RequestPass::of_ends(trace, ends, model, collectives, opts)
    }

    /// [`RequestPass::new`] of the requests of `trace`, those of the run or of a block
    /// of its ranks (the trace's messages then those with an end among them, whatever
    /// their numbering): of what crosses ranks, only its messages' ends, its requests by
    /// post and the last posts of its requests' non-blocking collectives are read. A
    /// worker of a job gathers its block's so, what worker 0 would gather of them.
    pub(crate) fn of_ends(
        trace: &Trace,
        (ends, by_post, last_posts): (&MessageEnds, &RequestsByPost, &LastPosts),
        model: &'a TransferModel,
        collectives: &'a CollectiveModel,
        opts: &'a Options,
    ) -> RequestPass<'a> {
        let message = messages_of_requests(trace, ends, by_post);
        let partner_of = |ri: usize, r: &crate::model::RequestLife| -> Option<Nanos> {
            let mi = some_index(message[ri]);
            match (r.kind, mi) {
                (RequestKind::Send, Some(mi)) => ends.recv(mi).start(),
                (RequestKind::Recv, Some(mi)) => ends.send(mi).start(),
                (RequestKind::Collective, _) => last_posts.get(ri),
                _ => None,
            }
        };
        // Rank by rank (a call completes requests of its own rank only): the rank's
        // requests by completing call, each group given the latest partner of its
        // members. Nothing of the run's size but the column itself is held.
        debug_assert!(trace.requests.is_sorted_by_key(|r| r.rank), "Trace::new");
        let mut call_partner: Vec<u64> = vec![NO_TIME; trace.requests.len()];
        let mut ranks: Vec<(usize, &mut [u64])> = Vec::new();
        let mut rest: &mut [u64] = &mut call_partner;
        for range in super::request_parts::parts_of_whole_ranks(&trace.requests, 1) {
            let (this, after) = std::mem::take(&mut rest).split_at_mut(range.len());
            ranks.push((range.start, this));
            rest = after;
        }
        ranks.into_par_iter().for_each(|(first, out)| {
            let requests = &trace.requests[first..first + out.len()];
            // (completing call, request within the rank).
            let mut by_call: Vec<(u32, usize)> = (requests.iter().enumerate())
                .filter_map(|(k, r)| Some((index_u32(r.completion()?), k)))
                .collect();
            by_call.sort_unstable();
            let partner = |k: usize| {
                let ri = first + k;
                partner_of(ri, &trace.requests[ri]).map_or(NO_TIME, |t| t.0)
            };
            for same in by_call.chunk_by(|a, b| a.0 == b.0) {
                let known = same.iter().map(|g| partner(g.1)).filter(|&t| t != NO_TIME);
                let latest = known.max().unwrap_or(NO_TIME);
                for g in same {
                    out[g.1] = latest;
                }
            }
        });
        let mut crowded: Vec<u32> = super::oversubscription::Oversubscription::of(&trace.info)
            .ranks()
            .collect();
        crowded.sort_unstable();
        RequestPass {
            model,
            collectives,
            opts,
            columns: PassColumns {
                message,
                call_partner,
                crowded,
            },
        }
    }

    /// The rows of the requests `range` of `trace` (the one the pass was gathered from,
    /// or a part of it that holds their ranks; a request without one, sent to or
    /// received from `MPI_PROC_NULL`, or whose post is not a call of the trace, is left
    /// out), in request order, made on rayon's threads.
    pub fn rows(&self, trace: &Trace, range: std::ops::Range<usize>) -> Vec<RequestRow> {
        let mut out = Vec::new();
        self.rows_into(trace, range, &mut out);
        out
    }

    /// [`Self::rows`] into `out`, emptied first: a caller making rows a part at a time
    /// reuses one vector, whose memory is then not given back and faulted in again for
    /// every part.
    pub fn rows_into(
        &self,
        trace: &Trace,
        range: std::ops::Range<usize>,
        out: &mut Vec<RequestRow>,
    ) {
        // A block of requests at a time, each block's metrics made on rayon's threads in
        // pieces, then moved into the one vector (reserved once: a parallel collect of
        // what a filter keeps would hold every metric twice at its end).
        const PIECE: usize = 1 << 10;
        const BLOCK: usize = 1 << 16;
        let requests = &trace.requests[range.clone()];
        out.clear();
        out.reserve(requests.len());
        for (b, block) in requests.chunks(BLOCK).enumerate() {
            let pieces: Vec<Vec<RequestRow>> = block
                .par_chunks(PIECE)
                .enumerate()
                .map(|(p, piece)| {
                    let first = range.start + b * BLOCK + p * PIECE;
                    // The compute of the piece's rank, searched from request to request
                    // (a rank's requests are by post, their windows mostly in order).
                    let mut cursor = None;
                    let each = piece.iter().enumerate();
                    each.filter_map(|(k, r)| self.row(trace, first + k, r, &mut cursor))
                        .collect()
                })
                .collect();
            for piece in pieces {
                out.extend(piece);
            }
        }
    }

    /// The row of request `ri`, `r`, of `trace`; `cursor` is where the last request's
    /// window fell in its rank's compute (made anew when `r` is of another rank).
    fn row<'t>(
        &self,
        trace: &'t Trace,
        ri: usize,
        r: &crate::model::RequestLife,
        cursor: &mut Option<(u32, ComputeCursor<'t>)>,
    ) -> Option<RequestRow> {
        let (model, collectives, opts) = (self.model, self.collectives, self.opts);
        // The message its post sent or received.
        let c = &self.columns;
        let message = some_index(c.message[ri]).and_then(|mi| trace.messages.get(mi));
        let (Some(t), Some(cpu)) = (trace.rank(r.rank), trace.compute(r.rank)) else {
            return None;
        };
        let (args_op, call) = t.call(r.args())?;
        // A send to or receive from MPI_PROC_NULL (a negative peer that is not the
        // any-source wildcard of a receive that got a message) moves nothing.
        let from_nobody = r.kind == RequestKind::Recv
            && r.completion().is_some()
            && message.is_none()
            && call.peer().is_some_and(|p| p < 0);
        let to_nobody = matches!(r.kind, RequestKind::Send | RequestKind::OneSided)
            && call.peer().is_some_and(|p| p < 0);
        if to_nobody || from_nobody {
            return None;
        }
        let post = t.spans.get(r.post())?;
        post.op()?;
        let (kind, bytes, t_pure) = match r.kind {
            RequestKind::Send => {
                let b = call.bytes().unwrap_or(0);
                (RequestClass::Send, b, model.pure(b))
            }
            RequestKind::Recv => {
                let b = message.map(|m| m.bytes).or(call.bytes()).unwrap_or(0);
                (RequestClass::Receive, b, model.pure(b))
            }
            RequestKind::OneSided => {
                let b = call.bytes().unwrap_or(0);
                (RequestClass::OneSided, b, model.pure(b))
            }
            RequestKind::Collective => {
                let b = call.bytes().unwrap_or(0);
                (RequestClass::Collective, b, collectives.pure(args_op, b))
            }
        };
        let t_pure = t_pure.map(|p| p.0);
        let mut m = RequestRow::new(RequestIdentity {
            rank: r.rank,
            request: r.request(),
            kind,
            post: r.post(),
            args: r.args(),
            peer: call.peer(),
            tag: call.tag(),
            bytes,
            t_pure_ns: t_pure,
            freed: r.freed().is_some(),
        });
        let done = r
            .completion()
            .and_then(|i| Some((i, t.spans.get(i).filter(|s| s.op().is_some())?)));
        if let Some((i, span)) = done {
            let post_end = post.end.0;
            m.window_ns = span.start.0.saturating_sub(post_end);
            if cursor.as_ref().is_some_and(|(rank, _)| *rank != r.rank) {
                *cursor = None;
            }
            let (_, cpu) = cursor.get_or_insert_with(|| (r.rank, cpu.cursor()));
            m.cpu_ns = cpu.within(Nanos(post_end), span.start).0 .0;
            m.exposed_wait_ns = span.duration().0;
            m.t_ovrl_ns = span.end.0.saturating_sub(post.start.0);
            // Nothing computed in the window overlapped nothing, whatever the transfer
            // took: the IMB figure is 0 even where t_pure is unknown.
            let imb = match t_pure {
                Some(p) => imb_overlap(p, m.cpu_ns, m.t_ovrl_ns),
                None => (m.cpu_ns == 0).then_some(0.0),
            };
            m.set_overlaps(
                imb,
                t_pure.and_then(|p| osu_overlap(p, m.cpu_ns, m.t_ovrl_ns)),
            );
            let p = ProgressEvidence {
                blocking: span.op().is_some_and(|op| op.blocks()),
                wait_start: span.start,
                wait_end: span.end,
                partner: (c.call_partner[ri] != NO_TIME).then_some(Nanos(c.call_partner[ri])),
                t_pure: t_pure.map(Nanos),
                t_cpu: Nanos(m.cpu_ns),
                crowded: c.crowded.binary_search(&r.rank).is_ok(),
            };
            m.progress_wait_ns = p.progress_wait().0;
            m.written_not_achieved = p.verdict(opts);
            m.descheduled = p.descheduled(opts);
            m.set_completion(i);
        }
        Some(m)
    }
}

/// No time (a partner never seen): no time on the run's timeline is `u64::MAX` ns.
const NO_TIME: u64 = u64::MAX;

/// By request of `trace`: the last message (in message order) whose send is the
/// request's post, for a send, or whose receive was posted by it, for a receive
/// (`NO_INDEX` for none, and for messages one of whose calls is not in the trace).
/// A call that posted several requests of a kind (a Startall) gives each the same.
fn messages_of_requests(trace: &Trace, ends: &MessageEnds, by_post: &RequestsByPost) -> Vec<u32> {
    use std::sync::atomic::{AtomicU32, Ordering};
    // One past the message's index (0: none), the messages walked on rayon's threads:
    // where several messages name one request (a Startall's sends, each posted by the
    // one call), the last message's, as a walk in message order leaves it.
    let found: Vec<AtomicU32> = (0..trace.requests.len())
        .map(|_| AtomicU32::new(0))
        .collect();
    trace.messages.par_iter().enumerate().for_each(|(mi, m)| {
        let (send, post) = (m.send(), m.recv_post());
        if ends.send(mi).start().is_none() || ends.recv(mi).start().is_none() {
            return;
        }
        let ends = [(post, RequestKind::Recv), (send, RequestKind::Send)];
        for (call, kind) in ends {
            for ri in by_post.at(call) {
                if trace.requests[ri].kind == kind {
                    found[ri].fetch_max(index_u32(mi) + 1, Ordering::Relaxed);
                }
            }
        }
    });
    (found.into_iter())
        .map(|f| f.into_inner().checked_sub(1).unwrap_or(NO_INDEX))
        .collect()
}

/// The IMB overlap of one operation (0..1): 0 when nothing was computed, none when the
/// pure transfer time is 0.
pub fn imb_overlap(t_pure: u64, t_cpu: u64, t_ovrl: u64) -> Option<f64> {
    if t_pure == 0 {
        return None;
    }
    if t_cpu == 0 {
        return Some(0.0);
    }
    let num = t_pure as f64 + t_cpu as f64 - t_ovrl as f64;
    let den = t_pure.min(t_cpu) as f64;
    Some((num / den).clamp(0.0, 1.0))
}

/// The OSU overlap of one operation (0..1), `t_test` being 0 (Test calls are MPI time,
/// not compute): `max(0, 1 - (t_ovrl - t_cpu) / t_pure)`; none when `t_pure` is 0.
pub fn osu_overlap(t_pure: u64, t_cpu: u64, t_ovrl: u64) -> Option<f64> {
    if t_pure == 0 {
        return None;
    }
    let exposed = t_ovrl as f64 - t_cpu as f64;
    Some((1.0 - exposed / t_pure as f64).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EventRef;

    /// A request of `rank`, the run's `request`, posted at `posted` ns (none: its post
    /// is not a call of the trace).
    fn member(request: usize, rank: u32, posted: Option<u64>) -> Request {
        Request {
            request,
            rank,
            posted: posted.map(|ns| {
                (
                    EventRef {
                        rank,
                        index: request,
                    },
                    Nanos(ns),
                )
            }),
            call: None,
            done: None,
        }
    }

    /// Three non-blocking instances over requests 0..=7 of four ranks:
    ///
    /// ```text
    ///  instance A   requests 0 (at 10), 3 (at 40), 6 (at 25)  last post 40
    ///  instance B   requests 1 (unposted), 4 (unposted)       none: no post known
    ///  instance C   requests 2 (at 5), 7 (at 90)              last post 90
    ///  block 0..3   A's 0 -> 0 at 40; B's 1 none; C's 2 -> 2 at 90
    ///  block 3..7   A's 3 and 6 -> 0 and 3 at 40; B's 4 none
    ///  block 7..8   C's 7 -> 0 at 90
    /// ```
    ///
    /// Each block's last posts are numbered from its first request, hold its own members
    /// only, each with its instance's latest post, and none for an instance whose posts
    /// are all unknown.
    #[test]
    fn each_blocks_last_posts_are_its_members_numbered_from_its_first() {
        let instances = vec![
            vec![
                member(0, 0, Some(10)),
                member(3, 1, Some(40)),
                member(6, 3, Some(25)),
            ],
            vec![member(1, 0, None), member(4, 2, None)],
            vec![member(2, 0, Some(5)), member(7, 3, Some(90))],
        ];
        let blocks = LastPosts::of_blocks(&instances, &[0..3, 3..7, 7..8]);
        let block = &blocks[1];
        assert_eq!(block.0, vec![(0, Nanos(40)), (3, Nanos(40))]);
        assert_eq!(block.get(0), Some(Nanos(40)));
        assert_eq!(
            block.get(1),
            None,
            "request 4: its instance has no post known"
        );
        assert_eq!(block.get(4), None, "request 7 is not the block's");
        assert_eq!(
            blocks[0].0,
            vec![(0, Nanos(40)), (2, Nanos(90))],
            "the first block's"
        );
        assert_eq!(
            blocks[2].0,
            vec![(0, Nanos(90))],
            "the last block's, numbered from 7"
        );
        let run = LastPosts::of_blocks(&instances, std::slice::from_ref(&(0..8))).remove(0);
        let posts: Vec<Option<u64>> = (0..8).map(|k| run.get(k).map(|n| n.0)).collect();
        let want = [
            Some(40),
            None,
            Some(90),
            Some(40),
            None,
            None,
            Some(40),
            Some(90),
        ];
        assert_eq!(posts, want);
    }
}
