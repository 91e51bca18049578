//! Calls naming a peer outside `MPI_COMM_WORLD`. A rank at or above the world size
//! cannot be a peer: such a call comes from a damaged file or a recorder bug, and
//! matching it would pair it with nothing real. Each rank's such calls are counted and
//! the first is named (rank, file, call, time), so the user hears of them; the matcher
//! leaves them out (see [`in_world`]). Negative values are MPI's wildcards and null rank
//! (`MPI_ANY_SOURCE`, `MPI_PROC_NULL`, `MPI_ROOT`), not peers.

use overlap_format::schema::{Op, PeersOutOfRange};

use crate::model::Timeline;

/// True when `peer` may be matched in a world of `world_size` ranks (0: unknown size,
/// every rank may).
pub(crate) fn in_world(peer: u32, world_size: u32) -> bool {
    world_size == 0 || peer < world_size
}

/// The ranks whose calls name peers outside the world; `file` names each rank's source.
pub(crate) fn out_of_range(
    timelines: &[Timeline],
    world_size: u32,
    file: impl Fn(u32) -> String,
) -> Vec<PeersOutOfRange> {
    if world_size == 0 {
        return Vec::new();
    }
    let outside = |v: i32| u32::try_from(v).is_ok_and(|p| !in_world(p, world_size));
    let mut found = Vec::new();
    for t in timelines {
        let mut calls = 0u64;
        let mut first: Option<(usize, Op, i32)> = None;
        for i in 0..t.spans.len() {
            let Some((op, c)) = t.call(i) else { continue };
            let named = c
                .peer()
                .into_iter()
                .chain(t.recv_half(c).and_then(|r| r.peer))
                .chain(c.root())
                .chain(t.completions(c).iter().filter_map(|d| d.source()))
                .chain(t.group(c).iter().copied());
            if let Some(bad) = named.into_iter().find(|v| outside(*v)) {
                calls += 1;
                first.get_or_insert((i, op, bad));
            }
        }
        if let Some((i, op, peer)) = first {
            found.push(PeersOutOfRange {
                rank: t.rank,
                file: file(t.rank),
                calls,
                first_call: op.mpi_name().to_string(),
                first_ns: t.spans[i].start.0,
                first_peer: peer,
            });
        }
    }
    found
}
