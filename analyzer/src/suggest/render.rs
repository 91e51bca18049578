//! The suggestion in words. By default short: per group of ranks, the suggested moves
//! (at most [`SHOWN`]) each with its gain and where (call and `file:line`), one line of
//! what was left out and why, the "possible if" moves (at most [`POSSIBLE_SHOWN`], then
//! how many more; counted in one line when together they gain nothing measurable), and
//! the prediction. `verbose` adds every move with its verdict, every
//! possible move with all it needs, the iteration before and after side by side, each
//! rank's replayed end, the consensus replayed, and the notes (the JSON has them all).

use std::fmt::Write;

use crate::units::duration;

use super::{gains_unknown, Group, SuggestNetwork, Suggestion, Verdict};

/// Suggested moves listed per group in the short text.
const SHOWN: usize = 10;
/// "Possible if" moves listed per group in the short text.
const POSSIBLE_SHOWN: usize = 5;

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

/// The verdict of a move in words.
fn verdict_words(v: Verdict) -> &'static str {
    match v {
        Verdict::Gains => "suggested",
        Verdict::GainsTogether => "suggested: gains with the others within the uncertainty",
        Verdict::BelowUncertainty => "left out: within the model's uncertainty",
        Verdict::Costs => "left out: it costs",
        Verdict::Unknown => "left out: gain unknown",
        Verdict::NoNetwork => "suggested: proven, gain unknown (no network)",
        Verdict::TooShort => {
            "left out: its waits took too little for any network to make it gain a measurable share of the run"
        }
    }
}

/// The line of what a group left out and why; none when nothing was.
fn left_out_line(g: &Group, uncertainty_ns: u64) -> Option<String> {
    let l = &g.left_out;
    let mut why = Vec::new();
    if l.within_uncertainty > 0 {
        why.push(format!(
            "{} within the model's uncertainty (±{})",
            l.within_uncertainty,
            duration(uncertainty_ns)
        ));
    }
    if l.costs > 0 {
        why.push(format!("{} that cost more than it", l.costs));
    }
    if l.too_short > 0 {
        why.push(format!(
            "{} whose waits took too little for any network to make them gain a measurable share of the run",
            l.too_short
        ));
    }
    if l.not_evaluated > 0 {
        why.push(format!(
            "{} whose gain was not evaluated (the most repeated are)",
            l.not_evaluated
        ));
    }
    (l.total() > 0).then(|| {
        format!(
            "  left out: {} move(s) that gain nothing measurable: {}",
            l.total(),
            why.join(", ")
        )
    })
}

/// One group in words. `possible_measurable`: whether the possible moves (the
/// permissive order) gain more than the uncertainty over the suggested order, or may
/// (their gain unknown); when they do not, the short text counts them in one line.
fn group(o: &mut String, g: &Group, uncertainty_ns: u64, possible_measurable: bool, verbose: bool) {
    let _ = match g.period {
        Some((len, it)) => writeln!(
            o,
            "\n{}: iteration of {len} operations, {it} iterations matched",
            ranks_list(&g.ranks)
        ),
        None => writeln!(
            o,
            "\n{}: no repeating iteration found, the whole run is one unit",
            ranks_list(&g.ranks)
        ),
    };
    let suggested: Vec<_> = (g.moves.iter())
        .filter(|m| {
            matches!(
                m.verdict,
                Verdict::Gains | Verdict::GainsTogether | Verdict::NoNetwork
            )
        })
        .collect();
    let gains_unknown = suggested.iter().any(|m| m.verdict == Verdict::NoNetwork);
    if g.moves.is_empty() {
        let _ = writeln!(
            o,
            "  nothing to move: the order already agrees with the policies and what is known of its buffers"
        );
    } else if suggested.is_empty() && g.left_out.too_short == g.moves.len() {
        let _ = writeln!(
            o,
            "  nothing to move: no move's waits took enough to gain a measurable share of the run, whatever the network"
        );
    } else if suggested.is_empty() {
        let _ = writeln!(
            o,
            "  nothing to move: no move is shown to gain more than the model's uncertainty"
        );
    } else if gains_unknown {
        let _ = writeln!(o, "  suggested (proven safe; gains unknown: no network):");
    } else {
        let _ = writeln!(o, "  suggested:");
    }
    let shown = if verbose { suggested.len() } else { SHOWN };
    for m in suggested.iter().take(shown) {
        if m.verdict == Verdict::NoNetwork {
            let _ = writeln!(
                o,
                "  - {} [{} iteration(s); gain unknown]",
                m.text, m.iterations
            );
            continue;
        }
        let gain = m.gain_ns.map_or(String::new(), signed);
        let with = match m.verdict {
            Verdict::GainsTogether => {
                " alone; it gains with the other moves within the uncertainty"
            }
            _ => "",
        };
        let _ = writeln!(
            o,
            "  - {} [{} iteration(s); gain {gain} ± {}{with}]",
            m.text,
            m.iterations,
            duration(uncertainty_ns)
        );
    }
    if suggested.len() > shown {
        let _ = writeln!(
            o,
            "  ... and {} more suggested move(s) (--verbose)",
            suggested.len() - shown
        );
    }
    if let Some(line) = left_out_line(g, uncertainty_ns) {
        let _ = writeln!(o, "{line}");
    }
    if verbose && suggested.len() < g.moves.len() {
        let _ = writeln!(o, "  every move of the consensus:");
        for m in &g.moves {
            let gain = m.gain_ns.map_or("gain unknown".to_string(), |x| {
                format!("gain {}", signed(x))
            });
            let _ = writeln!(
                o,
                "  - {} [{} iteration(s); {gain}; {}]",
                m.text,
                m.iterations,
                verdict_words(m.verdict)
            );
            for a in &m.assumptions {
                let _ = writeln!(o, "      possible if {a}");
            }
        }
    }
    if !g.possible.is_empty() && !possible_measurable && !verbose {
        let _ = writeln!(
            o,
            "  possible, not proven: {} move(s) that together gain nothing measurable (±{}; --verbose lists them)",
            g.possible.len(),
            duration(uncertainty_ns)
        );
        // What follows is for --verbose only.
        return;
    }
    if !g.possible.is_empty() {
        let _ = writeln!(
            o,
            "  possible, not proven (what each needs is unknown; `overlap trace --buffers` learns it):"
        );
    }
    let shown = if verbose {
        g.possible.len()
    } else {
        POSSIBLE_SHOWN
    };
    for p in g.possible.iter().take(shown) {
        let _ = write!(
            o,
            "  - {} [{} iteration(s)]: possible if ",
            p.text, p.iterations
        );
        match (verbose, p.assumptions.as_slice()) {
            (false, [first, _, rest @ ..]) => {
                let _ = writeln!(o, "{first}, and {} more (--verbose)", rest.len() + 1);
            }
            (_, all) => {
                let all: Vec<String> = all.iter().map(ToString::to_string).collect();
                let _ = writeln!(o, "{}", all.join(", and "));
            }
        }
    }
    if g.possible.len() > shown {
        let _ = writeln!(
            o,
            "  ... and {} more possible move(s) (--verbose)",
            g.possible.len() - shown
        );
    }
    if verbose && !g.before.is_empty() {
        let width = (g.before.iter())
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
    if verbose {
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
}

/// The suggestion as text; `verbose`: everything the JSON has, in words.
pub fn render(s: &Suggestion, verbose: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Reordering suggestion for {} (policies: data dependence, {}, program order{})",
        s.trace,
        s.policies.join(", "),
        match (s.mode, s.conservative) {
            (crate::dag::Mode::Permissive, _) => "; permissive: moves may need assumptions",
            (_, true) => "; conservative: proven moves only",
            _ => "",
        }
    );
    let progress = match s.progress {
        crate::replay::ProgressMode::InMpi => "in-mpi",
        crate::replay::ProgressMode::Async => "async",
    };
    let _ = match &s.network {
        SuggestNetwork::Known(fit) => writeln!(
            o,
            "replay: {} progress, {}, eager up to {} B",
            progress,
            crate::report::network_line(fit),
            fit.mid.eager_limit
        ),
        SuggestNetwork::Unknown { unknown } => {
            writeln!(o, "replay: none: {}", gains_unknown(unknown))
        }
    };
    // The possible moves gain something measurable together, or may: their order's gain
    // over the suggested one exceeds the uncertainty, or is unknown.
    let possible_measurable = match (&s.possible, &s.replay) {
        (Some(p), Some(check)) => p
            .extra_gain_ns
            .is_none_or(|extra| extra > check.uncertainty_ns as i64),
        _ => true,
    };
    if let Some(check) = &s.replay {
        let _ = writeln!(
            o,
            "measured {}; measured order replayed {} (replay.self_error {}); uncertainty on a gain {}",
            duration(check.measured_ns),
            duration(check.replayed.ns),
            check
                .self_error
                .map_or("unknown".to_string(), |e| format!("{:+.1}%", e * 100.0)),
            duration(check.uncertainty_ns)
        );
    }
    if let Some(r) = &s.rejected {
        let _ = writeln!(o, "\nThe consensus order is rejected: {r}");
    }
    // Without a replay no move is weighed against an uncertainty: none is printed.
    let uncertainty_ns = s.replay.map_or(0, |check| check.uncertainty_ns);
    for g in &s.groups {
        group(&mut o, g, uncertainty_ns, possible_measurable, verbose);
    }
    match (&s.suggested, &s.replay, &s.network) {
        (_, _, SuggestNetwork::Unknown { .. }) if s.rejected.is_none() => {
            let _ = writeln!(o, "\nno prediction: no network (above)");
        }
        (Some(p), Some(check), _) => {
            let replayed_ns = check.replayed.ns;
            let gain = replayed_ns as i64 - p.ns as i64;
            let _ = writeln!(
                o,
                "\npredicted run time {} (range {} to {}), gain {} ({:+.1}% of the replayed measured order)",
                duration(p.ns),
                duration(p.low_ns),
                duration(p.high_ns),
                signed(gain),
                if replayed_ns > 0 { -100.0 * gain as f64 / replayed_ns as f64 } else { 0.0 }
            );
        }
        _ => {
            let _ = writeln!(o, "\nno prediction: the order was rejected");
        }
    }
    if let Some(p) = &s.possible {
        let _ = match (p.replayed_ns, p.extra_gain_ns, &p.unknown) {
            (Some(r), Some(extra), _) => writeln!(
                o,
                "with the possible moves too: {} ({} more), if what they need holds",
                duration(r),
                signed(extra)
            ),
            (Some(r), None, _) => writeln!(o, "with the possible moves too: {}", duration(r)),
            (None, _, why) => writeln!(
                o,
                "with the possible moves too: unknown ({})",
                why.as_deref().unwrap_or("not replayed")
            ),
        };
    }
    if let (true, Some(c)) = (verbose, &s.consensus) {
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
        let _ = write!(o, "\n{}", super::confirm::text(c));
    }
    if verbose {
        for note in &s.notes {
            let _ = writeln!(o, "note: {note}");
        }
    } else if !s.notes.is_empty() {
        let _ = writeln!(o, "({} note(s): --verbose)", s.notes.len());
    }
    o
}
