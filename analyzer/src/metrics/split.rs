//! One cause per nanosecond: when one call carries waits of several kinds over the same
//! time (a Sendrecv, or a Waitall completing sends and receives, waiting for its message
//! and for its partner's receive at once), the call's time is cut at every end of the
//! waits' intervals and each piece is shared equally among the waits that cover it (an
//! odd nanosecond to the first of them). So a call's waits add up to the union of their
//! intervals, never more than the call (docs/metrics.md, section 3.4).
//!
//! ```text
//!  call        |E=12 ............................ 40|
//!  Late Sender  [12 ------------------ 31)            19
//!  Late Rcvr    [12 ---------------- 30)              18
//!  pieces       [12, 30): both, 9 each; [30, 31): Late Sender, 1  -> 10 and 9
//! ```

use overlap_format::schema::Nanos;

/// The amounts of the intervals `[from, to)` of one call after the split, in order.
pub fn split(intervals: &[(Nanos, Nanos)]) -> Vec<Nanos> {
    if intervals.len() < 2 {
        return intervals
            .iter()
            .map(|(a, b)| b.saturating_sub(*a))
            .collect();
    }
    let mut cuts: Vec<Nanos> = intervals.iter().flat_map(|(a, b)| [*a, *b]).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut amounts = vec![Nanos::ZERO; intervals.len()];
    for piece in cuts.windows(2) {
        let (a, b) = (piece[0], piece[1]);
        let covering: Vec<usize> = (0..intervals.len())
            .filter(|&i| intervals[i].0 <= a && intervals[i].1 >= b)
            .collect();
        let Some(&first) = covering.first() else {
            continue;
        };
        let n = covering.len() as u64;
        let share = (b - a).0 / n;
        for &i in &covering {
            amounts[i] = amounts[i] + Nanos(share);
        }
        amounts[first] = amounts[first] + Nanos((b - a).0 - share * n);
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
    }
}
