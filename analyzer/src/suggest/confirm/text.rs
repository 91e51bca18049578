//! A confirmation in a few lines of text: the two sides' run times, the gain predicted
//! and measured, the verdict and its reason, the run times against the replay, and the
//! re-run's iteration against the suggested one (the iterations themselves are in the
//! JSON).

use std::fmt::Write as _;

use crate::units::duration;

use super::{Agreement, Confirmation, Cores, GainVerdict, Runs, Unconfirmable, MIN_RUNS, SHARE};

fn signed(ns: i64) -> String {
    match ns {
        n if n < 0 => format!("-{}", duration(n.unsigned_abs())),
        n => duration(n as u64),
    }
}

fn percent(f: Option<f64>) -> String {
    f.map_or("unknown".into(), |f| format!("{:+.1}%", f * 100.0))
}

fn side(name: &str, r: &Runs) -> String {
    let n = r.measured_ns.len();
    format!(
        "{name} {n} run{}, median {} (quartiles {} to {})",
        if n == 1 { "" } else { "s" },
        duration(r.median_ns),
        duration(r.q1_ns),
        duration(r.q3_ns)
    )
}

fn ranks(list: &[u32]) -> String {
    let names: Vec<String> = list.iter().map(u32::to_string).collect();
    match list {
        [_] => format!("rank {}", names[0]),
        _ => format!("ranks {}", names.join(", ")),
    }
}

/// The verdict in words.
fn verdict(c: &Confirmation) -> String {
    let g = &c.gain;
    match &g.verdict {
        GainVerdict::Confirmed {
            by: Agreement::WithinRange,
        } => "confirmed: the measured gain lies within the predicted range widened by the measured spread".into(),
        GainVerdict::Confirmed {
            by: Agreement::WithinShare,
        } => format!(
            "confirmed: the predicted gain lies within {:.0}% of the measured gain",
            SHARE * 100.0
        ),
        GainVerdict::NotConfirmed => format!(
            "not confirmed: the measured gain {} is outside the predicted range widened by the spread, and more than {:.0}% from the predicted gain",
            signed(g.measured.ns),
            SHARE * 100.0
        ),
        GainVerdict::NotConfirmable { why } => match why {
            Unconfirmable::TooFewRuns { original, changed } => format!(
                "not confirmable: {original} original and {changed} changed run(s), {MIN_RUNS} of each needed (the analysed trace is one original run; add more with --original)"
            ),
            Unconfirmable::NoPrediction { why } => {
                format!("not confirmable: no predicted gain ({why})")
            }
            Unconfirmable::Oversubscribed {
                trace,
                host,
                ranks,
                cores,
            } => format!(
                "not confirmable: {trace} ran {ranks} ranks on {host}'s {cores} core(s), which the replay does not model"
            ),
            Unconfirmable::WithinNoise => format!(
                "not confirmable: the measured gain does not exceed the noise floor ({})",
                duration(g.measured.noise_ns)
            ),
        },
    }
}

/// The re-run's iterations against the suggested ones, one line.
fn iterations(c: &Confirmation) -> String {
    let mut groups: Vec<(Option<&String>, Vec<u32>)> = Vec::new();
    for m in &c.orders {
        match groups.iter_mut().find(|(d, _)| *d == m.difference.as_ref()) {
            Some((_, list)) => list.push(m.rank),
            None => groups.push((m.difference.as_ref(), vec![m.rank])),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(d, list)| match d {
            None => format!("{} as suggested", ranks(list)),
            Some(d) => format!(
                "{} {}: {d}",
                ranks(list),
                if list.len() == 1 { "differs" } else { "differ" }
            ),
        })
        .collect();
    format!("re-run's iteration: {}", parts.join("; "))
}

/// The confirmation as text, 4 to 6 lines.
pub fn text(c: &Confirmation) -> String {
    let mut o = String::new();
    let g = &c.gain;
    let _ = writeln!(
        o,
        "confirm: {}; {}",
        side("original", &c.original),
        side("changed", &c.changed)
    );
    let predicted = g.predicted.map_or("none".to_string(), |p| {
        format!(
            "{} (range {} to {})",
            signed(p.ns),
            signed(p.low_ns),
            signed(p.high_ns)
        )
    });
    let ratio = g
        .ratio
        .map_or(String::new(), |r| format!(", predicted/measured {r:.2}"));
    let _ = writeln!(
        o,
        "  gain predicted {predicted}, measured {} ± {} (noise floor {}){ratio}",
        signed(g.measured.ns),
        duration(g.measured.spread_ns),
        duration(g.measured.noise_ns)
    );
    let _ = writeln!(o, "  {}", verdict(c));
    let _ = writeln!(
        o,
        "  run time predicted {} against the changed runs' median (error {}); measured order replayed against the original runs' median: self error {}",
        c.predicted_ns.map_or("none".to_string(), duration),
        percent(c.error),
        percent(c.self_error)
    );
    if !c.orders.is_empty() {
        let _ = writeln!(o, "  {}", iterations(c));
    }
    if let Cores::Unknown { why } = &c.cores {
        let _ = writeln!(o, "  cores per rank not checked: {why}");
    }
    o
}
