//! The report's `wait_states` field as text: the total, each kind's, the time the
//! scheduler explains, and the worst instances.

use std::fmt::Write as _;

use super::calls::{in_setup, setup_waits};
use super::style::Style;
use crate::analysis::Report;
use crate::metrics::WaitKind;
use crate::units::{at, duration, pct};

/// Appends the wait states.
pub(super) fn section(o: &mut String, r: &Report, style: Style) {
    let ws = &r.wait_states;
    let _ = writeln!(
        o,
        "\n{}",
        style.bold(&format!(
            "Wait states: {} ({} of all rank time)",
            duration(ws.total_ns),
            ws.fraction
                .map_or("unknown".into(), |f| pct(f).trim().to_string())
        ))
    );
    if let Some(line) = setup_waits(r) {
        let _ = writeln!(o, "  {line}");
    }
    let _ = writeln!(
        o,
        "  {:<16} {:>10} {:>8} {:>7}  {:>14}",
        "kind", "total", "count", "share", "indeterminate"
    );
    // The point-to-point and classic collective kinds always; the others (scans,
    // windows, one-sided synchronisation) when they occurred.
    let shown = ws.kinds.iter().filter(|k| {
        WaitKind::ALL[..6].contains(&k.kind) || k.count > 0 || k.indeterminate_count > 0
    });
    for k in shown {
        let _ = writeln!(
            o,
            "  {:<16} {:>10} {:>8} {:>7}  {:>14}",
            k.kind.title(),
            duration(k.total_ns),
            k.count,
            k.fraction.map_or("-".into(), pct),
            if k.indeterminate_count == 0 {
                "-".to_string()
            } else {
                format!(
                    "{} ({})",
                    k.indeterminate_count,
                    duration(k.indeterminate_ns)
                )
            }
        );
    }
    let d = &ws.descheduled;
    if d.calls + d.instances > 0 {
        let _ = writeln!(
            o,
            "  descheduled (ranks shared CPUs; counted apart): {} call(s) held {} past their \
             partners and transfers, {} wait(s) of {} for a peer so held",
            d.calls,
            duration(d.total_ns),
            d.instances,
            duration(d.instances_ns)
        );
    }
    let mut worst: Vec<_> = ws.kinds.iter().flat_map(|k| k.worst.iter()).collect();
    worst.sort_by_key(|w| std::cmp::Reverse(w.amount_ns));
    if !worst.is_empty() {
        let _ = writeln!(o, "  worst:");
    }
    for w in worst.iter().take(5) {
        let whom = match w.kind {
            WaitKind::LateSender => "for the sender, rank",
            WaitKind::LateReceiver => "for the receiver, rank",
            WaitKind::LateBroadcast => "for the root, rank",
            WaitKind::LatePost => "for the target's post, rank",
            WaitKind::EarlyWait | WaitKind::LateComplete => "for the origin's complete, rank",
            _ => "for the last to arrive, rank",
        };
        let _ = writeln!(
            o,
            "    {:>10}  rank {:<4} {:<13} at {}  {} {}{}",
            duration(w.amount_ns),
            w.rank,
            w.call,
            at(w.start_ns),
            whom,
            w.peer.map_or("?".into(), |p| p.to_string()),
            match (w.clock_suspect, in_setup(r, w.rank, w.start_ns)) {
                (true, true) => "  (clock-suspect; during setup)",
                (true, false) => "  (clock-suspect)",
                (false, true) => "  (during setup)",
                (false, false) => "",
            }
        );
    }
}
