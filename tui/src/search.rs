//! Search (`/`) over what a user remembers of a call: its MPI name, a compute span's
//! name, or its call site (`halo.c:88`, a function name). Case does not matter. A match
//! is an event; `n` and `N` go to the next and previous one in time over all ranks.

use overlap_analyzer::model::{EventRef, What};

use crate::run::Run;

/// A search, with what it matches worked out once per run.
#[derive(Clone, Debug)]
pub struct Query {
    /// What the user typed.
    pub text: String,
    /// Per rank (position in `trace.ranks`): which compute names match.
    names: Vec<Vec<bool>>,
    /// Which call sites (ids of the run's site table) match.
    sites: Vec<bool>,
}

impl Query {
    /// The query `text` on `run`.
    pub fn new(run: &Run, text: &str) -> Query {
        let has = |s: &str| contains_ignoring_case(s, text);
        Query {
            text: text.to_string(),
            names: run
                .trace
                .ranks
                .iter()
                .map(|t| t.names.iter().map(|n| has(n)).collect())
                .collect(),
            sites: run
                .details
                .sites
                .sites()
                .iter()
                .map(|s| has(&s.label))
                .collect(),
        }
    }

    /// True when event `index` of the rank at position `pos` matches.
    pub fn matches(&self, run: &Run, pos: usize, index: usize) -> bool {
        let t = &run.trace.ranks[pos];
        let Some(s) = t.spans.get(index) else {
            return false;
        };
        match s.what {
            What::Compute(id) => self.names[pos].get(id as usize).copied().unwrap_or(false),
            What::Call(op, call) => {
                if contains_ignoring_case(op.mpi_name(), &self.text) {
                    return true;
                }
                let site = t.calls.get(call as usize).and_then(|c| c.site);
                site.and_then(|raw| run.details.sites.id(t.rank, raw.get()))
                    .and_then(|id| self.sites.get(id as usize).copied())
                    .unwrap_or(false)
            }
        }
    }

    /// The first match after `from` in time (before it when `!forward`), over every
    /// rank; from the run's start (end) when nothing is selected. Ties in time go by
    /// rank.
    pub fn next(&self, run: &Run, from: Option<EventRef>, forward: bool) -> Option<EventRef> {
        let key = from.and_then(|e| Some((run.trace.span(e)?.start.0, e.rank, e.index)));
        let mut best: Option<(u64, u32, usize)> = None;
        for (pos, t) in run.trace.ranks.iter().enumerate() {
            let better = |k: (u64, u32, usize), b: Option<(u64, u32, usize)>| {
                b.is_none_or(|b| if forward { k < b } else { k > b })
            };
            let after = |i: usize| {
                let k = (t.spans[i].start.0, t.rank, i);
                key.is_none_or(|f| if forward { k > f } else { k < f })
            };
            let found = if forward {
                let first = key.map_or(0, |(ns, _, _)| t.spans.partition_point(|s| s.start.0 < ns));
                (first..t.spans.len()).find(|i| after(*i) && self.matches(run, pos, *i))
            } else {
                let end = key.map_or(t.spans.len(), |(ns, _, _)| {
                    t.spans.partition_point(|s| s.start.0 <= ns)
                });
                (0..end)
                    .rev()
                    .find(|i| after(*i) && self.matches(run, pos, *i))
            };
            if let Some(i) = found {
                let k = (t.spans[i].start.0, t.rank, i);
                if better(k, best) {
                    best = Some(k);
                }
            }
        }
        best.map(|(_, rank, index)| EventRef { rank, index })
    }
}

/// True when `needle` is in `hay`, ASCII letters compared without case (no allocation:
/// it runs once per event).
fn contains_ignoring_case(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    n.is_empty() || h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    #[test]
    fn case_does_not_matter() {
        assert!(super::contains_ignoring_case("MPI_Isend", "isend"));
        assert!(super::contains_ignoring_case(
            "halo.c:88 (exchange)",
            "HALO.C:8"
        ));
        assert!(!super::contains_ignoring_case("MPI_Irecv", "isend"));
    }
}
