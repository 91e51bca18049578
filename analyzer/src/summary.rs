//! Where each rank's time went: computing, inside MPI, and waiting, over the run's wall
//! time. The first look a run gets; the wait-state analysis builds on the same events.
//!
//! Definitions (ns, per rank, on the merged timeline):
//! - wall: from the rank's first event's start to its last event's end;
//! - compute: sum of compute spans;
//! - in MPI: sum of MPI call durations;
//! - waiting: the part of "in MPI" spent in calls whose job is to wait for a transfer or
//!   for other ranks: Wait, Waitall, Test, Barrier, and the blocking Send, Recv and
//!   Sendrecv. Posting (Isend, Irecv) and Allreduce are in MPI but not waiting.
//!
//! The run's wall time is from the earliest start to the latest end over all ranks.

use std::collections::BTreeMap;

use overlap_instrument::schema::{Event, Nanos, Op, OpClass};

use crate::merge::{AlignedRank, Merged};

/// One rank's time budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankSummary {
    /// Rank.
    pub rank: u32,
    /// Host.
    pub host: String,
    /// First event start to last event end.
    pub wall: Nanos,
    /// Time in compute spans.
    pub compute: Nanos,
    /// Time inside MPI calls.
    pub in_mpi: Nanos,
    /// Time in waiting calls (part of `in_mpi`).
    pub waiting: Nanos,
    /// Calls by op.
    pub calls: BTreeMap<Op, u64>,
    /// False when the rank's trace was cut short.
    pub complete: bool,
}

/// The run's time budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    /// Per rank.
    pub ranks: Vec<RankSummary>,
    /// Earliest start to latest end over all ranks.
    pub wall: Nanos,
    /// Largest clock error bound of any rank.
    pub clock_error: Nanos,
    /// True when every rank read rank 0's own clock (one host).
    pub shared_clock: bool,
}

/// True for calls counted as waiting.
pub fn is_waiting(op: Op) -> bool {
    matches!(
        op.class(),
        OpClass::Completion | OpClass::BlockingPointToPoint
    ) || op == Op::Barrier
}

/// First start and last end of a rank's events, if it has any.
fn span(events: &[Event]) -> Option<(Nanos, Nanos)> {
    let start = events.iter().map(Event::start).min()?;
    let end = events.iter().map(Event::end).max()?;
    Some((start, end))
}

fn summarize_rank(a: &AlignedRank) -> RankSummary {
    let mut s = RankSummary {
        rank: a.rank,
        host: a.host.clone(),
        wall: span(&a.events).map_or(Nanos::ZERO, |(st, en)| en - st),
        compute: Nanos::ZERO,
        in_mpi: Nanos::ZERO,
        waiting: Nanos::ZERO,
        calls: BTreeMap::new(),
        complete: a.complete,
    };
    for e in &a.events {
        let d = e.end() - e.start();
        match e {
            Event::Compute(_) => s.compute = s.compute + d,
            Event::Call(c) => {
                s.in_mpi = s.in_mpi + d;
                if is_waiting(c.op) {
                    s.waiting = s.waiting + d;
                }
                *s.calls.entry(c.op).or_default() += 1;
            }
        }
    }
    s
}

/// Summarises a merged run.
pub fn summarize(merged: &Merged) -> RunSummary {
    let spans: Vec<(Nanos, Nanos)> = merged
        .ranks
        .iter()
        .filter_map(|a| span(&a.events))
        .collect();
    let wall = match (
        spans.iter().map(|s| s.0).min(),
        spans.iter().map(|s| s.1).max(),
    ) {
        (Some(first), Some(last)) => last - first,
        _ => Nanos::ZERO,
    };
    RunSummary {
        ranks: merged.ranks.iter().map(summarize_rank).collect(),
        wall,
        clock_error: Nanos(merged.info.max_clock_error_ns),
        shared_clock: merged.info.ranks.iter().all(|r| r.shared_clock),
    }
}

fn secs(n: Nanos) -> String {
    format!("{:.3} s", n.as_secs_f64())
}

fn share(part: Nanos, whole: Nanos) -> String {
    if whole.0 == 0 {
        "   -  ".into()
    } else {
        format!("{:5.1}%", part.0 as f64 * 100.0 / whole.0 as f64)
    }
}

impl RunSummary {
    /// The summary as a table for a terminal (under 100 columns).
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "{:>4}  {:<14} {:>9}  {:>17}  {:>17}  {:>17}\n",
            "rank", "host", "wall", "compute", "in MPI", "waiting"
        ));
        for r in &self.ranks {
            let host: String = r.host.chars().take(14).collect();
            out.push_str(&format!(
                "{:>4}  {:<14} {:>9}  {:>9} {}  {:>9} {}  {:>9} {}{}\n",
                r.rank,
                host,
                secs(r.wall),
                secs(r.compute),
                share(r.compute, r.wall),
                secs(r.in_mpi),
                share(r.in_mpi, r.wall),
                secs(r.waiting),
                share(r.waiting, r.wall),
                if r.complete { "" } else { "  (cut short)" }
            ));
        }
        let clock = if self.shared_clock {
            "all ranks read one clock (no alignment error)".to_string()
        } else {
            format!(
                "clock alignment error bound {:.1} us",
                self.clock_error.0 as f64 / 1000.0
            )
        };
        out.push_str(&format!("run wall time {}; {clock}\n", secs(self.wall)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_calls_are_the_blocking_and_completing_ones() {
        let waiting: Vec<Op> = Op::ALL.into_iter().filter(|o| is_waiting(*o)).collect();
        assert_eq!(
            waiting,
            vec![
                Op::Send,
                Op::Recv,
                Op::Sendrecv,
                Op::Wait,
                Op::Waitall,
                Op::Test,
                Op::Barrier
            ]
        );
    }
}
