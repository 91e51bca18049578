//! Which send went to which receive (MPI's non-overtaking order), and which call
//! completed each request. Works on [`Timeline`]s, so that the merge and the analysis of
//! any trace share one matcher.

use crate::fxhash::FxHashMap;

use overlap_format::schema::{Nanos, Op, OpClass, RequestKind};

use super::ends::{join, Matched, RankEnds};
use super::peers::in_world;
use crate::model::ById;
use crate::model::{RequestLife, Timeline};

/// A receive, as matching needs it.
struct Receive {
    post: usize,
    completion: Option<usize>,
    source: Option<i32>,
    tag: Option<i32>,
    comm: u32,
}

/// Request lifetimes of every rank, and its messages matched. Sends to and receives
/// from a rank outside a world of `world_size` ranks (0: unknown) are not matched, nor
/// counted as unmatched: they name no real peer ([`super::peers`] reports them). Each
/// rank's ends are numbered on its own (in parallel), then joined ([`super::ends`]).
/// Each rank's requests are counted first, by the rule that makes them, so that every
/// rank writes its lifetimes in place, into its share of the run's.
pub(crate) fn match_all(ranks: &[Timeline], world_size: u32) -> (Vec<RequestLife>, Matched) {
    use rayon::prelude::*;
    let inits: Vec<FxHashMap<u64, usize>> = ranks.par_iter().map(persistent_inits).collect();
    let counts: Vec<usize> = ranks
        .par_iter()
        .zip(&inits)
        .map(|(t, inits)| count_requests(t, inits))
        .collect();
    let unset = RequestLife::new(0, 0, RequestKind::Send, 0, 0, None, None);
    let mut lives = vec![unset; counts.iter().sum()];
    let mut shares = Vec::with_capacity(ranks.len());
    let mut rest = lives.as_mut_slice();
    for &n in &counts {
        let (share, after) = rest.split_at_mut(n);
        shares.push(share);
        rest = after;
    }
    let ends: Vec<RankEnds> = ranks
        .par_iter()
        .zip(&inits)
        .zip(shares)
        .map(|((t, inits), share)| {
            let mut k = 0;
            let ends = ends_of(t, inits, world_size, |life| {
                share[k] = life;
                k += 1;
            });
            debug_assert_eq!(k, share.len(), "rank {}: requests miscounted", t.rank);
            ends
        })
        .collect();
    (lives, join(ends))
}

/// One rank's request lifetimes, in post order.
pub(crate) fn rank_requests(t: &Timeline) -> Vec<RequestLife> {
    let inits = persistent_inits(t);
    let mut lives = Vec::with_capacity(count_requests(t, &inits));
    requests_and_receives(t, &inits, |life| lives.push(life));
    lives
}

/// One rank's request lifetimes, in post order, and its message ends, numbered: what a
/// pass that holds one rank at a time keeps of its matching ([`match_all`] gives the
/// same lifetimes, and joins the same ends).
pub(crate) fn rank_requests_and_ends(
    t: &Timeline,
    world_size: u32,
) -> (Vec<RequestLife>, RankEnds) {
    let inits = persistent_inits(t);
    let mut lives = Vec::with_capacity(count_requests(t, &inits));
    let ends = ends_of(t, &inits, world_size, |life| lives.push(life));
    (lives, ends)
}

/// How many requests one rank has, and its message ends, numbered.
pub(crate) fn rank_ends(t: &Timeline, world_size: u32) -> (usize, RankEnds) {
    let mut requests = 0;
    let ends = ends_of(t, &persistent_inits(t), world_size, |_| requests += 1);
    (requests, ends)
}

/// How many requests the calls of `t` posted: a life for each ([`posted`]).
fn count_requests(t: &Timeline, inits: &FxHashMap<u64, usize>) -> usize {
    let mut posts = Posts::new();
    (0..t.spans.len())
        .map(|i| {
            posted(t, i, inits, &mut posts);
            posts.len()
        })
        .sum()
}

/// One rank's message ends, numbered; its request lifetimes are given to `life`, in
/// post order. `inits` is [`persistent_inits`] of `t`.
fn ends_of(
    t: &Timeline,
    inits: &FxHashMap<u64, usize>,
    world_size: u32,
    life: impl FnMut(RequestLife),
) -> RankEnds {
    let receives = requests_and_receives(t, inits, life);
    let mut ends = RankEnds::new(t.rank);
    sends(t, inits, world_size, &mut ends);
    for r in receives {
        match (r.source.and_then(|s| u32::try_from(s).ok()), r.tag) {
            (Some(src), _) if !in_world(src, world_size) => {}
            (Some(src), Some(tag)) => {
                let done = r
                    .completion
                    .map(|c| (c, t.spans.get(c).map_or(Nanos::ZERO, |s| s.end)));
                ends.receive(src, tag, r.comm, r.post, done);
            }
            _ => ends.unmatchable_receive(),
        }
    }
    ends.finish()
}

/// Persistent requests of a rank (the `request` its persistent init recorded) ->
/// the index of that init call.
fn persistent_inits(t: &Timeline) -> FxHashMap<u64, usize> {
    let mut inits = FxHashMap::default();
    for i in 0..t.spans.len() {
        let Some((op, c)) = t.call(i) else { continue };
        // The persistent inits: point-to-point (Send_init, Recv_init) and collective
        // (MPI-4 Bcast_init, Allreduce_init...).
        if op.class() == OpClass::Local && op.request_kind().is_some() {
            if let Some(p) = c.request() {
                // A persistent handle id is unique within a rank's run: the latest wins
                // only if the recorder reused one, which it never does.
                inits.insert(p, i);
            }
        }
    }
    inits
}

/// The requests a call posted: `(request, kind, index of the call describing the
/// transfer)`. An Isend or Irecv posts one, described by itself; a Start or Startall
/// posts one per persistent request it started, described by that request's init.
/// They are written to `out`, cleared first, so one buffer serves a whole rank.
fn posted(t: &Timeline, index: usize, inits: &FxHashMap<u64, usize>, out: &mut Posts) {
    out.clear();
    let Some((op, c)) = t.call(index) else {
        return;
    };
    match op {
        Op::Start | Op::Startall => {
            for s in t.started(c) {
                let Some(&init) = inits.get(&s.persistent) else {
                    continue;
                };
                if let Some(kind) = t.call(init).and_then(|(op, _)| op.request_kind()) {
                    out.push((s.request, kind, init));
                }
            }
        }
        _ if op.class() == OpClass::Post => {
            if let (Some(request), Some(kind)) = (c.request(), op.request_kind()) {
                out.push((request, kind, index));
            }
        }
        _ => {}
    }
}

/// What [`posted`] finds: `(request, kind, index of the call describing the transfer)`.
type Posts = Vec<(u64, RequestKind, usize)>;

/// A rank's request lifetimes, given to `life` in post order, and its receives, in post
/// order. `inits` is [`persistent_inits`] of `t`. A life is given for each request
/// [`posted`] names ([`count_requests`] counts them).
fn requests_and_receives(
    t: &Timeline,
    inits: &FxHashMap<u64, usize>,
    mut life: impl FnMut(RequestLife),
) -> Vec<Receive> {
    let mut receives = Vec::new();
    // request id -> (index of the completing call, its status)
    let mut completed: ById<(usize, Option<i32>, Option<i32>)> = ById::default();
    // request id -> the Request_free that let it go
    let mut freed: ById<usize> = ById::default();
    for i in 0..t.spans.len() {
        let Some((op, c)) = t.call(i) else { continue };
        for done in t.completions(c) {
            if let Some(r) = done.request() {
                completed.insert_first(r, (i, done.source(), done.tag()));
            }
        }
        if let (Op::RequestFree, Some(r)) = (op, c.request()) {
            freed.insert_first(r, i);
        }
    }
    let requested = |v: Option<i32>| v.filter(|x| *x >= 0);
    let mut posts = Posts::new();
    for i in 0..t.spans.len() {
        let Some((op, c)) = t.call(i) else { continue };
        posted(t, i, inits, &mut posts);
        for &(request, kind, args) in &posts {
            let done = completed.get(request);
            let let_go = done.is_none().then(|| freed.get(request));
            life(RequestLife::new(
                t.rank,
                request,
                kind,
                i,
                args,
                done.map(|d| d.0),
                let_go.flatten(),
            ));
            // A receive completed from MPI_PROC_NULL (a negative source in its
            // status: a completed wildcard always names a real rank) carries no
            // message.
            let from_proc_null = done.is_some_and(|d| d.1.is_some_and(|s| s < 0));
            if kind == RequestKind::Recv && !from_proc_null {
                let Some((described_op, described)) = t.call(args) else {
                    continue;
                };
                // An Isendrecv's request is its receive half's.
                let (peer, tag) = match (described_op.has_recv_half(), t.recv_half(described)) {
                    (true, Some(half)) => (half.peer, half.tag),
                    (true, None) => (None, None),
                    (false, _) => (described.peer(), described.tag()),
                };
                receives.push(Receive {
                    post: i,
                    completion: done.map(|d| d.0),
                    source: done.and_then(|d| d.1).or(requested(peer)),
                    tag: done.and_then(|d| d.2).or(requested(tag)),
                    comm: described.comm,
                });
            }
        }
        if op.receives_blocking() {
            let status = t.completions(c).first();
            if status.is_some_and(|s| s.source().is_some_and(|src| src < 0)) {
                continue; // from MPI_PROC_NULL: no message
            }
            let (peer, tag) = match (op.is_sendrecv(), t.recv_half(c)) {
                (true, Some(half)) => (half.peer, half.tag),
                (true, None) => (None, None),
                (false, _) => (c.peer(), c.tag()),
            };
            receives.push(Receive {
                post: i,
                completion: Some(i),
                source: status.and_then(|s| s.source()).or(requested(peer)),
                tag: status.and_then(|s| s.tag()).or(requested(tag)),
                comm: c.comm,
            });
        }
    }
    receives
}

/// A rank's sends, in post order, as ends: each call that sends, and each persistent
/// send a Start or Startall started (described by its init).
fn sends(t: &Timeline, inits: &FxHashMap<u64, usize>, world_size: u32, ends: &mut RankEnds) {
    let mut described = Posts::new();
    for index in 0..t.spans.len() {
        let Some((op, _)) = t.call(index) else {
            continue;
        };
        // The calls describing what this one sends: itself, or the inits of the
        // persistent sends it started.
        if op.sends() {
            described.clear();
            described.push((0, RequestKind::Send, index));
        } else if matches!(op, Op::Start | Op::Startall) {
            posted(t, index, inits, &mut described);
            described.retain(|p| p.1 == RequestKind::Send);
        } else {
            continue;
        }
        for &(_, _, args) in &described {
            let Some((_, c)) = t.call(args) else { continue };
            let (Some(peer), Some(tag)) = (c.peer(), c.tag()) else {
                continue;
            };
            let Ok(dest) = u32::try_from(peer) else {
                continue;
            };
            if !in_world(dest, world_size) {
                continue;
            }
            let start = t.spans[index].start;
            ends.send(dest, tag, c.comm, index, c.bytes().unwrap_or(0), start);
        }
    }
}
