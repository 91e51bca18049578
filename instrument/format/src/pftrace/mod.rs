//! The merged trace in Perfetto's own protobuf format (`.pftrace`): what the Perfetto UI
//! and `trace_processor` read best, and what a run too large for Chrome JSON needs
//! (docs/trace-format.md, "Perfetto protobuf").
//!
//! A file is a sequence of `TracePacket`s (each a `Trace.packet` field, so files may be
//! concatenated): `TrackDescriptor`s first (a process per rank, a thread track per
//! recording thread and per GPU stream, request lanes and counters), then `TrackEvent`s
//! on writer sequences ([`Sequence`]), each with its own interned names, categories,
//! debug-annotation names and source locations. Packets are handed to the file in
//! blocks ([`PftraceWriter`]) as they are made: the writer holds what is in flight, not
//! the run.
//!
//! The encoding is hand-written ([`proto`]), protozero-style, rather than prost over
//! Perfetto's `.proto` files: see that module for why.

mod annotations;
mod intern;
mod proto;
mod sequence;

use std::io::{self, Write};

pub use annotations::AnnotationError;
pub use sequence::{Sequence, Slice, SourceLocation};

use proto::{field, Proto, SEQ_INCREMENTAL_STATE_CLEARED};

/// The sequence id the track descriptors are written on; event sequences use others.
pub const DESCRIPTOR_SEQUENCE: u32 = 1;

/// How much encoded data [`PftraceWriter`] gathers before handing it to the file.
const BLOCK: usize = 256 << 10;

/// `TrackDescriptor.ChildTracksOrdering.EXPLICIT`: children sorted by their
/// `sibling_order_rank`.
const CHILDREN_EXPLICIT: u64 = 3;

/// What a counter counts (`CounterDescriptor.Unit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterUnit {
    /// A number of things (`UNIT_COUNT`).
    Count = 2,
    /// Bytes (`UNIT_SIZE_BYTES`).
    Bytes = 3,
}

/// A track of the trace, as its `TrackDescriptor` describes it.
#[derive(Clone, Debug)]
pub enum Track<'a> {
    /// A process: a rank.
    Process {
        /// The track's uuid.
        uuid: u64,
        /// Its process id (the rank).
        pid: u32,
        /// Its name (`rank 3 (node1)`).
        name: &'a str,
    },
    /// A thread of a process: a recording thread, or a GPU stream.
    Thread {
        /// The track's uuid.
        uuid: u64,
        /// The process track's uuid.
        parent: u64,
        /// The process id.
        pid: u32,
        /// The thread id (as in the JSON).
        tid: u32,
        /// Its name (none when empty).
        name: &'a str,
        /// Its place among its process's tracks.
        order: i64,
    },
    /// A named track under another (a lane of request slices).
    Named {
        /// The track's uuid.
        uuid: u64,
        /// The parent track's uuid (`None`: a track of its own, at the top).
        parent: Option<u64>,
        /// Its name.
        name: &'a str,
        /// Its place among its parent's tracks.
        order: i64,
    },
    /// A counter under a process.
    Counter {
        /// The track's uuid.
        uuid: u64,
        /// The process track's uuid.
        parent: u64,
        /// Its name.
        name: &'a str,
        /// What it counts.
        unit: CounterUnit,
        /// Its place among its process's tracks.
        order: i64,
    },
}

/// Writes a protobuf trace to `out`: track descriptors, then the packets of sequences,
/// handed over in blocks of about 256 KiB.
pub struct PftraceWriter<W: Write> {
    out: W,
    block: Vec<u8>,
    descriptors: u64,
    bytes: u64,
}

impl<W: Write> PftraceWriter<W> {
    /// A writer into `out` (nothing is written before the first packet).
    pub fn new(out: W) -> Self {
        PftraceWriter {
            out,
            block: Vec::with_capacity(BLOCK + (64 << 10)),
            descriptors: 0,
            bytes: 0,
        }
    }

    /// Writes the descriptor of `track`.
    pub fn track(&mut self, track: &Track<'_>) -> io::Result<()> {
        let mut p = Proto::default();
        let packet = p.begin(field::TRACE_PACKET);
        p.uint(field::SEQUENCE_ID, u64::from(DESCRIPTOR_SEQUENCE));
        if self.descriptors == 0 {
            p.uint(field::SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
        }
        let d = p.begin(field::TRACK_DESCRIPTOR);
        match track {
            Track::Process { uuid, pid, name } => {
                p.uint(field::UUID, *uuid);
                let proc_ = p.begin(field::PROCESS);
                p.uint(field::PID, u64::from(*pid));
                p.string(field::PROCESS_NAME, name);
                p.end(proc_);
                p.uint(field::CHILD_ORDERING, CHILDREN_EXPLICIT);
                p.int(field::SIBLING_ORDER_RANK, i64::from(*pid));
            }
            Track::Thread {
                uuid,
                parent,
                pid,
                tid,
                name,
                order,
            } => {
                p.uint(field::UUID, *uuid);
                p.uint(field::PARENT_UUID, *parent);
                let t = p.begin(field::THREAD);
                p.uint(field::PID, u64::from(*pid));
                p.uint(field::TID, u64::from(*tid));
                if !name.is_empty() {
                    p.string(field::THREAD_NAME, name);
                }
                p.end(t);
                p.int(field::SIBLING_ORDER_RANK, *order);
            }
            Track::Named {
                uuid,
                parent,
                name,
                order,
            } => {
                p.uint(field::UUID, *uuid);
                if let Some(parent) = parent {
                    p.uint(field::PARENT_UUID, *parent);
                }
                p.string(field::TRACK_NAME, name);
                p.int(field::SIBLING_ORDER_RANK, *order);
            }
            Track::Counter {
                uuid,
                parent,
                name,
                unit,
                order,
            } => {
                p.uint(field::UUID, *uuid);
                p.uint(field::PARENT_UUID, *parent);
                p.string(field::TRACK_NAME, name);
                let c = p.begin(field::COUNTER);
                p.uint(field::COUNTER_UNIT, *unit as u64);
                p.end(c);
                p.int(field::SIBLING_ORDER_RANK, *order);
            }
        }
        p.end(d);
        p.end(packet);
        self.descriptors += 1;
        self.put(&p.bytes)
    }

    /// Hands what `seq` has written so far to the file (in blocks).
    pub fn drain(&mut self, seq: &mut Sequence) -> io::Result<()> {
        if seq.pending() == 0 {
            return Ok(());
        }
        let bytes = seq.take();
        self.put(&bytes)
    }

    /// Appends encoded packets, handing a block to the file when one is full; a large
    /// run of packets (a sequence's drained buffer) goes to the file as it is, not
    /// copied into the block.
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.bytes += bytes.len() as u64;
        if bytes.len() >= BLOCK / 4 {
            if !self.block.is_empty() {
                self.out.write_all(&self.block)?;
                self.block.clear();
            }
            return self.out.write_all(bytes);
        }
        if self.block.len() + bytes.len() > BLOCK {
            self.out.write_all(&self.block)?;
            self.block.clear();
        }
        self.block.extend_from_slice(bytes);
        Ok(())
    }

    /// Bytes written so far (handed over or waiting in the block).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Hands over the last block, flushes, and gives the writer back.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(&self.block)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The formats a merged trace is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// Chrome Trace Event JSON (`.json`): what `analyze` and the other commands read.
    Json,
    /// Perfetto's protobuf (`.pftrace`): for the Perfetto UI and `trace_processor`.
    Pftrace,
}

impl TraceFormat {
    /// The format a file's name asks for: `.pftrace` (or Perfetto's other names for
    /// it, `.perfetto-trace` and `.pb`) is protobuf; anything else is JSON.
    pub fn of_path(path: &std::path::Path) -> TraceFormat {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let proto = [".pftrace", ".perfetto-trace", ".pb"]
            .iter()
            .any(|ext| name.to_ascii_lowercase().ends_with(ext));
        match proto {
            true => TraceFormat::Pftrace,
            false => TraceFormat::Json,
        }
    }

    /// The file name extension of the format (without the dot).
    pub fn extension(self) -> &'static str {
        match self {
            TraceFormat::Json => "json",
            TraceFormat::Pftrace => "pftrace",
        }
    }
}
