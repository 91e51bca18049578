//! The seed's consensus: merge the policies' DAGs into the essential one, by priority,
//! then sort topologically.
//!
//! Each policy's edges are added unless they close a cycle with the edges already in
//! (so a policy never overrides data dependence or a policy before it), or the check
//! would search too far ([`super::graph::SEARCH_LIMIT`]: the wish is given up). A sort key is
//! a total order on groups, represented as a chain through one hub node between
//! consecutive groups of a scope (members of group `k` -> hub `k` -> members of group
//! `k + 1`), never as an edge per pair: O(n) edges. Edges into hubs are offered first,
//! then edges out of them, then the chain between hubs. A member whose edge to the
//! next hub would close a cycle is offered the hubs after it in turn (and one whose
//! edge from the previous hub would, the hubs before; two more at most), so it keeps as
//! much of the order as it can: a wait that must precede some compute still follows
//! every post. A
//! comparator is asked about every pair of a scope.
//!
//! Policies apply within a scope (an iteration of the rank's loop, the part before the
//! first, the part after the last): a wait may still end up in the next iteration
//! (nothing after it in its own iteration needs it first), but the policies do not pull
//! work across iterations on their own.
//!
//! A post or completion whose edge from the hub before its group is refused (it must
//! precede some operation of that group: a wait whose buffer the next compute reads)
//! is first put after the last anchor (compute, blocking call, collective) it may
//! follow, when that anchor's group comes first: with anchors in a chain, that is the
//! seed's edge from every such anchor, in one edge. So a wait goes as late as its data
//! allows, not back to its program place.
//!
//! The topological sort takes, among the operations whose predecessors are all placed,
//! the one of the earliest scope, then the first in program order: what no kept edge
//! moves stays where the program put it.
//!
//! ```text
//!  scope:  R1 RW1 R2 RW2 *2 +5 dot solve S1 SW1      (posts-early: R,S -1; RW,SW +1)
//!  hubs:   R1,R2,S1 -> h0 -> *2,+5,dot,solve -> h1 -> RW1,RW2,SW1
//!  refused: h0 -> *2 (*2 -> S1 -> h0), h1 -> RW1 (RW1 -> +5 -> h1), h1 -> RW2
//!  instead: h0 -> RW1 (RW1 after every post)
//!  order:  R1 R2 RW2 *2 S1 RW1 +5 dot solve SW1
//! ```

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use crate::ops::{Program, RankProgram};

use super::essential::is_anchor;
use super::graph::Dag;
use super::policy::{OpView, Policy};

/// How many hubs a member whose edge is refused is offered in turn (its own and the next
/// ones): a key with thousands of groups (a tag per message) must not cost a search per
/// group per member.
const FALLBACK: usize = 3;

/// The most operations the search for the anchor a post or completion may follow
/// visits: beyond it the refinement is not made (the member keeps the hub edges only).
const SEARCH_LIMIT: usize = 4096;

/// What a policy contributed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyEdges {
    /// The policy's name.
    pub name: String,
    /// Edges it asked for (through hubs for a sort key).
    pub offered: usize,
    /// Edges kept (the others would have closed a cycle).
    pub kept: usize,
}

/// The consensus order of one rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consensus {
    /// The rank's operations in the new order.
    pub order: Vec<usize>,
    /// What each policy contributed, in priority order.
    pub policies: Vec<PolicyEdges>,
    /// Edges of the final DAG (essential, kept policy edges, hub edges).
    pub edges: usize,
}

/// Merges `policies` (in priority order) into `graph` (the rank's essential DAG, one
/// node per operation), and sorts it. `scopes[i]` is operation `i`'s scope.
pub fn consensus(
    program: &Program,
    rank: &RankProgram,
    mut graph: Dag,
    scopes: &[u32],
    policies: &[Policy],
) -> Consensus {
    let n = rank.ops.len();
    debug_assert_eq!(graph.len(), n);
    let view = |index| OpView {
        program,
        rank,
        index,
    };
    let mut report = Vec::with_capacity(policies.len());
    // The anchors (compute, blocking calls, collectives...), a chain in program order.
    let is_anchor_at = |i: usize| i < n && is_anchor(&rank.ops[i].kind);
    let anchors: Vec<usize> = (0..n).filter(|&i| is_anchor_at(i)).collect();
    let mut seen = vec![false; n];
    for policy in policies {
        let (mut offered, mut kept) = (0usize, 0usize);
        match policy {
            Policy::Key { key, .. } => {
                let keys: Vec<Option<i64>> = (0..n).map(|i| key(&view(i))).collect();
                // Groups per scope, by key.
                let mut groups: BTreeMap<(u32, i64), Vec<usize>> = BTreeMap::new();
                for (i, k) in keys.iter().enumerate() {
                    if let Some(k) = k {
                        groups.entry((scopes[i], *k)).or_default().push(i);
                    }
                }
                let mut by_scope: BTreeMap<u32, Vec<&Vec<usize>>> = BTreeMap::new();
                for ((scope, _), members) in &groups {
                    by_scope.entry(*scope).or_default().push(members);
                }
                // The hubs of every scope, added in one pass: hub `k` sits in the order
                // just after the last member of group `k`, so that where the current
                // order already agrees with the key its edges go forward and need no
                // search, and where it does not the search spans only the part of the
                // scope between the two groups.
                let places: Vec<(usize, usize)> = (by_scope.values())
                    .flat_map(|scope_groups| {
                        let groups = &scope_groups[..scope_groups.len().saturating_sub(1)];
                        groups.iter().map(|g| {
                            let last = g.iter().copied().max_by_key(|&m| graph.position(m));
                            (last.unwrap_or_default(), 1)
                        })
                    })
                    .collect();
                let mut added = graph.add_nodes_after(&places).into_iter().flatten();
                let scope_hubs: Vec<Vec<usize>> = (by_scope.values())
                    .map(|groups| {
                        let hubs = groups.len().saturating_sub(1);
                        added.by_ref().take(hubs).collect()
                    })
                    .collect();
                for (scope_groups, hubs) in by_scope.values().zip(scope_hubs) {
                    // Into the hubs: each member before the first hub after its group
                    // that does not close a cycle.
                    for (k, members) in scope_groups.iter().enumerate() {
                        for &m in members.iter() {
                            if k < hubs.len() {
                                offered += 1;
                                kept += usize::from(
                                    hubs[k..]
                                        .iter()
                                        .take(FALLBACK)
                                        .any(|&h| graph.add_edge(m, h)),
                                );
                            }
                        }
                    }
                    // Out of the hubs: each member after the last hub before its group
                    // that does not close a cycle. A post or completion refused by the
                    // hub just before its group is first put after the last anchor it
                    // may follow, when that anchor's group comes before its own.
                    for (k, members) in scope_groups.iter().enumerate().skip(1) {
                        for &m in members.iter() {
                            offered += 1;
                            let mut ok = graph.add_edge(hubs[k - 1], m);
                            if !ok && !anchors.is_empty() && !is_anchor(&rank.ops[m].kind) {
                                let a = last_anchor_before(
                                    &graph,
                                    m,
                                    n,
                                    &anchors,
                                    &is_anchor_at,
                                    &mut seen,
                                );
                                if let Some(a) = a.filter(|&a| {
                                    scopes[a] == scopes[m]
                                        && keys[a].is_some_and(|ka| Some(ka) < keys[m])
                                }) {
                                    ok |= graph.add_edge(a, m);
                                }
                            }
                            ok |= hubs[..k - 1]
                                .iter()
                                .rev()
                                .take(FALLBACK - 1)
                                .any(|&h| graph.add_edge(h, m));
                            kept += usize::from(ok);
                        }
                    }
                    for pair in hubs.windows(2) {
                        offered += 1;
                        kept += usize::from(graph.add_edge(pair[0], pair[1]));
                    }
                }
            }
            Policy::Comparator { cmp, .. } => {
                let mut by_scope: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
                for (i, s) in scopes.iter().enumerate().take(n) {
                    by_scope.entry(*s).or_default().push(i);
                }
                for members in by_scope.values() {
                    for (x, &a) in members.iter().enumerate() {
                        for &b in &members[x + 1..] {
                            match cmp(&view(a), &view(b)) {
                                std::cmp::Ordering::Less => {
                                    offered += 1;
                                    kept += usize::from(graph.add_edge(a, b));
                                }
                                std::cmp::Ordering::Greater => {
                                    offered += 1;
                                    kept += usize::from(graph.add_edge(b, a));
                                }
                                std::cmp::Ordering::Equal => {}
                            }
                        }
                    }
                }
            }
        }
        report.push(PolicyEdges {
            name: policy.name().to_string(),
            offered,
            kept,
        });
    }
    let order = sort(&graph, n, |i| (scopes[i], i));
    Consensus {
        order,
        policies: report,
        edges: graph.edge_count(),
    }
}

/// Kahn's topological sort of the first `n` nodes (operations); the nodes beyond
/// (hubs) are passed through as soon as they are free. Among free operations, the one
/// with the smallest priority goes first.
fn sort(graph: &Dag, n: usize, priority: impl Fn(usize) -> (u32, usize)) -> Vec<usize> {
    let total = graph.len();
    let mut indegree: Vec<usize> = (0..total).map(|v| graph.predecessors(v).len()).collect();
    let mut heap: BinaryHeap<Reverse<((u32, usize), usize)>> = BinaryHeap::new();
    let mut hubs: Vec<usize> = Vec::new();
    let release = |v: usize, heap: &mut BinaryHeap<_>, hubs: &mut Vec<usize>| {
        if v < n {
            heap.push(Reverse((priority(v), v)));
        } else {
            hubs.push(v);
        }
    };
    for (v, d) in indegree.iter().enumerate() {
        if *d == 0 {
            release(v, &mut heap, &mut hubs);
        }
    }
    let mut order = Vec::with_capacity(n);
    loop {
        let v = if let Some(h) = hubs.pop() {
            h
        } else if let Some(Reverse((_, v))) = heap.pop() {
            order.push(v);
            v
        } else {
            break;
        };
        for &s in graph.successors(v) {
            indegree[s] -= 1;
            if indegree[s] == 0 {
                release(s, &mut heap, &mut hubs);
            }
        }
    }
    debug_assert_eq!(order.len(), n, "the consensus graph is acyclic");
    order
}

/// The anchor just before the first anchor `m` reaches (the last one it may follow), or
/// the last anchor when it reaches none. Anchors form a chain, so what `m` reaches past
/// an anchor is past it in the chain too: the search does not go through anchors, nor
/// through hubs (a hub fans out to a whole group), and it visits nodes by program
/// position, stopping past the first anchor found: a path it leaves out can only make
/// the anchor returned later than the true one, and the edge then offered from it is
/// checked for cycles like any other. `seen` is scratch, one slot per node.
fn last_anchor_before(
    graph: &Dag,
    m: usize,
    n: usize,
    anchors: &[usize],
    is_anchor_at: &impl Fn(usize) -> bool,
    seen: &mut [bool],
) -> Option<usize> {
    let mut first: Option<usize> = None;
    let mut visited = vec![m];
    let mut frontier = BinaryHeap::new();
    frontier.push(Reverse(m));
    while let Some(Reverse(v)) = frontier.pop() {
        if first.is_some_and(|f| v > f) {
            break;
        }
        if visited.len() > SEARCH_LIMIT {
            // Too far to tell (a chain of requests without compute in between):
            // no edge rather than a guess.
            visited.iter().for_each(|&x| seen[x] = false);
            return None;
        }
        for &s in graph.successors(v) {
            if s >= n {
                continue;
            }
            if is_anchor_at(s) {
                first = Some(first.map_or(s, |f| f.min(s)));
            } else if !seen[s] {
                seen[s] = true;
                visited.push(s);
                frontier.push(Reverse(s));
            }
        }
    }
    for v in visited {
        seen[v] = false;
    }
    let at = match first {
        Some(f) => anchors.partition_point(|&a| a < f),
        None => anchors.len(),
    };
    at.checked_sub(1).map(|i| anchors[i])
}
