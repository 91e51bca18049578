//! The suggestion's shape: what `overlap suggest --json` prints (version
//! [`super::SUGGEST_JSON_VERSION`]) and the text is made from: the self-check, each
//! group's moves with their verdicts and what was left out, the "possible if" moves, the
//! predictions.

use serde::Serialize;

use super::describe::Assumption;
use super::possible::{PossibleMove, PossibleOrder};
use super::predicted::Predicted;
use super::Confirmation;
use crate::dag::Mode;
use crate::replay::{NetworkFit, ProgressMode, UnknownNetwork};

/// The measured order replayed against the measured run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SuggestSelfCheck {
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
    /// replayed, or no network is known).
    pub gain_ns: Option<i64>,
    /// The most it can gain whatever the network, ns: for a wait deferred, the time its
    /// calls took in the measured run in every rank of the group (a rank that no longer
    /// waits there saves at most that, and its partners no more than it saves). Set
    /// where no network is known; `None` for other moves.
    pub at_most_ns: Option<u64>,
    /// What the gain says about the move.
    pub verdict: Verdict,
    /// What it takes for granted: none in a proven order; in a permissive one (an
    /// order made in [`Mode::Permissive`]), each compute it crosses whose effect on its
    /// buffer is unknown.
    pub assumptions: Vec<Assumption>,
}

/// What a move's predicted gain says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It gains more than the model's uncertainty: suggested.
    Gains,
    /// Alone within the uncertainty, but the moves within it gain more than it together:
    /// suggested with them.
    GainsTogether,
    /// Its gain or cost is within the model's uncertainty: left out (nothing
    /// measurable).
    BelowUncertainty,
    /// It costs more than the uncertainty: left out.
    Costs,
    /// Not evaluated (beyond the [`super::EVALUATED`] most repeated moves), or the order
    /// without it could not be replayed: left out, its gain unknown.
    Unknown,
    /// Not evaluated: no network is known, nothing is predicted. The move is proven and
    /// suggested, its gain unknown.
    NoNetwork,
    /// No network is known, but the waits it defers took too little in the measured run
    /// for any network to make it gain a measurable share ([`MoveReport::at_most_ns`]):
    /// left out.
    TooShort,
}

/// The moves of a group left out of the suggested order, by why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// Their gain or cost is within the model's uncertainty.
    pub within_uncertainty: usize,
    /// They cost more than the uncertainty.
    pub costs: usize,
    /// Their gain was not evaluated, or the order without them could not be replayed.
    pub not_evaluated: usize,
    /// No network is known, and their waits took too little to gain a measurable share
    /// ([`Verdict::TooShort`]).
    pub too_short: usize,
}

impl LeftOut {
    /// How many in all.
    pub fn total(&self) -> usize {
        self.within_uncertainty + self.costs + self.not_evaluated + self.too_short
    }
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

/// The network a suggestion's predictions were made on, or why none was known: in the
/// JSON, the network itself, or `{"unknown": {"reason": ...}}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SuggestNetwork {
    /// The network replayed on (boxed: a network of classes holds a table).
    Known(Box<NetworkFit>),
    /// None: the moves are proven all the same, their gains unknown.
    Unknown {
        /// Why.
        unknown: UnknownNetwork,
    },
}

impl SuggestNetwork {
    /// The network of `fit`, or why there is none.
    pub fn of(fit: Result<NetworkFit, UnknownNetwork>) -> SuggestNetwork {
        match fit {
            Ok(fit) => SuggestNetwork::Known(Box::new(fit)),
            Err(unknown) => SuggestNetwork::Unknown { unknown },
        }
    }
}

/// What is said of every gain where no network is known: why, and what gives one.
pub fn gains_unknown(unknown: &UnknownNetwork) -> String {
    format!("gains unknown: {unknown}; give --model FILE or --latency/--bandwidth")
}

/// Ranks that run the same program and get the same moves.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// The ranks.
    pub ranks: Vec<u32>,
    /// Operations per iteration, and iterations matched (none: no repeating unit, the
    /// whole run is one).
    pub period: Option<(usize, usize)>,
    /// Every move of the consensus, suggested (verdict `gains`) and not.
    pub moves: Vec<MoveReport>,
    /// The moves not suggested, counted by why.
    pub left_out: LeftOut,
    /// The moves a permissive order adds (its first rank's), with what each needs.
    pub possible: Vec<PossibleMove>,
    /// The iteration shown (its first rank's middle one): measured order.
    pub before: Vec<String>,
    /// And suggested order.
    pub after: Vec<String>,
    /// Per rank: replayed end of the measured and of the suggested order, ns since the
    /// run's start (none without a network).
    pub ends: Vec<(u32, u64, u64)>,
}

/// The suggestion for a whole run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Suggestion {
    /// [`super::SUGGEST_JSON_VERSION`].
    pub version: u32,
    /// The trace.
    pub trace: String,
    /// The operations ordered, every rank's together (what suggest's cost grows with).
    pub operations: usize,
    /// Policies in priority order (after data dependence; program order last).
    pub policies: Vec<String>,
    /// The mode of the suggested order.
    pub mode: Mode,
    /// The moves a permissive order would add were not looked for.
    pub conservative: bool,
    /// Progress mode of the replay.
    pub progress: ProgressMode,
    /// The network replayed on, or why none is known.
    pub network: SuggestNetwork,
    /// The self-check: the measured order replayed; none without a network.
    pub replay: Option<SuggestSelfCheck>,
    /// The suggested order replayed; none when it was rejected, or without a network.
    pub suggested: Option<Predicted>,
    /// Every move of the consensus taken (suggested or not), replayed.
    pub consensus: Option<Predicted>,
    /// The permissive order replayed (when it adds moves): what the "possible if" moves
    /// would gain together.
    pub possible: Option<PossibleOrder>,
    /// Why the order was rejected.
    pub rejected: Option<String>,
    /// The groups of ranks.
    pub groups: Vec<Group>,
    /// What the reader should know (threads left out, what the replay assumed).
    pub notes: Vec<String>,
    /// Other fixes than an order: progress during compute, late partners, imbalance
    /// ([`super::remedies`]).
    pub remedies: super::remedies::Remedies,
    /// A re-run's confirmation, when one was given ([`confirm`]).
    pub confirmation: Option<Confirmation>,
    /// The suggested order of each rank (operation indices, by rank slot).
    #[serde(skip)]
    pub orders: Vec<Vec<usize>>,
}
