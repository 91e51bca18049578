//! Items of a trace (messages, wait instances...) grouped by the rank they belong to,
//! for the figures made a rank at a time: each rank's item indices, in the items' order,
//! 4 bytes an item (a counting sort), instead of a pass over every item for each rank.
//!
//! ```text
//!  items' ranks   [1, 0, 1, 2, 0]      slots of ranks 0, 1, 2
//!  of(slot 0) = [1, 4]   of(slot 1) = [0, 2]   of(slot 2) = [3]
//! ```

use super::compact::index_u32;
use super::Trace;

/// Item indices grouped by the slot of their rank in a trace ([`Trace::slot`]).
pub(crate) struct BySlot {
    /// Where each slot's indices start in `items` (one more entry than slots).
    starts: Vec<usize>,
    items: Vec<u32>,
}

impl BySlot {
    /// The items whose ranks `ranks` gives, in order, grouped by their rank's slot in
    /// `trace`; items of a rank not in the trace are left out.
    pub(crate) fn of(trace: &Trace, ranks: impl Iterator<Item = u32> + Clone) -> BySlot {
        let slots = || ranks.clone().map(|r| trace.slot(r));
        let mut starts = vec![0usize; trace.ranks.len() + 1];
        for slot in slots().flatten() {
            starts[slot + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut items = vec![0u32; starts[trace.ranks.len()]];
        for (i, slot) in slots().enumerate() {
            if let Some(slot) = slot {
                items[next[slot]] = index_u32(i);
                next[slot] += 1;
            }
        }
        BySlot { starts, items }
    }

    /// The indices of the items of slot `slot`, in the items' order.
    pub(crate) fn of_slot(&self, slot: usize) -> &[u32] {
        &self.items[self.starts[slot]..self.starts[slot + 1]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hang::tests::rank;

    /// The example above, with an item of a rank the trace lacks (7), left out.
    #[test]
    fn items_are_grouped_by_rank_in_their_order() {
        let ranks = (0..3).map(|r| rank(r, 3, Vec::new(), None)).collect();
        let trace = crate::merge::merge(ranks).to_trace(std::path::Path::new("t.json"));
        let by = BySlot::of(&trace, [1, 0, 1, 2, 7, 0].into_iter());
        assert_eq!(
            (by.of_slot(0), by.of_slot(1), by.of_slot(2)),
            (&[1, 5][..], &[0, 2][..], &[3][..])
        );
    }
}
