//! One cause per nanosecond of a rank: when waits overlap in time, their time is cut at
//! every end of their intervals and each piece is shared equally among the waits that
//! cover it (an odd nanosecond to the first of them). So a rank's waits add up to the
//! union of their intervals: never more than its time in MPI, never more than its wall
//! time (docs/metrics.md, section 3.4).
//!
//! Two cases meet here. One call may carry waits of several kinds over the same time (a
//! Sendrecv, or a Waitall completing sends and receives, waiting for its message and for
//! its partner's receive at once):
//!
//! ```text
//!  call        |E=12 ............................ 40|
//!  Late Sender  [12 ------------------ 31)            19
//!  Late Rcvr    [12 ---------------- 30)              18
//!  pieces       [12, 30): both, 9 each; [30, 31): Late Sender, 1  -> 10 and 9
//! ```
//!
//! And several threads of one rank (`MPI_THREAD_MULTIPLE`) may wait at once, each in a
//! call of its own: the rank waited once over that time, not once per thread.
//!
//! ```text
//!  thread 1  |Wait [0 ---------- 10)|        Late Sender 10
//!  thread 2       |Wait [4 -------------- 16)|  Late Sender 12
//!  pieces    [0, 4): 4 to the first; [4, 10): 3 each; [10, 16): 6 to the second
//!            -> 7 and 9: 16 of the rank's time, not 22
//! ```

use overlap_format::schema::Nanos;

/// The amounts of the intervals `[from, to)` (one rank's waits, in any order) after the
/// split, in order. A sweep over the intervals' ends: `O(n log n)` plus, per piece, the
/// waits covering it (a few: a call's kinds, a rank's threads).
pub fn split(intervals: &[(Nanos, Nanos)]) -> Vec<Nanos> {
    let mut amounts: Vec<Nanos> = vec![Nanos::ZERO; intervals.len()];
    // (time, opens, interval): the ends of every non-empty interval, by time.
    let mut ends: Vec<(Nanos, bool, usize)> = intervals
        .iter()
        .enumerate()
        .filter(|(_, (from, to))| to > from)
        .flat_map(|(i, (from, to))| [(*from, true, i), (*to, false, i)])
        .collect();
    ends.sort_unstable();
    // The intervals covering the current piece, by index (the first takes the odd ns).
    let mut covering: Vec<usize> = Vec::new();
    let mut piece_start = Nanos::ZERO;
    for (at, opens, i) in ends {
        if at > piece_start && !covering.is_empty() {
            let length = (at - piece_start).0;
            let n = covering.len() as u64;
            let share = length / n;
            for &c in &covering {
                amounts[c] = amounts[c] + Nanos(share);
            }
            amounts[covering[0]] = amounts[covering[0]] + Nanos(length - share * n);
        }
        piece_start = at;
        match covering.binary_search(&i) {
            Err(k) if opens => covering.insert(k, i),
            Ok(k) if !opens => {
                covering.remove(k);
            }
            _ => {}
        }
    }
    amounts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(a: u64, b: u64) -> (Nanos, Nanos) {
        (Nanos(a), Nanos(b))
    }

    #[test]
    fn shared_time_is_split_and_disjoint_time_kept() {
        assert_eq!(split(&[n(12, 31), n(12, 30)]), vec![Nanos(10), Nanos(9)]);
        // [0, 3): three share it, 1 each; [3, 5): two, 1 each; [5, 9): the first alone.
        let got = split(&[n(0, 9), n(0, 5), n(0, 3)]);
        assert_eq!(got, vec![Nanos(1 + 1 + 4), Nanos(1 + 1), Nanos(1)]);
        assert_eq!(got.iter().map(|x| x.0).sum::<u64>(), 9);
        // Disjoint: Early Wait and Late Complete.
        assert_eq!(split(&[n(36, 37), n(37, 40)]), vec![Nanos(1), Nanos(3)]);
        assert_eq!(split(&[n(4, 10)]), vec![Nanos(6)]);
        assert_eq!(split(&[n(4, 4), n(2, 6)]), vec![Nanos(0), Nanos(4)]);
    }

    #[test]
    fn waits_of_two_threads_at_once_share_the_rank_time() {
        // The timeline of the module's second drawing.
        let got = split(&[n(0, 10), n(4, 16)]);
        assert_eq!(got, vec![Nanos(4 + 3), Nanos(3 + 6)]);
        assert_eq!(
            got.iter().map(|x| x.0).sum::<u64>(),
            16,
            "the union, not 10 + 12"
        );
        // Given in another order: the same shares, the odd ns to the first given.
        assert_eq!(
            split(&[n(4, 16), n(0, 10)]),
            vec![Nanos(3 + 6), Nanos(4 + 3)]
        );
        assert_eq!(split(&[n(0, 3), n(0, 3)]), vec![Nanos(2), Nanos(1)]);
    }
}
