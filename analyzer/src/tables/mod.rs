//! The figures behind a report as tables, for people who want to slice them further
//! (pandas, polars, DuckDB, a spreadsheet): ranks, calls, requests, messages, wait
//! states and both by call site, and the profile ([`profile`]), as polars DataFrames
//! written to CSV or Parquet. Polars stays inside this
//! module: the rest of the analyzer hands out plain structs.

use std::ops::Range;

use polars::prelude::{Column, DataFrame};

use crate::analysis::Report;
use crate::metrics::by_site::SiteGroup;
use crate::metrics::message_ends::MessageEnds;
use crate::metrics::request_metrics::RequestClass;
use crate::metrics::request_row::RequestRow;
use crate::metrics::WaitInstance;
use crate::model::{Message, Trace, What};
use crate::sites::SiteTable;
use crate::{Error, Result};

mod batches;
mod findings;
mod groups;
mod handed;
mod parts;
mod profile;
mod stream;
mod write;

pub use handed::RowRecorder;
pub use parts::{tables, Tables};
pub use stream::{write_tables, TableStream};

/// The file format of the tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableFormat {
    /// Comma-separated values with a header line.
    Csv,
    /// Apache Parquet (zstd).
    Parquet,
}

impl TableFormat {
    fn extension(self) -> &'static str {
        match self {
            TableFormat::Csv => "csv",
            TableFormat::Parquet => "parquet",
        }
    }
}

fn col<T>(name: &str, values: Vec<T>) -> Column
where
    polars::prelude::Series: polars::prelude::NamedFrom<Vec<T>, [T]>,
{
    Column::new(name.into(), values)
}

fn frame(height: usize, columns: Vec<Column>) -> Result<DataFrame> {
    DataFrame::new(height, columns).map_err(|e| Error::Table {
        reason: e.to_string(),
    })
}

/// One row per staging chain: its packet and its five steps (null: not recorded).
fn gpu_chains(c: &[crate::gpu::ChainRow]) -> Result<DataFrame> {
    let step = |f: fn(&crate::gpu::chains::Breakdown) -> Option<u64>| {
        c.iter()
            .map(|r| f(&r.breakdown))
            .collect::<Vec<Option<u64>>>()
    };
    frame(
        c.len(),
        vec![
            col("message", c.iter().map(|r| r.message).collect()),
            col("from", c.iter().map(|r| r.from).collect()),
            col("to", c.iter().map(|r| r.to).collect()),
            col("tag", c.iter().map(|r| r.tag).collect()),
            col("packet", c.iter().map(|r| r.packet).collect()),
            col("bytes", c.iter().map(|r| r.bytes).collect()),
            col("start_ns", c.iter().map(|r| r.start_ns).collect()),
            col("d2h_ns", step(|b| b.d2h_ns)),
            col("wait_send_ns", step(|b| b.wait_send_ns)),
            col("transfer_ns", step(|b| b.transfer_ns)),
            col("wait_h2d_ns", step(|b| b.wait_h2d_ns)),
            col("h2d_ns", step(|b| b.h2d_ns)),
            col("total_ns", step(|b| b.total_ns)),
        ],
    )
}

fn ranks(report: &Report) -> Result<DataFrame> {
    let r = &report.ranks;
    let ws = &report.wait_states.per_rank_ns;
    frame(
        r.len(),
        vec![
            col("rank", r.iter().map(|b| b.rank).collect()),
            col("host", r.iter().map(|b| b.host.clone()).collect()),
            col("complete", r.iter().map(|b| b.complete).collect()),
            col("start_ns", r.iter().map(|b| b.start_ns).collect()),
            col("wall_ns", r.iter().map(|b| b.wall_ns).collect()),
            col("useful_ns", r.iter().map(|b| b.useful_ns).collect()),
            col("compute_ns", r.iter().map(|b| b.compute_ns).collect()),
            col(
                "compute_source",
                r.iter()
                    .map(|b| b.compute_source.key().to_string())
                    .collect(),
            ),
            col("in_mpi_ns", r.iter().map(|b| b.in_mpi_ns).collect()),
            col("waiting_ns", r.iter().map(|b| b.waiting_ns).collect()),
            col(
                "wait_states_ns",
                r.iter()
                    .map(|b| ws.get(&b.rank).copied().unwrap_or(0))
                    .collect(),
            ),
        ],
    )
}

/// The calls table's rows `rows`: the run's spans, rank after rank.
fn calls(trace: &Trace, table: &SiteTable, rows: Range<usize>) -> Result<DataFrame> {
    let n = rows.len();
    let mut rank = Vec::with_capacity(n);
    let mut index = Vec::with_capacity(n);
    let mut kind: Vec<&str> = Vec::with_capacity(n);
    let mut name: Vec<&str> = Vec::with_capacity(n);
    let mut tid = Vec::with_capacity(n);
    let mut start = Vec::with_capacity(n);
    let mut end = Vec::with_capacity(n);
    let mut peer: Vec<Option<i32>> = Vec::with_capacity(n);
    let mut tag: Vec<Option<i32>> = Vec::with_capacity(n);
    let mut comm: Vec<Option<u32>> = Vec::with_capacity(n);
    let mut bytes: Vec<Option<u64>> = Vec::with_capacity(n);
    let mut request: Vec<Option<u64>> = Vec::with_capacity(n);
    let mut completed: Vec<u32> = Vec::with_capacity(n);
    let mut site: Vec<Option<&str>> = Vec::with_capacity(n);
    let mut first = 0;
    for t in &trace.ranks {
        // This rank's spans among `rows`.
        let (from, to) = (first, first + t.spans.len());
        first = to;
        let within = rows.start.clamp(from, to) - from..rows.end.clamp(from, to) - from;
        for (i, s) in t
            .spans
            .iter()
            .enumerate()
            .skip(within.start)
            .take(within.len())
        {
            rank.push(t.rank);
            index.push(i as u64);
            tid.push(s.tid);
            start.push(s.start.0);
            end.push(s.end.0);
            match s.what {
                What::Compute(id) => {
                    kind.push("compute");
                    name.push(t.name(id));
                    peer.push(None);
                    tag.push(None);
                    comm.push(None);
                    bytes.push(None);
                    request.push(None);
                    completed.push(0);
                    site.push(None);
                }
                What::Call(op, _) => {
                    kind.push("mpi");
                    name.push(op.mpi_name());
                    let c = t.call(i).map(|(_, c)| c);
                    peer.push(c.and_then(|c| c.peer()));
                    tag.push(c.and_then(|c| c.tag()));
                    comm.push(c.map(|c| c.comm));
                    bytes.push(c.and_then(|c| c.bytes()));
                    request.push(c.and_then(|c| c.request()));
                    completed.push(c.map_or(0, |c| c.completed.1));
                    let raw = c.and_then(|c| c.site);
                    site.push(
                        raw.and_then(|r| table.site(t.rank, r.get()).map(|s| s.label.as_str())),
                    );
                }
            }
        }
    }
    frame(
        n,
        vec![
            col("rank", rank),
            col("index", index),
            col("kind", kind),
            col("name", name),
            col("tid", tid),
            col("start_ns", start),
            col("end_ns", end),
            col("peer", peer),
            col("tag", tag),
            col("comm", comm),
            col("bytes", bytes),
            col("request", request),
            col("completed", completed),
            col("site", site),
        ],
    )
}

/// The requests table of the rows `r`.
fn requests(trace: &Trace, r: &[RequestRow]) -> Result<DataFrame> {
    let completion = |q: &RequestRow| q.completion_span(trace);
    frame(
        r.len(),
        vec![
            col("rank", r.iter().map(|q| q.rank).collect()),
            col("request", r.iter().map(|q| q.request).collect()),
            col(
                "kind",
                r.iter()
                    .map(|q| match q.kind {
                        RequestClass::Send => "send",
                        RequestClass::Receive => "receive",
                        RequestClass::Collective => "collective",
                        RequestClass::OneSided => "one_sided",
                    })
                    .collect::<Vec<&str>>(),
            ),
            col("peer", r.iter().map(|q| q.peer()).collect()),
            col("tag", r.iter().map(|q| q.tag()).collect()),
            col("bytes", r.iter().map(|q| q.bytes).collect()),
            col(
                "post_index",
                r.iter().map(|q| q.post_index() as u64).collect(),
            ),
            col(
                "post_ns",
                r.iter()
                    .map(|q| q.post_span(trace).map(|s| s.start.0))
                    .collect::<Vec<Option<u64>>>(),
            ),
            col(
                "completion_call",
                r.iter()
                    .map(|q| Some(completion(q)?.op()?.mpi_name()))
                    .collect::<Vec<Option<&str>>>(),
            ),
            col(
                "completion_index",
                r.iter()
                    .map(|q| q.completion_index().map(|i| i as u64))
                    .collect::<Vec<Option<u64>>>(),
            ),
            col(
                "wait_start_ns",
                r.iter()
                    .map(|q| completion(q).map(|s| s.start.0))
                    .collect::<Vec<Option<u64>>>(),
            ),
            // A request no call completed has no window, wait or overlap: null, not 0.
            col("window_ns", r.iter().map(|q| q.window()).collect()),
            col("cpu_ns", r.iter().map(|q| q.cpu()).collect()),
            col(
                "exposed_wait_ns",
                r.iter().map(|q| q.exposed_wait()).collect(),
            ),
            col("t_ovrl_ns", r.iter().map(|q| q.t_ovrl()).collect()),
            col("t_pure_ns", r.iter().map(|q| q.t_pure_ns()).collect()),
            col("overlap", r.iter().map(|q| q.overlap()).collect()),
            col("osu_overlap", r.iter().map(|q| q.osu_overlap()).collect()),
            col(
                "progress_wait_ns",
                r.iter().map(|q| q.progress_wait()).collect(),
            ),
            col(
                "written_not_achieved",
                r.iter().map(|q| q.written_not_achieved).collect(),
            ),
        ],
    )
}

/// When a message's calls ran: the send's entry, the receive's post's entry and the
/// exit of the call that completed the receive, ns (none: not in the trace).
pub(crate) struct MessageTimes {
    send: Option<u64>,
    recv_post: Option<u64>,
    recv_complete: Option<u64>,
}

impl MessageTimes {
    /// Message `mi`'s, as `trace` holds its calls.
    fn of_trace(trace: &Trace, mi: usize) -> MessageTimes {
        let x = &trace.messages[mi];
        let span = |r| trace.span(r);
        MessageTimes {
            send: span(x.send()).map(|s| s.start.0),
            recv_post: span(x.recv_post()).map(|s| s.start.0),
            recv_complete: x.completion().and_then(span).map(|s| s.end.0),
        }
    }

    /// Message `mi`'s (`x`), as its ends `ends` found its calls.
    pub(crate) fn of_ends(ends: &MessageEnds, mi: usize, x: &Message) -> MessageTimes {
        MessageTimes {
            send: ends.send(mi).start().map(|n| n.0),
            recv_post: ends.recv(mi).start().map(|n| n.0),
            recv_complete: ends.recv_done(mi, x).map(|d| d.end.0),
        }
    }
}

/// One row per message of `m`, message `mi`'s calls timed by `times(mi)`.
fn messages(m: &[Message], times: impl Fn(usize) -> MessageTimes) -> Result<DataFrame> {
    let times: Vec<MessageTimes> = (0..m.len()).map(times).collect();
    let time = |f: fn(&MessageTimes) -> Option<u64>| times.iter().map(f).collect::<Vec<_>>();
    frame(
        m.len(),
        vec![
            col("id", m.iter().map(|x| x.id).collect()),
            col("send_rank", m.iter().map(|x| x.send().rank).collect()),
            col("recv_rank", m.iter().map(|x| x.recv_post().rank).collect()),
            col("tag", m.iter().map(|x| x.tag).collect()),
            col("bytes", m.iter().map(|x| x.bytes).collect()),
            col("send_ns", time(|t| t.send)),
            col("recv_post_ns", time(|t| t.recv_post)),
            col("recv_complete_ns", time(|t| t.recv_complete)),
            col("clock_suspect", m.iter().map(|x| x.clock_suspect).collect()),
        ],
    )
}

/// One row per wait-state instance of `w` (of `trace`'s ranks), its call's site named
/// by `sites`.
fn wait_states(trace: &Trace, sites: &SiteTable, w: &[WaitInstance]) -> Result<DataFrame> {
    let site = |x: &WaitInstance| {
        sites
            .of_call(trace, x.rank, x.index)
            .map(|s| s.label.as_str())
    };
    frame(
        w.len(),
        vec![
            col(
                "kind",
                w.iter().map(|x| x.kind.key()).collect::<Vec<&str>>(),
            ),
            col("rank", w.iter().map(|x| x.rank).collect()),
            col("index", w.iter().map(|x| x.index as u64).collect()),
            col("call", w.iter().map(|x| x.call).collect::<Vec<&str>>()),
            col("start_ns", w.iter().map(|x| x.start_ns).collect()),
            col("peer", w.iter().map(|x| x.peer).collect()),
            col(
                "peer_index",
                w.iter().map(|x| x.peer_index.map(|i| i as u64)).collect(),
            ),
            col("amount_ns", w.iter().map(|x| x.amount_ns).collect()),
            col(
                "error_bound_ns",
                w.iter().map(|x| x.error_bound_ns).collect(),
            ),
            col("indeterminate", w.iter().map(|x| x.indeterminate).collect()),
            col("clock_suspect", w.iter().map(|x| x.clock_suspect).collect()),
            col("site", w.iter().map(site).collect::<Vec<Option<&str>>>()),
        ],
    )
}

/// False overlap and wait states by call site: one row per (what, site, call, kind).
fn sites(report: &Report) -> Result<DataFrame> {
    let b = &report.by_site;
    let rows: Vec<(&str, &SiteGroup)> = b
        .false_overlap
        .iter()
        .map(|g| ("false_overlap", g))
        .chain(b.wait_states.iter().map(|g| ("wait_state", g)))
        .collect();
    let get = |f: fn(&SiteGroup) -> u64| rows.iter().map(|(_, g)| f(g)).collect::<Vec<u64>>();
    frame(
        rows.len(),
        vec![
            col("what", rows.iter().map(|(w, _)| *w).collect::<Vec<&str>>()),
            col(
                "site",
                rows.iter()
                    .map(|(_, g)| g.site.as_deref())
                    .collect::<Vec<Option<&str>>>(),
            ),
            col(
                "call",
                rows.iter().map(|(_, g)| g.call).collect::<Vec<&str>>(),
            ),
            col(
                "kind",
                rows.iter()
                    .map(|(_, g)| g.kind.map(|k| k.key()))
                    .collect::<Vec<Option<&str>>>(),
            ),
            col("count", get(|g| g.count)),
            col(
                "ranks",
                rows.iter().map(|(_, g)| g.ranks).collect::<Vec<u32>>(),
            ),
            col("total_ns", get(|g| g.total_ns)),
            col("worst_ns", get(|g| g.worst_ns)),
            col(
                "worst_rank",
                rows.iter().map(|(_, g)| g.worst_rank).collect::<Vec<u32>>(),
            ),
            col("worst_index", get(|g| g.worst_index as u64)),
        ],
    )
}
