//! The worst few of many (the worst requests, those whose progress was not achieved),
//! without sorting them all: [`smallest`] keeps `O(k)` of them at a time.

/// The `k` first of `items` in the order of `cmp`, first first, as a stable sort of
/// them all would give them (ties keep the items' order), but by bounded selection:
/// the memory is `O(k)`, not one entry per item.
pub(crate) fn smallest<'a, T>(
    items: impl Iterator<Item = &'a T>,
    k: usize,
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> Vec<&'a T> {
    if k == 0 {
        return Vec::new();
    }
    let order = |a: &(usize, &T), b: &(usize, &T)| cmp(a.1, b.1).then(a.0.cmp(&b.0));
    let mut kept: Vec<(usize, &T)> = Vec::new();
    for x in items.enumerate() {
        kept.push(x);
        if kept.len() >= k.max(32).saturating_mul(2) {
            kept.select_nth_unstable_by(k - 1, order);
            kept.truncate(k);
        }
    }
    kept.sort_by(order);
    kept.truncate(k);
    kept.into_iter().map(|(_, x)| x).collect()
}

/// The `k` first, in the order of `cmp`, of `kept` (the first so far, in that order)
/// followed by `new`, as [`smallest`] of the two in a row would give them; each of
/// `new` that may be among them is made a kept one by `keep` (a few per call, not one
/// per item: the new items' own `k` first).
pub(crate) fn smallest_kept<'a, T: 'a, K>(
    kept: Vec<K>,
    new: impl Iterator<Item = &'a T>,
    k: usize,
    of: impl Fn(&K) -> &T,
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
    keep: impl FnMut(&T) -> K,
) -> Vec<K> {
    let new: Vec<K> = smallest(new, k, &cmp).into_iter().map(keep).collect();
    merged(kept, new, k, |a, b| cmp(of(a), of(b)))
}

/// The `k` first, in the order of `cmp`, of `kept` followed by `later` (each the first
/// of its items, in that order), as [`smallest`] of the two's items in a row would give
/// them: of equals, `kept`'s first. How the first of two folds are merged.
pub(crate) fn merged<K>(
    kept: Vec<K>,
    later: Vec<K>,
    k: usize,
    cmp: impl Fn(&K, &K) -> std::cmp::Ordering,
) -> Vec<K> {
    let mut all = kept;
    all.extend(later);
    // A stable sort: the kept stay first among equals.
    all.sort_by(cmp);
    all.truncate(k);
    all
}

#[cfg(test)]
mod tests {
    use super::{smallest, smallest_kept};

    /// Items taken a part at a time (parts of 1, 7 and 300), the first kept as they go,
    /// end as [`smallest`] of them all: ties kept in the items' order.
    #[test]
    fn the_first_kept_part_by_part_are_the_first_of_all() {
        let items: Vec<(u32, usize)> = (0..300).map(|i| ((i * 7 % 5) as u32, i)).collect();
        let by_key = |a: &(u32, usize), b: &(u32, usize)| a.0.cmp(&b.0);
        for k in [0, 1, 5, 64, 300] {
            let whole: Vec<(u32, usize)> = smallest(items.iter(), k, by_key)
                .into_iter()
                .copied()
                .collect();
            for part in [1, 7, 300] {
                let mut kept: Vec<(u32, usize)> = Vec::new();
                for chunk in items.chunks(part) {
                    kept = smallest_kept(kept, chunk.iter(), k, |x| x, by_key, |x| *x);
                }
                assert_eq!(kept, whole, "k = {k}, parts of {part}");
            }
        }
    }

    /// `smallest` gives what a stable sort then `take(k)` gives: heavy ties (keys 0..4
    /// over 300 items, so that the selection runs several times) kept in the items'
    /// order, for k of 0, 1, 5, 64, all and more than all.
    #[test]
    fn bounded_selection_is_a_stable_sort_cut_short() {
        let items: Vec<(u32, usize)> = (0..300).map(|i| ((i * 7 % 5) as u32, i)).collect();
        let by_key = |a: &(u32, usize), b: &(u32, usize)| a.0.cmp(&b.0);
        let mut sorted = items.clone();
        sorted.sort_by(by_key);
        for k in [0, 1, 5, 64, 300, 310, usize::MAX] {
            let got: Vec<(u32, usize)> = smallest(items.iter(), k, by_key)
                .into_iter()
                .copied()
                .collect();
            let want: Vec<(u32, usize)> = sorted.iter().take(k).copied().collect();
            assert_eq!(got, want, "k = {k}");
        }
    }
}
