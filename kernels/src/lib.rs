//! overlap-kernels: the bundled instrumented MPI kernels.
//!
//! Each kernel is one module behind the [`Kernel`] trait, with a plain options struct
//! that the `overlap-kernels` binary (or any caller) fills in; kernels never parse a
//! command line. Every kernel checks its own results, so a run is also a correctness
//! test: a wrong payload fails the run loudly.
//!
//! - [`false_overlap`]: pairs of ranks exchanging imbalanced messages, with the send
//!   Waitall either right after the receive Waitall (`naive`) or deferred until the send
//!   buffer is needed again (`fixed`).

pub mod false_overlap;

use mpi::topology::SimpleCommunicator;
use overlap_instrument::mpi::TracedComm;
use overlap_instrument::recorder::Recorder;
use overlap_instrument::schema::Params;

/// What a kernel needs to run on one rank.
pub struct KernelContext<'a> {
    /// The traced world communicator.
    pub comm: TracedComm<'a, SimpleCommunicator>,
    /// The recorder, for compute spans.
    pub recorder: &'a Recorder,
}

/// What a kernel reports from one rank.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelReport {
    /// Messages this rank received and verified.
    pub messages_verified: u64,
    /// Bytes this rank received.
    pub bytes_received: u64,
}

/// A kernel failure on one rank.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// A received payload did not match what its sender packed.
    #[error(
        "iteration {iteration}, half {half}: payload from rank {peer} is corrupt \
         (expected checksum {expected:#018x}, got {got:#018x}, {bytes} bytes)"
    )]
    CorruptPayload {
        /// Iteration.
        iteration: usize,
        /// Half of the iteration (0 or 1).
        half: usize,
        /// Sender.
        peer: i32,
        /// Checksum expected.
        expected: u64,
        /// Checksum found.
        got: u64,
        /// Bytes received.
        bytes: u64,
    },
    /// Options that cannot run.
    #[error("invalid option: {0}")]
    InvalidOption(String),
}

/// A bundled kernel.
pub trait Kernel {
    /// The name `overlap run` knows it by.
    fn name(&self) -> &'static str;
    /// Its parameters, for the trace header.
    fn params(&self) -> Params;
    /// Runs on one rank (collectively, on every rank).
    fn run(&self, ctx: &KernelContext<'_>) -> Result<KernelReport, KernelError>;
}
