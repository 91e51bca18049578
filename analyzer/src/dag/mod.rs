//! A rank's operations as a DAG, and the order the policies agree on: the seed's method
//! ("merge a priority-ordered sequence of DAGs into one consensus DAG, then sort it").
//!
//! - [`period`]: the rank's repeating unit (an iteration), the scope policies apply in;
//! - [`essential`]: the edges any order must keep (data dependence, proven or
//!   permissive: [`Mode`]);
//! - [`policy`]: what an order should prefer (built-ins, and user policies in Rust);
//! - [`consensus`]: the policies merged by priority, and the topological sort;
//! - [`graph`]: the DAG that refuses an edge closing a cycle.

pub mod consensus;
pub mod essential;
pub mod graph;
pub mod period;
pub mod policy;

use std::hash::{Hash, Hasher};

pub use consensus::{Consensus, PolicyEdges};
pub use period::Period;
pub use policy::{built_in_names, BuiltIn, OpView, Policy};

pub use crate::dependence::Mode;

use crate::ops::{CallSites, OpKind, Program, RankProgram};

/// How to order.
#[derive(Debug)]
pub struct Options {
    /// Policies after data dependence, in priority order (program order is always the
    /// last tie-break).
    pub policies: Vec<Policy>,
    /// What compute whose effect on a buffer is not known is taken to do
    /// ([`crate::dependence`]): touch it ([`Mode::Proven`], the default: every move
    /// crosses only work proven to leave its buffer alone), or not ([`Mode::Permissive`]:
    /// only recorded uses hold a move back).
    pub mode: Mode,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            policies: BuiltIn::DEFAULT.iter().map(|b| b.policy()).collect(),
            mode: Mode::Proven,
        }
    }
}

/// A rank's consensus order and what it was found from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankOrder {
    /// The rank.
    pub rank: u32,
    /// Its repeating unit, if one was found (else the whole trace is one scope).
    pub period: Option<Period>,
    /// The consensus.
    pub consensus: Consensus,
}

/// The key that identifies an operation across iterations: what it is and where the
/// program made it (its call site, a compute's name, or for compute inferred from a gap
/// the sites of the calls around it, and for a part of a gap that starts at a learned
/// touch, the touch: its symbolized line, which instruction of the line touched may
/// differ, and the request whose buffer it is). `sites`: the trace the program was built
/// from.
pub fn op_key(program: &Program, sites: &dyn CallSites, rank: &RankProgram, index: usize) -> u64 {
    let op = &rank.ops[index];
    let mut h = crate::fxhash::FxHasher::default();
    std::mem::discriminant(&op.kind).hash(&mut h);
    op.call.map(|c| c.code()).hash(&mut h);
    sites.site(rank.rank, op).hash(&mut h);
    match &op.kind {
        OpKind::Compute { name, inferred, .. } => {
            name.hash(&mut h);
            if *inferred {
                // Inferred compute has no name of its own: the calls around it say
                // which gap it is.
                let site = |i: Option<usize>| {
                    let o = rank.ops.get(i?)?;
                    sites.site(rank.rank, o)
                };
                (site(index.checked_sub(1)), site(Some(index + 1))).hash(&mut h);
                if let Some(l) = rank.cut_at(index) {
                    let line = l.ip.and_then(|ip| sites.touch_site(rank.rank, ip));
                    let r = program.requests.get(l.request());
                    let request = r.map(|r| (r.role as u8, r.tag(), r.comm));
                    (line, l.touched().map(|t| t.1), request).hash(&mut h);
                }
            }
        }
        OpKind::Post { request } | OpKind::Complete { request } => {
            let r = &program.requests[*request];
            (r.role as u8, r.tag(), r.comm).hash(&mut h);
        }
        _ => {}
    }
    h.finish()
}

/// The period of a rank's operations.
pub fn rank_period(program: &Program, sites: &dyn CallSites, rank: &RankProgram) -> Option<Period> {
    let keys: Vec<u64> = (0..rank.ops.len())
        .map(|i| op_key(program, sites, rank, i))
        .collect();
    period::find(&keys)
}

/// The most operations a scope of the policies holds: a longer part of the run (a run
/// without a repeating iteration, its part before the first iteration or after the last)
/// is cut into scopes of this many, so that the consensus's cost stays near linear in
/// the run. An iteration is never cut.
pub const SCOPE_LIMIT: usize = 2048;

/// The scope of each of `n` operations: its iteration, or a cut of a long stretch
/// outside iterations ([`SCOPE_LIMIT`]); numbered in program order.
pub fn policy_scopes(n: usize, period: Option<Period>) -> Vec<u32> {
    let mut out = Vec::with_capacity(n);
    let (mut id, mut base, mut len) = (0u32, None, 0usize);
    for i in 0..n {
        let b = period.map_or(0, |p| p.scope(i));
        let in_iteration = period.is_some_and(|p| i >= p.start && i < p.end());
        if base != Some(b) || (!in_iteration && len == SCOPE_LIMIT) {
            if base.is_some() {
                id += 1;
            }
            base = Some(b);
            len = 0;
        }
        len += 1;
        out.push(id);
    }
    out
}

/// The consensus order of one rank.
pub fn order_rank(
    program: &Program,
    sites: &dyn CallSites,
    rank: &RankProgram,
    options: &Options,
) -> RankOrder {
    order_rank_pinned(program, sites, rank, options, &[])
}

/// The consensus order of one rank, with the operations of `pinned` kept at their
/// program place within their scope (after every operation of the scope before them in
/// the program, before every one after): the order without the moves of those
/// operations.
pub fn order_rank_pinned(
    program: &Program,
    sites: &dyn CallSites,
    rank: &RankProgram,
    options: &Options,
    pinned: &[usize],
) -> RankOrder {
    order_rank_in(
        program,
        sites,
        rank,
        (&options.policies, options.mode),
        pinned,
    )
}

/// [`order_rank_pinned`] with the policies and the mode given apart (the same policies
/// ordered in either mode).
pub fn order_rank_in(
    program: &Program,
    sites: &dyn CallSites,
    rank: &RankProgram,
    (policies, mode): (&[Policy], Mode),
    pinned: &[usize],
) -> RankOrder {
    let period = rank_period(program, sites, rank);
    let scopes = policy_scopes(rank.ops.len(), period);
    let mut graph = essential::essential(program, rank, mode);
    let n = rank.ops.len();
    for &o in pinned.iter().filter(|&&o| o < n) {
        let scope = scopes[o];
        let mut j = o;
        while j > 0 && scopes[j - 1] == scope {
            j -= 1;
            graph.add_forward(j, o);
        }
        let mut j = o + 1;
        while j < n && scopes[j] == scope {
            graph.add_forward(o, j);
            j += 1;
        }
    }
    RankOrder {
        rank: rank.rank,
        period,
        consensus: consensus::consensus(program, rank, graph, &scopes, policies),
    }
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
