//! The first pass of an analysis that holds one rank at a time: what crosses ranks,
//! found from a directory of rank files without holding the run. Each rank is read onto
//! the run's timeline (on rayon's threads, as the merge that holds one rank at a time
//! reads it), reduced to its digest, and dropped:
//!
//! - its request lifetimes, and its message ends numbered by (key, seq), as matching
//!   makes them ([`crate::merge`]);
//! - its compute ([`RankCompute`]), its time budget ([`super::budget`]) and the sites it
//!   recorded ([`crate::sites`]);
//! - the sides of its ends ([`super::message_ends`]): the send side of each sending
//!   call, the receive side of each (posting, completing) pair of calls, each found on
//!   the rank's own timeline and requests;
//! - its blocking collective calls, in call order (scope, operation, root, member), and
//!   its collective requests, in request order (communicator, member)
//!   ([`super::collective_ends`]).
//!
//! The ends are then joined into the run's messages, each message given its two sides,
//! and the collective calls grouped into instances (the k-th call of each rank in each
//! scope, [`super::collectives`]' rule), and the sites symbolized rank after rank. What
//! comes out is what [`CrossRank::of`] finds on the whole trace, and the trace's
//! messages, requests, compute, budgets and site table, field for field.
//!
//! It is the first pass of the analysis that never holds the run
//! ([`crate::analysis::analyze_dir`]), whose later passes make every figure from each
//! part of the ranks read again beside these columns.
//!
//! ```text
//!  rank 0 file ─► timeline ─► digest: lives, ends, compute, sides by call ─┐ (dropped)
//!  rank 1 file ─► timeline ─► digest ...                                   ├─► join
//!  ...                                                                     ┘
//!  join: messages (ids in send order) ─► each message's sides looked up by its calls
//!        collective calls, rank after rank ─► instances
//! ```

use std::ops::Range;
use std::path::Path;

use overlap_format::schema::{MergedInfo, Nanos, Op, OpClass, PeersOutOfRange, RequestKind};
use rayon::prelude::*;

use super::budget::{rank_budget, run_budget, RankBudget, RunBudget};
use super::collective_ends::{
    blocking_member, request_member, Blocking, CollectiveEnds, Member, Request,
};
use super::collectives::{scope, CallInstances, Numbering, Scope};
use super::cross_rank::CrossRank;
use super::message_ends::{recv_side, send_side, MessageEnds};
use super::one_sided::{candidates_of, RankEpochs};
use super::side::{Side, Sides};
use crate::fxhash::FxHashMap;
use crate::import::Reading;
use crate::merge::{
    file_of, join, out_of_range, rank_requests_and_ends, RankEnds, RunFiles, Unreadable, NO_CALL,
};
use crate::model::compact::index_u32;
use crate::model::compute::RankCompute;
use crate::model::{
    EventRef, Message, MessagesByRank, RankWork, RequestLife, RequestsByPost, Timeline,
};
use crate::sites::{RankSites, SiteTable};
use crate::Result;

/// What the first pass finds of a run: every figure that crosses ranks, and what of each
/// rank the run keeps, with no rank's timeline.
pub struct Digested {
    /// The run's description, as the merge gives it.
    pub info: MergedInfo,
    /// Files of the directory that could not be used at all.
    pub unreadable: Vec<Unreadable>,
    /// What was read but could not be used in full, one line each naming its file.
    pub notes: Vec<String>,
    /// The matched messages, ids from 1 in order of their sends.
    pub messages: Vec<Message>,
    /// Every rank's request lifetimes, in rank order, each rank's in post order; at
    /// worker 0 of a job, its own block's (the first), the others' kept by their
    /// workers.
    pub requests: Vec<RequestLife>,
    /// Where each rank's requests start among the run's, in rank order, and then their
    /// number.
    pub request_starts: Vec<usize>,
    /// The compute of each rank this worker answers for (every rank, in one process),
    /// in rank order: the figures of a rank are made where its file is read again, so
    /// its compute stays there and never crosses.
    pub compute: Vec<RankCompute>,
    /// Each rank's time budget, in rank order, and the run's.
    pub budgets: (Vec<RankBudget>, RunBudget),
    /// Every distinct call site of the run, symbolized.
    pub sites: SiteTable,
    /// Both ends of every message and the members of every collective instance.
    pub cross: CrossRank,
    /// The instance of each blocking collective call.
    pub instances: CallInstances,
    /// The messages by sender and by receiver (what the later passes find a part's
    /// messages by).
    pub by_rank: MessagesByRank,
    /// The work of each rank, in rank order.
    pub work: Vec<RankWork>,
    /// The ranks whose data ends early, in rank order.
    pub ends_early: Vec<u32>,
    /// The run's files, to read its ranks again (the second pass).
    pub(crate) files: RunFiles,
}

/// A blocking collective call of a rank: what its instance is ordered in, and what the
/// instance reads of it.
#[derive(serde::Serialize, serde::Deserialize)]
struct CollectiveCall {
    /// Its index in its rank.
    index: u32,
    scope: Scope,
    op: Op,
    root: Option<i32>,
    member: Option<Member>,
}

/// What the pass keeps of one rank once its timeline is dropped, and its message ends
/// for the join: what a worker of an analysis made by several sends worker 0 of each of
/// its ranks (`digest_share`).
type RankDigested = (RankDigest, RankEnds);

/// The digests of a worker's ranks, in the order given, as `D` (made, or written), and
/// their compute, which the worker keeps.
pub(super) type Digests<D> = (Vec<D>, Vec<RankCompute>);

/// What the pass keeps of one rank once its timeline is dropped.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct RankDigest {
    pub(super) rank: u32,
    events: u64,
    work: RankWork,
    /// False when its data ends early.
    complete: bool,
    /// Its requests, empty where its worker keeps them ([`requests_kept`]).
    requests: Vec<RequestLife>,
    /// How many requests it has.
    request_count: usize,
    budget: RankBudget,
    /// The part of the run it analyses ([`Timeline::extent`]), if any.
    extent: Option<(Nanos, Nanos)>,
    sites: RankSites,
    peers: Vec<PeersOutOfRange>,
    notes: Vec<String>,
    /// The send side of each of its sending calls, by call.
    sends: Sides<u32>,
    /// The receive side of each (posting, completing) pair of its calls, by the pair.
    recvs: Sides<(u32, u32)>,
    collectives: Vec<CollectiveCall>,
    /// Its one-sided epochs, for matching with the other sides'.
    epochs: RankEpochs,
    /// Its collective requests: each one's communicator, and its member record (the
    /// request's index in the rank's own requests until the run's are known).
    collective_requests: Vec<(u32, Request)>,
}

/// Reads the rank files of `dir` (those [`crate::merge::merge_dir`] would use, with the
/// same checks) one rank per thread at a time, and finds what crosses them; `reading` is
/// told of each file read (every file is read through once, then each usable one again).
pub fn digest_dir(dir: &Path, reading: &Reading) -> Result<Digested> {
    let _span = tracing::info_span!("first pass").entered();
    let files = RunFiles::open_with(dir, &|bytes| reading.read(bytes))?;
    let (digests, compute) = digest_files(&files, 0..files.metas.len(), reading, Ok)?;
    Ok(joined(files, digests, compute))
}

/// The digests of the usable files `which` of `files` (indices of its metas), one rank
/// per thread at a time, in the order given, each with its message ends and each made
/// into a `D` by `keep` as soon as it is made (itself, or its bytes: a worker of an
/// analysis made by several then holds its digests' bytes, not the digests).
pub(super) fn digest_files<D: Send>(
    files: &RunFiles,
    which: Range<usize>,
    reading: &Reading,
    keep: impl Fn(RankDigested) -> Result<D> + Sync,
) -> Result<Digests<D>> {
    (which.into_par_iter())
        .map(|i| {
            let (digested, compute) = digest_file(files, i, reading)?;
            Ok((keep(digested)?, compute))
        })
        .collect::<Result<Vec<_>>>()
        .map(|kept| kept.into_iter().unzip())
}

/// The digest of the usable file `i` of `files`, read again onto the run's timeline,
/// and its compute.
fn digest_file(
    files: &RunFiles,
    i: usize,
    reading: &Reading,
) -> Result<(RankDigested, RankCompute)> {
    let (t, tl) = files.first_timeline(i)?;
    reading.read(files.bytes(i));
    let peers = out_of_range(std::slice::from_ref(&tl), files.world_size, |r| {
        file_of(&files.metas, r)
    });
    let notes = t.note_lines().collect();
    Ok(digest_rank(&tl, files.world_size, peers, notes))
}

/// What crosses the ranks of `files`, from the digest of every usable one (`digested`,
/// in rank order), beside the compute of those this worker answers for (`compute`).
pub(super) fn joined(
    mut files: RunFiles,
    digested: Vec<RankDigested>,
    compute: Vec<RankCompute>,
) -> Digested {
    let unreadable = std::mem::take(&mut files.unreadable);
    let (mut ranks, ends): (Vec<RankDigest>, Vec<RankEnds>) = digested.into_iter().unzip();
    let mut matched = {
        let _s = tracing::info_span!("match messages").entered();
        join(ends)
    };
    let counts: Vec<u64> = ranks.iter().map(|d| d.events).collect();
    let peers = ranks.iter().flat_map(|d| d.peers.iter().cloned()).collect();
    let info = (files.plan).info(
        &files.metas,
        &counts,
        std::mem::take(&mut matched.counts),
        peers,
    );
    let messages = matched.messages;
    let (sides, by_rank) = message_sides(&mut ranks, &messages);
    // What only the messages' sides needed goes before the run's requests are gathered;
    // each rank's sides, and then its requests, were blocks of the heap when ranks are
    // many (each below the mmap threshold), now free among the blocks kept (each rank's
    // compute): given back, not held.
    for d in &mut ranks {
        d.recvs = Sides::default();
    }
    crate::heap::release_free();
    let (mut ranks, requests, request_starts) = requests_of(ranks);
    crate::heap::release_free();
    let (collectives, instances) = collective_ends(&ranks, &request_starts);
    let epochs: Vec<RankEpochs> = (ranks.iter_mut())
        .map(|d| std::mem::take(&mut d.epochs))
        .filter(|e| !e.is_empty())
        .collect();
    let one_sided = candidates_of(&epochs);
    drop(epochs);
    let extents: Vec<(Nanos, Nanos)> = ranks.iter().filter_map(|d| d.extent).collect();
    let (mut budgets, mut notes, mut sites) = (Vec::new(), Vec::new(), Vec::new());
    let (mut work, mut ends_early) = (Vec::new(), Vec::new());
    for d in ranks {
        if !d.complete {
            ends_early.push(d.rank);
        }
        work.push(d.work);
        budgets.push(d.budget);
        notes.extend(d.notes);
        sites.push(d.sites);
    }
    let sites = SiteTable::of_ranks(&info, sites);
    let totals = run_budget(&budgets, &extents);
    let cross = CrossRank {
        messages: sides,
        collectives,
        requests_by_post: RequestsByPost::new(&requests),
        one_sided,
    };
    Digested {
        info,
        unreadable,
        notes,
        messages,
        requests,
        request_starts,
        compute,
        budgets: (budgets, totals),
        sites,
        cross,
        instances,
        by_rank,
        work,
        ends_early,
        files,
    }
}

/// The digest of the rank whose timeline (on the run's timeline) is `t`, its message
/// ends for the join, and its compute.
fn digest_rank(
    t: &Timeline,
    world_size: u32,
    peers: Vec<PeersOutOfRange>,
    notes: Vec<String>,
) -> (RankDigested, RankCompute) {
    let (requests, ends) = rank_requests_and_ends(t, world_size);
    let by_post = RequestsByPost::new(&requests);
    let mut send_calls: Vec<u32> = ends.send_calls().collect();
    send_calls.sort_unstable();
    send_calls.dedup();
    let sends = Sides::of(
        (send_calls.into_iter())
            .map(|call| (call, send_side(t, &requests, &by_post, call as usize))),
    );
    let mut receive_calls: Vec<(u32, u32)> = ends.receive_calls().collect();
    receive_calls.sort_unstable();
    receive_calls.dedup();
    let recvs = Sides::of((receive_calls.into_iter()).map(|(post, done)| {
        let completed = (done != NO_CALL).then_some(done as usize);
        ((post, done), recv_side(t, post as usize, completed))
    }));
    let at = |index: usize| EventRef {
        rank: t.rank,
        index,
    };
    let collectives = (0..t.spans.len())
        .filter_map(|i| {
            let (op, c) = t.call(i)?;
            (op.class() == OpClass::Collective).then(|| CollectiveCall {
                index: index_u32(i),
                scope: scope(op, c),
                op,
                root: c.root(),
                member: blocking_member(t, at(i)),
            })
        })
        .collect();
    let collective_requests = (requests.iter().enumerate())
        .filter(|(_, r)| r.kind == RequestKind::Collective)
        .filter_map(|(k, r)| {
            let (_, c) = t.call(r.args())?;
            Some((c.comm, request_member(t, k, r)))
        })
        .collect();
    let compute = RankCompute::of(t);
    let digest = RankDigest {
        rank: t.rank,
        events: t.event_count() as u64,
        work: RankWork::of(t),
        complete: t.complete,
        budget: rank_budget(t, &compute),
        extent: t.extent(),
        sites: RankSites::of(t),
        request_count: requests.len(),
        requests,
        peers,
        notes,
        sends,
        recvs,
        collectives,
        epochs: RankEpochs::of(t),
        collective_requests,
    };
    ((digest, ends), compute)
}

/// Each message's two sides, looked up by its calls in its sender's and its receiver's
/// digests (`ranks`, sorted by rank), and the messages by rank. The sends' column is
/// made first, a block of messages a thread, each rank's sides searched from where that
/// rank's last was found in the block (a rank's messages come in its order): a search
/// from scratch per message, jumping between every rank's sides, was most of the pass
/// at 1 024 ranks. The ranks' sends are freed before the receives' column is made.
fn message_sides(ranks: &mut [RankDigest], messages: &[Message]) -> (MessageEnds, MessagesByRank) {
    let _s = tracing::info_span!("message sides").entered();
    let index = MessagesByRank::of(messages);
    // The run's two columns are never held beside both of the ranks' sides: at 10^8
    // events, those 3.5 GB together were the join's peak, and worker 0's.
    let sends = column_of(ranks, messages, &|m| m.send().rank, &|d, m, near| {
        d.sends.find_near(m.send().index as u32, near)
    });
    for d in ranks.iter_mut() {
        d.sends = Sides::default();
    }
    crate::heap::release_free();
    let recvs = column_of(ranks, messages, &|m| m.recv_post().rank, &|d, m, near| {
        let done = m.completion().map_or(NO_CALL, |c| c.index as u32);
        d.recvs.find_near((m.recv_post().index as u32, done), near)
    });
    (MessageEnds::from_sides(sends, recvs), index)
}

/// How a message's side is found in its rank's digest, searched from `near` (where the
/// last of that rank's was found: a few steps on).
type FindSide<'a> = dyn Fn(&RankDigest, &Message, &mut usize) -> Option<Side> + Sync + 'a;

/// The column of one side of every message, each found by `find` in the digest of the
/// rank `rank_of` gives ([`Side::NONE`] where it has none), made on rayon's threads a
/// block of messages each (each block remembering where each rank's last was found).
fn column_of(
    ranks: &[RankDigest],
    messages: &[Message],
    rank_of: &(dyn Fn(&Message) -> u32 + Sync),
    find: &FindSide,
) -> Sides<()> {
    // The ranks searched apart from their digests (a few KB that stay in the cache).
    let listed: Vec<u32> = ranks.iter().map(|d| d.rank).collect();
    let side = |near: &mut FxHashMap<usize, usize>, mi: usize| {
        let m = &messages[mi];
        let found = listed.binary_search(&rank_of(m)).ok();
        let found = found.and_then(|at| find(&ranks[at], m, near.entry(at).or_insert(0)));
        found.unwrap_or(Side::NONE)
    };
    Sides::fill_with(messages.len(), FxHashMap::default, side)
}

/// The run's requests, each rank's moved out of its digest in rank order (none of the
/// ranks whose worker keeps them), and where each rank's first is among the run's,
/// then their number.
fn requests_of(mut ranks: Vec<RankDigest>) -> (Vec<RankDigest>, Vec<RequestLife>, Vec<usize>) {
    let _s = tracing::info_span!("requests gathered").entered();
    let mut requests = Vec::with_capacity(ranks.iter().map(|d| d.requests.len()).sum());
    let mut starts = Vec::with_capacity(ranks.len() + 1);
    let mut count = 0;
    for d in &mut ranks {
        starts.push(count);
        count += d.request_count;
        // Taken, not appended: each rank's vector is freed as the run's grows.
        requests.extend(std::mem::take(&mut d.requests));
    }
    starts.push(count);
    (ranks, requests, starts)
}

/// A rank's digest without its requests, and its requests: what a worker of a job
/// sends worker 0 and what it keeps (only its block's figures read them; they are sent
/// once, for the program).
pub(super) fn requests_kept((mut digest, ends): RankDigested) -> (RankDigested, Vec<RequestLife>) {
    let requests = std::mem::take(&mut digest.requests);
    ((digest, ends), requests)
}

/// The collective instances of the run from each rank's calls and requests, grouped as
/// [`super::collectives::instances`] and [`super::collectives::nonblocking`] group them
/// ([`Numbering`]), the ranks in rank order. `firsts[i]`: where rank `i`'s requests
/// start among the run's.
fn collective_ends(ranks: &[RankDigest], firsts: &[usize]) -> (CollectiveEnds, CallInstances) {
    let _s = tracing::info_span!("collective ends").entered();
    let mut blocking: Vec<Blocking> = Vec::new();
    let mut calls = CallInstances::default();
    let mut numbering = Numbering::new();
    for d in ranks {
        let mut rank = numbering.rank();
        let mut mine: Vec<(u32, u32)> = Vec::with_capacity(d.collectives.len());
        for c in &d.collectives {
            let (id, new) = rank.next(c.scope);
            mine.push((c.index, index_u32(id)));
            if new {
                blocking.push(Blocking {
                    op: c.op,
                    root: c.root,
                    members: Vec::new(),
                });
            }
            blocking[id].members.extend(c.member);
        }
        calls.push_rank(mine);
    }
    let mut nonblocking: Vec<Vec<Request>> = Vec::new();
    let mut numbering = Numbering::new();
    for (d, &first) in ranks.iter().zip(firsts) {
        let mut rank = numbering.rank();
        for &(comm, member) in &d.collective_requests {
            let (id, new) = rank.next(comm);
            if new {
                nonblocking.push(Vec::new());
            }
            nonblocking[id].push(Request {
                request: first + member.request,
                ..member
            });
        }
    }
    let ends = CollectiveEnds {
        blocking,
        nonblocking,
    };
    (ends, calls)
}

#[cfg(test)]
mod tests {
    use super::digest_dir;
    use crate::metrics::budget;
    use crate::metrics::cross_rank::CrossRank;
    use crate::sites::SiteTable;

    /// On every kept run, the first pass finds what loading the whole run and then its
    /// cross-rank columns find: the run's description, messages, requests, compute,
    /// budgets, call sites, both sides of every message and the members of every
    /// collective instance.
    #[test]
    fn the_first_pass_finds_what_the_whole_run_gives() {
        let (mut messages, mut collectives) = (0, 0);
        for dir in &crate::load::kept_run_dirs() {
            let name = dir.display();
            let loaded = crate::load::load_dir(dir, &mut |_, _| {}).expect("a kept run");
            let trace = loaded.trace;
            let whole = CrossRank::of(&trace);
            let d = digest_dir(dir, &crate::import::Reading::unwatched()).expect("its first pass");
            assert!(d.info == trace.info, "{name}: info");
            assert!(d.messages == trace.messages, "{name}: messages");
            assert!(d.requests == trace.requests, "{name}: requests");
            assert!(d.compute == trace.compute, "{name}: compute");
            assert!(d.budgets == budget::budgets(&trace), "{name}: budgets");
            assert!(d.sites == SiteTable::build(&trace), "{name}: sites");
            assert!(d.cross.messages == whole.messages, "{name}: message sides");
            assert!(
                d.cross.collectives == whole.collectives,
                "{name}: collectives"
            );
            assert!(d.cross.one_sided == whole.one_sided, "{name}: one-sided");
            let instances = crate::metrics::collectives::instances(&trace).calls;
            assert!(d.instances == instances, "{name}: instances");
            assert_eq!(d.notes, loaded.notes, "{name}: notes");
            assert_eq!(d.unreadable, loaded.unreadable, "{name}: unreadable");
            messages += d.messages.len();
            collectives += d.cross.collectives.blocking.len();
            collectives += d.cross.collectives.nonblocking.len();
        }
        // The kept runs have messages and collectives to compare.
        assert!(
            messages > 100 && collectives > 10,
            "{messages} {collectives}"
        );
    }
}
