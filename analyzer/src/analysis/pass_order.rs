//! The pass order: in what order, and beside what, [`super::analyze`] and
//! [`super::analyze_owned`] compute their figures. Memory decides it: the replays'
//! program holds the run's messages again, and what a replay of the measured order
//! reads of its requests and of each rank's operations, encoded (about 26 B per event
//! kept, more while it is built: [`crate::ops::MeasuredProgram`]), and the per-request
//! rows are the largest part of what the report keeps (about 70 B per event, 100 at
//! their peak). Analysis never holds both.
//!
//! When the trace outlives the analysis ([`figures`]: the tables, the terminal UI), the
//! program is built and replayed beside the figures that hold little (budgets, wait
//! states, call sites), and dropped before the per-request pass, which spreads its own
//! work over rayon's threads:
//!
//! ```text
//!  first     cross-rank columns (message ends, collective members)
//!  branch A  models | operations (ranks in parallel) | ideal replay ∥ self-check replay
//!  branch B  budgets ∥ wait states ∥ call sites      | (its thread helps A)
//!  then      partner times (the columns dropped) | per request (in parallel blocks)
//!            | summaries, profile ∥ false overlap (the worst named as they are taken)
//! ```
//!
//! When nothing needs the trace afterwards ([`figures_owned`]: `overlap analyze` without
//! tables, `overlap run`), the program comes last, built from the trace as it is
//! dropped, a batch of ranks at a time, so that it never grows beside the whole trace.
//! The per-request rows, which the report does not keep, are made a few ranks at a time
//! and folded into the summaries and the findings, never all held; the wait instances are
//! dropped before the program is built:
//!
//! ```text
//!  cross-rank columns | models ∥ budgets ∥ wait states ∥ call sites
//!  | partner times (the columns dropped)
//!  | wait summary ∥ profile ∥ (per part of whole ranks: its rows | folded into the
//!    summary ∥ its findings)
//!  | the report's other parts of the trace
//!  | operations, each rank's timeline dropped once built | ideal ∥ self-check replay
//! ```
//!
//! Side by side (the replays beside every measured figure, as until 2026-11-25) was
//! 1.1× to 1.2× faster on two threads in alternating runs and peaked 15 % higher
//! (docs/scale.md §0).

use crate::metrics::by_site::BySite;
use crate::metrics::by_site::SiteGroup;
use crate::model::Trace;
use crate::ops::{ExtractError, MeasuredProgram};
use crate::profile::Profile;
use crate::replay::{NoSelfCheck, SelfCheck};
use crate::sites::SiteTable;

use crate::metrics::budget::{self, RankBudget, RunBudget};
use crate::metrics::collective_model::CollectiveModel;
use crate::metrics::cross_rank::CrossRank;
use crate::metrics::false_overlap::{self, Finding};
use crate::metrics::false_overlap_summary::{self, FalseOverlap};
use crate::metrics::message_ends::MessageEnds;
use crate::metrics::options::Options;
use crate::metrics::request_parts::parts_of_whole_ranks;
use crate::metrics::request_row::RequestRow;
use crate::metrics::request_summary::summarize;
use crate::metrics::request_summary::{self, RequestSummary};
use crate::metrics::requests;
use crate::metrics::wait_kind::WaitInstance;
use crate::metrics::wait_states::{self, WaitStates};
use crate::metrics::{descheduled, oversubscription, transfer};
use crate::replay::ideal;

/// The figures [`super::analyze`] computes from the trace itself, apart from the
/// replays.
pub(super) struct Measured {
    pub ranks: Vec<RankBudget>,
    pub totals: RunBudget,
    pub waits: Vec<WaitInstance>,
    pub wait_states: WaitStates,
    pub request_summary: RequestSummary,
    pub requests: Vec<RequestRow>,
    pub false_overlap: FalseOverlap,
    /// Every finding, when the per-request rows are kept (the tables list them).
    pub findings: Vec<Finding>,
    pub sites: SiteTable,
    pub by_site: BySite,
    /// Time per MPI function and call site, traffic, sizes and phases: made beside the
    /// summaries, which it does not need.
    pub profile: Profile,
}

/// The replays' results: T_ideal (`None` when no program could be built or its ideal
/// replay cannot finish) and the self check, or why it could not be made.
pub(super) struct Replays {
    pub ideal: Option<u64>,
    pub self_check: Result<SelfCheck, NoSelfCheck>,
}

/// The replays and the measured figures of a trace that outlives the analysis: the
/// program is built and replayed beside the light figures, and dropped before the
/// per-request pass.
pub(super) fn figures(trace: &Trace, opts: &Options) -> (Replays, Measured) {
    let cross = CrossRank::of(trace);
    let ((replays, models), early) = rayon::join(
        || {
            let models = Models::fit(trace, &cross);
            let program = {
                let _s = tracing::info_span!("operations").entered();
                crate::ops::extract_measured(trace)
            };
            (replay(program.as_ref(), &models), models)
        },
        || early(trace, &cross),
    );
    (replays, measured(trace, cross, early, &models, opts))
}

/// The measured figures of `trace`, then the replays of its program, built as the trace
/// is dropped rank by rank (what [`super::analyze_owned`] does when nothing needs the
/// trace afterwards). `before_replays` takes what else is wanted of the trace first.
/// The program never grows beside the whole trace, and the per-request rows, which the
/// report does not keep, are made a few whole ranks at a time ([`measured_by_rank`]).
pub(super) fn figures_owned<T>(
    trace: Trace,
    opts: &Options,
    part: usize,
    before_replays: impl FnOnce(&Trace, &Measured) -> T,
) -> (Replays, Measured, T) {
    // The models are fitted beside the light figures: they do not need each other.
    let cross = CrossRank::of(&trace);
    let (models, early) = rayon::join(|| Models::fit(&trace, &cross), || early(&trace, &cross));
    let mut measured = measured_by_rank(&trace, cross, early, &models, opts, part);
    let wanted = before_replays(&trace, &measured);
    measured.waits = Vec::new();
    let program = {
        let _s = tracing::info_span!("operations").entered();
        crate::ops::extract_owned(trace)
    };
    (replay(program.as_ref(), &models), measured, wanted)
}

/// [`measured`] without the per-request rows: they are made a part of whole ranks (at
/// least `part` requests) at a time ([`parts_of_whole_ranks`]) and folded into the
/// summaries and the findings, never held all at once (the report does not keep them).
fn measured_by_rank(
    trace: &Trace,
    cross: CrossRank,
    early: Early,
    models: &Models,
    opts: &Options,
    part: usize,
) -> Measured {
    let (model, collective_model) = (&models.transfers, &models.collectives);
    let mut early = early;
    let descheduled = models.descheduled(trace, &cross.messages, &mut early.waits);
    // What crosses ranks is not held beside the per-request rows.
    let pass = requests::RequestPass::new(trace, &cross, model, collective_model, opts);
    drop(cross);
    let (waits, sites) = (&early.waits, &early.sites);
    let ((wait_states, profile), (request_summary, false_overlap)) = rayon::join(
        || {
            rayon::join(
                || wait_states::summarize(trace, waits, descheduled, opts),
                || crate::profile::of(trace, sites, waits),
            )
        },
        || {
            let _s = tracing::info_span!("requests").entered();
            let late_sender = false_overlap::late_sender_by_call(waits);
            let mut fold = request_summary::Fold::default();
            let mut findings = false_overlap_summary::Fold::new(opts.findings);
            let mut rows = Vec::new();
            for part in parts_of_whole_ranks(&trace.requests, part) {
                pass.rows_into(trace, part, &mut rows);
                let ((), found) = rayon::join(
                    || fold.add(&rows, opts, &|r| request_summary::listed(trace, sites, r)),
                    || {
                        let u = models.uncertainty();
                        false_overlap::findings(trace, &rows, &late_sender, opts, &u)
                    },
                );
                findings.add(trace, &early.sites, &found);
            }
            (
                fold.finish(model, collective_model),
                findings.finish(&early.sites),
            )
        },
    );
    let summaries = (wait_states, request_summary, false_overlap);
    named(trace, early, summaries, (Vec::new(), Vec::new()), profile)
}

/// How many requests' rows [`measured_by_rank`] makes at a time, at least (a rank's are
/// never split): enough for rayon's threads to share, few held at once.
pub(super) const PART: usize = 1 << 16;

/// What follows the light figures: the per-request pass and what is made of it.
fn measured(
    trace: &Trace,
    cross: CrossRank,
    early: Early,
    models: &Models,
    opts: &Options,
) -> Measured {
    let (model, collective_model) = (&models.transfers, &models.collectives);
    let mut early = early;
    let descheduled = models.descheduled(trace, &cross.messages, &mut early.waits);
    let waits = &early.waits;
    let requests = {
        let _s = tracing::info_span!("requests").entered();
        let pass = requests::RequestPass::new(trace, &cross, model, collective_model, opts);
        drop(cross);
        pass.rows(trace, 0..trace.requests.len())
    };
    // The summaries and the findings do not need each other.
    let ((wait_states, request_summary, profile), false_overlap) = rayon::join(
        || {
            (
                wait_states::summarize(trace, waits, descheduled, opts),
                summarize(
                    trace,
                    &early.sites,
                    &requests,
                    model,
                    collective_model,
                    opts,
                ),
                crate::profile::of(trace, &early.sites, waits),
            )
        },
        || {
            let _s = tracing::info_span!("false overlap").entered();
            let ls = false_overlap::late_sender_by_call(waits);
            let mut fold = false_overlap_summary::Fold::new(opts.findings);
            let found = false_overlap::findings(trace, &requests, &ls, opts, &models.uncertainty());
            fold.add(trace, &early.sites, &found);
            (fold.finish(&early.sites), found)
        },
    );
    let (false_overlap, findings) = false_overlap;
    named(
        trace,
        early,
        (wait_states, request_summary, false_overlap),
        (requests, findings),
        profile,
    )
}

/// The measured figures, from the light ones, the summaries (wait states, requests,
/// false overlap, its findings by site: the worst already named, as they were taken)
/// and the requests' rows and findings kept, the wait states grouped by site.
fn named(
    trace: &Trace,
    early: Early,
    summaries: (WaitStates, RequestSummary, (FalseOverlap, Vec<SiteGroup>)),
    (requests, findings): (Vec<RequestRow>, Vec<Finding>),
    profile: Profile,
) -> Measured {
    let (wait_states, request_summary, (false_overlap, by_site)) = summaries;
    let Early {
        ranks,
        totals,
        waits,
        sites,
    } = early;
    let by_site = crate::metrics::by_site::by_site(trace, &sites, by_site, &waits);
    Measured {
        ranks,
        totals,
        waits,
        wait_states,
        request_summary,
        requests,
        false_overlap,
        findings,
        sites,
        by_site,
        profile,
    }
}

/// The light figures: those of the trace that hold little beside it while computed.
struct Early {
    ranks: Vec<RankBudget>,
    totals: RunBudget,
    waits: Vec<WaitInstance>,
    sites: SiteTable,
}

fn early(trace: &Trace, cross: &CrossRank) -> Early {
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
                    wait_states::instances_with(trace, cross)
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

/// The models fitted to the trace that the per-request pass, the false-overlap findings
/// and the self check need.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Models {
    pub(super) transfers: transfer::TransferModel,
    pub(super) collectives: CollectiveModel,
}

impl Models {
    /// The models of `trace`'s messages (no rank's events are read), what crosses its
    /// ranks being `cross`.
    pub(super) fn fit(trace: &Trace, cross: &CrossRank) -> Models {
        let _s = tracing::info_span!("models").entered();
        let (transfers, collectives) = rayon::join(
            || transfer::TransferModel::fit_with(trace, &cross.messages),
            || CollectiveModel::fit_with(&cross.collectives),
        );
        Models {
            transfers,
            collectives,
        }
    }

    /// The model's uncertainty on the transfer of a message of so many bytes: the
    /// spread of its pure transfer time (its class's fastest to median clean transfer,
    /// or the line's range); where the model has no estimate for that size, the largest
    /// spread of the classes it measured (the model is at least that unsure); 0 when it
    /// measured none (then a finding needs only `min_wait`).
    pub(super) fn uncertainty(&self) -> impl Fn(u64) -> u64 + Sync + '_ {
        let spread =
            |(low, high): (overlap_format::schema::Nanos, overlap_format::schema::Nanos)| {
                high.0.saturating_sub(low.0)
            };
        let widest = (self.transfers.estimated())
            .filter_map(|c| self.transfers.pure_range(c.bytes))
            .map(spread)
            .max()
            .unwrap_or(0);
        move |bytes| self.transfers.pure_range(bytes).map_or(widest, spread)
    }

    /// Flags the wait instances the scheduler explains, and the scheduler's time.
    fn descheduled(
        &self,
        trace: &Trace,
        ends: &MessageEnds,
        waits: &mut [WaitInstance],
    ) -> descheduled::Descheduled {
        let hosts = oversubscription::Oversubscription::of(&trace.info);
        descheduled::DescheduledTime::of(trace, ends, &hosts, &self.transfers).flag(waits)
    }
}

/// The two replays of one program, apart (without one: no T_ideal, and the self check
/// says why).
pub(super) fn replay(program: Result<&MeasuredProgram, &ExtractError>, models: &Models) -> Replays {
    let (ideal, self_check) = rayon::join(
        || {
            let _s = tracing::info_span!("ideal replay").entered();
            program.ok().and_then(ideal::replay)
        },
        || {
            let _s = tracing::info_span!("self-check replay").entered();
            let program = program.map_err(|e| NoSelfCheck::NoProgram {
                error: e.to_string(),
            })?;
            crate::replay::self_check_fitted(&models.transfers, program)
        },
    );
    Replays { ideal, self_check }
}
