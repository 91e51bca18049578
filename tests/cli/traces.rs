//! Reading what a merged trace holds, per rank: calls by kind and compute spans by name.

use std::collections::BTreeMap;

use overlap_analyzer::model::MergedTrace;
use overlap_instrument::schema::{CallEvent, Event, Op};

/// The calls of `rank`, in order.
pub fn calls(trace: &MergedTrace, rank: u32) -> Vec<&CallEvent> {
    trace.events[&rank]
        .iter()
        .filter_map(|e| match e {
            Event::Call(c) => Some(c),
            _ => None,
        })
        .collect()
}

/// How many `op` calls `rank` made.
pub fn count(trace: &MergedTrace, rank: u32, op: Op) -> usize {
    calls(trace, rank).iter().filter(|c| c.op == op).count()
}

/// How many compute spans named `name` `rank` recorded.
pub fn computes(trace: &MergedTrace, rank: u32, name: &str) -> usize {
    trace.events[&rank]
        .iter()
        .filter(|e| matches!(e, Event::Compute(c) if c.name == name))
        .count()
}

/// Calls per op on each rank.
pub fn counts(trace: &MergedTrace) -> BTreeMap<u32, BTreeMap<Op, usize>> {
    trace
        .events
        .keys()
        .map(|&rank| {
            let mut per: BTreeMap<Op, usize> = BTreeMap::new();
            for c in calls(trace, rank) {
                *per.entry(c.op).or_default() += 1;
            }
            (rank, per)
        })
        .collect()
}
