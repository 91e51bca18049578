//! The window a report analysed (`--from/--to`, `--region`, `--ranks`), said first: its
//! times and ranks, what was cut at its edges, and what crosses them, whose figures are
//! unknown in it.

use std::fmt::Write as _;

use super::style::Style;
use crate::units::duration;
use crate::window::{rank_ranges, Crossing, WindowReport};

/// The lines of the window, or an empty string for the whole run.
pub fn render_window(w: &WindowReport, style: Style) -> String {
    let mut o = String::new();
    if w.asked.is_all() {
        return o;
    }
    let region = w
        .asked
        .region
        .as_ref()
        .map_or(String::new(), |r| format!(" (region {r})"));
    let ranks = match &w.asked.ranks {
        Some(_) => format!(", {} rank(s) of {}", w.ranks, w.ranks + w.ranks_left_out),
        None => format!(", all {} rank(s)", w.ranks),
    };
    let title = format!(
        "Window: {} to {} of the run{region}{ranks}",
        duration(w.from_ns),
        duration(w.to_ns)
    );
    let _ = writeln!(o, "{}", style.bold(&title));
    if w.rank_time_ns == 0 {
        let _ = writeln!(
            o,
            "  {}",
            style.paint(
                "33",
                "no rank's analysed part (from MPI_Init's end to MPI_Finalize's start) lies \
                 in it: nothing to analyse"
            )
        );
    }
    if let Some(r) = &w.asked.ranks {
        let _ = writeln!(o, "  ranks asked: {}", rank_ranges(r));
    }
    if !w.never_entered.is_empty() {
        let _ = writeln!(
            o,
            "  never entered the region (analysed in its time all the same): rank(s) {}",
            rank_ranges(&w.never_entered)
        );
    }
    let _ = writeln!(
        o,
        "  cut at its edges: {} call(s), {} compute span(s){}",
        w.calls_cut,
        w.compute_cut,
        if w.edge_marks > 0 {
            format!(
                "; {} call(s) outside it kept as instants at its edge (collective calls, to \
                 pair their instances; persistent requests' inits, which describe requests \
                 started in it)",
                w.edge_marks
            )
        } else {
            String::new()
        }
    );
    if w.messages.count > 0 {
        let _ = writeln!(
            o,
            "  crossing its edges, not analysed: {} message(s){}",
            w.messages.count,
            sides(&w.messages)
        );
    }
    if w.requests.count > 0 {
        let _ = writeln!(
            o,
            "  crossing its edges: {} request(s){}: their overlap is unknown",
            w.requests.count,
            sides(&w.requests)
        );
    }
    if w.collectives_partial > 0 {
        let _ = writeln!(
            o,
            "  {} collective instance(s) with members on ranks left out: their waits count \
             only the ranks analysed",
            w.collectives_partial
        );
    }
    if w.unknown_waits.calls > 0 {
        let _ = writeln!(
            o,
            "  wait states unknown (not counted) of {} call(s) in it waiting on those messages: \
             {} in them",
            w.unknown_waits.calls,
            duration(w.unknown_waits.ns)
        );
    }
    o
}

/// Where crossing ones have their other end: ` (3 before it, 1 on a rank left out)`.
fn sides(c: &Crossing) -> String {
    let parts: Vec<String> = [
        (c.before, "before it"),
        (c.after, "after it"),
        (c.rank_left_out, "on a rank left out"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}
