//! In what order, and beside what, [`super::analyze`] computes its figures. Memory
//! decides it: the replays' program is a second copy of the run (about 135 B per event
//! kept, 155 at its peak while it is built) and the per-request rows the largest part of
//! what the report keeps (about 70 B per event, 100 at their peak). Analysis
//! never holds both: the program is built and replayed beside the figures that hold
//! little (budgets, wait states, call sites), and dropped before the per-request pass,
//! which spreads its own work over rayon's threads.
//!
//! ```text
//!  branch A  models | operations (ranks in parallel) | ideal replay ∥ self-check replay
//!  branch B  budgets ∥ wait states ∥ call sites      | (its thread helps A)
//!  then      per request (in parallel blocks) | summaries ∥ false overlap | sites named
//! ```
//!
//! Side by side (the replays beside every measured figure, as until 2026-11-25) was
//! 1.1× to 1.2× faster on two threads in alternating runs and peaked 15 % higher
//! (docs/scale.md §0).

use crate::model::Trace;
use crate::replay::SelfCheck;
use crate::sites::{BySite, SiteTable};

use super::{budget, false_overlap, ideal, requests, transfer, wait_states};
use super::{Finding, Options, RankBudget, RequestMetrics, RequestRow, RequestSummary};
use super::{RunBudget, WaitInstance, WaitStates};

/// The figures [`super::analyze`] computes from the trace itself, apart from the
/// replays.
pub(super) struct Measured {
    pub ranks: Vec<RankBudget>,
    pub totals: RunBudget,
    pub waits: Vec<WaitInstance>,
    pub wait_states: WaitStates,
    pub request_summary: RequestSummary,
    pub requests: Vec<RequestRow>,
    pub false_overlap: Vec<Finding>,
    pub sites: SiteTable,
    pub by_site: BySite,
}

/// T_ideal and the self check (each `None` when the run cannot be replayed: no rank has
/// events, or a rank was cut short), and the measured figures.
pub(super) fn figures(trace: &Trace, opts: &Options) -> (Option<u64>, Option<SelfCheck>, Measured) {
    let (replayed, early) = rayon::join(|| replays(trace), || early(trace));
    let Replayed {
        ideal,
        self_check,
        model,
        collective_model,
    } = replayed;
    let Early {
        ranks,
        totals,
        waits,
        sites,
    } = early;
    let requests = {
        let _s = tracing::info_span!("requests").entered();
        requests::per_request(trace, &model, &collective_model, opts)
    };
    // The summaries and the findings do not need each other.
    let ((wait_states, mut request_summary), mut false_overlap) = rayon::join(
        || {
            (
                wait_states::summarize(trace, &waits, opts),
                requests::summarize(trace, &requests, &model, &collective_model, opts),
            )
        },
        || {
            let _s = tracing::info_span!("false overlap").entered();
            let ls = false_overlap::late_sender_by_call(&waits);
            false_overlap::findings(trace, &requests, &ls, opts)
        },
    );
    let worst: &mut [&mut [RequestMetrics]] = &mut [
        &mut request_summary.worst,
        &mut request_summary.written_not_achieved.worst,
    ];
    crate::sites::group::name_sites(trace, &sites, &mut false_overlap, worst);
    let by_site = crate::sites::group::by_site(trace, &sites, &false_overlap, &waits);
    let measured = Measured {
        ranks,
        totals,
        waits,
        wait_states,
        request_summary,
        requests,
        false_overlap,
        sites,
        by_site,
    };
    (ideal, self_check, measured)
}

/// Branch B: the figures of the trace that hold little beside it while computed.
struct Early {
    ranks: Vec<RankBudget>,
    totals: RunBudget,
    waits: Vec<WaitInstance>,
    sites: SiteTable,
}

fn early(trace: &Trace) -> Early {
    // They do not need each other.
    let (((ranks, totals), waits), sites) = rayon::join(
        || {
            rayon::join(
                || {
                    let _s = tracing::info_span!("time budget").entered();
                    budget::budgets(trace)
                },
                || {
                    let _s = tracing::info_span!("wait states").entered();
                    wait_states::instances(trace)
                },
            )
        },
        || SiteTable::build(trace),
    );
    Early {
        ranks,
        totals,
        waits,
        sites,
    }
}

/// Branch A: the replays, and the models the per-request pass needs.
struct Replayed {
    ideal: Option<u64>,
    self_check: Option<SelfCheck>,
    model: transfer::TransferModel,
    collective_model: transfer::CollectiveModel,
}

fn replays(trace: &Trace) -> Replayed {
    let model = transfer::TransferModel::fit(trace);
    let collective_model = transfer::CollectiveModel::fit(trace);
    let program = {
        let _s = tracing::info_span!("operations").entered();
        crate::ops::extract(trace).ok()
    };
    // Two replays of one program, apart.
    let (ideal, self_check) = rayon::join(
        || {
            let _s = tracing::info_span!("ideal replay").entered();
            program.as_ref().and_then(ideal::replay)
        },
        || {
            let _s = tracing::info_span!("self-check replay").entered();
            program
                .as_ref()
                .and_then(|p| crate::replay::self_check(trace, p))
        },
    );
    Replayed {
        ideal,
        self_check,
        model,
        collective_model,
    }
}
