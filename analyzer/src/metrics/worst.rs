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

#[cfg(test)]
mod tests {
    use super::smallest;

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
