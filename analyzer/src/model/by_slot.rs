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
        BySlot::by(trace.ranks.len(), ranks, |r| trace.slot(r))
    }

    /// [`BySlot::of`] of the items `listed` alone (indices of the trace's items, in
    /// order), each one's rank given by `rank_of`: in time proportional to them.
    pub(crate) fn of_listed(
        trace: &Trace,
        listed: &[u32],
        rank_of: impl Fn(u32) -> u32 + Clone,
    ) -> BySlot {
        let ranks = listed.iter().map(move |&i| rank_of(i));
        let by = BySlot::by(trace.ranks.len(), ranks, |r| trace.slot(r));
        BySlot {
            items: by.items.iter().map(|&k| listed[k as usize]).collect(),
            starts: by.starts,
        }
    }

    /// [`BySlot::of`], with `slots` slots, a rank's given by `slot_of`.
    fn by(
        slots: usize,
        ranks: impl Iterator<Item = u32> + Clone,
        slot_of: impl Fn(u32) -> Option<usize>,
    ) -> BySlot {
        let slot_each = || ranks.clone().map(&slot_of);
        let mut starts = vec![0usize; slots + 1];
        for slot in slot_each().flatten() {
            starts[slot + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut items = vec![0u32; starts[slots]];
        for (i, slot) in slot_each().enumerate() {
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

    /// The example above (ranks 0, 1, 2 at slots 0, 1, 2), with an item of a rank the
    /// trace lacks (7), left out.
    #[test]
    fn items_are_grouped_by_rank_in_their_order() {
        let slot_of = |r: u32| (r < 3).then_some(r as usize);
        let by = BySlot::by(3, [1, 0, 1, 2, 7, 0].into_iter(), slot_of);
        assert_eq!(
            (by.of_slot(0), by.of_slot(1), by.of_slot(2)),
            (&[1, 5][..], &[0, 2][..], &[3][..])
        );
    }
}
