//! What a permissive order adds to the proven one: the moves that cross compute whose
//! effect on the moved request's buffer is not known, each with what it needs ("possible
//! if the compute between a.c:49 and a.c:53 does not write the send buffer"), and what
//! they would gain together. They are not suggested: only a watch of the program's own
//! buffer uses (`overlap trace --buffers`) or a declared span can prove them safe.
//!
//! ```text
//!  proven      ... Isend Wait(s) | gap (unknown) | Irecv ...     nothing moves
//!  permissive  ... Isend | gap | Wait(s) Irecv ...                Wait(s) moves past the gap
//!  -> possible if the gap does not write the send buffer
//! ```

use std::collections::BTreeSet;

use serde::Serialize;

use crate::dag::{self, Mode, Policy, RankOrder};
use crate::ops::{Knowledge, Program};
use crate::replay::{self, Network, ProgressMode, ReplayConfig};

use super::describe::{Assumption, Namer};
use super::moves::{self, Pattern};
use super::tell::{assumed, positions, tell};

/// A move of the permissive order that the proven one does not make.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PossibleMove {
    /// The move in words.
    pub text: String,
    /// What moves.
    pub what: String,
    /// Where it was: after this operation.
    pub from_after: Option<String>,
    /// Where it goes: before this operation (none: to the end of the rank's program).
    pub to_before: Option<String>,
    /// It lands in a later iteration than its own.
    pub next_iteration: bool,
    /// In how many iterations.
    pub iterations: usize,
    /// What it needs: each compute it crosses whose effect on the buffer is unknown.
    pub assumptions: Vec<Assumption>,
}

/// The permissive order replayed, against the suggested one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PossibleOrder {
    /// Its predicted run time (the model's best estimate), ns; none when it could not be
    /// replayed.
    pub replayed_ns: Option<u64>,
    /// What it would gain over the suggested order, ns (negative: it costs).
    pub extra_gain_ns: Option<i64>,
    /// Why it could not be replayed.
    pub unknown: Option<String>,
}

/// The permissive orders of every rank, and per rank slot the moves they add.
pub(super) struct Permissive {
    pub orders: Vec<Vec<usize>>,
    pub moves: Vec<Vec<PossibleMove>>,
}

/// What the permissive order adds to `ranked` (each rank slot's proven order and its
/// move patterns), with the same `policies`.
pub(super) fn permissive(
    namer: &Namer,
    policies: &[Policy],
    ranked: &[(RankOrder, Vec<Pattern>)],
) -> Permissive {
    let program = namer.program;
    let mut orders = Vec::with_capacity(program.ranks.len());
    let mut added = Vec::with_capacity(program.ranks.len());
    for (rank, (proven, proven_patterns)) in program.ranks.iter().zip(ranked) {
        let o = dag::order_rank_in(program, namer, rank, (policies, Mode::Permissive), &[]);
        let patterns = moves::patterns(moves::moves(rank, &o.consensus.order), o.period);
        let made: BTreeSet<(&[usize], Option<usize>)> = (proven_patterns.iter())
            .map(|p| (p.shown.ops.as_slice(), p.shown.before))
            .collect();
        let position = positions(rank, &o.consensus.order);
        let mut knowledge = Knowledge::new(program, rank);
        let mine: Vec<PossibleMove> = patterns
            .iter()
            .filter(|p| !made.contains(&(p.shown.ops.as_slice(), p.shown.before)))
            .filter_map(|p| {
                let needs = assumed(namer, &mut knowledge, rank, &p.shown, &position);
                // A move that needs nothing differs only by how the consensus went.
                (!needs.is_empty()).then(|| {
                    let told = tell(namer, rank, &p.shown, proven.period);
                    PossibleMove {
                        text: told.text,
                        what: told.what,
                        from_after: told.from_after,
                        to_before: told.to_before,
                        next_iteration: told.next_iteration,
                        iterations: p.instances.len(),
                        assumptions: needs,
                    }
                })
            })
            .collect();
        added.push(mine);
        orders.push(o.consensus.order);
    }
    Permissive {
        orders,
        moves: added,
    }
}

impl PossibleOrder {
    /// The permissive order not replayed, `why`.
    pub(super) fn not_replayed(why: String) -> PossibleOrder {
        PossibleOrder {
            replayed_ns: None,
            extra_gain_ns: None,
            unknown: Some(why),
        }
    }
}

/// The permissive `orders` replayed on `network` against the suggested order's
/// prediction (`suggested_ns`; none: rejected).
pub(super) fn replayed(
    program: &Program,
    orders: &[Vec<usize>],
    network: Network,
    progress: ProgressMode,
    suggested_ns: Option<u64>,
) -> PossibleOrder {
    match replay::replay(program, orders, &ReplayConfig::on(network, progress)) {
        Ok(r) => PossibleOrder {
            replayed_ns: Some(r.makespan_ns),
            extra_gain_ns: suggested_ns.map(|s| s as i64 - r.makespan_ns as i64),
            unknown: None,
        },
        Err(e) => PossibleOrder::not_replayed(e.to_string()),
    }
}
