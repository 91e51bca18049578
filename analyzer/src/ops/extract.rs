//! Builds a [`Program`] from a [`Trace`] (work in progress: lands before the helpers need it).

use crate::model::Trace;

use super::Program;

/// Why a trace cannot become a program.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// Not written yet.
    #[error("not yet")]
    NotYet,
}

/// The program of every rank of `trace`.
pub fn extract(_trace: &Trace) -> Result<Program, ExtractError> {
    Err(ExtractError::NotYet)
}
