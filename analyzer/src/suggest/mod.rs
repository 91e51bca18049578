//! `overlap suggest`: the reordering each rank should make, what it will gain, and what
//! it takes for granted.
//!
//! 1. The trace becomes a program of operations per rank ([`crate::ops`]).
//! 2. Each rank's operations are ordered by the consensus of the policies
//!    ([`crate::dag`]).
//! 3. The moves from the measured order to the consensus are found and grouped by
//!    pattern (the same move in every iteration is one move) ([`moves`]); ranks whose
//!    moves are the same are one group.
//! 4. The replay ([`crate::replay`]) predicts the run time of the measured order (its
//!    error against the measured run is the self-check), of the consensus, and of the
//!    consensus without each move in turn: a move's gain is what undoing it alone
//!    costs. A move whose gain exceeds the model's uncertainty is suggested, and so are
//!    those within it when together they gain more than it; every other (within the
//!    uncertainty, costing, or not evaluated) is undone in the suggested order and only
//!    counted: the order replayed is the one the suggested moves make.
//! 5. The consensus is made in [`Mode::Proven`] (every move crosses only work proven to
//!    leave its buffer alone); the moves a [`Mode::Permissive`] consensus adds are
//!    listed apart, with what each needs ([`possible`]).
//! 6. An order that deadlocks in the replay (also when standard-mode sends are taken to
//!    wait for their receive, as MPI allows, unless the measured order needs eager
//!    buffering itself) is rejected, with the reason.
//! 7. Without a network ([`suggest_without_network`]) the order is still made and
//!    checked (whether it deadlocks does not depend on the times): every proven move is
//!    listed, its gain unknown ([`Verdict::NoNetwork`]), and nothing is predicted; but
//!    a deferred wait that can gain no measurable share whatever the network
//!    ([`at_most`]) is left out ([`Verdict::TooShort`]).

mod at_most;
mod confirm;
mod describe;
mod group;
mod moves;
mod possible;
mod predicted;
pub mod remedies;
mod render;
mod shape;
mod tell;

use std::collections::BTreeMap;

pub use confirm::{confirm, Confirmation, Cores, GainVerdict, OrderMatch, Run, Unconfirmable};
pub use describe::{Assumption, Namer};
pub use moves::{Move, Pattern};
pub use possible::{PossibleMove, PossibleOrder};
pub use predicted::Predicted;
pub use render::render;
pub use shape::{
    gains_unknown, Group, LeftOut, MoveReport, SuggestNetwork, SuggestSelfCheck, Suggestion,
    Verdict,
};

use crate::dag::{self, Mode, Options as DagOptions};
use crate::model::Trace;
use crate::ops::{self, Program};
use crate::replay::{
    self, Network, NetworkFit, ProgressMode, Replay, ReplayConfig, ReplayError, UnknownNetwork,
};
use crate::sites::SiteTable;

/// The JSON shape's version.
pub const SUGGEST_JSON_VERSION: u32 = 3;

/// How to suggest.
#[derive(Debug)]
pub struct Options {
    /// The policies, and the mode of the suggested order ([`Mode::Proven`]: what is
    /// suggested crosses only work proven to leave its buffers alone).
    pub dag: DagOptions,
    /// How rendezvous transfers progress in the replay.
    pub progress: ProgressMode,
    /// Only what is proven: the moves a permissive order would add ("possible if") are
    /// not looked for.
    pub conservative: bool,
}

/// Why no suggestion can be made.
#[derive(Debug, thiserror::Error)]
pub enum SuggestError {
    /// A rank's file was cut short: its program is not whole, and a replay of the rest
    /// would not be the run.
    #[error(
        "{}: rank(s) {ranks} cut short: a replay needs every rank's whole run (re-run, or let the program finish)",
        path.display()
    )]
    CutShort {
        /// The trace.
        path: std::path::PathBuf,
        /// The ranks, listed.
        ranks: String,
    },
    /// The trace has nothing to order.
    #[error(transparent)]
    Extract(#[from] ops::ExtractError),
    /// The measured order itself cannot be replayed.
    #[error("{}: the measured order cannot be replayed: {cause}", path.display())]
    Replay {
        /// The trace.
        path: std::path::PathBuf,
        /// Why.
        cause: ReplayError,
    },
}

/// What a rank's moves are: per pattern, what moves and where it lands, named by call
/// and symbolized site (raw code addresses differ from rank to rank), and whether that
/// is in a later iteration.
type Signature = Vec<(String, Option<String>, bool)>;

/// Why a gain or an order was not replayed where no network is known (the network's
/// reason is said once, with the suggestion's network: [`gains_unknown`]).
const NO_NETWORK: &str = "gains unknown: no network";

/// The smallest gain worth suggesting, as a share of the run: below it a move is noise
/// whatever the model says. Runs of one program on one host vary from run to run by
/// about this much or more, so a smaller gain is one no re-run could confirm.
const NOISE_SHARE: f64 = 0.01;

fn predict(
    program: &Program,
    orders: &[Vec<usize>],
    fit: &NetworkFit,
    progress: ProgressMode,
) -> Result<(Predicted, Replay), ReplayError> {
    let run = |n| replay::replay(program, orders, &ReplayConfig::on(n, progress));
    let mid = run(fit.mid)?;
    let low = run(fit.low)?;
    let high = run(fit.high)?;
    let (a, b) = (
        low.makespan_ns.min(high.makespan_ns),
        low.makespan_ns.max(high.makespan_ns),
    );
    Ok((
        Predicted {
            ns: mid.makespan_ns,
            low_ns: a.min(mid.makespan_ns),
            high_ns: b.max(mid.makespan_ns),
        },
        mid,
    ))
}

/// Why an order is refused, if it is: it deadlocks on `network`, or it deadlocks once
/// sends may wait for their receive while the measured order does not.
fn deadlock(
    program: &Program,
    orders: &[Vec<usize>],
    network: Network,
    progress: ProgressMode,
) -> Option<String> {
    let mut strict = ReplayConfig::on(network, progress);
    strict.synchronous_sends = true;
    if let Err(e) = replay::replay(program, orders, &ReplayConfig::on(network, progress)) {
        return Some(e.to_string());
    }
    let measured = replay::measured_orders(program);
    if replay::replay(program, &measured, &strict).is_ok() {
        if let Err(e) = replay::replay(program, orders, &strict) {
            return Some(format!(
                "it relies on eager buffering (MPI lets a standard-mode send wait for its receive): {e}"
            ));
        }
    }
    None
}

/// The most move patterns whose gain is evaluated per group of ranks (each takes a
/// consensus and a replay of the whole run; fewer on a large run, [`EVALUATION_BUDGET`]);
/// the others' gain is unknown, and said so.
pub const EVALUATED: usize = 48;

/// Operations times evaluations the gains may cost in all (each evaluation orders and
/// replays the whole run): a large run gets fewer evaluations.
const EVALUATION_BUDGET: usize = 1_000_000;

/// How many move patterns per group get their gain evaluated for `program`.
fn evaluated(program: &Program) -> usize {
    let ops: usize = program.ranks.iter().map(|r| r.ops.len()).sum();
    (EVALUATION_BUDGET / ops.max(1)).clamp(1, EVALUATED)
}

/// Per rank and pattern: the run time the consensus loses when the pattern is undone
/// in every rank of its group (its gain), or `None` when it was not evaluated or that
/// order cannot be replayed. `pinned_order` gives a rank slot's consensus with the
/// given operations kept in place.
fn pattern_gains(
    program: &Program,
    ranked: &[(dag::RankOrder, Vec<Pattern>)],
    groups: &[Vec<usize>],
    consensus_orders: &[Vec<usize>],
    base_ns: u64,
    pinned_order: impl Fn(usize, &[usize]) -> Vec<usize>,
    config: &ReplayConfig,
) -> Vec<Vec<Option<i64>>> {
    let mut gains: Vec<Vec<Option<i64>>> =
        ranked.iter().map(|(_, p)| vec![None; p.len()]).collect();
    for group in groups {
        // The patterns repeated most first; beyond EVALUATED, no gain (unknown).
        let mut by_weight: Vec<(usize, usize)> = ranked[group[0]]
            .1
            .iter()
            .enumerate()
            .map(|(k, p)| (p.instances.len(), k))
            .collect();
        by_weight.sort_by_key(|&(n, k)| (std::cmp::Reverse(n), k));
        for &(_, k) in by_weight.iter().take(evaluated(program)) {
            let mut orders = consensus_orders.to_vec();
            for &slot in group {
                let pinned: Vec<usize> = ranked[slot].1.get(k).map_or(Vec::new(), |p| {
                    p.instances
                        .iter()
                        .flat_map(|m| m.ops.iter().copied())
                        .collect()
                });
                orders[slot] = pinned_order(slot, &pinned);
            }
            let without = replay::replay(program, &orders, config).ok();
            let gain = without.map(|w| w.makespan_ns as i64 - base_ns as i64);
            for &slot in group {
                if let Some(g) = gains[slot].get_mut(k) {
                    *g = gain;
                }
            }
        }
    }
    gains
}

/// The program of `trace` to reorder: refused when a rank was cut short (its program
/// is not whole, and a replay of the rest would not be the run).
pub fn program_of(trace: &Trace) -> Result<Program, SuggestError> {
    let cut: Vec<String> = trace
        .ranks
        .iter()
        .filter(|t| !t.complete)
        .map(|t| t.rank.to_string())
        .collect();
    if !cut.is_empty() {
        return Err(SuggestError::CutShort {
            path: trace.source.clone(),
            ranks: cut.join(", "),
        });
    }
    Ok(ops::extract(trace)?)
}

/// The suggestion for `trace` (whose program [`program_of`] gave), replayed on `fit`.
pub fn suggest(
    trace: &Trace,
    program: &Program,
    fit: NetworkFit,
    options: &Options,
) -> Result<Suggestion, SuggestError> {
    suggest_on(trace, program, Ok(fit), options)
}

/// The suggestion for `trace` where no network is known (`unknown` says why): the
/// proven moves, their gains unknown, nothing predicted.
pub fn suggest_without_network(
    trace: &Trace,
    program: &Program,
    unknown: UnknownNetwork,
    options: &Options,
) -> Result<Suggestion, SuggestError> {
    suggest_on(trace, program, Err(unknown), options)
}

/// The suggestion for `trace`, replayed on `network` when it is known.
fn suggest_on(
    trace: &Trace,
    program: &Program,
    network: Result<NetworkFit, UnknownNetwork>,
    options: &Options,
) -> Result<Suggestion, SuggestError> {
    let progress = options.progress;
    let fit = network.as_ref().ok();
    // The network orders are replayed on: the estimate; with none, a network of no time,
    // which decides only whether an order deadlocks (that does not depend on the times).
    let order_network = match &network {
        Ok(fit) => fit.mid,
        Err(unknown) => Network::timeless(unknown.eager_limit()),
    };
    let measured_orders = replay::measured_orders(program);
    let (replayed, measured_replay) = (fit
        .map(|fit| predict(program, &measured_orders, fit, progress)))
    .transpose()
    .map_err(|cause| SuggestError::Replay {
        path: trace.source.clone(),
        cause,
    })?
    .unzip();
    let sites = SiteTable::build(trace);
    let namer = Namer {
        trace,
        program,
        sites: &sites,
    };
    let self_error = replayed
        .filter(|_| program.measured_ns > 0)
        .map(|replayed| {
            (replayed.ns as f64 - program.measured_ns as f64) / program.measured_ns as f64
        });
    // Without a replay there is no gain to weigh against it.
    let uncertainty_ns = replayed.map_or(0, |replayed| {
        ((replayed.high_ns - replayed.low_ns) / 2).max((replayed.ns as f64 * NOISE_SHARE) as u64)
    });
    // Consensus per rank, and its move patterns.
    // A rank slot's consensus with `pinned` kept in place.
    let pinned_order = |slot: usize, pinned: &[usize]| {
        let rank = &program.ranks[slot];
        dag::order_rank_pinned(program, &namer, rank, &options.dag, pinned)
            .consensus
            .order
    };
    let ranked: Vec<(dag::RankOrder, Vec<Pattern>)> = program
        .ranks
        .iter()
        .map(|r| {
            let o = dag::order_rank(program, &namer, r, &options.dag);
            let p = moves::patterns(moves::moves(r, &o.consensus.order), o.period);
            (o, p)
        })
        .collect();
    let consensus_orders: Vec<Vec<usize>> = ranked
        .iter()
        .map(|(o, _)| o.consensus.order.clone())
        .collect();
    let mut notes: Vec<String> =
        crate::metrics::oversubscription::Oversubscription::of(&trace.info)
            .warning()
            .into_iter()
            .collect();
    for r in &program.ranks {
        if !r.other_threads.is_empty() {
            notes.push(format!(
                "rank {}: threads {:?} left out (only the thread making most MPI calls is reordered and replayed)",
                r.rank, r.other_threads
            ));
        }
    }
    let mut rejected = deadlock(program, &consensus_orders, order_network, progress);
    let consensus = match (&rejected, fit) {
        (None, Some(fit)) => predict(program, &consensus_orders, fit, progress)
            .ok()
            .map(|p| p.0),
        _ => None,
    };
    // Groups: ranks with the same moves (what moves where in the iteration).
    let signature = |slot: usize| -> Signature {
        let r = &program.ranks[slot];
        ranked[slot]
            .1
            .iter()
            .map(|p| {
                let m = &p.shown;
                let period = ranked[slot].0.period;
                let later = match (period, m.before) {
                    (Some(per), Some(b)) => per.scope(b) > per.scope(m.ops[0]),
                    _ => false,
                };
                (
                    namer.code_key(r, m.ops[0]),
                    m.before.map(|b| namer.code_key(r, b)),
                    later,
                )
            })
            .collect()
    };
    let mut by_signature: BTreeMap<Signature, Vec<usize>> = BTreeMap::new();
    for slot in 0..program.ranks.len() {
        by_signature.entry(signature(slot)).or_default().push(slot);
    }
    let mut slots_groups: Vec<Vec<usize>> = by_signature.into_values().collect();
    slots_groups.sort_by_key(|g| program.ranks[g[0]].rank);
    // Each pattern's gain: the consensus with it undone in every rank of its group.
    let gains = match (consensus, &rejected) {
        (Some(c), None) => pattern_gains(
            program,
            &ranked,
            &slots_groups,
            &consensus_orders,
            c.ns,
            pinned_order,
            &ReplayConfig::on(order_network, progress),
        ),
        _ => ranked.iter().map(|(_, p)| vec![None; p.len()]).collect(),
    };
    // The suggested order: the consensus with the moves undone that gain nothing
    // measurable; those within the uncertainty are kept when together they gain more
    // than it (each alone hides what the others do).
    let verdict = |g: &Option<i64>| Verdict::of(*g, uncertainty_ns);
    let orders_keeping = |keep: &dyn Fn(Verdict) -> bool| -> Vec<Vec<usize>> {
        (ranked.iter().enumerate())
            .map(|(slot, (o, patterns))| {
                let undone: Vec<usize> = (patterns.iter().zip(&gains[slot]))
                    .filter(|(_, g)| !keep(verdict(g)))
                    .flat_map(|(p, _)| p.instances.iter().flat_map(|m| m.ops.iter().copied()))
                    .collect();
                if undone.is_empty() {
                    o.consensus.order.clone()
                } else {
                    pinned_order(slot, &undone)
                }
            })
            .collect()
    };
    let mut suggested_orders = measured_orders.clone();
    let mut together = false;
    let mut suggested = None;
    // Without a network: what each pattern can gain at most, whatever the network, and
    // the least worth suggesting.
    let mut floor_ns = Some((program.measured_ns as f64 * NOISE_SHARE) as u64);
    let at_most = match fit {
        None => at_most::per_group(&program.ranks, &ranked, &slots_groups),
        Some(_) => Vec::new(),
    };
    if let (None, None) = (&rejected, fit) {
        // No network: every proven move is suggested, its gain unknown, but those whose
        // waits took too little to gain a measurable share.
        suggested_orders = consensus_orders.clone();
        let short = at_most::too_short(&ranked, &at_most, floor_ns.unwrap_or(0));
        for (slot, undone) in short.iter().enumerate().filter(|(_, u)| !u.is_empty()) {
            suggested_orders[slot] = pinned_order(slot, undone);
        }
        if deadlock(program, &suggested_orders, order_network, progress).is_some() {
            // Keeping the short moves' waits in place is refused: the consensus, which
            // was not, is suggested whole.
            (suggested_orders, floor_ns) = (consensus_orders.clone(), None);
        }
    }
    if let (None, Some(fit)) = (&rejected, fit) {
        suggested_orders = orders_keeping(&|v| v == Verdict::Gains);
        rejected = deadlock(program, &suggested_orders, fit.mid, progress);
        suggested = rejected
            .is_none()
            .then(|| predict(program, &suggested_orders, fit, progress).ok())
            .flatten();
        let within = (gains.iter().flatten()).any(|g| verdict(g) == Verdict::BelowUncertainty);
        if within {
            let with = orders_keeping(&|v| matches!(v, Verdict::Gains | Verdict::BelowUncertainty));
            let replayed = deadlock(program, &with, fit.mid, progress)
                .is_none()
                .then(|| predict(program, &with, fit, progress).ok())
                .flatten();
            let alone_ns = suggested.as_ref().map_or(u64::MAX, |s| s.0.ns);
            if let Some(p) = replayed.filter(|p| p.0.ns.saturating_add(uncertainty_ns) < alone_ns) {
                (suggested_orders, suggested, rejected, together) = (with, Some(p), None, true);
            }
        }
    }
    // What a permissive order would add, when the suggested one is proven.
    let looked_for = options.dag.mode == Mode::Proven && !options.conservative;
    let permissive =
        looked_for.then(|| possible::permissive(&namer, &options.dag.policies, &ranked));
    let possible_order = permissive.as_ref().and_then(|p| {
        let any = p.moves.iter().any(|m| !m.is_empty());
        let suggested_ns = suggested.as_ref().map(|s| s.0.ns);
        any.then(|| match fit {
            Some(fit) => possible::replayed(program, &p.orders, fit.mid, progress, suggested_ns),
            None => PossibleOrder::not_replayed(NO_NETWORK.to_string()),
        })
    });
    let parts = group::Parts {
        ranked: &ranked,
        gains: &gains,
        uncertainty_ns,
        suggested_orders: &suggested_orders,
        together,
        possible: permissive.as_ref().map_or(&[], |p| p.moves.as_slice()),
        no_network: fit.is_none() && rejected.is_none(),
        at_most: &at_most,
        floor_ns,
        measured: measured_replay.as_ref(),
        suggested: suggested.as_ref().map(|s| &s.1),
    };
    let groups = (slots_groups.iter())
        .map(|slots| group::group(&namer, slots, &parts))
        .collect();
    let assumed = measured_replay.as_ref().map(|r| &r.assumed);
    if let Some(assumed) = assumed {
        if assumed.unmatched + assumed.unmatched_collectives + assumed.other_requests > 0 {
            notes.push(format!(
                "the replay completed {} request(s) without a matched partner and {} one-sided request(s) at once",
                assumed.unmatched + assumed.unmatched_collectives,
                assumed.other_requests
            ));
        }
        if assumed.collectives_without_cost > 0 {
            notes.push(format!(
                "{} collective instance(s) had no observed cost: replayed as synchronization only",
                assumed.collectives_without_cost
            ));
        }
    }
    let (late_partners, imbalance) = remedies::waits(trace, &sites);
    let mut suggestion = Suggestion {
        version: SUGGEST_JSON_VERSION,
        trace: trace.source.display().to_string(),
        operations: program.ranks.iter().map(|r| r.ops.len()).sum(),
        policies: options
            .dag
            .policies
            .iter()
            .map(|p| p.name().to_string())
            .collect(),
        mode: options.dag.mode,
        conservative: options.conservative,
        progress,
        network: SuggestNetwork::of(network),
        replay: replayed.map(|replayed| SuggestSelfCheck {
            measured_ns: program.measured_ns,
            replayed,
            self_error,
            uncertainty_ns,
        }),
        suggested: suggested.map(|s| s.0),
        consensus,
        possible: possible_order,
        rejected,
        groups,
        notes,
        remedies: remedies::Remedies {
            progress: remedies::ProgressRemedy::NotEvaluated,
            late_partners,
            imbalance,
        },
        confirmation: None,
        orders: suggested_orders,
    };
    suggestion.remedies.progress = match (&suggestion.network, &suggestion.replay) {
        (SuggestNetwork::Known(fit), Some(check)) => {
            remedies::progress(&namer, &suggestion, fit, check.uncertainty_ns)
        }
        _ => remedies::ProgressRemedy::NoNetwork,
    };
    Ok(suggestion)
}
