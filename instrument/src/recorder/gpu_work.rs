//! GPU work as the recorder takes it: the fields of a GPU record, with times already on
//! the host clock (nanoseconds since the recorder's epoch).

use crate::schema::GpuOp;

/// One piece of GPU work to record with [`super::Recorder::record_gpu`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuWork {
    /// What it is.
    pub op: GpuOp,
    /// The device.
    pub device: u32,
    /// The stream it ran on (a host wait: the stream waited on, or
    /// [`crate::schema::ALL_STREAMS`]).
    pub stream: u32,
    /// Host ns it was enqueued (a host wait: when what it waits for was marked).
    pub issued_ns: u64,
    /// Start, ns since the epoch.
    pub start_ns: u64,
    /// End, ns since the epoch.
    pub end_ns: u64,
    /// Bytes copied (0 for kernels and waits).
    pub bytes: u64,
    /// Source address (0: unknown).
    pub src: u64,
    /// Destination address (0: unknown).
    pub dst: u64,
    /// The packet it belongs to.
    pub packet: Option<u32>,
    /// A kernel's name or a label (empty: none).
    pub name: &'static str,
    /// How far the start and end may be from the host-clock truth, ns.
    pub clock_error_ns: u64,
}
