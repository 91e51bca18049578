//! Sets of time intervals as sorted, disjoint `[start, end)` lists: how long a rank's
//! copies, kernels, waits and messages ran, and how long two of them ran at once.

/// A sorted list of disjoint, non-empty `[start, end)` intervals, ns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Intervals(Vec<(u64, u64)>);

impl Intervals {
    /// The union of `spans` (empty ones are dropped).
    pub fn union(spans: impl IntoIterator<Item = (u64, u64)>) -> Intervals {
        let mut v: Vec<(u64, u64)> = spans.into_iter().filter(|(s, e)| e > s).collect();
        v.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
        for (s, e) in v {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        Intervals(out)
    }

    /// The intervals, sorted.
    pub fn spans(&self) -> &[(u64, u64)] {
        &self.0
    }

    /// Total length, ns.
    pub fn measure(&self) -> u64 {
        self.0.iter().map(|(s, e)| e - s).sum()
    }

    /// Length of the time both `self` and `other` cover, ns.
    pub fn overlap(&self, other: &Intervals) -> u64 {
        let (a, b) = (&self.0, &other.0);
        let (mut i, mut j, mut total) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            let lo = a[i].0.max(b[j].0);
            let hi = a[i].1.min(b[j].1);
            if hi > lo {
                total += hi - lo;
            }
            if a[i].1 < b[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        total
    }

    /// Length of `[start, end)` that `self` covers, ns.
    pub fn covered(&self, start: u64, end: u64) -> u64 {
        let from = self.0.partition_point(|(_, e)| *e <= start);
        self.0[from..]
            .iter()
            .take_while(|(s, _)| *s < end)
            .map(|(s, e)| e.min(&end).saturating_sub(*s.max(&start)))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ```text
    ///  a: [0----10)   [20--30)
    ///  b:     [5-----------25)
    /// ```
    #[test]
    fn union_measure_and_overlap() {
        let a = Intervals::union([(20, 30), (0, 4), (3, 10), (7, 7)]);
        assert_eq!(a, Intervals(vec![(0, 10), (20, 30)]));
        assert_eq!(a.measure(), 20);
        let b = Intervals::union([(5, 25)]);
        assert_eq!(a.overlap(&b), 5 + 5);
        assert_eq!(b.overlap(&a), 10);
        assert_eq!(a.covered(8, 22), 2 + 2);
        assert_eq!(a.covered(10, 20), 0);
        assert_eq!(Intervals::default().overlap(&a), 0);
    }
}
