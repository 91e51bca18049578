//! overlap-kernels: the bundled instrumented MPI kernels.
//!
//! Each kernel is one module behind the [`Kernel`] trait, with an options struct that
//! is also the one definition of its command-line options ([`args`]: flags, help,
//! defaults), shared by the `overlap-kernels` binary and `overlap run`. Without the
//! default feature `mpi`, the crate is only those options ([`options`], [`args`]), which
//! is what `overlap run` needs: the CLI builds without MPI. Every kernel checks its own results, so a run is also a correctness
//! test: a wrong payload or product fails the run loudly. Every MPI call a kernel makes
//! goes through the traced communicator of its [`KernelContext`].
//!
//! - [`false_overlap`]: pairs of ranks exchanging imbalanced messages, with the send
//!   Waitall either right after the receive Waitall (`naive`) or deferred until the send
//!   buffer is needed again (`fixed`).
//! - [`toeplitz`]: MIDAPACK's halo exchange for a distributed band Toeplitz product,
//!   blocking, non-blocking (false overlap) or overlapped with the interior product.
//! - [`pingpong`], [`sync`], [`halo3d`]: the micro-benchmark suite (latency and
//!   bandwidth per message size, synchronisation overhead, 3-D halo swaps), whose
//!   figures [`stats`] makes stable and [`results`] prints and saves.
//! - [`gpu_pipeline`]: halo packets staged through pinned host memory between GPUs,
//!   pipelined packet by packet or in bulk, on CUDA or on host threads standing in for
//!   streams (feature `cuda` for the former), every packet checksummed.

pub mod args;
pub mod options;

#[cfg(feature = "mpi")]
pub mod false_overlap;
#[cfg(feature = "mpi")]
pub mod gpu_pipeline;
#[cfg(feature = "mpi")]
pub mod halo3d;
#[cfg(feature = "mpi")]
mod kernel;
#[cfg(feature = "mpi")]
pub mod pingpong;
#[cfg(feature = "mpi")]
pub mod results;
#[cfg(feature = "mpi")]
pub mod stats;
#[cfg(feature = "mpi")]
pub mod sync;
#[cfg(feature = "mpi")]
pub mod toeplitz;

#[cfg(feature = "mpi")]
pub(crate) use kernel::access;
#[cfg(feature = "mpi")]
pub use kernel::{Kernel, KernelContext, KernelError, KernelReport};
