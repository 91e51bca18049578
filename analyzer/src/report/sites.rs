//! The by-site section of the report: what one line of source costs, summed over its
//! instances.

use std::fmt::Write as _;

use super::style::Style;
use crate::analysis::Report;
use crate::metrics::by_site::SiteGroup;
use crate::units::{count, duration, fit};

/// The by-site tables: what one line of source costs, summed over its instances.
pub(super) fn by_site(o: &mut String, r: &Report, style: Style) {
    let b = &r.by_site;
    let sections: [(&str, &[SiteGroup], &str); 2] = [
        ("False overlap by call site", &b.false_overlap, "finding"),
        ("Wait states by call site", &b.wait_states, "wait"),
    ];
    for (title, groups, noun) in sections {
        if groups.is_empty() {
            continue;
        }
        let _ = writeln!(o, "\n{}", style.bold(title));
        for g in groups.iter().take(5) {
            let what = match g.kind {
                Some(k) => format!("{}, {}", g.call, k.title()),
                None => g.call.to_string(),
            };
            let tail = format!(
                " {what}: {} {noun}{} on {} rank{}, {} lost, worst {}",
                count(g.count),
                if g.count == 1 { "" } else { "s" },
                g.ranks,
                if g.ranks == 1 { "" } else { "s" },
                duration(g.total_ns),
                duration(g.worst_ns)
            );
            let site = g.site.as_deref().unwrap_or("(site unknown)");
            if site.chars().count() + tail.chars().count() <= 98 {
                let _ = writeln!(o, "  {site}{tail}");
            } else {
                // A long label gets a line of its own.
                let _ = writeln!(o, "  {}\n     {tail}", fit(site, 98));
            }
        }
        if groups.len() > 5 {
            let _ = writeln!(
                o,
                "  ... and {} more site(s) (see --json)",
                groups.len() - 5
            );
        }
    }
    let shown = !b.false_overlap.is_empty() || !b.wait_states.is_empty();
    if shown {
        for note in b.notes.iter().take(3) {
            let _ = writeln!(o, "  {}", fit(&format!("note: {note}"), 98));
        }
        if b.notes.len() > 3 {
            let _ = writeln!(
                o,
                "  ... and {} more note(s) (see --json)",
                b.notes.len() - 3
            );
        }
    }
}
