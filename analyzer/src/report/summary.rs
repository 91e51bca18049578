//! The report on one screen (`overlap analyze`'s default): the run and what was
//! missing or inferred, time per rank (the most waiting first, a few), where the waits
//! went and the POP efficiency in a line each, the five largest false-overlap findings
//! with their source lines, and the five call sites that lost the most. `--full` prints
//! every section ([`super::render`]), `--profile` the profile, `--json` everything.

use std::fmt::Write as _;

use super::finding::finding;
use super::run::{head, ranks_table};
use super::style::Style;
use crate::analysis::Report;
use crate::metrics::by_site::SiteGroup;
use crate::units::{count, duration, pct};

/// Ranks listed in the summary's table.
const RANKS: usize = 4;
/// Findings and sites listed.
const TOP: usize = 5;

/// Renders the report's summary.
pub fn render_summary(r: &Report, style: Style) -> String {
    let mut o = String::new();
    head(&mut o, r, style);
    ranks_table(&mut o, r, style, RANKS);
    waits_and_pop(&mut o, r);
    findings(&mut o, r, style);
    sites(&mut o, r, style);
    let _ = writeln!(
        o,
        "\nmore: --full (every section: wait states, requests, POP, clock), --profile (time \
         per function and site, matrix), --json"
    );
    o
}

/// The wait states by kind and the POP efficiencies, a line each.
fn waits_and_pop(o: &mut String, r: &Report) {
    let ws = &r.wait_states;
    let mut kinds: Vec<_> = ws.kinds.iter().filter(|k| k.total_ns > 0).collect();
    kinds.sort_by_key(|k| std::cmp::Reverse(k.total_ns));
    let by_kind = kinds
        .iter()
        .take(3)
        .map(|k| format!("{} {}", k.kind.title(), duration(k.total_ns)))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(
        o,
        "\nwait states: {} ({} of all rank time){}",
        duration(ws.total_ns),
        ws.fraction
            .map_or("unknown".into(), |f| pct(f).trim().to_string()),
        if by_kind.is_empty() {
            String::new()
        } else {
            format!(": {by_kind}")
        }
    );
    if let Some(line) = super::calls::setup_waits(r) {
        let _ = writeln!(o, "  {line}");
    }
    let p = &r.pop;
    let eff = |v: Option<f64>| v.map_or("unknown".to_string(), |v| pct(v).trim().to_string());
    let _ = writeln!(
        o,
        "POP: parallel efficiency {} (load balance {}, communication {})",
        eff(p.parallel_efficiency),
        eff(p.load_balance),
        eff(p.communication_efficiency)
    );
}

/// The largest false-overlap findings.
fn findings(o: &mut String, r: &Report, style: Style) {
    let fo = &r.false_overlap;
    if fo.is_empty() {
        let _ = writeln!(o, "\n{}", style.paint("32;1", "False overlap: none found"));
        return;
    }
    let title = format!(
        "False overlap: {} wait(s) lost {}; moving them could hide up to {} (largest first)",
        fo.count,
        duration(fo.lost_ns),
        duration(fo.hideable_ns)
    );
    let _ = writeln!(o, "\n{}", style.paint("31;1", &title));
    let shown = fo.worst.len().min(TOP);
    for f in &fo.worst[..shown] {
        finding(o, f);
    }
    let more = fo.count.saturating_sub(shown as u64);
    if more > 0 {
        let _ = writeln!(o, "  ... and {more} more (--json lists them)");
    }
}

/// The call sites that lost the most, to wait states or false overlap.
fn sites(o: &mut String, r: &Report, style: Style) {
    let b = &r.by_site;
    let mut all: Vec<(&SiteGroup, &str)> = b
        .wait_states
        .iter()
        .map(|g| (g, "wait"))
        .chain(b.false_overlap.iter().map(|g| (g, "false-overlap finding")))
        .collect();
    if all.is_empty() {
        return;
    }
    all.sort_by_key(|(g, _)| std::cmp::Reverse(g.total_ns));
    let _ = writeln!(o, "\n{}", style.bold("Call sites that lost the most"));
    for (g, noun) in all.iter().take(TOP) {
        let what = match g.kind {
            Some(k) => format!("{}, {}", g.call, k.title()),
            None => format!("{}, false overlap", g.call),
        };
        let _ = writeln!(
            o,
            "  {:>10}  {} {what}: {} {noun}{} on {} rank(s)",
            duration(g.total_ns),
            g.site.as_deref().unwrap_or("(site unknown)"),
            count(g.count),
            if g.count == 1 { "" } else { "s" },
            g.ranks
        );
    }
    if all.len() > TOP {
        let _ = writeln!(o, "  ... and {} more (--full)", all.len() - TOP);
    }
}
