//! Builders of hand-built ranks and dumps for the hung-run analysis, every rank reading
//! one clock (times are as written), and the run without a dump. The cases with one are
//! tested with the section that tells them ([`crate::report::hang`]); each of them is
//! also made a part at a time there ([`report`] checks the parts fold to the whole).

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

/// The report of hand-built `ranks`, checked to be the same made of parts of 1 and 2
/// ranks ([`folded`]).
pub(crate) fn report(ranks: Vec<RankTrace>) -> HangReport {
    let merged = crate::merge::merge(ranks);
    let trace = merged.to_trace(std::path::Path::new("hand-built.json"));
    let whole = analyze(&trace, &SiteTable::default());
    for size in [1, 2] {
        assert_eq!(folded(&trace, size), whole, "parts of {size} rank(s)");
    }
    whole.expect("a dump, so a report")
}

/// The report of `trace` made of its parts of `size` ranks, in rank order.
fn folded(trace: &Trace, size: usize) -> Option<HangReport> {
    let sites = SiteTable::default();
    let mut fold = HangFold::new();
    for part in trace.parts(size) {
        fold.add(&part, &sites);
    }
    fold.finish(&trace.info, &sites)
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

/// Every kept run (none hung; each has no dump, so no report) is the same made of parts
/// of 1 rank, of 2 and of all.
#[test]
fn the_kept_runs_fold_to_the_whole() {
    for trace in crate::load::kept_runs() {
        let sites = SiteTable::build(&trace);
        let whole = analyze(&trace, &sites);
        for size in [1, 2, trace.ranks.len()] {
            let mut fold = HangFold::new();
            for part in trace.parts(size) {
                fold.add(&part, &sites);
            }
            assert_eq!(
                fold.finish(&trace.info, &sites),
                whole,
                "{}",
                trace.source.display()
            );
        }
    }
}

/// ```text
///  rank 0    |Irecv(from 1, t3, req 1)|Waitall(1) ..... stalled dump
///  rank 1    |Bcast on world ........................... stalled dump
///  rank 2    |Init|                                       signal dump, not in MPI
///  rank 3    (no trace file)
/// ```
/// Made a rank at a time, each part holds one rank, yet what needs the others is still
/// there: rank 0's Waitall names its request (its own part's), rank 1's broadcast waits
/// for ranks 0, 2 and 3 (only the finish knows that none of them is in a world
/// collective: 0 waits on a request, 2 is not in MPI, 3 has no part), the cycle
/// 0 -> 1 -> 0 crosses two parts, and rank 3, which no part holds, is reported without
/// a trace.
#[test]
fn a_hang_made_a_rank_at_a_time_crosses_the_parts() {
    let waitall = InFlightCall {
        requests: Some(1),
        comm: None,
        ..in_flight(Op::Waitall, 300)
    };
    let ranks = vec![
        rank(
            0,
            4,
            vec![overlap_format::testing::call(
                Op::Irecv,
                0,
                100,
                p2p(1, 3, Some(1)),
            )],
            Some(dump(DumpReason::Stalled, 5000, vec![waitall])),
        ),
        rank(
            1,
            4,
            vec![],
            Some(dump(
                DumpReason::Stalled,
                5000,
                vec![in_flight(Op::Bcast, 50)],
            )),
        ),
        rank(
            2,
            4,
            vec![overlap_format::testing::call(
                Op::Init,
                0,
                10,
                CallArgs::default(),
            )],
            Some(dump(DumpReason::Signal, 5000, vec![])),
        ),
    ];
    let merged = crate::merge::merge(ranks);
    let trace = merged.to_trace(std::path::Path::new("hand-built.json"));
    let whole = analyze(&trace, &SiteTable::default()).expect("a dump, so a report");
    assert_eq!(whole.verdict, Verdict::Hung);
    assert_eq!(whole.cycle, Some(vec![0, 1, 0]));
    let waited: Vec<Option<u32>> = whole.ranks[1].calls[0]
        .waits_for
        .iter()
        .map(|w| w.rank)
        .collect();
    assert_eq!(waited, [None, Some(0), Some(2), Some(3)]);
    assert_eq!(whole.ranks[0].calls[0].waits_for[0].request, Some(1));
    assert_eq!(whole.ranks[3].state, RankState::NoTrace);
    for size in [1, 2, 3] {
        assert_eq!(folded(&trace, size), Some(whole.clone()), "parts of {size}");
    }
}
