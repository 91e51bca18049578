//! The POP efficiencies of the run (BSC / POP Centre of Excellence):
//!
//! ```text
//!  PE    = sum(Useful_i) / (P * T)        parallel efficiency  = LB * CommE
//!  LB    = mean(Useful) / max(Useful)     load balance
//!  CommE = max(Useful) / T                communication efficiency = SerE * TE
//!  SerE  = max(Useful) / T_ideal          serialization efficiency
//!  TE    = T_ideal / T                    transfer efficiency
//! ```
//!
//! `Useful_i` is rank i's time outside MPI, `T` the run's wall time, `P` the ranks
//! traced. `T_ideal` is the runtime on an ideal network (zero latency, infinite
//! bandwidth), kept within `[max(Useful), T]`. Two estimates are computed:
//!
//! - by subtraction: a rank's MPI time shrinks to its detected wait states, while
//!   transfers and call overheads vanish: `max_i(Useful_i + WaitStates_i)`;
//! - by replay ([`crate::replay::ideal`]): the trace replayed with MPI calls taking no time
//!   beyond their dependences.
//!
//! The replay is used when it completes: subtraction keeps waits that transfers pass on
//! from rank to rank (a sender stuck in a transfer sends its next message late, and its
//! partner's Late Sender wait is counted as serialization), which the replay removes.

use serde::Serialize;

use super::budget::{RankBudget, RunBudget};
use std::collections::BTreeMap;

/// How `T_ideal` was estimated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TIdealMethod {
    /// The ideal-network replay ([`crate::replay::ideal`]).
    Replay,
    /// `max_i(Useful_i + WaitStates_i)`, when the replay could not finish.
    Subtraction,
}

/// The efficiencies, as fractions (0..1). Each is `None` (null in JSON) when its
/// denominator is 0: a run with no wall time, or no useful time on any rank, has no
/// efficiency to state, which is not the same as an efficiency of 0.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pop {
    /// PE.
    pub parallel_efficiency: Option<f64>,
    /// LB.
    pub load_balance: Option<f64>,
    /// CommE.
    pub communication_efficiency: Option<f64>,
    /// SerE.
    pub serialization_efficiency: Option<f64>,
    /// TE.
    pub transfer_efficiency: Option<f64>,
    /// The estimated ideal-network runtime, ns.
    pub t_ideal_ns: u64,
    /// How `t_ideal_ns` was obtained.
    pub t_ideal_method: TIdealMethod,
    /// The replay's estimate, ns (none when the replay could not finish).
    pub t_ideal_replay_ns: Option<u64>,
    /// The subtraction estimate, ns.
    pub t_ideal_subtraction_ns: u64,
    /// The runtime T, ns.
    pub runtime_ns: u64,
}

/// The efficiencies of a run.
/// `waited`: determinate wait-state time charged to each rank; `replayed`: the
/// ideal-network replay's runtime, if it finished.
pub fn efficiencies(
    ranks: &[RankBudget],
    run: &RunBudget,
    waited: &BTreeMap<u32, u64>,
    replayed: Option<u64>,
) -> Pop {
    let t = run.wall_ns as f64;
    let p = ranks.len() as f64;
    let useful: Vec<f64> = ranks.iter().map(|r| r.useful_ns as f64).collect();
    let max_u = useful.iter().copied().fold(0.0, f64::max);
    let sum_u: f64 = useful.iter().sum();
    let mean_u = if p > 0.0 { sum_u / p } else { 0.0 };
    let mut ideal = 0u64;
    for r in ranks {
        let w = waited.get(&r.rank).copied().unwrap_or(0);
        ideal = ideal.max(r.useful_ns + w);
    }
    // Wait states never exceed a rank's time in MPI, so this stays within the run's
    // time; with several threads in MPI at once it could not, hence the bound.
    let subtraction = ideal.min(run.wall_ns);
    let (ideal, method) = match replayed {
        Some(r) => (r, TIdealMethod::Replay),
        None => (subtraction, TIdealMethod::Subtraction),
    };
    let ideal = (ideal as f64).clamp(max_u, t.max(max_u));
    let ratio = |a: f64, b: f64| (b > 0.0).then(|| (a / b).clamp(0.0, 1.0));
    Pop {
        parallel_efficiency: ratio(sum_u, p * t),
        load_balance: ratio(mean_u, max_u),
        communication_efficiency: ratio(max_u, t),
        serialization_efficiency: ratio(max_u, ideal),
        transfer_efficiency: ratio(ideal, t),
        t_ideal_ns: ideal.round() as u64,
        t_ideal_method: method,
        t_ideal_replay_ns: replayed,
        t_ideal_subtraction_ns: subtraction,
        runtime_ns: run.wall_ns,
    }
}
