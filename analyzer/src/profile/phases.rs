//! Each rank's run in three parts: setting up (from entering `MPI_Init` to leaving its
//! first MPI call after it that communicates: the Init, whatever the program prepared
//! before it communicated, and that first call, which meets the other ranks and so
//! absorbs their start-up skew; local calls, such as `MPI_Pcontrol` or a persistent
//! request's init, meet no one and do not end it), its body (from there to entering
//! `MPI_Finalize`) and finalizing (the Finalize call). Start-up skew and slow
//! initialisation show here, apart from the body's waits.
//!
//! ```text
//!  rank 0  |Init 0-5|prepare 5-9|Send 9-10| ... |Finalize 40-42|
//!           setup 10 (0 to 10)      body 30 (10 to 40)   finalize 2
//! ```
//!
//! A part whose bounding call was not recorded (a rank cut short, a program that never
//! finalized, a trace from the Rust layer that starts after Init) is unknown, and says
//! why.
//!
//! Each rank's phases are its own: they are made a part of the run (whole ranks, in
//! rank order) at a time ([`Fold`]), and the longest of each taken at the end.

use overlap_format::schema::{Op, OpClass};
use serde::Serialize;

use crate::metrics::WaitInstance;
use crate::model::{Timeline, Trace};

/// One rank's parts, ns; `None` when unknown (`unknown` says why).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RankPhases {
    /// Rank.
    pub rank: u32,
    /// From entering MPI_Init to leaving the first MPI call after it that communicates.
    pub setup_ns: Option<u64>,
    /// From there to entering MPI_Finalize.
    pub body_ns: Option<u64>,
    /// MPI_Finalize's own time.
    pub finalize_ns: Option<u64>,
    /// When setup ended (the first call after MPI_Init returned), ns since the run's
    /// start.
    pub setup_end_ns: Option<u64>,
    /// Time in wait states (beyond the clock error bound) of calls made during setup:
    /// start-up skew, apart from the body's waits.
    pub setup_wait_state_ns: u64,
    /// Why a part is unknown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
}

/// The parts of every rank, and the longest of each over the ranks that know it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Phases {
    /// Per rank, by rank.
    pub ranks: Vec<RankPhases>,
    /// The longest setup, ns; `None` when no rank's is known.
    pub setup_max_ns: Option<u64>,
    /// The longest body, ns.
    pub body_max_ns: Option<u64>,
    /// The longest finalize, ns.
    pub finalize_max_ns: Option<u64>,
    /// Time in wait states during setup, over all ranks, ns (part of the run's wait
    /// states, said apart: a late start is not a communication problem of the body).
    pub setup_wait_state_ns: u64,
}

/// The phases of every rank of `trace`, with the wait states of `waits` that happened
/// during setup (the whole trace as one part of a [`Fold`]).
pub fn of(trace: &Trace, waits: &[WaitInstance]) -> Phases {
    let mut fold = Fold::default();
    fold.add(trace, waits);
    fold.finish()
}

/// The phases, made a part of the run at a time: each part trace (whole ranks, in rank
/// order) adds its ranks' phases, with their setup wait states; the maxima and the
/// sum are taken over them all at the finish.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Fold {
    /// Every rank of the parts added, by rank.
    ranks: Vec<RankPhases>,
}

impl Fold {
    /// Adds the phases of `part`'s ranks, with the wait states among `waits` that they
    /// had during setup (those of other parts' ranks are ignored).
    pub(crate) fn add(&mut self, part: &Trace, waits: &[WaitInstance]) {
        let first = self.ranks.len();
        self.ranks.extend(part.ranks.iter().map(rank_phases));
        for w in waits.iter().filter(|w| !w.indeterminate && !w.descheduled) {
            let Some(slot) = part.slot(w.rank) else {
                continue; // another part's rank
            };
            let r = &mut self.ranks[first + slot];
            if r.setup_end_ns.is_some_and(|end| w.start_ns < end) {
                r.setup_wait_state_ns += w.amount_ns;
            }
        }
    }

    /// Adds the fold of the ranks after this one's.
    pub(crate) fn merge(&mut self, later: Fold) {
        self.ranks.extend(later.ranks);
    }

    /// The phases of every rank added, and the longest of each.
    pub(crate) fn finish(self) -> Phases {
        let ranks = self.ranks;
        let max = |f: fn(&RankPhases) -> Option<u64>| ranks.iter().filter_map(f).max();
        Phases {
            setup_max_ns: max(|r| r.setup_ns),
            body_max_ns: max(|r| r.body_ns),
            finalize_max_ns: max(|r| r.finalize_ns),
            setup_wait_state_ns: ranks.iter().map(|r| r.setup_wait_state_ns).sum(),
            ranks,
        }
    }
}

fn rank_phases(t: &Timeline) -> RankPhases {
    let calls = || {
        t.spans
            .iter()
            .filter_map(|s| s.op().map(|op| (op, s.start.0, s.end.0)))
    };
    let init = calls().find(|(op, _, _)| matches!(op, Op::Init | Op::InitThread));
    let finalize = calls().find(|(op, _, _)| *op == Op::Finalize);
    let mut unknown = Vec::new();
    // The end of the first call after Init that communicates: the body's start.
    let body_start = init.and_then(|(_, _, init_end)| {
        calls()
            .find(|(op, start, _)| {
                *start >= init_end
                    && !matches!(op, Op::Init | Op::InitThread | Op::Finalize)
                    && op.class() != OpClass::Local
            })
            .map(|(_, _, end)| end)
            .or(finalize.map(|(_, start, _)| start))
    });
    let setup_ns = match (init, body_start) {
        (Some((_, init_start, _)), Some(start)) => Some(start.saturating_sub(init_start)),
        (None, _) => {
            unknown.push("MPI_Init was not recorded".to_string());
            None
        }
        (Some(_), None) => {
            unknown.push("no MPI call followed MPI_Init".to_string());
            None
        }
    };
    let finalize_ns = match finalize {
        Some((_, start, end)) => Some(end.saturating_sub(start)),
        None => {
            unknown.push(if t.complete {
                "MPI_Finalize was not recorded".to_string()
            } else {
                "MPI_Finalize was not recorded (the rank's trace was cut short)".to_string()
            });
            None
        }
    };
    let body_ns = match (body_start, finalize) {
        (Some(from), Some((_, to, _))) => Some(to.saturating_sub(from)),
        _ => None,
    };
    RankPhases {
        rank: t.rank,
        setup_ns,
        body_ns,
        finalize_ns,
        setup_end_ns: setup_ns.and(body_start),
        setup_wait_state_ns: 0,
        unknown,
    }
}
