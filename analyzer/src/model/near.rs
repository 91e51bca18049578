//! Searches of a sorted column that start from where the last one fell: the analysis
//! asks its columns (a rank's compute, a rank's message sides) in nearly the order they
//! are sorted in, so each answer is a few steps from the last, not a binary search of
//! the whole column away.

/// `v.partition_point(pred)` (`pred` true on a prefix of `v`), searched from `from`
/// outward: steps of 1, 2, 4... towards the point, then a binary search of the last
/// step. O(log d) for a point d away from `from`.
pub(crate) fn partition_point_near<T>(v: &[T], from: usize, pred: impl Fn(&T) -> bool) -> usize {
    let from = from.min(v.len());
    if from < v.len() && pred(&v[from]) {
        // After `from`: everything before `lo` is known to hold.
        let (mut lo, mut step) = (from + 1, 1);
        loop {
            let probe = from + step;
            if probe >= v.len() || !pred(&v[probe]) {
                let end = probe.min(v.len());
                return lo + v[lo..end].partition_point(&pred);
            }
            lo = probe + 1;
            step *= 2;
        }
    }
    // At or before `from`: nothing from `hi` on holds.
    let (mut hi, mut step) = (from, 1);
    loop {
        if step > from {
            return v[..hi].partition_point(&pred);
        }
        let probe = from - step;
        if pred(&v[probe]) {
            return probe + 1 + v[probe + 1..hi].partition_point(&pred);
        }
        hi = probe;
        step *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::partition_point_near;

    proptest::proptest! {
        /// The search from anywhere finds the point a binary search finds.
        #[test]
        fn the_search_from_anywhere_finds_the_partition_point(
            mut v in proptest::collection::vec(0u64..100, 0..70),
            x in 0u64..110,
            from in 0usize..80,
        ) {
            v.sort_unstable();
            let near = partition_point_near(&v, from, |e| *e < x);
            proptest::prop_assert_eq!(near, v.partition_point(|e| *e < x));
        }
    }
}
