//! What a trace says it lacks of the program's MPI calls, from what the preload counted
//! besides the calls it recorded ([`CallCounts`], the merged trace's per-rank
//! `call_counts`): the MPI functions called that overlap does not record, with their
//! counts, and the requests completed that no recorded call posted. The latter is what
//! makes a rank's figures unknown: the transfers behind those requests are missing, so
//! the waits for them look like waits for nothing. `trace`, `analyze` and the gate all
//! say it, in the words of [`UnseenRequests`]'s display.

use std::collections::BTreeMap;
use std::fmt;

use overlap_format::schema::{negligible_mpi_call, MergedInfo};
use serde::Serialize;

/// A rank whose completion calls completed requests the trace never saw posted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnseenRequests {
    /// The rank.
    pub rank: u32,
    /// Requests completed that no recorded call posted.
    pub completions: u64,
    /// The MPI functions the rank called that overlap does not record (their time not
    /// negligible), with their calls: those that posted them are among these.
    pub unrecorded_calls: BTreeMap<String, u64>,
}

impl fmt::Display for UnseenRequests {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rank {}: {} request(s) completed that no recorded call posted",
            self.rank, self.completions
        )?;
        if self.unrecorded_calls.is_empty() {
            write!(
                f,
                " (posted before tracing began, or by a call MPI makes itself)"
            )?;
        } else {
            write!(
                f,
                " (posted by a call overlap does not record: this rank calls {})",
                with_counts(&self.unrecorded_calls)
            )?;
        }
        write!(
            f,
            ": the trace lacks their transfers, so this rank's waits on them and its \
             overlap figures are unknown"
        )
    }
}

/// The ranks of `info` whose recorder counted completions of requests no recorded call
/// posted, by rank.
pub fn unseen_requests(info: &MergedInfo) -> Vec<UnseenRequests> {
    info.ranks
        .iter()
        .filter_map(|r| {
            let counts = r.call_counts.as_ref()?;
            (counts.unseen_completions > 0).then(|| UnseenRequests {
                rank: r.rank,
                completions: counts.unseen_completions,
                unrecorded_calls: significant(&counts.unrecorded),
            })
        })
        .collect()
}

/// The MPI functions not recorded whose time is not negligible that any rank of
/// `info` called, with their calls summed over the ranks; `None` when no rank's
/// recorder counted (the trace then cannot say which were called).
pub fn unrecorded_calls(info: &MergedInfo) -> Option<BTreeMap<String, u64>> {
    let mut any = false;
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    for counts in info.ranks.iter().filter_map(|r| r.call_counts.as_ref()) {
        any = true;
        for (name, n) in significant(&counts.unrecorded) {
            *total.entry(name).or_insert(0) += n;
        }
    }
    any.then_some(total)
}

/// `calls` without the functions whose time is negligible.
fn significant(calls: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    calls
        .iter()
        .filter(|(name, _)| !negligible_mpi_call(name))
        .map(|(name, n)| (name.clone(), *n))
        .collect()
}

/// `MPI_Pack ×12, MPI_Unpack ×12`.
pub fn with_counts(calls: &BTreeMap<String, u64>) -> String {
    calls
        .iter()
        .map(|(name, n)| format!("{name} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use overlap_format::schema::{CallCounts, RankClock};
    use overlap_format::testing::{merged_info, rank_clock};

    fn info(counts: Vec<Option<CallCounts>>) -> MergedInfo {
        let world_size = counts.len() as u32;
        let ranks = (0..world_size)
            .zip(counts)
            .map(|(rank, call_counts)| RankClock {
                call_counts,
                ..rank_clock(rank)
            })
            .collect();
        merged_info(world_size, ranks)
    }

    fn counts(unseen: u64, calls: &[(&str, u64)]) -> Option<CallCounts> {
        Some(CallCounts {
            unrecorded: calls.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
            unseen_completions: unseen,
        })
    }

    #[test]
    fn unseen_completions_name_their_rank_and_the_calls_that_may_have_posted_them() {
        let i = info(vec![
            counts(0, &[("MPI_Comm_rank", 3)]),
            counts(2, &[("MPI_Comm_rank", 3), ("MPI_Comm_idup", 2)]),
        ]);
        let unseen = unseen_requests(&i);
        assert_eq!(unseen.len(), 1);
        assert_eq!(
            unseen[0].to_string(),
            "rank 1: 2 request(s) completed that no recorded call posted (posted by a call \
             overlap does not record: this rank calls MPI_Comm_idup ×2): the trace lacks \
             their transfers, so this rank's waits on them and its overlap figures are unknown"
        );
    }

    #[test]
    fn unrecorded_calls_are_summed_and_unknown_without_counts() {
        let i = info(vec![
            counts(0, &[("MPI_Pack", 4), ("MPI_Comm_size", 1)]),
            counts(0, &[("MPI_Pack", 6)]),
        ]);
        let total = unrecorded_calls(&i).expect("counted");
        assert_eq!(with_counts(&total), "MPI_Pack ×10");
        assert_eq!(unrecorded_calls(&info(vec![None, None])), None);
        assert_eq!(
            unrecorded_calls(&info(vec![counts(0, &[])])),
            Some(BTreeMap::new())
        );
    }
}
