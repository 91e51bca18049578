//! What can go wrong reading or writing an archive.

use std::path::PathBuf;

/// An OTF2 failure, naming the archive and the step.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// This build has no OTF2 library.
    #[error(
        "overlap was built without OTF2 (the OTF2 library and headers, Debian's \
         libotf2-trace-dev, were not found when it was built, or the `otf2` feature was \
         off): install it (scripts/bootstrap.sh) and rebuild to {what}"
    )]
    NotBuilt {
        /// What the user wanted to do.
        what: &'static str,
    },
    /// A library call failed.
    #[error("{}: {call} failed: {name}: {description}", path.display())]
    Call {
        /// The archive.
        path: PathBuf,
        /// The OTF2 function.
        call: &'static str,
        /// The error's name (`OTF2_ERROR_...`).
        name: String,
        /// What OTF2 says of it.
        description: String,
    },
    /// The archive's content is not what the format allows.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The archive.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A callback stopped the reading.
    #[error("{}: location {location}: {reason}", path.display())]
    Stopped {
        /// The archive.
        path: PathBuf,
        /// The location whose events were being read.
        location: u64,
        /// Why.
        reason: String,
    },
}

/// This crate's result.
pub type Result<T> = std::result::Result<T, Error>;
