//! A sum of `f64`s that does not depend on their order or on how they are grouped: the
//! figures folded a part at a time, and the folds of several parts (or of several
//! workers) merged, give the mean of one pass over them all to the bit. A running `f64`
//! sum rounds at each step, so that two halves summed apart and then added differ from
//! the whole in the last bits; this one keeps the sum exactly (Shewchuk's non-overlapping
//! partials, as Python's `math.fsum`) and rounds once, correctly, when read.
//!
//! ```text
//!  values     1e16  1.0  -1e16  1.0
//!  in order   ((1e16 + 1) - 1e16) + 1 = 1      exact, rounded once: 2
//! ```

/// The exact sum of the finite values added so far.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ExactSum {
    /// Non-overlapping partials, smallest magnitude first: their exact sum is the sum.
    partials: Vec<f64>,
}

impl ExactSum {
    /// Adds `x` (finite: the figures summed are ratios and times).
    pub fn add(&mut self, x: f64) {
        debug_assert!(x.is_finite(), "an infinite or NaN figure summed");
        let mut x = x;
        let mut kept = 0;
        for k in 0..self.partials.len() {
            let mut y = self.partials[k];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                self.partials[kept] = lo;
                kept += 1;
            }
            x = hi;
        }
        self.partials.truncate(kept);
        self.partials.push(x);
    }

    /// Adds every value `other` holds: the sum of the two lots together.
    pub fn merge(&mut self, other: ExactSum) {
        for x in other.partials {
            self.add(x);
        }
    }

    /// The sum, correctly rounded.
    pub fn value(&self) -> f64 {
        let p = &self.partials;
        let Some(mut n) = p.len().checked_sub(1) else {
            return 0.0;
        };
        let mut hi = p[n];
        let mut lo = 0.0;
        while n > 0 {
            let x = hi;
            n -= 1;
            let y = p[n];
            hi = x + y;
            lo = y - (hi - x);
            if lo != 0.0 {
                break;
            }
        }
        // Round half to even across the partials left: when what is left below `lo`
        // has its sign, `hi + 2 lo` decides.
        if n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            if y == x - hi {
                hi = x;
            }
        }
        hi
    }
}

impl PartialEq for ExactSum {
    /// Equal sums, however their values were grouped.
    fn eq(&self, other: &ExactSum) -> bool {
        self.value() == other.value()
    }
}

#[cfg(test)]
mod tests {
    use super::ExactSum;

    fn sum(values: &[f64]) -> ExactSum {
        let mut s = ExactSum::default();
        values.iter().for_each(|&x| s.add(x));
        s
    }

    /// Values a running sum loses: the exact sum, rounded once.
    #[test]
    fn the_sum_is_exact_then_rounded_once() {
        assert_eq!(sum(&[]).value(), 0.0);
        assert_eq!(sum(&[1e16, 1.0, -1e16, 1.0]).value(), 2.0);
        assert_eq!(sum(&[0.1; 10]).value(), 1.0);
        // Python's math.fsum of the same values.
        assert_eq!(sum(&[1.0, 1e100, 1.0, -1e100]).value(), 2.0);
        assert_eq!(
            sum(&[2.0f64.powi(53), 1.0, 2.0f64.powi(-60)]).value(),
            9007199254740994.0
        );
    }

    /// Sums of whole nanoseconds below 2⁵³, which a running sum keeps exactly, are the
    /// running sum's.
    #[test]
    fn whole_numbers_sum_as_a_running_sum_does() {
        let values: Vec<f64> = (0..10_000u64)
            .map(|i| (i * 7_919 % 1_000_003) as f64)
            .collect();
        assert_eq!(sum(&values).value(), values.iter().sum::<f64>());
    }

    /// Cut anywhere, each piece summed apart and the pieces merged in any order: the same
    /// sum, to the bit.
    #[test]
    fn the_sum_does_not_depend_on_grouping_or_order() {
        let values: Vec<f64> = (1..2_000u32)
            .map(|i| f64::from(i).sqrt().fract() / f64::from(i % 17 + 1))
            .collect();
        let whole = sum(&values).value();
        let mut reversed = values.clone();
        reversed.reverse();
        assert_eq!(sum(&reversed).value(), whole);
        for size in [1, 3, 64, 1_000] {
            let mut merged = ExactSum::default();
            for chunk in values.chunks(size).rev() {
                merged.merge(sum(chunk));
            }
            assert_eq!(merged.value(), whole, "pieces of {size}");
        }
    }
}
