//! The suggestion in words: each group's moves and their gains, the iteration before
//! and after side by side, the prediction with its range, the assumptions.

use std::fmt::Write;

use crate::dag::RankOrder;
use crate::ops::{OpKind, RankProgram};
use crate::replay::Replay;
use crate::report::units::duration;

use super::describe::{assumptions, Namer};
use super::moves::Pattern;
use super::{Group, MoveReport, Suggestion, Verdict};

/// Moves listed per group in the text report (all of them are in the JSON).
const SHOWN: usize = 20;

/// Short names of `ops` (in that order), completions of one call shown as one line.
fn lines(namer: &Namer, rank: &RankProgram, ops: &[usize]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut last_call: Option<u32> = None;
    for &i in ops {
        let op = &rank.ops[i];
        let completion = matches!(op.kind, OpKind::Complete { .. });
        if completion && last_call == Some(op.span) {
            // Same Wait call as the line before: fold its request into that line.
            let name = namer.short(rank, i);
            if let (Some(prev), Some(open)) = (out.last_mut(), name.find('[')) {
                if let (Some(p_close), Some(close)) = (prev.find(']'), name.find(']')) {
                    let added = format!(", {}", &name[open + 1..close]);
                    prev.insert_str(p_close, &added);
                    continue;
                }
            }
        }
        last_call = completion.then_some(op.span);
        out.push(namer.short(rank, i));
    }
    out
}

/// One group's part of the suggestion.
#[allow(clippy::too_many_arguments)]
pub(super) fn group(
    namer: &Namer,
    slots: &[usize],
    ranked: &[(RankOrder, Vec<Pattern>)],
    gains: &[Vec<Option<i64>>],
    uncertainty_ns: u64,
    suggested_orders: &[Vec<usize>],
    measured: &Replay,
    suggested: Option<&Replay>,
) -> Group {
    let first = slots[0];
    let rank = &namer.program.ranks[first];
    let (order, patterns) = &ranked[first];
    let period = order.period;
    let mut position = vec![0usize; rank.ops.len()];
    for (p, &i) in order.consensus.order.iter().enumerate() {
        position[i] = p;
    }
    let moves = patterns
        .iter()
        .zip(&gains[first])
        .map(|(p, gain)| {
            let m = &p.shown;
            let what = if m.ops.len() > 1 {
                let call = rank.ops[m.ops[0]].call.map_or("MPI call", |c| c.mpi_name());
                let site = namer
                    .site(rank.rank, rank.ops[m.ops[0]].span as usize)
                    .map_or(String::new(), |s| format!(" at {s}"));
                format!("{call}{site} ({} requests)", m.ops.len())
            } else {
                namer.long(rank, m.ops[0])
            };
            let from_after = m.after.map(|a| namer.short(rank, a));
            let to_before = m.before.map(|b| namer.short(rank, b));
            let next_iteration = match (period, m.before) {
                (Some(per), Some(b)) => per.scope(b) > per.scope(m.ops[0]),
                _ => false,
            };
            let mut text = format!("move {what}");
            // Moved just over the operation before it: say so, not "from after X to
            // before X".
            let over_predecessor = m.after.is_some() && m.after == m.before;
            if let (Some(a), false) = (&from_after, over_predecessor) {
                let _ = write!(text, " from after {a}");
            }
            match &to_before {
                Some(b) if over_predecessor => {
                    let _ = write!(text, " to just before {b}, the operation it followed");
                }
                Some(b) => {
                    let _ = write!(text, " to before {b}");
                    if next_iteration {
                        text.push_str(" of the next iteration");
                    }
                }
                None => text.push_str(" to the end"),
            }
            let mut found = Vec::new();
            for &o in &m.ops {
                // The operations it crosses lie between it and where it lands.
                let land = [m.before, m.now_after].into_iter().flatten();
                let (lo, hi) = land.fold((o, o), |(lo, hi), x| (lo.min(x), hi.max(x)));
                for a in assumptions(namer, rank, o, &position, (lo, hi)) {
                    if !found.contains(&a) {
                        found.push(a);
                    }
                }
            }
            MoveReport {
                text,
                what,
                from_after,
                to_before,
                next_iteration,
                iterations: p.instances.len(),
                gain_ns: *gain,
                verdict: Verdict::of(*gain, uncertainty_ns),
                assumptions: found,
            }
        })
        .collect();
    let (before, after) = match period {
        Some(per) => {
            let k = 1 + per.iterations as u32 / 2;
            let before: Vec<usize> = (0..rank.ops.len()).filter(|&i| per.scope(i) == k).collect();
            let after: Vec<usize> = suggested_orders[first]
                .iter()
                .copied()
                .filter(|&i| per.scope(i) == k)
                .collect();
            (lines(namer, rank, &before), lines(namer, rank, &after))
        }
        None => (Vec::new(), Vec::new()),
    };
    let ends = slots
        .iter()
        .map(|&s| {
            let start = measured.start_ns;
            let m = measured
                .ranks
                .get(s)
                .map_or(0, |r| r.end_ns.saturating_sub(start));
            let a = suggested
                .and_then(|x| x.ranks.get(s))
                .map_or(m, |r| r.end_ns.saturating_sub(start));
            (namer.program.ranks[s].rank, m, a)
        })
        .collect();
    Group {
        ranks: slots.iter().map(|&s| namer.program.ranks[s].rank).collect(),
        period: period.map(|p| (p.length, p.iterations)),
        moves,
        before,
        after,
        ends,
    }
}

fn ranks_list(ranks: &[u32]) -> String {
    let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
    match ranks.len() {
        1 => format!("rank {}", list[0]),
        _ => format!("ranks {}", list.join(", ")),
    }
}

fn signed(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", duration(ns.unsigned_abs()))
    } else {
        duration(ns as u64)
    }
}

/// The suggestion as text.
pub fn render(s: &Suggestion) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Reordering suggestion for {} (policies: data dependence, {}, program order{})",
        s.trace,
        s.policies.join(", "),
        if s.conservative { "; conservative" } else { "" }
    );
    let progress = match s.progress {
        crate::replay::Progress::InMpi => "in-mpi",
        crate::replay::Progress::Async => "async",
    };
    let n = &s.network.mid;
    let _ = writeln!(
        o,
        "replay: {} progress, latency {}, bandwidth {}, eager up to {} B",
        progress,
        duration(n.latency()),
        n.bandwidth_bytes_per_s()
            .map_or("infinite".to_string(), |b| format!("{:.2} GB/s", b / 1e9)),
        n.eager_limit
    );
    let _ = writeln!(
        o,
        "measured {}; measured order replayed {} (replay.self_error {}); uncertainty on a gain {}",
        duration(s.replay.measured_ns),
        duration(s.replay.replayed.ns),
        s.replay
            .self_error
            .map_or("unknown".to_string(), |e| format!("{:+.1}%", e * 100.0)),
        duration(s.replay.uncertainty_ns)
    );
    if let Some(r) = &s.rejected {
        let _ = writeln!(o, "\nThe consensus order is rejected: {r}");
    }
    for g in &s.groups {
        let _ = writeln!(o, "\n{}", ranks_list(&g.ranks));
        match g.period {
            Some((len, it)) => {
                let _ = writeln!(o, "  iteration: {len} operations, {it} iterations matched");
            }
            None => {
                let _ = writeln!(
                    o,
                    "  no repeating iteration found: the whole run is one unit"
                );
            }
        }
        if g.moves.is_empty() {
            let _ = writeln!(
                o,
                "  nothing to move: the order already agrees with the policies"
            );
        }
        for m in g.moves.iter().take(SHOWN) {
            let gain = m.gain_ns.map_or(
                "gain unknown (not evaluated, or the order without it could not be replayed)"
                    .to_string(),
                |x| format!("gain {}", signed(x)),
            );
            let verdict = match m.verdict {
                Verdict::Gains => "suggested",
                Verdict::BelowUncertainty => "kept, but within the model's uncertainty",
                Verdict::Costs => "left out: it costs",
                Verdict::Unknown => "kept, gain unknown",
            };
            let _ = writeln!(
                o,
                "  - {} [{} iteration(s); {gain}; {verdict}]",
                m.text, m.iterations
            );
            for a in &m.assumptions {
                let _ = writeln!(o, "      assumes: {a}");
            }
        }
        if g.moves.len() > SHOWN {
            let _ = writeln!(
                o,
                "  ... and {} more move(s) (see --json)",
                g.moves.len() - SHOWN
            );
        }
        if !g.before.is_empty() {
            let width = g
                .before
                .iter()
                .map(|l| l.chars().count())
                .max()
                .unwrap_or(0)
                .min(60);
            let _ = writeln!(o, "  one iteration, measured | suggested:");
            for k in 0..g.before.len().max(g.after.len()) {
                let a = g.before.get(k).map_or("", String::as_str);
                let b = g.after.get(k).map_or("", String::as_str);
                let mark = if a == b { " " } else { "*" };
                let _ = writeln!(o, "   {mark} {a:<width$} | {b}");
            }
        }
        for (rank, m, a) in &g.ends {
            let _ = writeln!(
                o,
                "  rank {rank}: replayed end {} -> {} ({})",
                duration(*m),
                duration(*a),
                signed(*m as i64 - *a as i64)
            );
        }
    }
    match &s.suggested {
        Some(p) => {
            let gain = s.replay.replayed.ns as i64 - p.ns as i64;
            let _ = writeln!(
                o,
                "\npredicted run time {} (range {} to {}), gain {} ({:+.1}% of the replayed measured order)",
                duration(p.ns),
                duration(p.low_ns),
                duration(p.high_ns),
                signed(gain),
                if s.replay.replayed.ns > 0 { -100.0 * gain as f64 / s.replay.replayed.ns as f64 } else { 0.0 }
            );
        }
        None => {
            let _ = writeln!(o, "\nno prediction: the order was rejected");
        }
    }
    if let Some(c) = &s.consensus {
        let _ = writeln!(
            o,
            "with every move of the consensus: {} (range {} to {})",
            duration(c.ns),
            duration(c.low_ns),
            duration(c.high_ns)
        );
    }
    let remedies = super::remedies::lines(&s.remedies);
    if !remedies.is_empty() {
        let _ = writeln!(o, "\nother fixes than an order:");
        for l in remedies {
            let _ = writeln!(o, "  {l}");
        }
    }
    if let Some(c) = &s.confirmation {
        let _ = writeln!(
            o,
            "\nre-run ({} trace(s)): measured median {}; predicted {}; error {}",
            c.runs.len(),
            duration(c.median_ns),
            c.predicted_ns.map_or("none".to_string(), duration),
            c.error
                .map_or("unknown".to_string(), |e| format!("{:+.1}%", e * 100.0))
        );
        // Ranks with the same outcome, told once.
        let mut told: Vec<(Vec<u32>, &crate::suggest::OrderMatch)> = Vec::new();
        for m in &c.orders {
            match told
                .iter_mut()
                .find(|(_, t)| t.difference == m.difference && t.iterations == m.iterations)
            {
                Some((ranks, _)) => ranks.push(m.rank),
                None => told.push((vec![m.rank], m)),
            }
        }
        for (ranks, m) in told {
            let who = ranks_list(&ranks);
            match &m.difference {
                None => {
                    let _ = writeln!(o, "  {who}: the re-run's iteration is the suggested one");
                }
                Some(d) => {
                    let _ = writeln!(o, "  {who}: the re-run's iteration differs: {d}");
                    if let Some((ours, theirs)) = &m.iterations {
                        let width = ours
                            .iter()
                            .map(|l| l.chars().count())
                            .max()
                            .unwrap_or(0)
                            .min(60);
                        let _ = writeln!(o, "    {:<width$} | re-run", "suggested");
                        for k in 0..ours.len().max(theirs.len()) {
                            let a = ours.get(k).map_or("", String::as_str);
                            let b = theirs.get(k).map_or("", String::as_str);
                            let _ = writeln!(o, "    {a:<width$} | {b}");
                        }
                    }
                }
            }
        }
    }
    for note in &s.notes {
        let _ = writeln!(o, "note: {note}");
    }
    o
}
