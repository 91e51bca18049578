//! GPU work in a trace: copies between host and device, kernels, and the host's blocking
//! waits on GPU work, each with the device stream it ran on.
//!
//! A device operation's times are the device's, put on the rank's host clock (see
//! `overlap_instrument::gpu`): `start` and `end` are known within `clock_error`. The
//! host time it was enqueued (`issued`) is the host's own reading. A host wait is the
//! host thread blocked until GPU work finished; its `issued` is when the work it waits
//! for was marked (the event recorded, or the synchronize called), so the operations it
//! covers are those of its stream issued up to then.
//!
//! In the merged trace device operations go on one Perfetto thread per stream
//! ([`stream_tid`], named by [`stream_track_name`]) inside the rank's process; host waits
//! stay on the host thread that waited.

use serde::{Deserialize, Serialize};

use super::Nanos;

/// What a GPU record is.
///
/// Wire enum: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum GpuOp {
    /// A copy from device memory into host memory.
    #[serde(rename = "D2H")]
    CopyD2H,
    /// A copy from host memory into device memory.
    #[serde(rename = "H2D")]
    CopyH2D,
    /// A copy between two device buffers (on one device or between peers).
    #[serde(rename = "D2D")]
    CopyD2D,
    /// A kernel.
    #[serde(rename = "kernel")]
    Kernel,
    /// The host blocked until GPU work finished (an event or a stream synchronized).
    #[serde(rename = "host_wait")]
    HostWait,
    /// A stream held until an event of another stream completed (the device's own
    /// wait, on the waiting stream's track): `packet` is the awaited work's.
    #[serde(rename = "stream_wait")]
    StreamWait,
}

impl GpuOp {
    /// Every kind, in code order.
    pub const ALL: [GpuOp; 6] = [
        GpuOp::CopyD2H,
        GpuOp::CopyH2D,
        GpuOp::CopyD2D,
        GpuOp::Kernel,
        GpuOp::HostWait,
        GpuOp::StreamWait,
    ];

    /// The byte the binary stream writes.
    pub fn code(self) -> u8 {
        match self {
            GpuOp::CopyD2H => 1,
            GpuOp::CopyH2D => 2,
            GpuOp::CopyD2D => 3,
            GpuOp::Kernel => 4,
            GpuOp::HostWait => 5,
            GpuOp::StreamWait => 6,
        }
    }

    /// The kind a stream byte names.
    pub fn from_code(code: u8) -> Option<GpuOp> {
        GpuOp::ALL.into_iter().find(|op| op.code() == code)
    }

    /// The short name: `D2H`, `H2D`, `D2D`, `kernel`, `host_wait`.
    pub fn label(self) -> &'static str {
        match self {
            GpuOp::CopyD2H => "D2H",
            GpuOp::CopyH2D => "H2D",
            GpuOp::CopyD2D => "D2D",
            GpuOp::Kernel => "kernel",
            GpuOp::HostWait => "host_wait",
            GpuOp::StreamWait => "stream_wait",
        }
    }

    /// True for the three copies.
    pub fn is_copy(self) -> bool {
        matches!(self, GpuOp::CopyD2H | GpuOp::CopyH2D | GpuOp::CopyD2D)
    }

    /// True for what is on a device stream's track (everything but a host wait).
    pub fn on_device(self) -> bool {
        self != GpuOp::HostWait
    }

    /// True for the device's work: copies and kernels (not waits of either side).
    pub fn is_work(self) -> bool {
        self.is_copy() || self == GpuOp::Kernel
    }
}

/// A host wait's `stream` when it waited for the whole device (every stream).
pub const ALL_STREAMS: u32 = u32::MAX;

/// One GPU record.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuEvent {
    /// The host thread that issued it (a host wait: the thread that waited).
    pub tid: u32,
    /// What it is.
    pub op: GpuOp,
    /// The device (its ordinal on the rank's node).
    pub device: u32,
    /// The device stream it ran on; for a host wait, the stream it waited on
    /// ([`ALL_STREAMS`]: the whole device).
    pub stream: u32,
    /// Host time it was enqueued; for a host wait, when what it waits for was marked.
    pub issued: Nanos,
    /// Start (device operations: on the device, within `clock_error`).
    pub start: Nanos,
    /// End.
    pub end: Nanos,
    /// Bytes copied (0 for kernels and waits).
    pub bytes: u64,
    /// Source address of a copy (0: unknown).
    pub src: u64,
    /// Destination address of a copy (0: unknown).
    pub dst: u64,
    /// The packet it belongs to, when the program said.
    pub packet: Option<u32>,
    /// A kernel's name, or a label the program gave (empty: none).
    pub name: String,
    /// How far `start` and `end` may be from the host-clock truth (0 for host waits and
    /// for a host-emulated device, whose times are host readings).
    pub clock_error: Nanos,
}

impl GpuEvent {
    /// The name shown in the trace: the kernel's name, else the kind with its packet.
    pub fn display_name(&self) -> String {
        match (self.op, self.packet) {
            (GpuOp::Kernel, _) if !self.name.is_empty() => self.name.clone(),
            (_, Some(p)) => format!("{} packet {p}", self.op.label()),
            _ if !self.name.is_empty() => format!("{} {}", self.op.label(), self.name),
            _ => self.op.label().to_owned(),
        }
    }
}

/// The `args` of a GPU event in JSON.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuArgs {
    /// What it is.
    pub op: GpuOp,
    /// The device.
    pub device: u32,
    /// The stream ([`ALL_STREAMS`] for a wait on the whole device).
    pub stream: u32,
    /// The host thread that issued it.
    pub host_tid: u32,
    /// Host time it was enqueued, µs (the wire's unit for times).
    pub issued: super::wire::Micros,
    /// Bytes copied.
    #[serde(default)]
    pub bytes: u64,
    /// Source address, hexadecimal (absent: unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    /// Destination address, hexadecimal (absent: unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<String>,
    /// The packet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet: Option<u32>,
    /// Kernel name or label.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    /// Clock error bound, ns.
    #[serde(default)]
    pub clock_error_ns: u64,
}

impl GpuArgs {
    /// The args of `e`.
    pub fn of(e: &GpuEvent) -> GpuArgs {
        let addr = |a: u64| (a != 0).then(|| format!("{a:#x}"));
        GpuArgs {
            op: e.op,
            device: e.device,
            stream: e.stream,
            host_tid: e.tid,
            issued: super::wire::Micros(e.issued),
            bytes: e.bytes,
            src: addr(e.src),
            dst: addr(e.dst),
            packet: e.packet,
            label: e.name.clone(),
            clock_error_ns: e.clock_error.0,
        }
    }

    /// The event these args describe, from `start` to `end`; an address that does not
    /// read as hexadecimal is an error naming it.
    pub fn into_event(self, start: Nanos, end: Nanos) -> Result<GpuEvent, String> {
        let addr = |a: Option<String>, what: &str| -> Result<u64, String> {
            match a {
                None => Ok(0),
                Some(s) => u64::from_str_radix(s.trim_start_matches("0x"), 16)
                    .map_err(|_| format!("{what} address {s:?} is not hexadecimal")),
            }
        };
        Ok(GpuEvent {
            tid: self.host_tid,
            op: self.op,
            device: self.device,
            stream: self.stream,
            issued: self.issued.0,
            start,
            end,
            bytes: self.bytes,
            src: addr(self.src, "source")?,
            dst: addr(self.dst, "destination")?,
            packet: self.packet,
            name: self.label,
            clock_error: Nanos(self.clock_error_ns),
        })
    }
}

/// First Perfetto thread id of the GPU stream tracks: above any host thread's index.
pub const GPU_TID_BASE: u32 = 1 << 24;

/// Streams a device may have tracks for; a higher stream number shares the last track.
pub const STREAMS_PER_DEVICE: u32 = 1 << 12;

/// The Perfetto thread id of `device`'s `stream` in the merged trace.
pub fn stream_tid(device: u32, stream: u32) -> u32 {
    GPU_TID_BASE + device.min(255) * STREAMS_PER_DEVICE + stream.min(STREAMS_PER_DEVICE - 1)
}

/// The device and stream of a stream track's thread id; `None` for a host thread.
pub fn stream_of_tid(tid: u32) -> Option<(u32, u32)> {
    let at = tid.checked_sub(GPU_TID_BASE)?;
    Some((at / STREAMS_PER_DEVICE, at % STREAMS_PER_DEVICE))
}

/// The name of a stream's track: `GPU 0 stream 1`.
pub fn stream_track_name(device: u32, stream: u32) -> String {
    format!("GPU {device} stream {stream}")
}

/// Header parameter: the files the program itself loaded, one absolute path a line (the
/// preload writes it at `MPI_Init`): its executable, the libraries it needs and those it
/// opened before `MPI_Init`, but MPI's own libraries and what only they need or open.
/// What tells a GPU runtime the program uses from one its MPI loaded (docs/gpu.md,
/// "GPU work not recorded").
pub const PROGRAM_OBJECTS_PARAM: &str = "program_objects";

/// Header parameter naming the GPU backend a run used ([`CUDA`] or [`HOST_EMULATED`]).
pub const GPU_BACKEND_PARAM: &str = "backend";

/// [`GPU_BACKEND_PARAM`] of a run on a real device through CUDA.
pub const CUDA: &str = "cuda";

/// [`GPU_BACKEND_PARAM`] of a run whose "device" was host threads and `memcpy`.
pub const HOST_EMULATED: &str = "host-emulated";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_tids_round_trip() {
        for op in GpuOp::ALL {
            assert_eq!(GpuOp::from_code(op.code()), Some(op));
        }
        assert_eq!(GpuOp::from_code(0), None);
        let tid = stream_tid(1, 3);
        assert_eq!(stream_of_tid(tid), Some((1, 3)));
        assert_eq!(stream_of_tid(7), None);
        assert_eq!(stream_track_name(0, 1), "GPU 0 stream 1");
    }

    #[test]
    fn args_round_trip_and_name_bad_addresses() {
        let e = GpuEvent {
            tid: 0,
            op: GpuOp::CopyD2H,
            device: 0,
            stream: 2,
            issued: Nanos(1_000),
            start: Nanos(1_500),
            end: Nanos(2_500),
            bytes: 4096,
            src: 0x7f00_1000,
            dst: 0,
            packet: Some(3),
            name: String::new(),
            clock_error: Nanos(500),
        };
        let text = serde_json::to_string(&GpuArgs::of(&e)).expect("serializes");
        let back: GpuArgs = serde_json::from_str(&text).expect("parses");
        assert_eq!(back.into_event(e.start, e.end), Ok(e.clone()));
        assert_eq!(e.display_name(), "D2H packet 3");
        let mut bad = GpuArgs::of(&e);
        bad.src = Some("zz".into());
        let err = bad.into_event(e.start, e.end).expect_err("not hexadecimal");
        assert!(err.contains("\"zz\""), "{err}");
    }
}
