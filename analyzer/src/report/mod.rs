//! The human report of `overlap analyze`: tables that fit a 100-column terminal, worst
//! offenders first, colour only when asked for (the CLI asks when stdout is a terminal
//! and `NO_COLOR` is unset).

use std::fmt::Write as _;

mod finding;
mod gpu;
pub mod hang;
mod network;
mod profile;
mod requests;
mod sites;
mod summary;

use finding::finding;
pub use network::{hockney, network_line};
pub use profile::render_profile;
use sites::by_site;
pub use summary::render_summary;

use overlap_format::schema::{ParamValue, PROVENANCE_PARAMS};

use crate::analysis::Report;
use crate::metrics::pop::TIdealMethod;
use crate::metrics::{CallRef, WaitKind};
use crate::model::compute::ComputeSource;
use crate::units::{at, duration, pct, share};

/// How to render.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// ANSI colours and bold.
    pub color: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }
    /// Green at or above 0.8 (POP's threshold), yellow above 0.6, red below.
    fn efficiency(&self, v: f64, text: &str) -> String {
        let code = if v >= 0.8 {
            "32"
        } else if v >= 0.6 {
            "33"
        } else {
            "31"
        };
        self.paint(code, text)
    }
}

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
            "{}{variant}: {} of {} ranks traced, {} events, {} messages, run {}",
            if run.program.is_empty() {
                "run"
            } else {
                &run.program
            },
            run.ranks_traced,
            run.world_size,
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

/// Renders the whole report (`overlap analyze --full`): every section.
pub fn render(r: &Report, style: Style) -> String {
    let mut o = String::new();
    head(&mut o, r, style);
    ranks_table(&mut o, r, style, usize::MAX);
    let run = &r.run;

    // Wait states.
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

    requests::section(&mut o, r, style);

    // False overlap.
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
        finding(&mut o, f);
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

    by_site(&mut o, r, style);
    let whole =
        run.missing_ranks.is_empty() && run.incomplete_ranks.is_empty() && run.completeness_known;
    gpu::section(&mut o, r.gpu.as_ref(), whole, style);

    // POP.
    let p = &r.pop;
    let _ = writeln!(o, "\n{}", style.bold("POP efficiencies"));
    let line = |o: &mut String, name: &str, v: Option<f64>| {
        let shown = match v {
            Some(v) => style.efficiency(v, &pct(v)),
            None => "unknown (no time to divide by)".to_string(),
        };
        let _ = writeln!(o, "  {:<30} {}", name, shown);
    };
    line(&mut o, "parallel efficiency", p.parallel_efficiency);
    line(&mut o, "  load balance", p.load_balance);
    line(
        &mut o,
        "  communication efficiency",
        p.communication_efficiency,
    );
    line(
        &mut o,
        "    serialization efficiency",
        p.serialization_efficiency,
    );
    line(&mut o, "    transfer efficiency", p.transfer_efficiency);
    let _ = writeln!(
        o,
        "  (T {}; T_ideal {} by {}{})",
        duration(p.runtime_ns),
        duration(p.t_ideal_ns),
        match p.t_ideal_method {
            TIdealMethod::Replay => "ideal-network replay",
            TIdealMethod::Subtraction => "subtraction of non-waiting MPI time",
        },
        match p.t_ideal_method {
            TIdealMethod::Replay =>
                format!(", {} by subtraction", duration(p.t_ideal_subtraction_ns)),
            TIdealMethod::Subtraction => String::new(),
        }
    );
    if let Some(check) = &r.replay {
        let confirmable = match run.oversubscription.oversubscribed {
            Some(true) => "; not confirmable: ranks shared CPUs",
            _ => "",
        };
        let _ = writeln!(
            o,
            "  replay.self_error {} (the measured order replayed on the network fitted to this \
             trace, progress only inside MPI calls: {} for {} measured{confirmable})",
            check
                .self_error
                .map_or("unknown".to_string(), |e| format!("{:+.1}%", e * 100.0)),
            duration(check.replayed_ns),
            duration(check.measured_ns)
        );
    } else if let Some(why) = &r.replay_unknown {
        let _ = writeln!(o, "  replay.self_error unknown: {why}");
    }

    // Clock.
    let c = &r.clock;
    let _ = writeln!(
        o,
        "\nclock: {}; {} clock-suspect message(s); {} wait(s) within the error bound ({})",
        if c.shared_clock {
            "all ranks read one clock (exact)".to_string()
        } else {
            format!("error bound up to {}", duration(c.max_error_ns))
        },
        c.suspect_messages,
        c.indeterminate_waits,
        duration(c.indeterminate_wait_ns)
    );
    o
}

/// What of the wait states happened while the ranks set up (from MPI_Init to each
/// rank's first call after it): start-up skew, said apart from the body's waits.
pub(super) fn setup_waits(r: &Report) -> Option<String> {
    let ns = r.profile.phases.setup_wait_state_ns;
    (ns > 0).then(|| {
        format!(
            "{} of them during setup (MPI_Init to each rank's first call after it): start-up \
             skew, not the body's communication",
            duration(ns)
        )
    })
}

/// True when the call of `rank` that started at `start_ns` was made during its setup.
pub(super) fn in_setup(r: &Report, rank: u32, start_ns: u64) -> bool {
    r.profile
        .phases
        .ranks
        .iter()
        .find(|p| p.rank == rank)
        .and_then(|p| p.setup_end_ns)
        .is_some_and(|end| start_ns < end)
}

/// A call as the text names it: `MPI_Waitall at 1.203 ms`, and its source line when known.
pub(super) fn place(c: &CallRef) -> String {
    match &c.site {
        Some(site) => format!("{} at {} ({site})", c.call, at(c.start_ns)),
        None => format!("{} at {}", c.call, at(c.start_ns)),
    }
}
