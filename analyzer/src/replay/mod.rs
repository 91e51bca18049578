//! The one replay engine: every rank of an [`ops::Program`] executes a given order of its
//! operations on a modelled network, and the replay says when each operation would have
//! started and ended. Reordering ([`crate::dag`]) predicts its gain with it, `overlap
//! whatif` runs the measured order on another network, and POP's `T_ideal`
//! ([`ideal`]) is its [`ReplayConfig::ideal`] configuration: one engine,
//! so that every prediction the tool makes rests on the same rules.
//!
//! Rules (a discrete-event simulation in global time order, [`engine`]):
//!
//! - a rank executes its order sequentially; before each operation its `lead_in_ns`
//!   elapses outside MPI; a compute takes its `cost_ns` outside MPI; a post or a local
//!   call takes its `cost_ns` inside MPI; a completion, a blocking call or a collective
//!   is entered (inside MPI) and ends at `max(entry + cost_ns, when what it waits for is
//!   done)`; after its last operation the rank's `tail_ns` elapses outside MPI;
//! - a message takes `latency + bytes / bandwidth` ([`Network`]; on a network of size
//!   classes, its class's measured time, latency 0). At or below the eager
//!   limit the send completes at its post and the data reaches the receiver at post +
//!   transfer; the receive completes once posted and the data is there. Above it
//!   (rendezvous) the transfer starts one latency after both sides are posted and needs
//!   `bytes / bandwidth` of progress: [`ProgressMode::Async`] makes it continuously,
//!   [`ProgressMode::InMpi`] only while the sender or the receiver is inside an MPI call;
//!   both requests complete when it is done;
//! - a blocking collective instance ends for every member at `max(member entries) +
//!   cost`; a non-blocking one's requests complete at `max(member posts) + cost`;
//! - a request without a message (its partner missing or cut short) completes at once,
//!   and is counted in [`Assumed`]; so is a collective whose cost was never observed
//!   (taken as 0);
//! - when no rank can proceed the replay stops with [`ReplayError::Deadlock`], naming
//!   each blocked rank and the operation it is blocked in.
//!
//! ```text
//!  rank 0  |c 4|Isend 1|......... Wait(send) ......|      eager (8 B <= limit):
//!  rank 1  |c 2|Irecv 1|Wait(recv) -- data at 4+L+8/B|   Wait(send) ends at its entry,
//!                                                          Wait(recv) at 4 + L + 8/B
//! ```

mod engine;
pub mod ideal;
mod network;
mod retime;
#[cfg(test)]
mod tests;

pub use network::{
    ClassTime, ClassTimes, EagerSource, Network, NetworkError, NetworkFit, NetworkSource,
    UnknownNetwork, DEFAULT_EAGER_LIMIT,
};
pub use retime::retimed;

use overlap_format::schema::Op;
use serde::Serialize;

use crate::ops::{MeasuredProgram, Program};

/// How rendezvous transfers make progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgressMode {
    /// Only while the sender or the receiver is inside an MPI call (MPICH's default:
    /// no progress thread).
    InMpi,
    /// Continuously (a progress thread, or a NIC that offloads the protocol).
    Async,
}

/// What the replay assumes about the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplayConfig {
    /// The network.
    pub network: Network,
    /// How rendezvous transfers progress.
    pub progress: ProgressMode,
    /// MPI calls take their `cost_ns` (false: they take no time beyond their waits).
    pub mpi_costs: bool,
    /// Collectives take their fitted cost after the last member's entry (false: they
    /// only synchronize).
    pub collective_costs: bool,
    /// Standard-mode sends (blocking ones, and the completions of non-blocking ones)
    /// complete only once the matching receive is posted, whatever their size: what MPI
    /// allows an implementation to do. An order that deadlocks with it relies on eager
    /// buffering.
    pub synchronous_sends: bool,
}

impl ReplayConfig {
    /// The ideal network of POP's `T_ideal`: zero latency, infinite bandwidth, every
    /// message buffered, MPI calls cost nothing, collectives only synchronize.
    pub fn ideal() -> ReplayConfig {
        ReplayConfig {
            network: Network::ideal(),
            progress: ProgressMode::Async,
            mpi_costs: false,
            collective_costs: false,
            synchronous_sends: false,
        }
    }

    /// A real network: MPI calls and collectives take their costs.
    pub fn on(network: Network, progress: ProgressMode) -> ReplayConfig {
        ReplayConfig {
            network,
            progress,
            mpi_costs: true,
            collective_costs: true,
            synchronous_sends: false,
        }
    }
}

/// When an operation ran in the replay, ns on the run's timeline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpTime {
    /// Start (after its lead-in).
    pub start_ns: u64,
    /// End.
    pub end_ns: u64,
}

/// One rank's replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankReplay {
    /// The rank.
    pub rank: u32,
    /// Its start (as measured).
    pub start_ns: u64,
    /// The end of its last operation.
    pub end_ns: u64,
    /// Per operation (by index in the rank's program, not by order position).
    pub ops: Vec<OpTime>,
}

/// What the replay had to assume, counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Assumed {
    /// Point-to-point requests and blocking calls without a matched message (partner
    /// missing or cut short): completed at once.
    pub unmatched: u64,
    /// Non-blocking collective requests without an instance: completed at once.
    pub unmatched_collectives: u64,
    /// Collective instances whose cost was never observed: taken as 0.
    pub collectives_without_cost: u64,
    /// One-sided and other requests: completed at their post.
    pub other_requests: u64,
}

/// The outcome of a replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Replay {
    /// Per rank, in the program's rank order.
    pub ranks: Vec<RankReplay>,
    /// The earliest rank start.
    pub start_ns: u64,
    /// The latest rank end.
    pub end_ns: u64,
    /// `end_ns - start_ns`: comparable to [`Program::measured_ns`].
    pub makespan_ns: u64,
    /// What was assumed.
    pub assumed: Assumed,
}

impl Replay {
    /// `(replayed - measured) / measured` for a replay of the measured order; `None`
    /// when the program has no measured time.
    pub fn self_error(&self, program: &Program) -> Option<f64> {
        self_error(self.makespan_ns, program)
    }
}

/// Where a blocked rank waits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Blocked {
    /// The rank.
    pub rank: u32,
    /// The operation (index in the rank's program).
    pub op: usize,
    /// Its MPI call.
    #[serde(serialize_with = "call_name")]
    pub call: Option<Op>,
    /// What it waits for, in words.
    pub waits_for: String,
}

fn call_name<S: serde::Serializer>(call: &Option<Op>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_some(&call.map(Op::mpi_name))
}

impl std::fmt::Display for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rank {} in operation {}", self.rank, self.op)?;
        if let Some(c) = self.call {
            write!(f, " ({})", c.mpi_name())?;
        }
        write!(f, ", waiting for {}", self.waits_for)
    }
}

/// Why a replay cannot finish.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReplayError {
    /// Not one order per rank.
    #[error("{given} orders for {ranks} ranks")]
    OrderCount {
        /// Orders given.
        given: usize,
        /// Ranks of the program.
        ranks: usize,
    },
    /// An order that is not a permutation of its rank's operations, or that completes a
    /// request before posting it.
    #[error("rank {rank}: bad order: {reason}")]
    BadOrder {
        /// The rank.
        rank: u32,
        /// Why.
        reason: String,
    },
    /// No rank can proceed.
    #[error("deadlock: {}", blocked.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Deadlock {
        /// Every rank that had not finished.
        blocked: Vec<Blocked>,
    },
}

/// The measured order of every rank: `0..n`.
pub fn measured_orders(program: &Program) -> Vec<Vec<usize>> {
    program
        .ranks
        .iter()
        .map(|r| (0..r.ops.len()).collect())
        .collect()
}

/// Replays `program` with each rank executing `orders[i]` (a permutation of the
/// operation indices of `program.ranks[i]`) under `config`.
pub fn replay(
    program: &Program,
    orders: &[Vec<usize>],
    config: &ReplayConfig,
) -> Result<Replay, ReplayError> {
    engine::run(engine::Source::Given(program, orders), config, true)
}

/// The makespan of `program` replayed in its measured order under `config`: the
/// `makespan_ns` of [`replay`] with [`measured_orders`], from the program's operations
/// encoded ([`MeasuredProgram`]) and without holding an order or two times per
/// operation, for the replays whose only figure is the run time (T_ideal, the self
/// check).
pub fn measured_makespan(
    program: &MeasuredProgram,
    config: &ReplayConfig,
) -> Result<u64, ReplayError> {
    engine::run(engine::Source::Measured(program), config, false).map(|r| r.makespan_ns)
}

/// The measured order replayed on the network fitted to the trace, with MPICH's default
/// progress: how well the replay reproduces this run (`overlap analyze` reports it, and
/// every prediction from the trace rests on it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SelfCheck {
    /// The measured run time, ns.
    pub measured_ns: u64,
    /// The replayed run time, ns.
    pub replayed_ns: u64,
    /// `(replayed - measured) / measured`; `None` when the run measured no time.
    pub self_error: Option<f64>,
    /// The progress mode replayed.
    pub progress: ProgressMode,
}

/// Why there is no self check: the figure could not be made, and the report says why.
#[derive(Clone, Debug, PartialEq, Serialize, thiserror::Error)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum NoSelfCheck {
    /// No program of operations could be built from the trace.
    #[error("no program of operations could be built: {error}")]
    NoProgram {
        /// Why.
        error: String,
    },
    /// Ranks whose trace was cut short: a replay of what is left would not be the run.
    #[error(
        "rank(s) {} cut short: a replay of what is left would not be the run",
        ranks.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    CutShort {
        /// The ranks.
        ranks: Vec<u32>,
    },
    /// The trace gives no network to replay on.
    #[error("{network}")]
    NetworkUnknown {
        /// Why.
        network: UnknownNetwork,
    },
    /// The measured order could not be replayed on the fitted network.
    #[error("the measured order cannot be replayed: {error}")]
    NotReplayable {
        /// What stopped it (a deadlock names each blocked rank).
        error: String,
    },
}

/// The self-check of `trace` (whose program is `program`), or why it cannot be made.
pub fn self_check(
    trace: &crate::model::Trace,
    program: &MeasuredProgram,
) -> Result<SelfCheck, NoSelfCheck> {
    self_check_fitted(&crate::metrics::TransferModel::fit(trace), program)
}

/// [`self_check`], from the transfers already fitted to the trace whose program
/// `program` is (a program has a rank for each of its trace's, and knows which were cut
/// short).
pub fn self_check_fitted(
    transfers: &crate::metrics::TransferModel,
    program: &MeasuredProgram,
) -> Result<SelfCheck, NoSelfCheck> {
    let cut: Vec<u32> = (program.links.ranks.iter())
        .filter(|r| !r.complete)
        .map(|r| r.rank)
        .collect();
    if !cut.is_empty() {
        return Err(NoSelfCheck::CutShort { ranks: cut });
    }
    let fit = NetworkFit::from_transfers(transfers, None)
        .map_err(|network| NoSelfCheck::NetworkUnknown { network })?;
    let progress = ProgressMode::InMpi;
    let replayed_ns =
        measured_makespan(program, &ReplayConfig::on(fit.mid, progress)).map_err(|e| {
            NoSelfCheck::NotReplayable {
                error: e.to_string(),
            }
        })?;
    Ok(SelfCheck {
        measured_ns: program.links.measured_ns,
        replayed_ns,
        self_error: self_error(replayed_ns, &program.links),
        progress,
    })
}

/// `(replayed - measured) / measured` for a replay of the measured order that took
/// `makespan_ns`; `None` when the program has no measured time.
fn self_error(makespan_ns: u64, program: &Program) -> Option<f64> {
    (program.measured_ns > 0)
        .then(|| (makespan_ns as f64 - program.measured_ns as f64) / program.measured_ns as f64)
}
