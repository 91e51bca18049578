//! The false-overlap table: one row per finding, every one (the report lists the
//! worst), in the report's order. A row keeps what the table writes of a finding (a
//! finding itself is about a kilobyte), so that the analysis in parts can keep every
//! finding's row until the run's are all in and sorted, and a worker of a job hand its
//! rows to worker 0 (`super::handed`).

use polars::prelude::DataFrame;
use serde::{Deserialize, Deserializer, Serialize};

use super::{col, frame};
use crate::metrics::false_overlap::report_order;
use crate::metrics::{CallRef, Finding};
use crate::model::Trace;
use crate::sites::SiteTable;
use crate::static_names::{self, StaticName};
use crate::Result;

/// What the table writes of a finding: the wait, what it lost and where it may move
/// (event indices of its rank); its send requests are the `requests` rows it completed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct FindingRow {
    /// The finding's place in the report's order ([`report_order`]).
    order: (std::cmp::Reverse<u64>, u32, usize),
    #[serde(deserialize_with = "static_names::read")]
    call: StaticName,
    start_ns: u64,
    duration_ns: u64,
    sends: u32,
    mixed: bool,
    independent_work_ns: u64,
    independent_spans: u64,
    hideable_ns: u64,
    #[serde(deserialize_with = "static_names::read")]
    limit: StaticName,
    move_before_index: Option<u64>,
    move_after_index: Option<u64>,
    #[serde(deserialize_with = "read_proven")]
    proven: Option<(u64, StaticName)>,
    /// The waiting call's site, by id in the run's site table.
    site: Option<u32>,
}

impl FindingRow {
    /// The row of `f`, a finding of `trace` (which holds its rank), its site's id in
    /// `sites`.
    pub(super) fn of(trace: &Trace, sites: &SiteTable, f: &Finding) -> FindingRow {
        let index = |c: Option<&CallRef>| c.map(|c| c.index as u64);
        FindingRow {
            order: report_order(f),
            call: f.wait.call,
            start_ns: f.wait.start_ns,
            duration_ns: f.wait.duration_ns,
            sends: f.requests.len() as u32,
            mixed: f.mixed,
            independent_work_ns: f.possible.independent_work_ns,
            independent_spans: f.possible.independent_spans,
            hideable_ns: f.possible.hideable_ns,
            limit: f.possible.limit.key(),
            move_before_index: index(f.possible.move_before.as_ref()),
            move_after_index: index(f.possible.move_after.as_ref()),
            proven: (f.proven.as_ref()).map(|p| (p.hideable_ns, p.limit.key())),
            site: sites.id_of_call(trace, f.rank, f.wait.index),
        }
    }
}

/// Findings' rows, and the label of each site they name, by id.
pub(super) type Findings = (Vec<FindingRow>, Vec<(u32, String)>);

/// The rows of the findings `found` of `part`'s ranks, and the labels of their sites in
/// `sites`.
pub(super) fn rows_of(part: &Trace, sites: &SiteTable, found: &[Finding]) -> Findings {
    let rows: Vec<FindingRow> = (found.iter())
        .map(|f| FindingRow::of(part, sites, f))
        .collect();
    let mut labels: Vec<(u32, String)> = (rows.iter())
        .filter_map(|r| r.site)
        .filter_map(|id| Some((id, super::parts::label(sites, id)?.to_string())))
        .collect();
    labels.sort_unstable();
    labels.dedup();
    (rows, labels)
}

/// Reads a proven point's (hideable ns, limit).
fn read_proven<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<(u64, StaticName)>, D::Error> {
    let read = Option::<(u64, String)>::deserialize(d)?;
    Ok(read.map(|(ns, limit)| (ns, static_names::intern(&limit))))
}

/// Puts `rows` in the report's order.
pub(super) fn sort(rows: &mut [FindingRow]) {
    rows.sort_by_key(|r| r.order);
}

/// The table of `rows` (in the report's order), each site's label given by `label`.
pub(super) fn false_overlap<'s>(
    rows: &[FindingRow],
    label: impl Fn(u32) -> Option<&'s str>,
) -> Result<DataFrame> {
    let f = rows;
    let u64s = |get: fn(&FindingRow) -> u64| f.iter().map(get).collect::<Vec<u64>>();
    frame(
        f.len(),
        vec![
            col("rank", f.iter().map(|x| x.order.1).collect()),
            col("index", u64s(|x| x.order.2 as u64)),
            col("call", f.iter().map(|x| x.call).collect::<Vec<&str>>()),
            col("start_ns", u64s(|x| x.start_ns)),
            col("duration_ns", u64s(|x| x.duration_ns)),
            col("sends", f.iter().map(|x| x.sends).collect()),
            col("mixed", f.iter().map(|x| x.mixed).collect()),
            col("lost_ns", u64s(|x| x.order.0 .0)),
            col("independent_work_ns", u64s(|x| x.independent_work_ns)),
            col("independent_spans", u64s(|x| x.independent_spans)),
            col("hideable_ns", u64s(|x| x.hideable_ns)),
            col("limit", f.iter().map(|x| x.limit).collect::<Vec<&str>>()),
            col(
                "move_before_index",
                f.iter().map(|x| x.move_before_index).collect(),
            ),
            col(
                "move_after_index",
                f.iter().map(|x| x.move_after_index).collect(),
            ),
            col(
                "proven_hideable_ns",
                f.iter()
                    .map(|x| x.proven.map(|p| p.0))
                    .collect::<Vec<Option<u64>>>(),
            ),
            col(
                "proven_limit",
                f.iter()
                    .map(|x| x.proven.map(|p| p.1))
                    .collect::<Vec<Option<&str>>>(),
            ),
            col(
                "site",
                f.iter()
                    .map(|x| x.site.and_then(&label))
                    .collect::<Vec<Option<&str>>>(),
            ),
        ],
    )
}
