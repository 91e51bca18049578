//! The regions section of `overlap analyze --full`: the regions the program marked with
//! `MPI_Pcontrol` ([`crate::regions`]), one line each, with the time its ranks spent in
//! it. Absent when the run marks none.

use std::fmt::Write as _;

use serde::Serialize;

use super::Style;
use crate::analysis::Report;
use crate::regions::RegionSummary;
use crate::units::{at, duration};

/// The JSON report (`overlap analyze --json`) with the regions after its other keys:
/// `regions`, one [`RegionSummary`] each, empty when the run marks none; and
/// `regions_unknown`, why, when the files could not say
/// ([`crate::regions::RunRegions::unknown`]: `regions` is then empty but not "none").
#[derive(Serialize)]
pub struct WithRegions<'a> {
    /// The report, its keys as they are.
    #[serde(flatten)]
    pub report: &'a Report,
    /// The regions.
    pub regions: &'a [RegionSummary],
    /// Why the regions are unknown, when they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regions_unknown: Option<&'a str>,
    /// The window analysed (`--from/--to`, `--region`, `--ranks`); absent for the
    /// whole run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<&'a crate::window::WindowReport>,
}

/// The section, or an empty string for a run without regions; `unknown`: why the run's
/// regions cannot be told, said instead.
pub fn render_regions(regions: &[RegionSummary], unknown: Option<&str>, style: Style) -> String {
    let mut o = String::new();
    if let Some(why) = unknown.filter(|_| regions.is_empty()) {
        let title = style.bold("Regions (MPI_Pcontrol): unknown");
        let _ = writeln!(o, "\n{title}\n  {why}");
        return o;
    }
    if regions.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "\n{}",
        style.bold(&format!("Regions (MPI_Pcontrol): {}", regions.len()))
    );
    let _ = writeln!(
        o,
        "  {:<20} {:>9} {:>6}  {:>10} {:>10} {:>10}  from - to",
        "region", "instances", "ranks", "min/rank", "mean/rank", "max/rank"
    );
    for r in regions {
        let ranks = r.per_rank.len();
        let all = ranks + r.never_entered.len();
        let _ = writeln!(
            o,
            "  {:<20} {:>9} {:>6}  {:>10} {:>10} {:>10}  {} - {}",
            r.name,
            r.instances,
            format!("{ranks}/{all}"),
            duration(r.time.min_ns),
            duration(r.time.mean_ns.round() as u64),
            duration(r.time.max_ns),
            at(r.from_ns).trim(),
            at(r.to_ns).trim(),
        );
    }
    for r in regions {
        if !r.never_entered.is_empty() {
            let _ = writeln!(
                o,
                "  {}: never entered by rank(s) {}",
                r.name,
                list(&r.never_entered)
            );
        }
        if r.open > 0 {
            let _ = writeln!(
                o,
                "  {}: {} instance(s) never left (counted to their rank's last event)",
                r.name, r.open
            );
        }
    }
    let _ = writeln!(
        o,
        "  (`overlap merge DIR --out part.pftrace --region NAME` writes one region's part of \
         the run)"
    );
    o
}

/// `0, 3, 5` (at most 16, then how many more).
fn list(ranks: &[u32]) -> String {
    let mut s: Vec<String> = ranks.iter().take(16).map(u32::to_string).collect();
    if ranks.len() > 16 {
        s.push(format!("and {} more", ranks.len() - 16));
    }
    s.join(", ")
}
