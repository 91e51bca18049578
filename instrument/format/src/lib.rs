//! overlap-format: what an overlap trace is, on disk and in memory, and nothing else.
//!
//! The recorder (`overlap-instrument`) writes through this crate and the analyzer reads
//! through it; neither defines a byte of a file. Kept apart from the recorder so that
//! reading a trace needs no MPI, no recorder and no clock of this machine (the approach
//! of rustc's measureme and Score-P's OTF2).
//!
//! - [`schema`]: the typed event model, and its JSON form (the merged Perfetto trace and
//!   version-1 to -3 per-rank files).
//! - [`call_data`]: the compact, typed arguments of a call as the hot path records them.
//! - [`stream`]: the binary per-rank stream: framed pages of encoded records, written
//!   while the program runs and read back into events.
//! - [`clock`]: the clock model (cross-rank offsets, TSC to nanoseconds).
//! - [`network_model`]: the network model file the `pingpong` kernel writes.
//! - [`pftrace`]: the merged trace in Perfetto's protobuf format, streamed.
//! - [`output`]: how every output file is written (whole or not at all).
//! - [`input`]: how every input is opened (never a fifo or a device) and read (capped).

pub mod call_data;
pub mod clock;
pub mod fxhash;
pub mod input;
pub mod network_model;
pub mod output;
pub mod pftrace;
pub mod region;
pub mod schema;
pub mod stream;
pub mod temporary;
pub mod testing;
