//! What every kernel is: the [`Kernel`] trait, what it runs with on a rank, and how it
//! fails (the MPI side of the crate, behind its `mpi` feature).

use mpi::topology::SimpleCommunicator;
use overlap_instrument::mpi::TracedComm;
use overlap_instrument::recorder::{BufferAccess, BufferNameError, Recorder};
use overlap_instrument::schema::Params;

/// What a kernel needs to run on one rank.
pub struct KernelContext<'a> {
    /// The traced world communicator.
    pub comm: TracedComm<'a, SimpleCommunicator>,
    /// The recorder, for compute spans.
    pub recorder: &'a Recorder,
}

/// What the false-overlap kernel reports from one rank.
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
    /// The distributed Toeplitz product differs from the serial product.
    #[error(
        "the Toeplitz product differs from the serial product: relative error \
         {relative_error:.3e} exceeds {limit:e} (largest difference on this rank: \
         {local_difference:.3e} at row {local_row}, vector {vector})"
    )]
    Verification {
        /// `max |y - y_ref| / max |y_ref|` over all ranks.
        relative_error: f64,
        /// The tolerance.
        limit: f64,
        /// This rank's largest `|y - y_ref|`.
        local_difference: f64,
        /// Global row where it is.
        local_row: usize,
        /// Vector where it is.
        vector: usize,
    },
    /// An iteration that multiplied the same data gave a different product.
    #[error(
        "iteration {iteration}: row {row}, vector {vector} differs from iteration 0's, \
         though every iteration multiplies the same data"
    )]
    Inconsistent {
        /// Iteration.
        iteration: usize,
        /// Global row.
        row: usize,
        /// Vector.
        vector: usize,
    },
    /// A micro-benchmark message did not carry what was sent.
    #[error("{what}: received data differs from what was sent (first at byte {offset})")]
    CorruptMessage {
        /// Which measurement.
        what: String,
        /// First differing byte.
        offset: usize,
    },
    /// A halo cell of the 3-D halo swap holds the wrong value.
    #[error(
        "halo3d {edge}^3: halo cell ({x}, {y}, {z}) holds {got}, expected {expected} \
         (the value of global cell {global:?})"
    )]
    WrongHalo {
        /// Local edge length.
        edge: usize,
        /// Cell, in local coordinates with the halo (0 and edge+1 are halo).
        x: usize,
        /// See `x`.
        y: usize,
        /// See `x`.
        z: usize,
        /// Value found.
        got: f64,
        /// Value expected.
        expected: f64,
        /// Global cell it should hold.
        global: [usize; 3],
    },
    /// A halo packet of the GPU pipeline failed its checksum after its copy to the
    /// device.
    #[error(
        "packet {packet} (tag {tag}, from rank {from}), iteration {iteration}: checksum \
         mismatch on the device after its copy (trailer {trailer:#018x}, payload checks to \
         {computed:#018x} with the packet's salt): transposed or corrupt; {carries}"
    )]
    CorruptPacket {
        /// The packet's index.
        packet: u32,
        /// Its MPI tag.
        tag: i32,
        /// The rank it came from (this rank for a device-to-device copy).
        from: i32,
        /// The iteration.
        iteration: u64,
        /// The checksum its trailer holds.
        trailer: u64,
        /// The checksum its payload gives with its salt.
        computed: u64,
        /// What its contents check as.
        carries: String,
    },
    /// The GPU pipeline's device failed.
    #[error("{0}")]
    Gpu(String),
    /// Options that cannot run.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// A compute span's list of buffers cannot be recorded.
    #[error("compute span buffers: {0}")]
    Buffers(#[from] BufferNameError),
}

/// The buffers a kind of compute span reads and writes, by the names the kernel bound.
pub(crate) fn access(reads: &[&str], writes: &[&str]) -> Result<BufferAccess, KernelError> {
    Ok(BufferAccess::new(reads, writes)?)
}

/// A bundled kernel.
pub trait Kernel {
    /// What a run reports.
    type Output;
    /// The name `overlap run` knows it by.
    fn name(&self) -> &'static str;
    /// Its parameters, for the trace header.
    fn params(&self) -> Params;
    /// Runs on one rank (collectively, on every rank).
    fn run(&self, ctx: &KernelContext<'_>) -> Result<Self::Output, KernelError>;
}
