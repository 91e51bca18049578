//! A rank's repeating unit: the iteration of its main loop, found from the sequence of
//! its operations (call and site for MPI calls, name for compute), so that policies
//! apply within an iteration and moves are reported once per iteration.
//!
//! Candidate periods are the distances between consecutive occurrences of the same
//! operation; each candidate `p` is checked by a scan for the longest stretch where
//! operation `i` equals operation `i + p`. The period kept covers the most operations
//! (the smallest such period when several do); fewer than two whole iterations means no
//! period, and the whole trace is one unit.
//!
//! ```text
//!  ops      I a b c a b c a b c F        candidates: 3 (a..a), 6 ...
//!  p = 3    . a b c|a b c|a b c .        3 iterations from position 1, covering 9
//! ```

use crate::fxhash::FxHashMap;

/// The repeating unit found in a sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    /// Operations per iteration.
    pub length: usize,
    /// Position of the first iteration's first operation.
    pub start: usize,
    /// Whole iterations matched.
    pub iterations: usize,
}

impl Period {
    /// Position just after the last matched iteration.
    pub fn end(&self) -> usize {
        self.start + self.length * self.iterations
    }

    /// The scope of operation `i`: 0 before the first iteration, `1 + k` in iteration
    /// `k`, `iterations + 1` after the last.
    pub fn scope(&self, i: usize) -> u32 {
        if i < self.start {
            0
        } else if i >= self.end() {
            self.iterations as u32 + 1
        } else {
            1 + ((i - self.start) / self.length) as u32
        }
    }
}

/// How many candidate periods are checked (the most frequent distances).
const CANDIDATES: usize = 16;

/// The repeating unit of `keys` (one key per operation), if at least two whole
/// iterations repeat.
pub fn find(keys: &[u64]) -> Option<Period> {
    let n = keys.len();
    if n < 2 {
        return None;
    }
    let mut last: FxHashMap<u64, usize> = FxHashMap::default();
    let mut distances: FxHashMap<usize, usize> = FxHashMap::default();
    for (i, k) in keys.iter().enumerate() {
        if let Some(prev) = last.insert(*k, i) {
            *distances.entry(i - prev).or_default() += 1;
        }
    }
    let mut candidates: Vec<(usize, usize)> = distances.into_iter().collect();
    candidates.sort_unstable_by_key(|&(d, count)| (std::cmp::Reverse(count), d));
    candidates.truncate(CANDIDATES);
    let mut best: Option<Period> = None;
    for (p, _) in candidates {
        let Some(found) = longest_run(keys, p) else {
            continue;
        };
        let covered = |q: &Period| q.length * q.iterations;
        best = match best {
            Some(b) if covered(&b) > covered(&found) => Some(b),
            Some(b) if covered(&b) == covered(&found) && b.length <= found.length => Some(b),
            _ => Some(found),
        };
    }
    best
}

/// The longest stretch repeating with period `p`, as whole iterations (at least two).
fn longest_run(keys: &[u64], p: usize) -> Option<Period> {
    let n = keys.len();
    if p == 0 || 2 * p > n {
        return None;
    }
    let (mut best_start, mut best_len) = (0, 0);
    let mut run_start = 0;
    let mut run = 0;
    for i in 0..n - p {
        if keys[i] == keys[i + p] {
            if run == 0 {
                run_start = i;
            }
            run += 1;
            if run > best_len {
                (best_start, best_len) = (run_start, run);
            }
        } else {
            run = 0;
        }
    }
    // `best_len` positions match their successor one period on: the stretch
    // [start, start + best_len + p) repeats.
    let iterations = (best_len + p) / p;
    (iterations >= 2).then_some(Period {
        length: p,
        start: best_start,
        iterations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(s: &str) -> Vec<u64> {
        s.bytes().map(u64::from).collect()
    }

    #[test]
    fn finds_the_loop_between_prologue_and_epilogue() {
        // I a b c a b c a b c F: period 3 from 1, three iterations.
        let p = find(&keys("IabcabcabcF")).expect("a period");
        assert_eq!(
            p,
            Period {
                length: 3,
                start: 1,
                iterations: 3
            }
        );
        assert_eq!(
            (p.scope(0), p.scope(1), p.scope(4), p.scope(9), p.scope(10)),
            (0, 1, 2, 3, 4)
        );
    }

    #[test]
    fn prefers_the_iteration_to_its_halves_and_multiples() {
        // Two identical halves then a barrier B, four times: the halves repeat only
        // twice in a row, the iteration (period 7) covers everything.
        let p = find(&keys("abcabcBabcabcBabcabcBabcabcB")).expect("a period");
        assert_eq!((p.length, p.start, p.iterations), (7, 0, 4));
    }

    #[test]
    fn no_period_in_a_sequence_that_does_not_repeat() {
        assert_eq!(find(&keys("abcdefg")), None);
        assert_eq!(find(&keys("abcabd")), None);
        assert_eq!(find(&[]), None);
    }
}
