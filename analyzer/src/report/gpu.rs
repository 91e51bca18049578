//! The report's GPU section: each rank's copies, kernels and host waits, the staging
//! chains' latency by step, and the findings with their evidence.

use std::fmt::Write as _;

use super::style::Style;
use crate::gpu::{Breakdown, CopyStats, GpuReport};
use crate::units::{bytes, pct};
use crate::units::{duration, share};

/// `n: bytes, time` for a direction of copies (the bytes in all: copies of one direction
/// need not be the same size), `-` when there was none.
fn copies(c: &CopyStats) -> String {
    if c.count == 0 {
        return "-".into();
    }
    format!("{}: {}, {}", c.count, bytes(c.bytes), duration(c.busy_ns))
}

/// A step of a breakdown, `unknown` when no chain recorded it.
fn step(v: Option<u64>) -> String {
    v.map_or("unknown".into(), duration)
}

fn steps(b: &Breakdown) -> String {
    format!(
        "D2H {}, wait until send {}, transfer {}, wait until H2D {}, H2D {}; total {}",
        step(b.d2h_ns),
        step(b.wait_send_ns),
        step(b.transfer_ns),
        step(b.wait_h2d_ns),
        step(b.h2d_ns),
        step(b.total_ns)
    )
}

/// Writes the section; nothing when the run has no GPU work. `whole`: every rank's
/// trace is there and complete, so no finding means none.
pub(super) fn section(o: &mut String, g: Option<&GpuReport>, whole: bool, style: Style) {
    let Some(g) = g else { return };
    let _ = writeln!(
        o,
        "\n{}",
        style.bold(&format!(
            "GPU ({}; device times within {})",
            g.backend
                .as_deref()
                .map_or("backend not recorded".to_string(), |b| format!(
                    "backend {b}"
                )),
            duration(g.clock_error_ns)
        ))
    );
    // Two tables of at most 100 columns: the copies, then where the time went.
    let _ = writeln!(
        o,
        "{:>5}  {:<26} {:<26} D2D copies",
        "rank", "D2H copies", "H2D copies"
    );
    for r in &g.ranks {
        let _ = writeln!(
            o,
            "{:>5}  {:<26} {:<26} {}",
            r.rank,
            copies(&r.d2h),
            copies(&r.h2d),
            copies(&r.d2d)
        );
    }
    let _ = writeln!(
        o,
        "{:>5}  {:>10}  {:>10}  {:>18}  {:>14}  {:>15}",
        "rank", "kernels", "host waits", "GPU idle in waits", "copies w/ msgs", "pipeline hidden"
    );
    for r in &g.ranks {
        let _ = writeln!(
            o,
            "{:>5}  {:>10}  {:>10}  {:>10} {:>7}  {:>14}  {:>15}",
            r.rank,
            duration(r.kernel_ns),
            duration(r.host_wait_ns),
            duration(r.gpu_idle_in_host_blocked_ns),
            share(r.gpu_idle_in_host_blocked_ns, r.host_blocked_ns).trim(),
            share(r.copy_with_messages_ns, r.copy_ns).trim(),
            share(r.pipeline_hidden_ns, r.pipeline_ns).trim(),
        );
    }
    let c = &g.chains;
    let _ = writeln!(
        o,
        "  staging chains: {} ({} with both copies); the compute hid {} of the pipeline",
        c.count,
        c.complete,
        g.pipeline_hidden
            .map_or("unknown".to_string(), |f| pct(f).trim().to_string())
    );
    if c.count > 0 {
        let _ = writeln!(o, "    mean: {}", steps(&c.mean));
        let _ = writeln!(o, "    max:  {}", steps(&c.max));
    }
    for w in c.worst.iter().take(3) {
        let _ = writeln!(
            o,
            "    slow: message {} rank {} -> {} tag {} {}{}: {}",
            w.message,
            w.from,
            w.to,
            w.tag,
            bytes(w.bytes),
            w.packet.map_or(String::new(), |p| format!(" packet {p}")),
            steps(&w.breakdown)
        );
    }
    if g.findings.is_empty() {
        let _ = writeln!(
            o,
            "  no GPU finding{}",
            if whole {
                ""
            } else {
                " in what was recorded (ranks are missing or cut short: the rest is unknown)"
            }
        );
    }
    for f in &g.findings {
        let _ = writeln!(
            o,
            "  {} on rank {}: {} ({} of {} instances, worst {})",
            style.bold(f.kind.title()),
            f.rank,
            duration(f.lost_ns),
            f.instances,
            f.of,
            duration(f.worst_ns)
        );
        for e in &f.evidence {
            let _ = writeln!(o, "    {e}");
        }
        let _ = writeln!(o, "    fix: {}", f.suggestion);
    }
}
