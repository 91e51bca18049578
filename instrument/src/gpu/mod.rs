//! Recording GPU work: copies, kernels and the host's waits on them, as
//! [`crate::recorder::GpuWork`] records on per-stream tracks.
//!
//! - [`clock`]: [`DeviceClock`], which puts device timer readings on the host clock
//!   against a reference event recorded at a known host time, re-anchored periodically,
//!   with an error bound carried on every record.
//! - [`pending`]: [`Pending`], operations issued whose times are not known until the
//!   device has finished them; [`DeviceOp`] and [`host_wait`], the records' fields.
//! - `cuda` (feature `cuda`): [`cuda::CudaTracer`], traced streams, pinned buffers,
//!   async copies and events over cudarc, the driver loaded at run time.
//!
//! What is recorded, and how the merge links it to MPI: a D2H copy's `src` is the
//! device buffer and its `dst` the exact host address later given to `MPI_Isend`; an
//! H2D copy's `src` is the exact host address `MPI_Irecv` received into and its `dst`
//! the device buffer; both carry the same packet index on the two sides. Every blocking
//! wait of the host on GPU work is a [`crate::schema::GpuOp::HostWait`] on the host
//! thread: an event synchronize (the event's stream, `issued` = when the event was
//! recorded, its packet), a stream synchronize (that stream, `issued` = the call), a
//! device synchronize ([`crate::schema::ALL_STREAMS`]). Polls are not recorded.

pub mod clock;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod pending;

pub use clock::{Anchor, ClockPolicy, DeviceClock, Placed};
pub use pending::{host_wait, DeviceOp, Pending, Timing};
