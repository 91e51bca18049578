//! What a confirmation says ([`Confirmation`]): the suggestion's predicted gain against
//! the runs of the original program and of the changed one. A leaf, so that the
//! suggestion that holds one ([`crate::suggest::Suggestion`]) and the code that makes one
//! from it ([`super::confirm`]) need not import each other.

use serde::Serialize;

use super::cores::Cores;
use super::gain::{GainVerdict, MeasuredGain, PredictedGain, Runs};

/// The predicted gain against the measured one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GainCheck {
    /// Predicted by the replay (none when the suggested order was rejected).
    pub predicted: Option<PredictedGain>,
    /// Measured between the original runs and the changed ones.
    pub measured: MeasuredGain,
    /// `predicted / measured` (none when either is unknown or nothing was measured).
    pub ratio: Option<f64>,
    /// What the runs say.
    pub verdict: GainVerdict,
}

/// A suggestion against runs of the original program and of the changed one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Confirmation {
    /// The original program's runs: the analysed trace first, then the others given.
    pub original: Runs,
    /// The changed program's runs.
    pub changed: Runs,
    /// The suggested order's predicted run time, ns (none when it was rejected).
    pub predicted_ns: Option<u64>,
    /// `(predicted - changed median) / changed median`.
    pub error: Option<f64>,
    /// The measured order replayed against the original runs' median:
    /// `(replayed - original median) / original median`.
    pub self_error: Option<f64>,
    /// The gain, predicted and measured, and the verdict.
    pub gain: GainCheck,
    /// Whether every run had a core per rank.
    pub cores: Cores,
    /// Per rank of the first changed run: its iteration against the suggested one.
    pub orders: Vec<OrderMatch>,
}

/// One rank's suggested iteration against the re-run's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OrderMatch {
    /// The rank.
    pub rank: u32,
    /// The iterations are the same operations in the same order (up to rotation).
    pub same: bool,
    /// Why not, when they are not.
    pub difference: Option<String>,
    /// The suggested iteration, and the re-run's, when they differ.
    pub iterations: Option<(Vec<String>, Vec<String>)>,
}
