//! overlap-instrument: what overlap records and how.
//!
//! - [`schema`]: the trace format (typed events, Chrome Trace Event JSON on the wire).
//! - [`clock`]: the nanosecond clock and cross-rank offset estimation.
//! - [`gpu`]: recording GPU work (copies, kernels, host waits) with device times put on
//!   the host clock; over cudarc with the feature `cuda` (the driver loaded at run time).
//! - [`identity`]: the run id rank 0 chooses and the wall-clock start, for the header.
//! - [`recorder`]: per-thread rings and the streaming, crash-tolerant writer.
//! - [`mpi`] (feature `mpi`, on by default): [`mpi::TracedComm`], a communicator over the
//!   `mpi` crate whose calls are recorded, and [`mpi::TraceSession`], which sets up a
//!   rank's trace file and its clock alignment.
//! - [`layer`]: a `tracing_subscriber::Layer` turning ordinary `tracing` spans into
//!   compute spans.
//! - [`mpi_family`]: which MPI a preload library was built for, and the marker that
//!   says so.
//! - [`network_model`]: the network model file (latency and bandwidth per message size)
//!   that the `pingpong` kernel writes and the analyzer can read.
//!
//! The analyzer depends on this crate with default features off: it needs the schema
//! and the clock model, not MPI.
//!
//! ```
//! use overlap_instrument::recorder::{MemorySink, Recorder, RecorderConfig};
//!
//! let sink = MemorySink::new();
//! let rec = Recorder::new(sink.clone(), RecorderConfig::default()).unwrap();
//! {
//!     let _span = rec.compute("stencil");
//!     // ... work ...
//! }
//! rec.finish().unwrap();
//! assert_eq!(sink.recorded().events.len(), 1);
//! ```

pub mod clock;
pub mod cpus;
pub mod gpu;
pub mod identity;
pub mod layer;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod mpi_family;
pub mod recorder;

/// `eprintln!` that never panics: a line for the user on stderr, dropped when stderr
/// cannot take it (closed, a full disk). The recorder and the preload run inside the
/// user's program, which must never die because a warning could not be printed.
#[macro_export]
macro_rules! stderr_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub use overlap_format::{fxhash, network_model, output, region, schema};

use std::path::PathBuf;

/// Errors of the recorder and the traced communicator. The hot path never fails: errors
/// come only from setting up and finishing a recording.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be created or written.
    #[error("{what} {}: {cause}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause, shown in the message (not chained, so it is not printed twice).
        cause: std::io::Error,
    },
    /// The writer failed while streaming events.
    #[error("writing trace events: {cause}")]
    Write {
        /// The cause, shown in the message (not chained).
        cause: std::io::Error,
    },
    /// The writer thread could not be started.
    #[error("starting the trace writer thread: {cause}")]
    Thread {
        /// The cause, shown in the message (not chained).
        cause: std::io::Error,
    },
    /// The writer thread panicked.
    #[error("the trace writer thread panicked")]
    WriterPanicked,
    /// `finish` was called twice.
    #[error("the recording was already finished")]
    AlreadyFinished,
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
