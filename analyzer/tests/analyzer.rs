//! The analyzer's behaviour tests, one binary (a binary per file was a link per file:
//! most of the test build's time). `reports` stays apart: it sets the symbolizer's
//! search path for its whole process, and `pftrace` is a binary of its own files.

mod common;

mod buffers;
mod confirm;
mod cut_merged;
mod false_overlap;
mod gap_cuts;
mod gate_props;
mod gpu;
mod gpu_runtime;
mod import;
mod learned;
mod merge;
mod metrics;
mod network;
mod network_classes;
mod old_files;
mod ops;
mod otf2_clocks;
mod otf2_order;
mod profile;
mod remedies;
mod replay;
mod roundtrip;
mod run_identity;
mod safe_moves;
mod sites;
mod suggest;
mod suggest_no_network;
mod tables;
mod thread_time;
mod verdicts;
mod window;
