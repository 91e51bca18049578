//! A run built in memory: events already on one clock, for programs that make traces
//! without files (tests, benchmarks, front ends fed by another tool). They go through
//! the same alignment and message matching as files do.

use std::path::Path;

use overlap_format::schema::{
    ClockSync, Event, Footer, Header, Params, SyncPhase, FORMAT_NAME, LAST_JSON_RANK_VERSION,
};

use crate::model::{RankTrace, Trace};

/// Ranks 0.. with the given events, on one clock (times are the run's times, in ns),
/// merged and ready for analysis: hosts are named `node0`, `node1`..., each rank has
/// one thread, `main`, and every file counts as complete.
pub fn from_events(program: &str, source: &Path, ranks: Vec<Vec<Event>>) -> Trace {
    let size = ranks.len() as u32;
    let traces = ranks
        .into_iter()
        .enumerate()
        .map(|(r, events)| {
            let rank = r as u32;
            RankTrace {
                path: source.join(format!("rank-{rank}.json")),
                header: Header {
                    format: FORMAT_NAME.into(),
                    format_version: LAST_JSON_RANK_VERSION,
                    rank,
                    size,
                    host: format!("node{rank}"),
                    os_pid: 1000 + rank,
                    epoch_ns: 0,
                    clock_domain: "one-clock".into(),
                    program: program.into(),
                    params: Params::new(),
                    run_id: String::new(),
                    start_unix_ns: 0,
                },
                threads: [(0, "main".to_string())].into(),
                syncs: vec![ClockSync {
                    phase: SyncPhase::Init,
                    local_ns: 0,
                    offset_ns: 0,
                    error_ns: 0,
                    rtt_ns: 0,
                    rounds: 10,
                }],
                sites: Vec::new(),
                footer: Some(Footer {
                    events: events.len() as u64,
                    threads: 1,
                    buffer_stalls: 0,
                }),
                events,
                problems: Vec::new(),
                notes: Vec::new(),
                in_flight: Vec::new(),
                damaged: false,
                call_counts: None,
                call_paths: Vec::new(),
            }
        })
        .collect();
    super::merge(traces).to_trace(source)
}
