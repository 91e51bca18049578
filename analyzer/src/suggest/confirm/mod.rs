//! A re-run confirms a suggestion: the program changed as suggested, run and traced
//! several times, against several runs of the original (the analysed trace is one).
//! The gain measured between the two (difference of medians, with the spread) is set
//! against the gain the replay predicted ([`gain`]), and each rank's re-run iteration
//! against the suggested one ([`order`]). No gain is confirmed on runs that had fewer
//! cores than ranks ([`cores`]).

mod confirmation;
mod cores;
mod gain;
mod order;
mod text;

pub use confirmation::{Confirmation, GainCheck, OrderMatch};
pub use cores::Cores;
pub use gain::{
    Agreement, GainVerdict, MeasuredGain, PredictedGain, Runs, Unconfirmable, MIN_RUNS, SHARE,
};
pub use text::text;

use crate::model::Trace;
use crate::ops::Program;

use super::describe::Namer;
use super::{gains_unknown, SuggestNetwork, Suggestion};

/// A run: its trace and its program.
pub type Run<'a> = (&'a Trace, &'a Program);

/// `(a - b) / b`; none when `b` is 0.
fn relative(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| (a as f64 - b as f64) / b as f64)
}

/// Sets `suggestion` (of the trace and program `ours` names: one run of the original)
/// against more runs of the original and runs of the changed program. None without a
/// changed run.
pub fn confirm(
    suggestion: &Suggestion,
    ours: &Namer,
    originals: &[Run],
    changed: &[Run],
) -> Option<Confirmation> {
    let first: Run = (ours.trace, ours.program);
    let runs_of = |runs: &mut dyn Iterator<Item = &Run>| {
        let (traces, times) = runs
            .map(|(t, p)| (t.source.display().to_string(), p.measured_ns))
            .unzip();
        Runs::of(traces, times)
    };
    let original = runs_of(&mut std::iter::once(&first).chain(originals))?;
    let changed_runs = runs_of(&mut changed.iter())?;
    let replayed = suggestion.replay.map(|r| r.replayed);
    let predicted = suggestion.suggested.zip(replayed).map(|(s, replayed)| {
        PredictedGain::of(
            (replayed.ns, replayed.low_ns, replayed.high_ns),
            (s.ns, s.low_ns, s.high_ns),
        )
    });
    let measured = MeasuredGain::of(&original, &changed_runs);
    let all: Vec<&Trace> = std::iter::once(&first)
        .chain(originals)
        .chain(changed)
        .map(|(t, _)| *t)
        .collect();
    let cores = cores::check(&all);
    let verdict = match (&predicted, &cores) {
        (None, _) => GainVerdict::NotConfirmable {
            why: Unconfirmable::NoPrediction {
                why: match (&suggestion.rejected, &suggestion.network) {
                    (Some(why), _) => why.clone(),
                    (None, SuggestNetwork::Unknown { unknown }) => gains_unknown(unknown),
                    (None, SuggestNetwork::Known(_)) => {
                        "the suggested order was not replayed".into()
                    }
                },
            },
        },
        (
            Some(_),
            Cores::Oversubscribed {
                trace,
                host,
                ranks,
                cores,
            },
        ) => GainVerdict::NotConfirmable {
            why: Unconfirmable::Oversubscribed {
                trace: trace.clone(),
                host: host.clone(),
                ranks: *ranks,
                cores: *cores,
            },
        },
        _ if original.measured_ns.len() < MIN_RUNS || changed_runs.measured_ns.len() < MIN_RUNS => {
            GainVerdict::NotConfirmable {
                why: Unconfirmable::TooFewRuns {
                    original: original.measured_ns.len(),
                    changed: changed_runs.measured_ns.len(),
                },
            }
        }
        (Some(p), _) => gain::verdict(p, &measured),
    };
    let ratio = predicted
        .filter(|_| measured.ns != 0)
        .map(|p| p.ns as f64 / measured.ns as f64);
    let predicted_ns = suggestion.suggested.map(|p| p.ns);
    Some(Confirmation {
        error: predicted_ns.and_then(|p| relative(p, changed_runs.median_ns)),
        self_error: replayed.and_then(|r| relative(r.ns, original.median_ns)),
        predicted_ns,
        gain: GainCheck {
            predicted,
            measured,
            ratio,
            verdict,
        },
        cores,
        orders: changed
            .first()
            .map_or_else(Vec::new, |&run| order::orders(suggestion, ours, run)),
        original,
        changed: changed_runs,
    })
}
