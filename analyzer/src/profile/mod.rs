//! What a performance engineer looks at first, in the form mpiP and Vampir taught them:
//! the time in each MPI function and at each call site (count, total, mean, min, max,
//! the time lost there in wait states, and the bytes moved), who sent how much to whom
//! (the communication matrix, per pair and per communicator), how large the messages
//! were (log2 classes, per sending function), and how each rank's run splits into
//! setting up, its body and finalizing.
//!
//! Every figure is summed from the trace as recorded: a call's time is its span, a
//! message's bytes those the receive reported (or the send's count when the receive
//! reported none), wait states those of [`crate::metrics::wait_states`] beyond the
//! clock error bound. What the trace cannot say (a phase whose bounding call was not
//! recorded) is unknown, with the reason, never 0.
//!
//! The profile is made a part of the run at a time ([`Fold`]): each part trace (a run
//! of whole ranks, in rank order, with the whole run's messages) adds its ranks' calls,
//! phases and wait states, and the messages its ranks sent (to the matrix, the sizes
//! and the sending calls) or completed (to the completing calls), so that each message
//! counts once however the run is cut; [`of`] is the whole trace as one part.
//!
//! - [`calls`]: the tables by function and by call site.
//! - [`traffic`]: the communication matrix and the message sizes.
//! - [`phases`]: setup, body and finalize per rank.

pub mod calls;
pub mod phases;
pub mod traffic;

use serde::Serialize;

use crate::metrics::WaitInstance;
use crate::model::{MessagesByRank, PartMessages, Trace};
use crate::sites::SiteTable;

pub use calls::{CallStats, SiteStats};
pub use phases::{Phases, RankPhases};
pub use traffic::{CommMatrix, CommTraffic, PairTraffic, SizeClass, SizeClasses};

/// The run's profile.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Profile {
    /// Time per MPI function, largest total first.
    pub functions: Vec<CallStats>,
    /// Time per (call site, MPI function), largest total first.
    pub sites: Vec<SiteStats>,
    /// Point-to-point traffic: per pair of world ranks and per communicator.
    pub matrix: CommMatrix,
    /// Message sizes in log2 classes, per sending MPI function.
    pub sizes: Vec<SizeClasses>,
    /// Setup, body and finalize, per rank.
    pub phases: Phases,
}

/// The profile of `trace`, its calls' sites named by `sites`, with the wait-state
/// instances `waits` charged to the calls they happened in.
pub fn of(trace: &Trace, sites: &SiteTable, waits: &[WaitInstance]) -> Profile {
    let _span = tracing::info_span!("profile").entered();
    let mut fold = Fold::new();
    let index = MessagesByRank::of(&trace.messages);
    fold.add(trace, sites, waits, index.all());
    fold.finish(sites)
}

/// The profile, made a part of the run at a time: parts added in rank order, each once,
/// make the profile of the whole run, wherever they are cut.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Fold {
    calls: calls::Fold,
    traffic: traffic::Fold,
    phases: phases::Fold,
}

impl Fold {
    /// No part yet.
    pub(crate) fn new() -> Fold {
        Fold {
            calls: calls::Fold::new(None),
            traffic: traffic::Fold::new(),
            phases: phases::Fold::default(),
        }
    }

    /// Adds `part` (a part trace: whole ranks, after those of the parts added before),
    /// its calls' sites named by `sites` (the whole run's table), with the wait-state
    /// instances of its ranks among `waits` (those of other ranks are ignored, so the
    /// whole run's may be given).
    pub(crate) fn add(
        &mut self,
        part: &Trace,
        sites: &SiteTable,
        waits: &[WaitInstance],
        messages: PartMessages,
    ) {
        // The three folds do not need each other.
        let (calls, traffic, phases) = (&mut self.calls, &mut self.traffic, &mut self.phases);
        rayon::join(
            || calls.add(part, sites, waits, messages),
            || {
                rayon::join(
                    || traffic.add(part, messages.sent),
                    || phases.add(part, waits),
                )
            },
        );
    }

    /// Adds the fold of the parts after this one's: what adding them here gives.
    pub(crate) fn merge(&mut self, later: Fold) {
        self.calls.merge(later.calls);
        self.traffic.merge(later.traffic);
        self.phases.merge(later.phases);
    }

    /// The profile of every part added, with `sites` the table they were added with.
    pub(crate) fn finish(self, sites: &SiteTable) -> Profile {
        let (functions, by_site) = self.calls.finish(sites);
        let (matrix, sizes) = self.traffic.finish();
        Profile {
            functions,
            sites: by_site,
            matrix,
            sizes,
            phases: self.phases.finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{of, Fold, Profile};
    use crate::load::kept_runs;
    use crate::metrics::wait_states;
    use crate::metrics::WaitInstance;
    use crate::model::{MessagesByRank, Trace};
    use crate::sites::SiteTable;

    /// The wait instances of `part`'s ranks: a slice of the run's, which are in rank
    /// order.
    fn waits_of<'a>(part: &Trace, waits: &'a [WaitInstance]) -> &'a [WaitInstance] {
        let (Some(first), Some(last)) = (part.ranks.first(), part.ranks.last()) else {
            return &[];
        };
        let from = waits.partition_point(|w| w.rank < first.rank);
        let to = waits.partition_point(|w| w.rank <= last.rank);
        &waits[from..to]
    }

    /// `parts` folded, each given its own ranks' waits, or all of `waits` when
    /// `all_waits` (which `add` must ignore but for the part's ranks).
    fn folded(
        parts: &[Trace],
        sites: &SiteTable,
        waits: &[WaitInstance],
        all_waits: bool,
    ) -> Profile {
        let mut fold = Fold::new();
        let index = parts.first().map(|p| MessagesByRank::of(&p.messages));
        let mut after = None;
        for (k, part) in parts.iter().enumerate() {
            let given = if all_waits {
                waits
            } else {
                waits_of(part, waits)
            };
            // Each part's messages are those of its ranks, and of ranks of no part
            // after the previous part's (the last part's reach to the end).
            let last = part.ranks.last().map(|t| t.rank);
            let up_to = last.filter(|_| k + 1 < parts.len());
            let messages = index.as_ref().expect("a part").between(after, up_to);
            fold.add(part, sites, given, messages);
            after = last.or(after);
        }
        fold.finish(sites)
    }

    /// Each figure of `got` is the one of `want`.
    fn assert_same(got: &Profile, want: &Profile, what: &str) {
        assert_eq!(got.functions, want.functions, "{what}: by function");
        assert_eq!(got.sites, want.sites, "{what}: by site");
        assert_eq!(got.matrix, want.matrix, "{what}: matrix");
        assert_eq!(got.sizes, want.sizes, "{what}: sizes");
        assert_eq!(got.phases, want.phases, "{what}: phases");
        assert!(got == want, "{what}");
    }

    /// Each of `trace`'s messages is in `p` once: in its pair, and in the bytes sent and
    /// received by the calls of the ranks `trace` holds. As [`of`] is a fold itself, this
    /// is what says the fold counts a message neither twice nor never.
    fn assert_each_message_once(p: &Profile, trace: &Trace, what: &str) {
        let m = &trace.messages;
        let pairs: (u64, u64) = p
            .matrix
            .pairs
            .iter()
            .fold((0, 0), |(n, b), q| (n + q.messages, b + q.bytes));
        assert_eq!(
            pairs,
            (m.len() as u64, m.iter().map(|m| m.bytes).sum()),
            "{what}: pairs"
        );
        let held = |rank: u32| trace.slot(rank).is_some();
        let sent: u64 = m
            .iter()
            .filter(|m| held(m.send().rank))
            .map(|m| m.bytes)
            .sum();
        let done = |m: &&crate::model::Message| m.completion().is_some_and(|d| held(d.rank));
        let received: u64 = m.iter().filter(done).map(|m| m.bytes).sum();
        let calls = p
            .functions
            .iter()
            .fold((0, 0), |(s, r), c| (s + c.sent_bytes, r + c.received_bytes));
        assert_eq!(
            calls,
            (sent, received),
            "{what}: bytes sent and received by the calls"
        );
    }

    /// Folding the parts of a kept run, a rank at a time, two at a time or all at once,
    /// gives the profile of the whole run: each message is counted once, in the part of
    /// its sender (matrix, sizes, bytes sent) and in the part of its receiver (bytes
    /// received), however the run is cut. A run cut to all but its first and last ranks,
    /// whose messages from those have their sender in no part (before the first part,
    /// after the last), folds the same way.
    #[test]
    fn the_profile_does_not_depend_on_the_parts() {
        let mut across_parts = 0usize;
        for trace in kept_runs() {
            let name = trace.source.display().to_string();
            let waits = wait_states::instances(&trace);
            assert!(waits.is_sorted_by_key(|w| w.rank), "{name}: waits by rank");
            let sites = SiteTable::build(&trace);
            let whole = of(&trace, &sites, &waits);
            assert_each_message_once(&whole, &trace, &name);
            let n = trace.ranks.len();
            for size in [1, 2, n] {
                let parts = trace.parts(size);
                let what = format!("{name}: parts of {size}");
                assert_same(&folded(&parts, &sites, &waits, false), &whole, &what);
                let what = format!("{what}, each given every wait");
                assert_same(&folded(&parts, &sites, &waits, true), &whole, &what);
            }
            // Messages between ranks: at parts of 1, their ends are in different parts,
            // and counting one in both would show above.
            across_parts += trace
                .messages
                .iter()
                .filter(|m| m.send().rank != m.recv_post().rank && m.bytes > 0)
                .count();
            if n >= 3 {
                let cut = trace.part(1..n - 1);
                let whole = of(&cut, &sites, &waits);
                let what = format!("{name} without its first and last ranks, parts of 1");
                assert_each_message_once(&whole, &cut, &what);
                assert_same(&folded(&cut.parts(1), &sites, &waits, false), &whole, &what);
            }
        }
        assert!(across_parts > 0, "no kept run has messages between ranks");
    }
}
