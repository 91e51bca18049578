//! The run's requests cut into parts of whole ranks, so that the per-request pass can
//! make its rows a few ranks at a time ([`crate::analysis`]'s pass order) or a rank at a
//! time ([`super::requests`]).

/// Parts of the run's requests (which are in rank order) made of whole ranks, each of at
/// least `at_least` requests but for the last (one rank may have more); with 1, each
/// rank's requests.
pub fn parts_of_whole_ranks(
    requests: &[crate::model::RequestLife],
    at_least: usize,
) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let mut ranks = requests.chunk_by(|a, b| a.rank == b.rank).peekable();
    let mut first = 0;
    std::iter::from_fn(move || {
        let start = first;
        while let Some(same) = ranks.next() {
            first += same.len();
            if first - start >= at_least || ranks.peek().is_none() {
                break;
            }
        }
        (first > start).then_some(start..first)
    })
}

#[cfg(test)]
mod tests {
    use overlap_format::schema::RequestKind;

    use super::parts_of_whole_ranks;
    use crate::model::RequestLife;

    /// Ranks 0 0 | 1 | 2 2 2 2 | 3 (requests 0..8) cut into parts of at least 3: whole
    /// ranks together until there are 3, a rank with more on its own, the rest last.
    #[test]
    fn parts_hold_whole_ranks() {
        let ranks = [0, 0, 1, 2, 2, 2, 2, 3];
        let requests: Vec<RequestLife> = ranks
            .iter()
            .map(|&r| RequestLife::new(r, 1, RequestKind::Send, 0, 0, None, None))
            .collect();
        let parts: Vec<_> = parts_of_whole_ranks(&requests, 3).collect();
        assert_eq!(parts, [0..3, 3..7, 7..8]);
        let one: Vec<_> = parts_of_whole_ranks(&requests, 1).collect();
        assert_eq!(one, [0..2, 2..3, 3..7, 7..8]);
        let all: Vec<_> = parts_of_whole_ranks(&requests, usize::MAX).collect();
        assert_eq!((all.len(), all.first()), (1, Some(&(0..8))));
        assert_eq!(parts_of_whole_ranks(&[], 3).count(), 0);
    }
}
