//! A DAG that refuses edges closing a cycle, cheaply: it keeps a topological order of
//! its nodes up to date as edges are added (Pearce and Kelly's dynamic topological
//! sort), so an edge that agrees with the current order is accepted at once, and one
//! that does not costs a search bounded by the part of the order between its ends, and
//! by [`SEARCH_LIMIT`] nodes: an edge whose check would visit more is refused, as if it
//! closed a cycle (the graph keeps the order it has: a policy's wish is given up, never
//! a dependence, whose edges go forward and are not searched). So a long scope whose
//! policy edges all run against it (a sort key of a thousand groups) costs
//! `O(edges × SEARCH_LIMIT)`, not `O(edges × scope)`.
//!
//! ```text
//!  order  a b c d      add d -> b: search forward from b among b..d: b -> c, c -> d:
//!  edges  b->c c->d    reaches d, so the edge would close a cycle: refused
//! ```

/// A node of a [`Dag`].
pub type Node = usize;

/// The most nodes the search behind one backward edge visits before the edge is refused.
pub const SEARCH_LIMIT: usize = 1024;

/// A directed acyclic graph with a maintained topological order.
#[derive(Clone, Debug, Default)]
pub struct Dag {
    succ: Vec<Vec<Node>>,
    pred: Vec<Vec<Node>>,
    /// Position of each node in the topological order.
    ord: Vec<usize>,
    /// Node at each position.
    at: Vec<Node>,
    edges: usize,
    // Scratch for searches.
    mark: Vec<u32>,
    epoch: u32,
}

impl Dag {
    /// A graph of `n` nodes and no edge, ordered 0..n.
    pub fn new(n: usize) -> Dag {
        Dag {
            succ: vec![Vec::new(); n],
            pred: vec![Vec::new(); n],
            ord: (0..n).collect(),
            at: (0..n).collect(),
            edges: 0,
            mark: vec![0; n],
            epoch: 0,
        }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.succ.len()
    }

    /// True without nodes.
    pub fn is_empty(&self) -> bool {
        self.succ.is_empty()
    }

    /// Number of edges.
    pub fn edge_count(&self) -> usize {
        self.edges
    }

    /// Adds a node (placed last in the order) and returns it.
    pub fn add_node(&mut self) -> Node {
        let n = self.succ.len();
        self.succ.push(Vec::new());
        self.pred.push(Vec::new());
        self.ord.push(n);
        self.at.push(n);
        self.mark.push(0);
        n
    }

    /// Adds, for each `(x, count)` of `places`, `count` nodes placed just after `x` in the
    /// order, one after the other (so that searches for edges between them and their
    /// neighbours stay short), and returns them, by place. One pass over the order:
    /// `O(n + k log k)` for `k` places, however many there are.
    pub fn add_nodes_after(&mut self, places: &[(Node, usize)]) -> Vec<Vec<Node>> {
        let added: Vec<Vec<Node>> = places
            .iter()
            .map(|&(_, count)| (0..count).map(|_| self.add_node()).collect())
            .collect();
        let old = self.at.len() - added.iter().map(Vec::len).sum::<usize>();
        let mut by_position: Vec<(usize, usize)> = (places.iter().enumerate())
            .map(|(k, &(x, _))| (self.ord[x], k))
            .collect();
        by_position.sort_unstable();
        let mut at = Vec::with_capacity(self.at.len());
        let mut next = by_position.iter().peekable();
        for p in 0..old {
            at.push(self.at[p]);
            while let Some(&(_, k)) = next.next_if(|&&(q, _)| q == p) {
                at.extend_from_slice(&added[k]);
            }
        }
        for (p, &node) in at.iter().enumerate() {
            self.ord[node] = p;
        }
        self.at = at;
        added
    }

    /// Successors of a node.
    pub fn successors(&self, n: Node) -> &[Node] {
        &self.succ[n]
    }

    /// Predecessors of a node.
    pub fn predecessors(&self, n: Node) -> &[Node] {
        &self.pred[n]
    }

    /// True when the edge `a -> b` is in the graph. Looks through the shorter of `a`'s
    /// successors and `b`'s predecessors: a hub's thousand members each cost their own
    /// few edges, not the hub's thousand.
    pub fn has_edge(&self, a: Node, b: Node) -> bool {
        if self.succ[a].len() <= self.pred[b].len() {
            self.succ[a].contains(&b)
        } else {
            self.pred[b].contains(&a)
        }
    }

    /// Adds `a -> b` unless it would close a cycle (or is a self loop, or the check would
    /// visit more than [`SEARCH_LIMIT`] nodes); returns whether the graph has the edge now.
    pub fn add_edge(&mut self, a: Node, b: Node) -> bool {
        if a == b {
            return false;
        }
        let (lb, ub) = (self.ord[b], self.ord[a]);
        if lb < ub {
            // b comes before a: look for a path b ~> a among positions lb..=ub (too far
            // to tell within the limit: refused).
            let Some(forward) = self.search_forward(b, ub, a) else {
                return false;
            };
            let Some(backward) = self.search_backward(a, lb) else {
                return false;
            };
            self.reorder(forward, backward);
        }
        if !self.has_edge(a, b) {
            self.succ[a].push(b);
            self.pred[b].push(a);
            self.edges += 1;
        }
        true
    }

    /// Adds `a -> b`, which must not close a cycle (essential edges built in program
    /// order, always forward).
    pub fn add_forward(&mut self, a: Node, b: Node) {
        let added = self.add_edge(a, b);
        debug_assert!(added, "a forward edge closed a cycle");
    }

    fn next_epoch(&mut self) -> u32 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        self.epoch
    }

    /// Nodes reachable from `from` with positions at most `ub`; `None` if `target` is, or
    /// if there are more than [`SEARCH_LIMIT`].
    fn search_forward(&mut self, from: Node, ub: usize, target: Node) -> Option<Vec<Node>> {
        let epoch = self.next_epoch();
        let mut seen = vec![from];
        let mut stack = vec![from];
        self.mark[from] = epoch;
        while let Some(n) = stack.pop() {
            for i in 0..self.succ[n].len() {
                let s = self.succ[n][i];
                if s == target {
                    return None;
                }
                if self.mark[s] != epoch && self.ord[s] < ub {
                    if seen.len() == SEARCH_LIMIT {
                        return None;
                    }
                    self.mark[s] = epoch;
                    seen.push(s);
                    stack.push(s);
                }
            }
        }
        Some(seen)
    }

    /// Nodes that reach `from` with positions at least `lb`; `None` if there are more
    /// than [`SEARCH_LIMIT`].
    fn search_backward(&mut self, from: Node, lb: usize) -> Option<Vec<Node>> {
        let epoch = self.next_epoch();
        let mut seen = vec![from];
        let mut stack = vec![from];
        self.mark[from] = epoch;
        while let Some(n) = stack.pop() {
            for i in 0..self.pred[n].len() {
                let p = self.pred[n][i];
                if self.mark[p] != epoch && self.ord[p] > lb {
                    if seen.len() == SEARCH_LIMIT {
                        return None;
                    }
                    self.mark[p] = epoch;
                    seen.push(p);
                    stack.push(p);
                }
            }
        }
        Some(seen)
    }

    /// Puts the nodes that reach `a` before those `b` reaches, in the positions both sets
    /// held, each set keeping its relative order.
    fn reorder(&mut self, mut forward: Vec<Node>, mut backward: Vec<Node>) {
        forward.sort_unstable_by_key(|n| self.ord[*n]);
        backward.sort_unstable_by_key(|n| self.ord[*n]);
        let mut slots: Vec<usize> = forward
            .iter()
            .chain(backward.iter())
            .map(|n| self.ord[*n])
            .collect();
        slots.sort_unstable();
        for (slot, node) in slots.into_iter().zip(backward.into_iter().chain(forward)) {
            self.ord[node] = slot;
            self.at[slot] = node;
        }
    }

    /// Position of a node in the maintained topological order.
    pub fn position(&self, n: Node) -> usize {
        self.ord[n]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_the_edge_that_closes_a_cycle() {
        // a -> b -> c; c -> a would close a cycle, a -> c would not.
        let mut g = Dag::new(3);
        assert!(g.add_edge(0, 1));
        assert!(g.add_edge(1, 2));
        assert!(!g.add_edge(2, 0));
        assert!(g.add_edge(0, 2));
        assert!(!g.add_edge(1, 1));
        assert_eq!(g.edge_count(), 3);
    }

    #[test]
    fn reorders_for_a_backward_edge() {
        // Order 0 1 2 3, edge 3 -> 1 (backward, no path 1 ~> 3): accepted, and the
        // order now puts 3 before 1.
        let mut g = Dag::new(4);
        assert!(g.add_edge(0, 1));
        assert!(g.add_edge(3, 1));
        assert!(g.position(3) < g.position(1));
        assert!(g.position(0) < g.position(1));
        // Now 1 -> 3 closes a cycle.
        assert!(!g.add_edge(1, 3));
        // And a chain through a new node.
        let h = g.add_node();
        assert!(g.add_edge(1, h));
        assert!(!g.add_edge(h, 3));
    }

    #[test]
    fn a_node_added_after_another_sits_next_to_it() {
        let mut g = Dag::new(4);
        assert!(g.add_edge(0, 3));
        let added = g.add_nodes_after(&[(1, 1)]);
        let h = added[0][0];
        assert_eq!(g.position(h), g.position(1) + 1);
        assert!(g.position(1) < g.position(2) && g.position(h) < g.position(2));
        assert!(g.add_edge(h, 2));
        assert!(g.add_edge(0, h));
        assert!(!g.add_edge(2, 0));
    }

    #[test]
    fn nodes_added_after_several_places_sit_next_to_each() {
        // Order 0 1 2 3; two nodes after 2, one after 0, none after 3.
        let mut g = Dag::new(4);
        assert!(g.add_edge(3, 1));
        // The order is now 0 3 2 1 (3 and 1 swapped their places).
        let added = g.add_nodes_after(&[(2, 2), (0, 1), (3, 0)]);
        let (a, b, c) = (added[0][0], added[0][1], added[1][0]);
        assert!(added[2].is_empty());
        let order: Vec<Node> = {
            let mut nodes: Vec<Node> = (0..g.len()).collect();
            nodes.sort_by_key(|&n| g.position(n));
            nodes
        };
        assert_eq!(order, vec![0, c, 3, 2, a, b, 1]);
        assert!(g.add_edge(2, a) && g.add_edge(a, b));
        assert!(!g.add_edge(b, 2), "2 -> a -> b: b -> 2 closes a cycle");
    }

    #[test]
    fn order_stays_topological_under_random_edges() {
        let n = 40;
        let mut g = Dag::new(n);
        let mut x: u64 = 12345;
        for _ in 0..600 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (a, b) = ((x >> 33) as usize % n, (x >> 17) as usize % n);
            g.add_edge(a, b);
            for u in 0..n {
                for &v in g.successors(u) {
                    assert!(g.position(u) < g.position(v), "{u} -> {v}");
                }
            }
        }
    }
}
