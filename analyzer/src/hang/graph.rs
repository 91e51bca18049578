//! The wait-for graph of a hung run: an edge from rank `r` to rank `s` when a call `r` is
//! blocked in waits for `s`. A cycle of such edges is a deadlock: every rank on it waits
//! for the next, and none can go on. An edge is marked `any` when the call waits for one
//! of several ranks (a receive from `MPI_ANY_SOURCE`, a Waitany or Waitsome): such a
//! rank is freed by any one of them, so a cycle through it is a deadlock only if all of
//! them are stuck (the report lists them all).

use std::collections::BTreeMap;

use serde::Serialize;

use overlap_format::schema::Op;

use super::{RankHang, RankState};

/// Rank `from` waits for rank `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Edge {
    /// The waiting rank.
    pub from: u32,
    /// The rank it waits for.
    pub to: u32,
    /// True when `from` waits for any one of several ranks, this one among them.
    pub any: bool,
}

/// A rank blocked ones wait for that is not blocked in MPI itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NotBlocked {
    /// The rank.
    pub rank: u32,
    /// Where it stood.
    pub state: RankState,
    /// The blocked ranks that wait for it.
    pub waited_by: Vec<u32>,
}

/// The graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitFor {
    /// Edges, by `(from, to)`.
    pub edges: Vec<Edge>,
}

/// True for the calls that return when one of their requests completes.
fn waits_for_one(call: &str) -> bool {
    [Op::Waitany, Op::Waitsome, Op::Testany, Op::Testsome]
        .iter()
        .any(|op| op.mpi_name() == call)
}

impl WaitFor {
    /// The edges of the blocked ranks among `ranks` (a world of `world` ranks).
    pub fn build(ranks: &[RankHang], world: u32) -> WaitFor {
        let mut edges: BTreeMap<(u32, u32), bool> = BTreeMap::new();
        for r in ranks.iter().filter(|r| r.state.blocked()) {
            for c in r.calls.iter().filter(|c| !c.completed_after_dump) {
                let targets: Vec<(u32, bool)> = c
                    .waits_for
                    .iter()
                    .flat_map(|w| {
                        let one = waits_for_one(c.call);
                        match (w.rank, w.any_source) {
                            (Some(s), _) => vec![(s, one)],
                            (None, true) => (0..world).map(|s| (s, true)).collect(),
                            (None, false) => Vec::new(),
                        }
                    })
                    .filter(|&(s, _)| s != r.rank && s < world)
                    .collect();
                for (s, any) in targets {
                    let e = edges.entry((r.rank, s)).or_insert(any);
                    *e &= any;
                }
            }
        }
        WaitFor {
            edges: edges
                .into_iter()
                .map(|((from, to), any)| Edge { from, to, any })
                .collect(),
        }
    }

    fn next(&self, from: u32) -> impl Iterator<Item = u32> + '_ {
        self.edges
            .iter()
            .filter(move |e| e.from == from)
            .map(|e| e.to)
    }

    /// A cycle, smallest rank first, the first rank repeated at the end: found by a
    /// depth-first search from each rank in order.
    pub fn cycle(&self) -> Option<Vec<u32>> {
        let mut starts: Vec<u32> = self.edges.iter().map(|e| e.from).collect();
        starts.dedup();
        for start in starts {
            let mut path = vec![start];
            if self.search(&mut path) {
                return Some(path);
            }
        }
        None
    }

    /// Extends `path` (no repeats) until it comes back to its first rank.
    fn search(&self, path: &mut Vec<u32>) -> bool {
        let (first, last) = (path[0], path[path.len() - 1]);
        for s in self.next(last).collect::<Vec<_>>() {
            if s == first {
                path.push(s);
                return true;
            }
            // Only ranks above the first: a cycle through a smaller rank was found from it.
            if s > first && !path.contains(&s) {
                path.push(s);
                if self.search(path) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }

    /// The ranks edges lead to that are not blocked themselves.
    pub fn waited_not_blocked(&self, ranks: &[RankHang]) -> Vec<NotBlocked> {
        let mut out: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for e in &self.edges {
            let state = ranks.iter().find(|r| r.rank == e.to).map(|r| r.state);
            if !state.is_some_and(RankState::blocked) {
                out.entry(e.to).or_default().push(e.from);
            }
        }
        out.into_iter()
            .map(|(rank, waited_by)| NotBlocked {
                rank,
                state: ranks
                    .iter()
                    .find(|r| r.rank == rank)
                    .map_or(RankState::NoTrace, |r| r.state),
                waited_by,
            })
            .collect()
    }
}
