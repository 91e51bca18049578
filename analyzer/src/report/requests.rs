//! The report's requests: how many, how much they overlapped, the network model their
//! `t_pure` came from (or why it is unknown), the non-blocking collectives, and overlap
//! written but not achieved.

use std::fmt::Write as _;

use super::calls::place;
use super::style::Style;
use crate::analysis::Report;
use crate::metrics::transfer::TransferModel;
use crate::units::{bytes, duration, pct, rate};

/// Writes the section of `r` into `o`.
pub(super) fn section(o: &mut String, r: &Report, style: Style) {
    let q = &r.requests;
    let mut kinds = format!("{} sends, {} receives", q.sends, q.receives);
    if q.collectives > 0 {
        let _ = write!(kinds, ", {} collectives", q.collectives);
    }
    if q.one_sided > 0 {
        let _ = write!(kinds, ", {} one-sided", q.one_sided);
    }
    let _ = writeln!(
        o,
        "\n{}",
        style.bold(&format!(
            "Requests: {} ({kinds}); mean overlap {}; {} overlapped nothing",
            q.count,
            q.mean_overlap
                .map_or("unknown (no transfer time estimate)".to_string(), |m| pct(
                    m
                )
                .trim()
                .to_string()),
            q.zero_overlap
        ))
    );
    let model = transfer_model(&q.transfer_model);
    let _ = writeln!(o, "  exposed wait {}; {model}", duration(q.exposed_wait_ns));
    if q.never_completed > 0 {
        let _ = writeln!(o, "  {} request(s) never completed", q.never_completed);
    }
    if q.freed > 0 {
        let _ = writeln!(
            o,
            "  {} request(s) let go with MPI_Request_free before completing: their end is \
             unknown",
            q.freed
        );
    }
    if let Some(c) = &q.nbc {
        let opt_pct =
            |v: Option<f64>| v.map_or("unknown".to_string(), |v| pct(v).trim().to_string());
        let _ = writeln!(
            o,
            "  non-blocking collectives: {} completed; mean overall {}, pure communication {}, \
             compute in window {}; overlap {} (IMB), {} (OSU)",
            c.completed,
            duration(c.mean_overall_ns),
            c.mean_pure_ns.map_or("unknown".to_string(), duration),
            duration(c.mean_cpu_ns),
            opt_pct(c.mean_overlap),
            opt_pct(c.mean_osu_overlap)
        );
    }
    let na = &q.written_not_achieved;
    if na.count > 0 {
        let _ = writeln!(
            o,
            "  {}",
            style.paint(
                "33;1",
                &format!(
                    "overlap written, not achieved: {} request(s) computed in their window yet \
                     their {} completing call(s) waited {} for the transfers afterwards",
                    na.count,
                    na.calls,
                    duration(na.wait_ns)
                )
            )
        );
        for q in &na.worst {
            let _ = writeln!(
                o,
                "    rank {} {} req {} ({}): compute {} in the window, then {} in {}",
                q.rank,
                place(&q.post),
                q.request,
                bytes(q.bytes),
                duration(q.cpu_ns),
                duration(q.progress_wait_ns),
                q.completion.as_ref().map_or("?".to_string(), place)
            );
        }
        let _ = writeln!(o, "    hint: {}", na.hint);
    }
    if na.unknown > 0 {
        let _ = writeln!(
            o,
            "  {} completed request(s): whether their overlap was achieved is unknown (no \
             transfer time estimate)",
            na.unknown
        );
    }
    if na.descheduled > 0 {
        let _ = writeln!(
            o,
            "  {} completed request(s) waited far past their transfer on a host with more \
             ranks than CPUs: the scheduler's wait, not counted as written, not achieved",
            na.descheduled
        );
    }
}

/// The network model in one line: its line and range, or why it is unknown and the
/// sizes it measured all the same (their `t_pure` is known).
fn transfer_model(m: &TransferModel) -> String {
    let measured = format!("{} clean transfer(s) of {} message(s)", m.clean, m.messages);
    match (m.line(), m.range, &m.unknown) {
        (Some(line), Some(range), _) => {
            let typical = m.typical_line().map_or(String::new(), |t| {
                format!(
                    "; typically latency {}, bandwidth {}",
                    duration(t.latency_ns.round() as u64),
                    rate(1e9 / t.ns_per_byte)
                )
            });
            format!(
                "network fitted to {measured}: latency {}, bandwidth {} (range x{:.2} to \
                 x{:.2}{typical})",
                duration(line.latency_ns.round() as u64),
                rate(1e9 / line.ns_per_byte),
                range.low,
                range.high
            )
        }
        (_, _, unknown) => {
            let why = unknown
                .as_ref()
                .map_or("unknown".to_string(), ToString::to_string);
            let classes: Vec<String> = m
                .estimated()
                .take(3)
                .map(|c| {
                    format!(
                        "{} ({}) {}",
                        bytes(c.bytes),
                        c.protocol.name(),
                        duration(c.estimate_ns.unwrap_or(0))
                    )
                })
                .collect();
            let known = if classes.is_empty() {
                "t_pure unknown for every size".to_string()
            } else {
                format!("t_pure known only for {}", classes.join(", "))
            };
            format!("network unknown ({measured}): {why}; {known}")
        }
    }
}
