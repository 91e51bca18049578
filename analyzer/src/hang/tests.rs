//! Builders of hand-built ranks and dumps for the hung-run analysis, every rank reading
//! one clock (times are as written), and the run without a dump. The cases with one are
//! tested with the section that tells them ([`crate::report::hang`]).

use std::path::PathBuf;

use overlap_format::schema::{
    CallArgs, DumpReason, Event, Footer, Header, InFlightCall, InFlightDump, Op, Params,
    FORMAT_NAME, FORMAT_VERSION,
};

use super::*;
use crate::model::RankTrace;

pub(crate) fn rank(
    rank: u32,
    size: u32,
    events: Vec<Event>,
    dump: Option<InFlightDump>,
) -> RankTrace {
    RankTrace {
        path: PathBuf::from(format!("rank-{rank}.ovlp")),
        header: Header {
            format: FORMAT_NAME.into(),
            format_version: FORMAT_VERSION,
            rank,
            size,
            host: "node".into(),
            os_pid: 1,
            epoch_ns: 0,
            clock_domain: "one clock".into(),
            program: "hand-built".into(),
            params: Params::new(),
            run_id: "0123456789abcdef".into(),
            start_unix_ns: 0,
        },
        threads: [(0, "main".to_string())].into(),
        syncs: Vec::new(),
        sites: Vec::new(),
        footer: dump.is_none().then_some(Footer {
            events: events.len() as u64,
            threads: 1,
            buffer_stalls: 0,
        }),
        events,
        problems: Vec::new(),
        in_flight: dump.into_iter().collect(),
        notes: Vec::new(),
        damaged: false,
        call_counts: None,
        call_paths: Vec::new(),
    }
}

pub(crate) fn p2p(peer: i32, tag: i32, request: Option<u64>) -> CallArgs {
    CallArgs {
        peer: Some(peer),
        tag: Some(tag),
        bytes: Some(8),
        comm: Some(0),
        request,
        ..CallArgs::default()
    }
}

pub(crate) fn in_flight(op: Op, start: u64) -> InFlightCall {
    InFlightCall {
        tid: 0,
        call: op,
        start_ns: start,
        site: None,
        comm: Some(0),
        peer: None,
        tag: None,
        recv_peer: None,
        recv_tag: None,
        root: None,
        requests: None,
    }
}

pub(crate) fn dump(reason: DumpReason, at: u64, calls: Vec<InFlightCall>) -> InFlightDump {
    InFlightDump {
        reason,
        at_ns: at,
        unix_ns: 1,
        threads: 1,
        calls,
    }
}

pub(crate) fn report(ranks: Vec<RankTrace>) -> HangReport {
    let merged = crate::merge::merge(ranks);
    let trace = merged.to_trace(std::path::Path::new("hand-built.json"));
    analyze(&trace, &SiteTable::default()).expect("a dump, so a report")
}

pub(crate) fn recv_from(peer: i32, tag: i32, start: u64) -> InFlightCall {
    InFlightCall {
        peer: Some(peer),
        tag: Some(tag),
        ..in_flight(Op::Recv, start)
    }
}

#[test]
fn no_dump_no_report() {
    let merged = crate::merge::merge(vec![rank(0, 1, vec![], None)]);
    let trace = merged.to_trace(std::path::Path::new("x.json"));
    assert_eq!(analyze(&trace, &SiteTable::default()), None);
}
