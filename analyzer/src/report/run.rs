//! The report's head, from its `run` and `ranks` fields: what was traced and what is
//! missing, where the recording came from, the hang when there is one, and the time per
//! rank.

use std::fmt::Write as _;

use overlap_format::schema::{ParamValue, PROVENANCE_PARAMS};

use super::hang;
use super::style::Style;
use crate::analysis::Report;
use crate::model::compute::ComputeSource;
use crate::units::{duration, share};

/// Where the recording came from, in one line (`MPI: Open MPI v4.1.4; launcher: ...`):
/// the header's provenance parameters that the recorder wrote (a run of the Rust layer,
/// or an older preload, has fewer or none).
fn provenance(params: &std::collections::BTreeMap<String, ParamValue>) -> Option<String> {
    let parts: Vec<String> = PROVENANCE_PARAMS
        .iter()
        .filter_map(|(key, label)| match params.get(*key) {
            Some(ParamValue::Text(t)) if !t.trim().is_empty() => {
                Some(format!("{label}: {}", t.trim()))
            }
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Why the table's *waiting* and *wait st.* differ, said under it (docs/metrics.md,
/// sections 2 and 3): two measures of waiting, neither part of the other.
pub const WAITING_VS_WAIT_STATES: [&str; 2] = [
    "waiting: whole calls of the kinds that only wait (Wait, Test, blocking Send/Recv, Barrier);",
    "wait st.: the time any call, collectives included, spent on a late partner (Wait states)",
];

/// The report's first line and what it says about the run before any figure (how it
/// was recorded, what is missing, what was inferred).
pub(super) fn head(o: &mut String, r: &Report, style: Style) {
    let run = &r.run;
    let variant = run
        .params
        .get("variant")
        .map(|v| match v {
            ParamValue::Text(t) => format!(" ({t})"),
            other => format!(" ({other:?})"),
        })
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "{}",
        style.bold(&format!(
            "{}{variant}: {} of {} ranks {}, {} events, {} messages, run {}",
            if run.program.is_empty() {
                "run"
            } else {
                &run.program
            },
            run.ranks_traced,
            run.world_size,
            if run.windowed {
                "in the window"
            } else {
                "traced"
            },
            run.events,
            run.messages,
            duration(r.totals.wall_ns)
        ))
    );
    if let Some(line) = provenance(&run.params) {
        let _ = writeln!(o, "  {line}");
    }
    if let Some(line) = run.oversubscription.warning() {
        let _ = writeln!(o, "  {line}");
    }
    hang::section(o, r.hang.as_ref());
    if !run.missing_ranks.is_empty() {
        let _ = writeln!(
            o,
            "  missing ranks (none of their events in the trace): {:?}",
            run.missing_ranks
        );
    }
    if !run.incomplete_ranks.is_empty() {
        let _ = writeln!(o, "  cut short: ranks {:?}", run.incomplete_ranks);
    }
    if !run.completeness_known {
        let _ = writeln!(
            o,
            "  completeness unknown: a merged file this old does not count each rank's events"
        );
    }
    for c in &run.clock_implausible {
        let _ = writeln!(
            o,
            "  rank {}: implausible clock alignment: {}",
            c.rank, c.reason
        );
    }
    for p in &run.peers_out_of_range {
        let _ = writeln!(
            o,
            "  rank {}: {} call(s) name a peer outside the world (first {} to rank {}): not \
             matched",
            p.rank, p.calls, p.first_call, p.first_peer
        );
    }
    if run.compute_source.is_inferred() {
        let _ = writeln!(
            o,
            "  compute inferred from the gaps between MPI calls ({} ranks: no compute spans \
             recorded); overlap and false overlap use it",
            match run.compute_source {
                ComputeSource::Gaps => "all",
                _ => "some",
            }
        );
    }
    if let Some(g) = &run.gpu_unrecorded {
        let _ = writeln!(o, "  {}", g.said());
    }
    for u in &run.unseen_requests {
        let _ = writeln!(o, "  {}", style.bold(&format!("warning: {u}")));
    }
    if run.unmatched_sends + run.unmatched_receives > 0 {
        let _ = writeln!(
            o,
            "  unmatched: {} send(s), {} receive(s)",
            run.unmatched_sends, run.unmatched_receives
        );
    }
}

/// Time per rank, most waiting first: at most `limit` ranks, the others counted.
pub(super) fn ranks_table(o: &mut String, r: &Report, style: Style, limit: usize) {
    // Time per rank, most waiting first.
    let _ = writeln!(o, "\n{}", style.bold("Time per rank (most waiting first)"));
    let _ = writeln!(
        o,
        "{:>5}  {:<12} {:>10}  {:>17}  {:>17}  {:>17}  {:>10}",
        "rank", "host", "wall", "useful", "in MPI", "waiting", "wait st."
    );
    let mut ranks: Vec<_> = r.ranks.iter().collect();
    ranks.sort_by_key(|b| (std::cmp::Reverse(b.waiting_ns), b.rank));
    let hidden = ranks.len().saturating_sub(limit);
    for b in ranks.into_iter().take(limit) {
        let host: String = b.host.chars().take(12).collect();
        if !b.complete && b.wall_ns == 0 {
            let nothing = crate::summary::NOTHING_RECORDED;
            let _ = writeln!(o, "{:>5}  {host:<12} {nothing}", b.rank);
            continue;
        }
        let ws = r.wait_states.per_rank_ns.get(&b.rank).copied().unwrap_or(0);
        let _ = writeln!(
            o,
            "{:>5}  {:<12} {:>10}  {:>10} {}  {:>10} {}  {:>10} {}  {:>10}{}",
            b.rank,
            host,
            duration(b.wall_ns),
            duration(b.useful_ns),
            share(b.useful_ns, b.wall_ns),
            duration(b.in_mpi_ns),
            share(b.in_mpi_ns, b.wall_ns),
            duration(b.waiting_ns),
            share(b.waiting_ns, b.wall_ns),
            duration(ws),
            if b.complete { "" } else { "  cut short" }
        );
    }
    if hidden > 0 {
        let _ = writeln!(
            o,
            "  ... and {hidden} more rank(s) (--full lists every rank)"
        );
    }
    for line in WAITING_VS_WAIT_STATES {
        let _ = writeln!(o, "  {line}");
    }
}
