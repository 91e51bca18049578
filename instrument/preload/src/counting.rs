//! Every call the program makes to an MPI function the preload does not record is
//! counted, so that `overlap trace` names the calls the program made, with their
//! counts, rather than the symbols its libraries import. The entry points are
//! generated at build time from the MPI's own `mpi.h` (`build_counted.rs`): an atomic
//! increment, then a jump to the `PMPI_` function.
//!
//! Also counted here: the requests a completion call completed that no recorded call
//! posted ([`unseen_completion`]), whose transfers the trace therefore lacks.
//!
//! The writer asks for the totals at each drain ([`payload_if_changed`]) and writes a
//! call-counts frame when they moved.

use std::sync::atomic::{AtomicU64, Ordering};

include!(concat!(env!("OUT_DIR"), "/counted.rs"));

/// Completions of requests no recorded call posted.
static UNSEEN_COMPLETIONS: AtomicU64 = AtomicU64::new(0);

/// The sum of every total when a frame was last given: a frame is written only when
/// it moved (every total only grows).
static LAST_GIVEN: AtomicU64 = AtomicU64::new(0);

/// A completion call completed a request no recorded call posted.
#[cold]
pub(crate) fn unseen_completion() {
    UNSEEN_COMPLETIONS.fetch_add(1, Ordering::Relaxed);
}

/// The call-counts frame's payload, when a total moved since the last one given.
pub(crate) fn payload_if_changed() -> Option<Vec<u8>> {
    let unseen = UNSEEN_COMPLETIONS.load(Ordering::Relaxed);
    let counts: Vec<u64> = COUNTS.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let sum = counts
        .iter()
        .fold(unseen, |total, n| total.wrapping_add(*n));
    if sum == LAST_GIVEN.swap(sum, Ordering::Relaxed) {
        return None;
    }
    let called: Vec<(&str, u64)> = COUNTED
        .iter()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| (*name, n))
        .collect();
    Some(overlap_instrument::recorder::call_counts_payload(
        unseen,
        called.into_iter(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_s_functions_are_counted_and_the_recorded_ones_are_not() {
        assert!(COUNTED.contains(&"MPI_Comm_rank"));
        assert!(COUNTED.contains(&"MPI_Pack"));
        assert!(!COUNTED.contains(&"MPI_Isend"), "recorded");
        assert!(
            !COUNTED.contains(&"MPI_Type_free"),
            "wrapped for the type caches"
        );
        assert!(COUNTED.windows(2).all(|w| w[0] < w[1]), "sorted, no twice");
        assert_eq!(COUNTED.len(), COUNTS.len());
    }
}
