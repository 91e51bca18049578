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
//!    costs. A move whose gain exceeds the model's uncertainty gains; one within it is
//!    kept (the policies want it) and reported as below the uncertainty; one that costs
//!    more than the uncertainty is left out of the suggested order.
//! 5. An order that deadlocks in the replay (also when standard-mode sends are taken to
//!    wait for their receive, as MPI allows, unless the measured order needs eager
//!    buffering itself) is rejected, with the reason.

mod confirm;
mod describe;
mod moves;
pub mod remedies;
mod render;

use std::collections::BTreeMap;

use serde::Serialize;

pub use confirm::{confirm, Confirmation, OrderMatch};
pub use describe::{Assumption, Namer};
pub use moves::{Move, Pattern};
pub use render::render;

use crate::dag::{self, Options as DagOptions};
use crate::model::Trace;
use crate::ops::{self, Program};
use crate::replay::{self, NetworkFit, Progress, Replay, ReplayConfig, ReplayError};
use crate::sites::SiteTable;

/// The JSON shape's version.
pub const SUGGEST_JSON_VERSION: u32 = 1;

/// How to suggest.
#[derive(Debug)]
pub struct Options {
    /// The policies and conservative mode.
    pub dag: DagOptions,
    /// How rendezvous transfers progress in the replay.
    pub progress: Progress,
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

/// A predicted run time with its range.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Predicted {
    /// With the model's best estimate, ns.
    pub ns: u64,
    /// With its fast end.
    pub low_ns: u64,
    /// With its slow end.
    pub high_ns: u64,
}

/// The measured order replayed against the measured run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SelfCheck {
    /// The measured run time, ns.
    pub measured_ns: u64,
    /// The measured order replayed.
    pub replayed: Predicted,
    /// `(replayed - measured) / measured`; `None` when the run measured no time.
    pub self_error: Option<f64>,
    /// The model's uncertainty on a gain, ns: a move must gain more to be told it gains.
    pub uncertainty_ns: u64,
}

/// One move, for the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MoveReport {
    /// The whole move in words.
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
    /// The predicted gain of this move alone on the run time (undoing it costs this),
    /// ns; negative: it costs; `None`: not evaluated (the order without it could not be
    /// replayed).
    pub gain_ns: Option<i64>,
    /// What the gain says about the move.
    pub verdict: Verdict,
    /// What it takes for granted.
    pub assumptions: Vec<Assumption>,
}

/// What a move's predicted gain says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It gains more than the model's uncertainty.
    Gains,
    /// Its gain or cost is within the model's uncertainty: the policies want it, the
    /// replay cannot tell it pays.
    BelowUncertainty,
    /// It costs more than the uncertainty: left out of the suggested order.
    Costs,
    /// Not evaluated (beyond the [`EVALUATED`] most repeated moves), or the order
    /// without it could not be replayed: kept, its gain unknown.
    Unknown,
}

impl Verdict {
    /// The verdict on a gain (ns; `None`: not evaluated).
    pub fn of(gain_ns: Option<i64>, uncertainty_ns: u64) -> Verdict {
        let u = uncertainty_ns as i64;
        match gain_ns {
            None => Verdict::Unknown,
            Some(g) if g > u => Verdict::Gains,
            Some(g) if g < -u => Verdict::Costs,
            Some(_) => Verdict::BelowUncertainty,
        }
    }
}

/// Ranks that run the same program and get the same moves.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// The ranks.
    pub ranks: Vec<u32>,
    /// Operations per iteration, and iterations matched (none: no repeating unit, the
    /// whole run is one).
    pub period: Option<(usize, usize)>,
    /// The moves, suggested and not.
    pub moves: Vec<MoveReport>,
    /// The iteration shown (its first rank's middle one): measured order.
    pub before: Vec<String>,
    /// And suggested order.
    pub after: Vec<String>,
    /// Per rank: replayed end of the measured and of the suggested order, ns since the
    /// run's start.
    pub ends: Vec<(u32, u64, u64)>,
}

/// The suggestion for a whole run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Suggestion {
    /// [`SUGGEST_JSON_VERSION`].
    pub version: u32,
    /// The trace.
    pub trace: String,
    /// Policies in priority order (after data dependence; program order last).
    pub policies: Vec<String>,
    /// Moves needing assumptions were left out.
    pub conservative: bool,
    /// Progress mode of the replay.
    pub progress: Progress,
    /// The network replayed on.
    pub network: NetworkFit,
    /// The self-check: the measured order replayed.
    pub replay: SelfCheck,
    /// The suggested order replayed; none when it was rejected.
    pub suggested: Option<Predicted>,
    /// Every move of the consensus taken (suggested or not), replayed.
    pub consensus: Option<Predicted>,
    /// Why the order was rejected.
    pub rejected: Option<String>,
    /// The groups of ranks.
    pub groups: Vec<Group>,
    /// What the reader should know (threads left out, what the replay assumed).
    pub notes: Vec<String>,
    /// Other fixes than an order: progress during compute, late partners, imbalance
    /// ([`remedies`]).
    pub remedies: remedies::Remedies,
    /// A re-run's confirmation, when one was given ([`confirm`]).
    pub confirmation: Option<Confirmation>,
    /// The suggested order of each rank (operation indices, by rank slot).
    #[serde(skip)]
    pub orders: Vec<Vec<usize>>,
}

/// What a rank's moves are: per pattern, what moves and where it lands, named by call
/// and symbolized site (raw code addresses differ from rank to rank), and whether that
/// is in a later iteration.
type Signature = Vec<(String, Option<String>, bool)>;

/// The smallest gain worth suggesting, as a share of the run: below it a move is noise
/// whatever the model says.
const NOISE_SHARE: f64 = 0.005;

fn predict(
    program: &Program,
    orders: &[Vec<usize>],
    fit: &NetworkFit,
    progress: Progress,
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

/// Why an order is refused, if it is: it deadlocks, or it deadlocks once sends may wait
/// for their receive while the measured order does not.
fn deadlock(
    program: &Program,
    orders: &[Vec<usize>],
    fit: &NetworkFit,
    progress: Progress,
) -> Option<String> {
    let mut strict = ReplayConfig::on(fit.mid, progress);
    strict.synchronous_sends = true;
    if let Err(e) = replay::replay(program, orders, &ReplayConfig::on(fit.mid, progress)) {
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
    let progress = options.progress;
    let measured_orders = replay::measured_orders(program);
    let (replayed, measured_replay) =
        predict(program, &measured_orders, &fit, progress).map_err(|cause| {
            SuggestError::Replay {
                path: trace.source.clone(),
                cause,
            }
        })?;
    let sites = SiteTable::build(trace);
    let namer = Namer {
        trace,
        program,
        sites: &sites,
    };
    let self_error = (program.measured_ns > 0)
        .then(|| (replayed.ns as f64 - program.measured_ns as f64) / program.measured_ns as f64);
    let uncertainty_ns =
        ((replayed.high_ns - replayed.low_ns) / 2).max((replayed.ns as f64 * NOISE_SHARE) as u64);
    // Consensus per rank, and its move patterns.
    // A rank slot's consensus with `pinned` kept in place.
    let pinned_order = |slot: usize, pinned: &[usize]| {
        let rank = &program.ranks[slot];
        dag::order_rank_pinned(program, trace, rank, &options.dag, pinned)
            .consensus
            .order
    };
    let ranked: Vec<(dag::RankOrder, Vec<Pattern>)> = program
        .ranks
        .iter()
        .map(|r| {
            let o = dag::order_rank(program, trace, r, &options.dag);
            let p = moves::patterns(moves::moves(r, &o.consensus.order), o.period);
            (o, p)
        })
        .collect();
    let consensus_orders: Vec<Vec<usize>> = ranked
        .iter()
        .map(|(o, _)| o.consensus.order.clone())
        .collect();
    let mut notes = Vec::new();
    for r in &program.ranks {
        if !r.other_threads.is_empty() {
            notes.push(format!(
                "rank {}: threads {:?} left out (only the thread making most MPI calls is reordered and replayed)",
                r.rank, r.other_threads
            ));
        }
    }
    let mut rejected = deadlock(program, &consensus_orders, &fit, progress);
    let consensus = if rejected.is_none() {
        predict(program, &consensus_orders, &fit, progress)
            .ok()
            .map(|p| p.0)
    } else {
        None
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
            &ReplayConfig::on(fit.mid, progress),
        ),
        _ => ranked.iter().map(|(_, p)| vec![None; p.len()]).collect(),
    };
    // The suggested order: the consensus with every move that costs undone.
    let mut suggested_orders = measured_orders.clone();
    if rejected.is_none() {
        for (slot, (o, patterns)) in ranked.iter().enumerate() {
            let costly: Vec<usize> = patterns
                .iter()
                .zip(&gains[slot])
                .filter(|(_, g)| Verdict::of(**g, uncertainty_ns) == Verdict::Costs)
                .flat_map(|(p, _)| p.instances.iter().flat_map(|m| m.ops.iter().copied()))
                .collect();
            suggested_orders[slot] = if costly.is_empty() {
                o.consensus.order.clone()
            } else {
                pinned_order(slot, &costly)
            };
        }
        if let Some(reason) = deadlock(program, &suggested_orders, &fit, progress) {
            rejected = Some(reason);
        }
    }
    let suggested = match &rejected {
        None => predict(program, &suggested_orders, &fit, progress).ok(),
        Some(_) => None,
    };
    let suggested_replay = suggested.as_ref().map(|s| &s.1);

    let groups = slots_groups
        .iter()
        .map(|group| {
            render::group(
                &namer,
                group,
                &ranked,
                &gains,
                uncertainty_ns,
                &suggested_orders,
                &measured_replay,
                suggested_replay,
            )
        })
        .collect();
    let assumed = &measured_replay.assumed;
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
    let (late_partners, imbalance) = remedies::waits(trace, &sites);
    let mut suggestion = Suggestion {
        version: SUGGEST_JSON_VERSION,
        trace: trace.source.display().to_string(),
        policies: options
            .dag
            .policies
            .iter()
            .map(|p| p.name().to_string())
            .collect(),
        conservative: options.dag.conservative,
        progress,
        network: fit,
        replay: SelfCheck {
            measured_ns: program.measured_ns,
            replayed,
            self_error,
            uncertainty_ns,
        },
        suggested: suggested.map(|s| s.0),
        consensus,
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
    suggestion.remedies.progress =
        remedies::progress(program, &suggestion, &suggestion.network, trace, &sites);
    Ok(suggestion)
}
