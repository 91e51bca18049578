//! What no real run can hold: a world of no ranks, a rank beyond the world.
//!
//! A file can be well-formed and its checksums right, and still say what cannot be (a
//! crafted or damaged file, another tool's output): analysing it gives nonsense such as
//! "3 of 2 ranks traced". The readers ask here before they keep what they read: a run
//! description that cannot be makes the file unusable; an event of a rank that cannot
//! be is skipped and reported like any other unusable event. (Calls naming a peer
//! beyond the world are kept, reported and left unmatched: [`crate::merge`]'s
//! `out_of_range`.)

use overlap_format::schema::MergedInfo;

/// Why a merged file's run description cannot describe a run, if it cannot.
pub(crate) fn merged_info(info: &MergedInfo) -> Option<String> {
    if info.world_size == 0 {
        return Some("its world_size is 0: a run has at least one rank".into());
    }
    info.ranks
        .iter()
        .find(|r| r.rank >= info.world_size)
        .map(|r| {
            format!(
                "it describes rank {}, beyond its world of {} rank(s)",
                r.rank, info.world_size
            )
        })
}

/// Why a record of rank `rank` cannot belong to a run of `world` ranks, if it cannot.
pub(crate) fn pid(rank: u32, world: u32) -> Option<String> {
    (rank >= world).then(|| format!("its rank (pid) {rank} is beyond the world of {world} rank(s)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_beyond_the_world_are_refused() {
        assert_eq!(pid(1, 2), None);
        assert_eq!(
            pid(7, 2).as_deref(),
            Some("its rank (pid) 7 is beyond the world of 2 rank(s)")
        );
    }
}
