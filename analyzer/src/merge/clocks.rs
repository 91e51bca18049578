//! How each rank's clock maps onto the run's timeline, and which measured alignments
//! cannot be true.
//!
//! A rank is aligned with the offsets its file measured against rank 0 (or as it is,
//! when it reads rank 0's very clock). One measurement can be absurd: a header whose
//! epoch is wrong, an offset of centuries, a drift no clock has. Computing with it gives
//! a run of 9.2e9 s or ranks that do not overlap at all. So each alignment is checked
//! against a fact that holds for every real run: the rank's init clock synchronisation
//! (its ping-pong with rank 0) happened while rank 0 was synchronising, i.e. between rank
//! 0's epoch (when it started recording) and the moment rank 0 finished its own init
//! synchronisation. A rank whose aligned synchronisation falls outside that window by
//! more than a second plus its error bound, or whose error bound is over a second, is
//! flagged and aligned instead by that very fact: its synchronisation is placed in the
//! middle of the window, with half the window as its error bound. A drift beyond 1000
//! ppm (real clocks drift by less than 100) is flagged and the final offset dropped.
//!
//! ```text
//!  rank 0  |epoch ....... init sync done|
//!          [========== window ==========]       rank r's sync must fall in here
//!  rank r            ^ aligned init sync        (± 1 s + its error bound)
//! ```

use overlap_format::clock::ClockModel;
use overlap_format::schema::{ClockProblem, ClockSync, ImplausibleClock, Nanos, SyncPhase};

use crate::model::RankTrace;

/// Slack around rank 0's synchronisation window, ns.
const WINDOW_SLACK_NS: i128 = 1_000_000_000;
/// The largest believable error bound of a measured offset, ns.
const MAX_ERROR_NS: u64 = 1_000_000_000;
/// The largest believable drift between two clocks, parts per billion (1000 ppm).
const MAX_DRIFT_PPB: f64 = 1e6;

/// How one rank's local times reach rank 0's clock.
#[derive(Clone, Copy, Debug)]
enum Alignment {
    /// Through a clock model (measured, or the identity for a shared clock).
    Model(ClockModel),
    /// Local time `local_ns` is rank 0's `reference` (an implausible measurement
    /// replaced by the synchronisation window), give or take `error_ns`.
    Anchored {
        local_ns: u64,
        reference: i128,
        error_ns: u64,
    },
}

impl Alignment {
    fn to_reference(self, epoch_ns: u64, local_ns: u64) -> i128 {
        match self {
            Alignment::Model(m) => m.to_reference(epoch_ns, local_ns),
            Alignment::Anchored {
                local_ns: at,
                reference,
                ..
            } => reference + (i128::from(local_ns) - i128::from(at)),
        }
    }

    fn max_error(&self) -> u64 {
        match self {
            Alignment::Model(m) => m.max_error(),
            Alignment::Anchored { error_ns, .. } => *error_ns,
        }
    }
}

/// How each rank's clock maps onto the run's timeline.
pub(crate) struct ClockPlan {
    /// Measured models, by position in the rank list.
    pub(super) measured: Vec<ClockModel>,
    /// Alignments used.
    used: Vec<Alignment>,
    /// Which ranks read rank 0's very clock.
    shared: Vec<bool>,
    /// The run's start on rank 0's clock.
    pub(super) run_start: i128,
    /// The ranks whose measurement was replaced, and why.
    pub(super) implausible: Vec<ImplausibleClock>,
}

/// One rank's times onto the run's timeline (see [`ClockPlan::aligner`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RankAlign {
    alignment: Alignment,
    epoch: u64,
    run_start: i128,
}

impl RankAlign {
    /// A time of the rank, ns since the run's start.
    pub(crate) fn apply(&self, n: Nanos) -> Nanos {
        let ns = (self.alignment.to_reference(self.epoch, n.0) - self.run_start).max(0);
        Nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

/// Rank 0's synchronisation window on its clock: `(from, to)`.
fn window<S>(reference: &RankTrace<S>, model: &ClockModel) -> (i128, i128) {
    let from = model.to_reference(reference.header.epoch_ns, 0);
    let done = init_sync(reference).map_or(0, |s| s.local_ns);
    (from, model.to_reference(reference.header.epoch_ns, done))
}

fn init_sync<S>(t: &RankTrace<S>) -> Option<&ClockSync> {
    t.syncs.iter().find(|s| s.phase == SyncPhase::Init)
}

/// A span of ns for people (negative ones as such).
fn seconds(ns: i128) -> String {
    let text = crate::units::duration(u64::try_from(ns.unsigned_abs()).unwrap_or(u64::MAX));
    if ns < 0 {
        format!("-{text}")
    } else {
        text
    }
}

impl ClockPlan {
    /// Plans the alignment of `traces` (sorted by rank).
    pub(crate) fn new<S>(traces: &[RankTrace<S>]) -> ClockPlan {
        // Offsets were measured against rank 0; ranks that read rank 0's very clock need
        // no correction at all. Without rank 0's file, its clock domain is unknown and
        // every rank keeps its measured offset (still consistent: all refer to rank 0).
        let reference_domain = traces
            .iter()
            .find(|t| t.rank() == 0)
            .map(|t| t.header.clock_domain.clone())
            .unwrap_or_default();
        let shared: Vec<bool> = traces
            .iter()
            .map(|t| !reference_domain.is_empty() && t.header.clock_domain == reference_domain)
            .collect();
        let measured: Vec<ClockModel> = traces.iter().map(RankTrace::clock_model).collect();
        let mut used = Vec::with_capacity(traces.len());
        let mut implausible = Vec::new();
        // The window is rank 0's. Without rank 0's file, the lowest rank's stands in: its
        // own ping-pong was one of rank 0's, so the others lie within the longest time
        // any rank took from its start to its synchronisation, which widens the slack.
        let win = traces
            .first()
            .map(|t| window(t, &measured[0]))
            .unwrap_or((0, 0));
        let reference = traces.first().map_or(0, RankTrace::rank);
        let stand_in_slack = if traces.first().is_some_and(|t| t.rank() == 0) {
            0
        } else {
            traces
                .iter()
                .filter_map(|t| init_sync(t).map(|s| i128::from(s.local_ns)))
                .max()
                .unwrap_or(0)
        };
        for (i, t) in traces.iter().enumerate() {
            let mut model = if shared[i] {
                ClockModel::identity()
            } else {
                measured[i]
            };
            if i == 0 {
                used.push(Alignment::Model(model));
                continue;
            }
            if let Some(ppb) = model.drift_ppb().filter(|d| d.abs() > MAX_DRIFT_PPB) {
                implausible.push(ImplausibleClock {
                    rank: t.rank(),
                    problem: ClockProblem::Drift,
                    reason: format!(
                        "its clock drifts {:.0} ppm against rank 0's between the init and \
                         final synchronisations, beyond any real clock: the final offset is \
                         not used",
                        ppb / 1e3
                    ),
                });
                model = ClockModel::new(model.init(), None);
            }
            let local = init_sync(t).map_or(0, |s| s.local_ns);
            let at = model.to_reference(t.header.epoch_ns, local);
            let slack = WINDOW_SLACK_NS + stand_in_slack + i128::from(model.init().error_ns);
            let outside = if at < win.0 - slack {
                Some(win.0 - at)
            } else if at > win.1 + slack {
                Some(at - win.1)
            } else {
                None
            };
            let problem = if !shared[i] && model.init().error_ns > MAX_ERROR_NS {
                Some((
                    ClockProblem::ErrorBound,
                    format!(
                        "its measured offset's error bound is {}, over a second",
                        seconds(i128::from(model.init().error_ns))
                    ),
                ))
            } else {
                outside.map(|by| {
                    let how = match (shared[i], init_sync(t)) {
                        (true, _) => "read on rank 0's clock (same clock domain), its \
                                      epoch puts"
                            .to_string(),
                        (false, Some(s)) => format!(
                            "aligned with its measured offset of {}, it puts",
                            seconds(i128::from(s.offset_ns))
                        ),
                        (false, None) => "with no clock synchronisation recorded, its \
                                          epoch puts"
                            .to_string(),
                    };
                    (
                        ClockProblem::Anchor,
                        format!(
                            "{how} its init clock synchronisation {} away from rank \
                             {reference}'s (which lasted {}): an epoch or offset that cannot \
                             be true",
                            seconds(by),
                            seconds(win.1 - win.0)
                        ),
                    )
                })
            };
            match problem {
                None => used.push(Alignment::Model(model)),
                Some((problem, why)) => {
                    let half = (win.1 - win.0).max(0) / 2;
                    let error_ns = u64::try_from(half).unwrap_or(u64::MAX);
                    implausible.push(ImplausibleClock {
                        rank: t.rank(),
                        problem,
                        reason: format!(
                            "{why}; aligned instead by placing its init synchronisation in \
                             the middle of rank {reference}'s (error bound {})",
                            seconds(half)
                        ),
                    });
                    used.push(Alignment::Anchored {
                        local_ns: local,
                        reference: win.0 + half,
                        error_ns,
                    });
                }
            }
        }
        let run_start = traces
            .iter()
            .zip(&used)
            .map(|(t, a)| a.to_reference(t.header.epoch_ns, 0))
            .min()
            .unwrap_or(0);
        ClockPlan {
            measured,
            used,
            shared,
            run_start,
            implausible,
        }
    }

    /// Maps a time of the `i`-th rank (ns since its epoch) onto the run's timeline.
    pub(crate) fn aligner<S>(&self, i: usize, t: &RankTrace<S>) -> impl Fn(Nanos) -> Nanos {
        let align = self.rank_align(i, t);
        move |n: Nanos| align.apply(n)
    }

    /// The `i`-th rank's alignment as a value, kept to align its events again when the
    /// merged file is written from the rank's file.
    pub(crate) fn rank_align<S>(&self, i: usize, t: &RankTrace<S>) -> RankAlign {
        RankAlign {
            alignment: self
                .used
                .get(i)
                .copied()
                .unwrap_or(Alignment::Model(ClockModel::identity())),
            epoch: t.header.epoch_ns,
            run_start: self.run_start,
        }
    }

    /// True when the `i`-th rank's times are used as they are: it reads rank 0's very
    /// clock and its epoch is believable.
    pub(super) fn shared_clock(&self, i: usize) -> bool {
        self.shared.get(i).copied().unwrap_or(false)
            && matches!(self.used.get(i), Some(Alignment::Model(_)))
    }

    /// The largest error bound of any rank's alignment.
    pub(super) fn max_error(&self) -> u64 {
        self.used
            .iter()
            .map(Alignment::max_error)
            .max()
            .unwrap_or(0)
    }

    /// The `i`-th rank's alignment, as `otherData` lists it: `(init offset, its error,
    /// final offset and error, drift)` of what was used (the measurement, or the
    /// replacement of an implausible one).
    pub(super) fn used_offsets<S>(
        &self,
        i: usize,
        t: &RankTrace<S>,
    ) -> (i64, u64, Option<(i64, u64)>, Option<f64>) {
        let m = &self.measured[i];
        let final_dropped = self
            .implausible
            .iter()
            .any(|c| c.rank == t.rank() && c.problem == ClockProblem::Drift);
        match self.used.get(i) {
            Some(Alignment::Anchored {
                local_ns,
                reference,
                error_ns,
            }) => {
                let offset = i128::from(t.header.epoch_ns) + i128::from(*local_ns) - reference;
                let offset =
                    i64::try_from(offset).unwrap_or(if offset < 0 { i64::MIN } else { i64::MAX });
                (offset, *error_ns, None, None)
            }
            Some(Alignment::Model(_)) if final_dropped => {
                (m.init().offset_ns, m.init().error_ns, None, None)
            }
            _ => (
                m.init().offset_ns,
                m.init().error_ns,
                m.last().map(|l| (l.offset_ns, l.error_ns)),
                m.drift_ppb(),
            ),
        }
    }

    /// The run's start on the wall clock (ns since the Unix epoch), from the first
    /// rank's header; 0 when unknown.
    pub(super) fn start_unix_ns<S>(&self, traces: &[RankTrace<S>]) -> u64 {
        let Some(first) = traces.first().filter(|t| t.header.start_unix_ns > 0) else {
            return 0;
        };
        let its_epoch = self.used[0].to_reference(first.header.epoch_ns, 0);
        let before = u64::try_from(its_epoch - self.run_start).unwrap_or(0);
        first.header.start_unix_ns.saturating_sub(before)
    }
}
