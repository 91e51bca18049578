//! The requests each call posted, found by the call: what joins messages (named by
//! their calls) to requests (named by their posts) without a map of every message or
//! request of the run.
//!
//! A rank's requests are in post order, so the requests one call posted (one, or
//! several for a Startall) are a run of them: the rank's are found first, in a table of
//! one entry per rank with requests (at its own index when every rank has some), then
//! the first of its posts not before the call by binary search over a packed column of
//! posts (4 B a request), and those equal to it after. A search of the run's requests
//! instead, for the messages in time order, jumps across ranks at every message: at
//! 1 024 ranks its every step missed the cache, and it was most of the wait states'
//! time; over the requests' own 28-byte records, each probe was another cache line.
//!
//! ```text
//!  rank 3's spans   0 Isend   1 Irecv   2 compute   3 Startall(2)   4 Waitall
//!  its requests     r0        r1                    r2 r3
//!  at(3, 3) = [r2, r3]; at(3, 2) = []
//! ```

use super::compact::index_u32;
use super::{EventRef, RequestLife};

/// The requests of a trace by the call that posted them.
pub struct RequestsByPost {
    /// The requests' indices in (rank, post) order, when the trace's own order is not
    /// that (a retimed trace, or one built by hand): a stable sort, so that the requests
    /// of one call keep their order.
    order: Option<Vec<usize>>,
    /// The posts in that order, packed (4 B a request): what the searches read. A rank
    /// of 400 000 requests is 1.6 MB of them, where its requests are 11.2 MB, each
    /// probe of a search in another cache line.
    posts: Vec<u32>,
    /// Per rank with requests, sorted by rank: where its requests are in that order.
    ranks: Vec<(u32, std::ops::Range<usize>)>,
}

impl RequestsByPost {
    /// The index of `requests` by post.
    pub fn new(requests: &[RequestLife]) -> RequestsByPost {
        let key = |r: &RequestLife| (r.rank, r.post());
        let order = (!requests.windows(2).all(|w| key(&w[0]) <= key(&w[1]))).then(|| {
            let mut order: Vec<usize> = (0..requests.len()).collect();
            order.sort_by_key(|&i| key(&requests[i]));
            order
        });
        let nth = |k: usize| &requests[order.as_ref().map_or(k, |o| o[k])];
        let posts = (0..requests.len())
            .map(|k| index_u32(nth(k).post()))
            .collect();
        let mut ranks = Vec::new();
        let mut k = 0;
        while k < requests.len() {
            let rank = nth(k).rank;
            let first = k;
            while k < requests.len() && nth(k).rank == rank {
                k += 1;
            }
            ranks.push((rank, first..k));
        }
        RequestsByPost {
            order,
            posts,
            ranks,
        }
    }

    /// The index (into the requests) of the `k`-th in (rank, post) order.
    fn index(&self, k: usize) -> usize {
        self.order.as_ref().map_or(k, |o| o[k])
    }

    /// The indices (into the requests) of the requests the call `post` posted, in the
    /// requests' order: the first of the rank's posts not before it, by binary search,
    /// then those equal to it (one, or a Startall's few).
    pub fn at(&self, post: EventRef) -> impl DoubleEndedIterator<Item = usize> + '_ {
        // (A post past 32 bits is no request's.)
        let rank = super::slot_of_rank(&self.ranks, post.rank, |r| r.0);
        let range = match (rank, u32::try_from(post.index)) {
            (Some(r), Ok(target)) => {
                let within = self.ranks[r].1.clone();
                let posts = &self.posts[within.clone()];
                let from = posts.partition_point(|&p| p < target);
                let n = posts[from..].iter().take_while(|&&p| p == target).count();
                within.start + from..within.start + from + n
            }
            _ => 0..0,
        };
        range.map(move |k| self.index(k))
    }
}

#[cfg(test)]
mod tests {
    use overlap_format::schema::RequestKind;

    use super::*;

    fn life(rank: u32, request: u64, post: usize) -> RequestLife {
        RequestLife::new(rank, request, RequestKind::Send, post, post, None, None)
    }

    /// Rank 3 of the module's drawing beside a rank 1 with one request, and ranks 2 and
    /// 7 with none; then the same requests given out of order.
    #[test]
    fn each_call_finds_the_requests_it_posted() {
        let requests = vec![
            life(1, 10, 1),
            life(3, 0, 0),
            life(3, 1, 1),
            life(3, 2, 3),
            life(3, 3, 3),
        ];
        let found = |by: &RequestsByPost, rank, index| -> Vec<usize> {
            by.at(EventRef { rank, index }).collect()
        };
        let by = RequestsByPost::new(&requests);
        assert!(by.order.is_none());
        assert_eq!(found(&by, 3, 0), vec![1]);
        assert_eq!(found(&by, 3, 1), vec![2]);
        assert_eq!(found(&by, 3, 2), Vec::<usize>::new());
        assert_eq!(found(&by, 3, 3), vec![3, 4]);
        assert_eq!(found(&by, 3, 4), Vec::<usize>::new());
        assert_eq!(found(&by, 3, 9), Vec::<usize>::new());
        assert_eq!(found(&by, 1, 1), vec![0]);
        assert_eq!(found(&by, 1, 0), Vec::<usize>::new());
        assert_eq!(found(&by, 2, 0), Vec::<usize>::new());
        assert_eq!(found(&by, 7, 0), Vec::<usize>::new());
        // Out of order: the indices are still the given ones, and one call's requests
        // keep the order they were given in.
        let shuffled = [4, 1, 0, 3, 2].map(|i| requests[i]);
        let by = RequestsByPost::new(&shuffled);
        assert!(by.order.is_some());
        assert_eq!(found(&by, 3, 3), vec![0, 3]);
        assert_eq!(found(&by, 3, 0), vec![1]);
        assert_eq!(found(&by, 3, 1), vec![4]);
        assert_eq!(found(&by, 1, 1), vec![2]);
        assert_eq!(found(&by, 3, 2), Vec::<usize>::new());
    }
}
