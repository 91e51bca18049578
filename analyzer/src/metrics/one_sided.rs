//! Wait states of one-sided communication in general active-target synchronisation
//! (Post / Start / Complete / Wait), after Scalasca's RMA patterns. The fence's waits
//! are collective ones ([`super::wait_states`], Wait at Fence).
//!
//! Epochs are matched by order: the k-th `MPI_Win_start` of origin `o` on window `w`
//! whose group names target `t` goes with the k-th `MPI_Win_post` of `t` on `w` whose
//! group names `o`. An access epoch runs from the Win_start to the next Win_complete of
//! the same thread on the same window, and holds the one-sided operations on `w` in
//! between; an exposure epoch from the Win_post to the next Win_wait.
//!
//! - Late Post (charged to the origin, peer = target): each of the Win_start, the first
//!   operation to the target and the Win_complete that was still running when the
//!   target entered its Win_post (`E(x) < E(post) <= X(x)`) waited `E(post) - E(x)`. A
//!   call that returned before the post did not wait (MPI lets Win_start return at once
//!   and defer the wait), as for a Late Receiver.
//! - Early Wait (charged to the target, peer = the last origin to complete): in Win_wait,
//!   `min(E(complete_last), X(wait)) - E(wait)`, where `complete_last` is the latest
//!   entered Win_complete of the epoch's origins. Late Complete is its part after the
//!   last origin's last operation ended (`X(op_last)`, or its Win_start's exit when it
//!   issued none): the epoch closed later than its transfers needed. The two are
//!   disjoint intervals of the same call, so they never count the same time twice.
//!
//! ```text
//!  origin 1  |Start 0-1|Put 1-2|..compute 2-9..|Complete 9-10|
//!  target 0  |Post 0-1|Wait 1 --------------------------- 10|
//!  Early Wait [1, 2) = 1, Late Complete [2, 9) = 7 (both rank 0's Win_wait, peer 1)
//! ```

use crate::fxhash::FxHashMap;

use overlap_format::schema::{Nanos, Op, OpClass};

use super::wait_kind::{Candidate, WaitKind};
use crate::model::{EventRef, Trace};

/// A call of an epoch, as its rank recorded it: what the other side's figures read of
/// it, so that no figure reads another rank's timeline.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Call {
    index: usize,
    start: Nanos,
    end: Nanos,
    /// Its operation blocks, or is a one-sided operation (which may wait for the post).
    may_wait: bool,
}

impl Call {
    fn of(t: &crate::model::Timeline, index: usize) -> Call {
        let s = &t.spans[index];
        Call {
            index,
            start: s.start,
            end: s.end,
            may_wait: s.op().is_some_and(|op| op.blocks() || is_rma(op)),
        }
    }
}

/// An access epoch of an origin.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Epoch {
    start: Call,
    /// One-sided operations in it, and their targets.
    ops: Vec<(Call, Option<i32>)>,
    complete: Option<Call>,
}

fn is_rma(op: Op) -> bool {
    op.class() == OpClass::OneSided
        || matches!(
            op,
            Op::Rput | Op::Rget | Op::Raccumulate | Op::RgetAccumulate
        )
}

/// A target's Win_post: the call, its entry, and the Win_wait that closed its epoch.
type Post = (EventRef, Nanos, Option<Call>);

/// An epoch pair's key: (window, one rank, the other rank, k).
type PairKey = (u32, u32, u32, u32);

/// Per (window, thread): the keys `(window, origin, k)` of the open Win_post's origins.
type OpenPosts = FxHashMap<(u32, u32), Vec<(u32, u32, u32)>>;

/// What one rank's timeline says of its epochs: its exposure epochs' posts (each with
/// its Win_wait) and its access epochs, keyed for matching with the other side's. The
/// first pass of the analysis keeps these of each rank and drops its timeline.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct RankEpochs {
    rank: u32,
    /// `(window, this rank as target, origin, k)` -> its Win_post, the post's entry,
    /// and its closing Win_wait; in the order posted.
    posts: Vec<(PairKey, Post)>,
    /// `(window, this rank as origin, target, k)` -> its epoch among `epochs`.
    starts: Vec<(PairKey, usize)>,
    epochs: Vec<Epoch>,
}

impl RankEpochs {
    /// The epochs of rank timeline `t`.
    pub(crate) fn of(t: &crate::model::Timeline) -> RankEpochs {
        let mut seen: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let mut started: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let mut open_post: OpenPosts = FxHashMap::default();
        let mut open: FxHashMap<(u32, u32), usize> = FxHashMap::default();
        let mut out = RankEpochs {
            rank: t.rank,
            ..RankEpochs::default()
        };
        // Where each post is in `out.posts`, for its Win_wait.
        let mut post_at: FxHashMap<PairKey, usize> = FxHashMap::default();
        for i in 0..t.spans.len() {
            let Some((op, c)) = t.call(i) else { continue };
            let Some(w) = c.win() else { continue };
            let tid = t.spans[i].tid;
            match op {
                Op::WinPost => {
                    let mut keys = Vec::new();
                    for &o in t.group(c) {
                        let Ok(o) = u32::try_from(o) else { continue };
                        let k = seen.entry((w, o)).or_default();
                        let key = (w, t.rank, o, *k);
                        let at = EventRef {
                            rank: t.rank,
                            index: i,
                        };
                        let post = (at, t.spans[i].start, None);
                        // A key is posted once: each (window, origin) counts its own.
                        post_at.insert(key, out.posts.len());
                        out.posts.push((key, post));
                        keys.push((w, o, *k));
                        *k += 1;
                    }
                    open_post.insert((w, tid), keys);
                }
                Op::WinWait => {
                    for (w, o, k) in open_post.remove(&(w, tid)).unwrap_or_default() {
                        if let Some(&p) = post_at.get(&(w, t.rank, o, k)) {
                            out.posts[p].1 .2 = Some(Call::of(t, i));
                        }
                    }
                }
                Op::WinStart => {
                    let e = out.epochs.len();
                    out.epochs.push(Epoch {
                        start: Call::of(t, i),
                        ops: Vec::new(),
                        complete: None,
                    });
                    open.insert((w, tid), e);
                    for &target in t.group(c) {
                        let Ok(target) = u32::try_from(target) else {
                            continue;
                        };
                        let k = started.entry((w, target)).or_default();
                        out.starts.push(((w, t.rank, target, *k), e));
                        *k += 1;
                    }
                }
                Op::WinComplete => {
                    if let Some(e) = open.remove(&(w, tid)) {
                        out.epochs[e].complete = Some(Call::of(t, i));
                    }
                }
                op if is_rma(op) => {
                    if let Some(&e) = open.get(&(w, tid)) {
                        out.epochs[e].ops.push((Call::of(t, i), c.peer()));
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// True when the rank took part in no epoch (most runs: nothing to keep).
    pub(crate) fn is_empty(&self) -> bool {
        self.posts.is_empty() && self.starts.is_empty() && self.epochs.is_empty()
    }
}

/// Every Late Post, Early Wait and Late Complete candidate of the trace.
pub(crate) fn candidates(trace: &Trace) -> Vec<Candidate> {
    candidates_of(&trace.ranks.iter().map(RankEpochs::of).collect::<Vec<_>>())
}

/// [`candidates`], from each rank's epochs (in rank order; a rank without any may be
/// left out). Each rank's epochs and posts were found on its own timeline; the other
/// side's calls are read in these records, never in the other rank's timeline.
pub(crate) fn candidates_of(ranks: &[RankEpochs]) -> Vec<Candidate> {
    // (window, target, origin, k) -> the target's Win_post, its entry, and its closing
    // Win_wait.
    let mut posts: FxHashMap<PairKey, Post> = FxHashMap::default();
    // (window, origin, target, k) -> the origin's epoch.
    let mut epochs: FxHashMap<PairKey, (u32, usize)> = FxHashMap::default();
    for r in ranks {
        posts.extend(r.posts.iter().copied());
        epochs.extend(r.starts.iter().map(|&(key, e)| (key, (r.rank, e))));
    }
    let epoch = |rank: u32, e: usize| -> Option<&Epoch> {
        let slot = ranks.binary_search_by_key(&rank, |r| r.rank).ok()?;
        ranks[slot].epochs.get(e)
    };
    let mut out = Vec::new();
    // Late Post: the origin's calls that waited for the target's post.
    for (&(w, origin, target, k), &(rank, e)) in &epochs {
        let (Some(&(post, posted, _)), Some(ep)) =
            (posts.get(&(w, target, origin, k)), epoch(rank, e))
        else {
            continue;
        };
        let first_op = ep
            .ops
            .iter()
            .find(|(_, p)| *p == i32::try_from(target).ok())
            .map(|(x, _)| *x);
        for x in [Some(ep.start), first_op, ep.complete]
            .into_iter()
            .flatten()
        {
            if !x.may_wait {
                continue;
            }
            // It waited for the post only if it was still running when the post came
            // (Win_start and the operations may return at once and defer the wait).
            if x.start < posted && posted <= x.end {
                let at = EventRef {
                    rank,
                    index: x.index,
                };
                out.push(Candidate::new(
                    WaitKind::LatePost,
                    at,
                    post,
                    x.start,
                    posted,
                    false,
                ));
            }
        }
    }
    // Early Wait and Late Complete: the target's Win_wait.
    // Per Win_wait, each origin's (rank, Win_complete entry, last operation's end, its
    // Win_complete, its last operation).
    type Origin = (u32, Nanos, Nanos, EventRef, EventRef);
    let mut by_wait: FxHashMap<EventRef, (Call, Vec<Origin>)> = FxHashMap::default();
    for (&(w, target, origin, k), &(_, _, wait)) in &posts {
        let (Some(wait), Some(&(rank, e))) = (wait, epochs.get(&(w, origin, target, k))) else {
            continue;
        };
        let Some(ep) = epoch(rank, e) else { continue };
        let Some(complete) = ep.complete else {
            continue;
        };
        let last_op = ep.ops.last().map_or(ep.start, |o| o.0);
        let at = |index| EventRef { rank, index };
        let wait_ref = EventRef {
            rank: target,
            index: wait.index,
        };
        by_wait
            .entry(wait_ref)
            .or_insert_with(|| (wait, Vec::new()))
            .1
            .push((
                origin,
                complete.start,
                last_op.end,
                at(complete.index),
                at(last_op.index),
            ));
    }
    for (at, (s, origins)) in by_wait {
        let Some(&(_, completed, op_end, complete, last_op)) =
            origins.iter().max_by_key(|o| (o.1, o.0))
        else {
            continue;
        };
        let end = completed.min(s.end);
        if end <= s.start {
            continue;
        }
        let cut = op_end.clamp(s.start, end);
        let suspect = completed > s.end;
        if cut > s.start {
            out.push(Candidate::new(
                WaitKind::EarlyWait,
                at,
                last_op,
                s.start,
                cut,
                suspect,
            ));
        }
        if end > cut {
            out.push(Candidate::new(
                WaitKind::LateComplete,
                at,
                complete,
                cut,
                end,
                suspect,
            ));
        }
    }
    out
}
