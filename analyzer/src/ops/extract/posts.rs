//! Each rank's requests by the call that posted them ([`RankPosts`]), so that finding a
//! call's requests while its operations are extracted is one lookup, not a search.

use crate::model::compact::index_u32;
use crate::model::RequestLife;

/// A rank's requests by the call that posted them: `(post span, trace request index)`
/// of each, by post span (requests posted by one call keep their order), and where
/// each span's begin, so that finding a call's requests is one lookup, not a search.
pub(super) struct RankPosts {
    pub(super) list: Vec<(u32, u32)>,
    /// `list[first[s]..first[s + 1]]` were posted by span `s` (up to the last span
    /// that posted one).
    first: Vec<u32>,
}

impl RankPosts {
    fn new(mut list: Vec<(u32, u32)>) -> RankPosts {
        list.sort_by_key(|p| p.0);
        let spans = list.last().map_or(0, |p| p.0 as usize + 1);
        let mut first = Vec::with_capacity(spans + 1);
        let mut at = 0;
        for span in 0..=spans {
            while at < list.len() && (list[at].0 as usize) < span {
                at += 1;
            }
            first.push(index_u32(at));
        }
        RankPosts { list, first }
    }

    /// Forgets `list`, which only building the rank reads, once it is built: linking
    /// reads where each span's posts are, not which requests they were (8 B a request
    /// given back).
    pub(super) fn forget_requests(&mut self) {
        self.list = Vec::new();
    }

    /// Where the requests posted by the call at `span` are in `list`.
    pub(super) fn at(&self, span: usize) -> std::ops::Range<usize> {
        match (self.first.get(span), self.first.get(span + 1)) {
            (Some(&from), Some(&to)) => from as usize..to as usize,
            _ => 0..0,
        }
    }
}

/// Per rank slot of the run whose ranks are `ranks` (sorted): its requests (of the run's
/// `requests`) by the call that posted them.
pub(super) fn posts_by_rank(ranks: &[u32], requests: &[RequestLife]) -> Vec<RankPosts> {
    let mut posted_at: Vec<Vec<(u32, u32)>> = vec![Vec::new(); ranks.len()];
    for (i, r) in requests.iter().enumerate() {
        if let Some(slot) = crate::model::slot_of_rank(ranks, r.rank, |&x| x) {
            posted_at[slot].push((index_u32(r.post()), index_u32(i)));
        }
    }
    posted_at.into_iter().map(RankPosts::new).collect()
}
