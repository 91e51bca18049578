//! Which ranks the Timeline shows (`F`, `W`): all, a list of ranks and ranges
//! (`0-15,64`), the ranks with an event a search matches (`/Waitall`, as `/` searches),
//! or the ranks with the worst waits (`worst 8`: the most wait-state time first). At a
//! thousand ranks, the lanes a user wants are rarely next to each other: a filter makes
//! them the lanes, in its order, grouped as `G` groups any lanes.

use crate::app::TimelineState;
use crate::nav;
use crate::run::Run;
use crate::search::Query;

/// A filter of the Timeline's ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RankFilter {
    /// These ranks (sorted, each once).
    Ranks(Vec<u32>),
    /// The ranks with an event this search matches.
    Search(String),
    /// The `n` ranks with the most wait-state time, most first.
    WorstWaits(usize),
}

impl RankFilter {
    /// Reads what the `F` prompt was given: `0-3,8`, `/text`, `worst N` (`w N`).
    pub fn parse(text: &str) -> Result<RankFilter, String> {
        let t = text.trim();
        if let Some(search) = t.strip_prefix('/') {
            return if search.is_empty() {
                Err("nothing to search for after /".into())
            } else {
                Ok(RankFilter::Search(search.to_string()))
            };
        }
        let mut words = t.split_whitespace();
        if let Some(w @ ("worst" | "w")) = words.next() {
            let n = words.next().unwrap_or("8");
            return match n.parse::<usize>() {
                Ok(n) if n > 0 && words.next().is_none() => Ok(RankFilter::WorstWaits(n)),
                _ => Err(format!("{w} N: N a number of ranks, 1 or more, not {n:?}")),
            };
        }
        ranks(t).map(RankFilter::Ranks)
    }

    /// In words, for the Timeline's title.
    pub fn describe(&self) -> String {
        match self {
            RankFilter::Ranks(r) => format!("ranks {}", overlap_analyzer::window::rank_ranges(r)),
            RankFilter::Search(s) => format!("ranks matching /{}", crate::text::clean(s)),
            RankFilter::WorstWaits(n) => format!("{n} worst-waiting ranks"),
        }
    }

    /// The positions (in `trace.ranks`) of the ranks it keeps, in the order shown.
    pub fn shown(&self, run: &Run) -> Vec<usize> {
        let ranks = &run.trace.ranks;
        match self {
            RankFilter::Ranks(list) => (0..ranks.len())
                .filter(|&p| list.binary_search(&ranks[p].rank).is_ok())
                .collect(),
            RankFilter::Search(text) => {
                let q = Query::new(run, text);
                (0..ranks.len())
                    .filter(|&p| (0..ranks[p].spans.len()).any(|i| q.matches(run, p, i)))
                    .collect()
            }
            RankFilter::WorstWaits(n) => {
                let waits = &run.report.wait_states.per_rank_ns;
                let mut by_wait: Vec<(u64, usize)> = (0..ranks.len())
                    .map(|p| (waits.get(&ranks[p].rank).copied().unwrap_or(0), p))
                    .filter(|(ns, _)| *ns > 0)
                    .collect();
                by_wait.sort_by_key(|&(ns, p)| (std::cmp::Reverse(ns), p));
                by_wait.into_iter().take(*n).map(|(_, p)| p).collect()
            }
        }
    }
}

impl TimelineState {
    /// The lanes: the ranks shown, `group` per lane.
    pub fn lanes(&self) -> Vec<Vec<usize>> {
        nav::lanes(&self.shown, self.group)
    }

    /// Shows the ranks `filter` keeps (every rank for `None`), or says why it keeps
    /// none (and changes nothing).
    pub fn set_filter(&mut self, run: &Run, filter: Option<RankFilter>) -> String {
        let shown = filter
            .as_ref()
            .map_or_else(|| nav::every_rank(run), |f| f.shown(run));
        let said = filter
            .as_ref()
            .map_or("every rank".to_string(), RankFilter::describe);
        if shown.is_empty() {
            return format!("no rank to show: no {said} in this run");
        }
        let n = shown.len();
        (self.filter, self.shown) = (filter, shown);
        self.group = self.group.min(n).max(1);
        let lanes = self.lanes();
        self.lane = self
            .selected()
            .and_then(|e| nav::lane_of(run, &lanes, e.rank))
            .unwrap_or(0);
        self.first_lane = 0;
        format!("showing {said}: {n} rank(s) (F to change, F then Enter for all)")
    }
}

/// A list of ranks and ranges, `0-15,64`, sorted and each once.
fn ranks(text: &str) -> Result<Vec<u32>, String> {
    let mut out = overlap_analyzer::window::parse_rank_list(text)
        .map_err(|e| format!("{e}: give ranks (0-15,64), /text or worst N"))?;
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_reads_ranks_searches_and_worst() {
        let p = RankFilter::parse;
        assert_eq!(p("3, 0-1 ,1"), Ok(RankFilter::Ranks(vec![0, 1, 3])));
        assert_eq!(p("/Waitall"), Ok(RankFilter::Search("Waitall".into())));
        assert_eq!(p("worst 3"), Ok(RankFilter::WorstWaits(3)));
        assert_eq!(p("w"), Ok(RankFilter::WorstWaits(8)));
        assert!(p("worst 0").is_err());
        assert!(p("5-2")
            .expect_err("a range backwards")
            .contains("not a range"));
        assert!(p("halo").expect_err("a word").contains("not a rank"));
        assert!(p("/").is_err());
    }
}
