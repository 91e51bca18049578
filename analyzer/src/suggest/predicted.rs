//! A predicted run time with its range ([`Predicted`]): what the suggestion, its self
//! check and the remedies all give.

use serde::Serialize;

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
