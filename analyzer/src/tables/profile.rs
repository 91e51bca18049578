//! The profile's tables ([`crate::profile`]): time per MPI function and per call site,
//! the communication matrix's pairs, the message-size classes and each rank's phases.

use polars::prelude::DataFrame;

use super::{col, frame};
use crate::profile::{CallStats, Profile};
use crate::Result;

/// The profile's tables, by name.
pub(super) fn tables(p: &Profile) -> Result<Vec<(String, DataFrame)>> {
    let stats: Vec<&CallStats> = p.functions.iter().collect();
    let by_site: Vec<&CallStats> = p.sites.iter().map(|s| &s.stats).collect();
    let mut sites = call_stats(&by_site)?;
    let site_col = col(
        "site",
        p.sites.iter().map(|s| s.site.clone()).collect::<Vec<_>>(),
    );
    sites
        .insert_column(0, site_col)
        .map_err(|e| crate::Error::Table {
            reason: e.to_string(),
        })?;
    Ok(vec![
        ("profile_functions".into(), call_stats(&stats)?),
        ("profile_sites".into(), sites),
        ("matrix".into(), matrix(p)?),
        ("message_sizes".into(), sizes(p)?),
        ("phases".into(), phases(p)?),
    ])
}

fn call_stats(rows: &[&CallStats]) -> Result<DataFrame> {
    let get = |f: fn(&CallStats) -> u64| rows.iter().map(|r| f(r)).collect::<Vec<u64>>();
    frame(
        rows.len(),
        vec![
            col("call", rows.iter().map(|r| r.call).collect::<Vec<_>>()),
            col("count", get(|r| r.count)),
            col("ranks", rows.iter().map(|r| r.ranks).collect::<Vec<_>>()),
            col("total_ns", get(|r| r.total_ns)),
            col("mean_ns", get(|r| r.mean_ns)),
            col("min_ns", get(|r| r.min_ns)),
            col("max_ns", get(|r| r.max_ns)),
            col(
                "max_rank",
                rows.iter().map(|r| r.max_rank).collect::<Vec<_>>(),
            ),
            col(
                "mpi_share",
                rows.iter().map(|r| r.mpi_share).collect::<Vec<_>>(),
            ),
            col("wait_state_ns", get(|r| r.wait_state_ns)),
            col("sent_bytes", get(|r| r.sent_bytes)),
            col("received_bytes", get(|r| r.received_bytes)),
        ],
    )
}

fn matrix(p: &Profile) -> Result<DataFrame> {
    let pairs = &p.matrix.pairs;
    frame(
        pairs.len(),
        vec![
            col("from", pairs.iter().map(|r| r.from).collect::<Vec<_>>()),
            col("to", pairs.iter().map(|r| r.to).collect::<Vec<_>>()),
            col(
                "messages",
                pairs.iter().map(|r| r.messages).collect::<Vec<_>>(),
            ),
            col("bytes", pairs.iter().map(|r| r.bytes).collect::<Vec<_>>()),
        ],
    )
}

fn sizes(p: &Profile) -> Result<DataFrame> {
    let rows: Vec<_> = p
        .sizes
        .iter()
        .flat_map(|s| s.classes.iter().map(move |c| (s.call, c)))
        .collect();
    frame(
        rows.len(),
        vec![
            col(
                "call",
                rows.iter().map(|(call, _)| *call).collect::<Vec<_>>(),
            ),
            col(
                "min_bytes",
                rows.iter().map(|(_, c)| c.min_bytes).collect::<Vec<_>>(),
            ),
            col(
                "max_bytes",
                rows.iter().map(|(_, c)| c.max_bytes).collect::<Vec<_>>(),
            ),
            col(
                "messages",
                rows.iter().map(|(_, c)| c.messages).collect::<Vec<_>>(),
            ),
            col(
                "bytes",
                rows.iter().map(|(_, c)| c.bytes).collect::<Vec<_>>(),
            ),
        ],
    )
}

fn phases(p: &Profile) -> Result<DataFrame> {
    let r = &p.phases.ranks;
    frame(
        r.len(),
        vec![
            col("rank", r.iter().map(|x| x.rank).collect::<Vec<_>>()),
            col("setup_ns", r.iter().map(|x| x.setup_ns).collect::<Vec<_>>()),
            col("body_ns", r.iter().map(|x| x.body_ns).collect::<Vec<_>>()),
            col(
                "finalize_ns",
                r.iter().map(|x| x.finalize_ns).collect::<Vec<_>>(),
            ),
            col(
                "unknown",
                r.iter()
                    .map(|x| (!x.unknown.is_empty()).then(|| x.unknown.join("; ")))
                    .collect::<Vec<_>>(),
            ),
        ],
    )
}
