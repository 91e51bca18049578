//! Builders of hand-made trace events, for the tests and benchmarks of every crate that
//! reads traces (the analyzer's unit and integration tests, its benchmarks, the command
//! line's tests): one definition of a call event instead of a copy in each test file.

use crate::schema::{
    CallArgs, CallEvent, Event, MergedInfo, Nanos, Op, RankClock, FORMAT_NAME, FORMAT_VERSION,
};

/// A call `op` of thread 0 from `start` to `end` (ns since the rank's epoch), with its
/// arguments.
pub fn call(op: Op, start: u64, end: u64, args: CallArgs) -> Event {
    Event::Call(CallEvent {
        tid: 0,
        start: Nanos(start),
        end: Nanos(end),
        op,
        args,
    })
}

/// The description of a merged run of `world_size` ranks whose ranks' alignments are
/// `ranks`: program "p", no parameter, no message, no clock error, nothing missing.
pub fn merged_info(world_size: u32, ranks: Vec<RankClock>) -> MergedInfo {
    let mut info: MergedInfo = serde_json::from_value(serde_json::json!({
        "format": FORMAT_NAME, "format_version": FORMAT_VERSION, "program": "p",
        "params": {}, "world_size": world_size, "ranks": [], "max_clock_error_ns": 0,
        "messages": 0, "unmatched_sends": 0, "unmatched_receives": 0,
        "clock_suspect": [], "incomplete": [], "missing_ranks": []
    }))
    .expect("a run's description");
    info.ranks = ranks;
    info
}

/// The alignment of rank `rank`, of host "h", on rank 0's clock (no offset, no error),
/// nothing else known of it.
pub fn rank_clock(rank: u32) -> RankClock {
    serde_json::from_value(serde_json::json!({
        "rank": rank, "host": "h", "shared_clock": true,
        "init_offset_ns": 0, "init_error_ns": 0
    }))
    .expect("a rank's alignment")
}
