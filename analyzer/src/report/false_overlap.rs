//! The report's `false_overlap` field as text: what the waits lost, what moving them could
//! hide, and the worst findings.

use std::fmt::Write as _;

use super::finding::{self, finding};
use super::style::Style;
use crate::analysis::Report;
use crate::units::duration;

/// Appends the false-overlap findings.
pub(super) fn section(o: &mut String, r: &Report, style: Style) {
    let fo = &r.false_overlap;
    let title = if fo.is_empty() {
        "False overlap: none found".to_string()
    } else {
        format!(
            "False overlap: {} wait(s) lost {}; moving them could hide up to {} ({} of it proven)",
            fo.count,
            duration(fo.lost_ns),
            duration(fo.hideable_ns),
            duration(fo.proven_hideable_ns)
        )
    };
    let _ = writeln!(
        o,
        "\n{}",
        if fo.is_empty() {
            style.paint("32;1", &title)
        } else {
            style.paint("31;1", &title)
        }
    );
    let shown = fo.worst.len().min(5);
    for f in &fo.worst[..shown] {
        finding(o, f);
    }
    let more = fo.count.saturating_sub(shown as u64);
    if more > 0 && fo.unlisted() == 0 {
        let _ = writeln!(o, "  ... and {more} more (see --json)");
    } else if more > 0 {
        let _ = writeln!(
            o,
            "  ... and {more} more: --json lists the worst {} of {} (--findings), all are \
             grouped by site below",
            fo.worst.len(),
            fo.count
        );
    }
    if fo.proven_hideable_ns < fo.hideable_ns {
        let _ = writeln!(o, "  ({})", finding::UNPROVEN);
    }
}
