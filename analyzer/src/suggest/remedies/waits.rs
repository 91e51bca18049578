//! The late-partner and imbalance remedies, from the run's wait states.

use std::collections::BTreeMap;

use overlap_format::schema::{Op, OpClass};

use crate::metrics::wait_kind::WaitInstance;
use crate::metrics::wait_kind::WaitKind;
use crate::metrics::wait_states;
use crate::model::{Trace, What};
use crate::sites::SiteTable;

use super::{Imbalance, LatePartner};

/// The late-partner and imbalance remedies of `trace`, from its wait states.
pub fn waits(trace: &Trace, sites: &SiteTable) -> (Vec<LatePartner>, Vec<Imbalance>) {
    let instances = wait_states::instances(trace);
    late_and_imbalance(trace, sites, &instances)
}

fn call_words(trace: &Trace, sites: &SiteTable, rank: u32, index: usize) -> String {
    let call = trace
        .rank(rank)
        .and_then(|t| t.call(index))
        .map_or("MPI call", |(op, _)| op.mpi_name());
    match sites.label_of_call(trace, rank, index) {
        Some(site) => format!("{call} at {site}"),
        None => call.to_string(),
    }
}

/// A stretch of a rank's compute: a compute span (its name), or the gap between two of
/// its calls (their events).
#[derive(Clone, Copy)]
enum Stretch {
    Span(u32),
    Gap(usize, usize),
}

/// Whether a call can wait for another rank (or for requests posted earlier): what comes
/// before it was already waited for, so it bounds the stretch that made a call late.
fn may_wait(op: Op) -> bool {
    !matches!(
        op.class(),
        OpClass::Post | OpClass::Local | OpClass::OneSided
    )
}

/// The compute that made `rank` late for its event `index`, in words: the longest
/// stretch of compute since its thread's last call that could wait (what came before
/// that call was waited for already), either a compute span (named) or the gap between
/// two of its calls. A call made right after another (the second of two sends, a post
/// in a loop of posts) was late because of the compute before them, not the few
/// nanoseconds between them.
fn compute_before(trace: &Trace, sites: &SiteTable, rank: u32, index: usize) -> String {
    let Some(t) = trace.rank(rank) else {
        return "unknown".into();
    };
    let Some(here) = t.spans.get(index) else {
        return "unknown".into();
    };
    // The longest, and its time.
    let mut longest: Option<(u64, Stretch)> = None;
    let mut offer = |ns: u64, what| {
        if longest.is_none_or(|(l, _)| ns > l) {
            longest = Some((ns, what));
        }
    };
    // The next call, and the time of the compute spans between it and the span at hand
    // (the gap between two calls is what is left).
    let (mut next_call, mut spans_between) = (index, 0u64);
    for j in (0..index).rev() {
        let s = &t.spans[j];
        if s.tid != here.tid {
            continue;
        }
        let duration = s.end.0.saturating_sub(s.start.0);
        match s.what {
            What::Compute(id) => {
                offer(duration, Stretch::Span(id));
                spans_between += duration;
            }
            What::Call(op, _) => {
                let gap = t.spans[next_call].start.0.saturating_sub(s.end.0);
                offer(
                    gap.saturating_sub(spans_between),
                    Stretch::Gap(j, next_call),
                );
                if may_wait(op) {
                    break;
                }
                (next_call, spans_between) = (j, 0);
            }
        }
    }
    match longest {
        Some((_, Stretch::Span(id))) => format!("compute \"{}\"", t.name(id)),
        Some((_, Stretch::Gap(a, b))) => format!(
            "the compute between {} and {}",
            call_words(trace, sites, rank, a),
            call_words(trace, sites, rank, b)
        ),
        None => format!(
            "the compute before {}",
            call_words(trace, sites, rank, index)
        ),
    }
}

/// Waits of one kind at one place: how many, how long, and who was late how often.
#[derive(Default)]
struct Tally {
    count: u64,
    lost_ns: u64,
    late: BTreeMap<u32, u64>,
}

impl Tally {
    fn add(&mut self, w: &WaitInstance) {
        self.count += 1;
        self.lost_ns += w.amount_ns;
        if let Some(p) = w.peer {
            *self.late.entry(p).or_default() += 1;
        }
    }

    /// The rank late most often (the lowest among equals).
    fn most_late(&self) -> u32 {
        self.late
            .iter()
            .max_by_key(|(r, n)| (**n, std::cmp::Reverse(**r)))
            .map_or(0, |(r, _)| *r)
    }
}

fn late_and_imbalance(
    trace: &Trace,
    sites: &SiteTable,
    instances: &[WaitInstance],
) -> (Vec<LatePartner>, Vec<Imbalance>) {
    // Keyed by the waiting site and the late site, in words: the same line on every rank
    // is one remedy.
    let mut late: BTreeMap<(String, String, &'static str), (Tally, String)> = BTreeMap::new();
    let mut coll: BTreeMap<String, Tally> = BTreeMap::new();
    for w in instances
        .iter()
        .filter(|w| !w.indeterminate && !w.clock_suspect && w.amount_ns > 0)
    {
        let wait = call_words(trace, sites, w.rank, w.index);
        match w.kind {
            WaitKind::LateSender | WaitKind::LateReceiver => {
                let (Some(peer), Some(pi)) = (w.peer, w.peer_index) else {
                    continue;
                };
                let late_call = call_words(trace, sites, peer, pi);
                late.entry((wait, late_call, w.kind.title()))
                    .or_insert_with(|| (Tally::default(), compute_before(trace, sites, peer, pi)))
                    .0
                    .add(w);
            }
            WaitKind::WaitAtBarrier
            | WaitKind::WaitAtNxN
            | WaitKind::LateBroadcast
            | WaitKind::EarlyReduce
            | WaitKind::EarlyScan => coll.entry(wait).or_default().add(w),
            _ => {}
        }
    }
    let mut late: Vec<LatePartner> = late
        .into_iter()
        .map(|((wait, late_call, kind), (t, late_compute))| LatePartner {
            kind,
            wait,
            late_call,
            late_rank: t.most_late(),
            late_compute,
            count: t.count,
            lost_ns: t.lost_ns,
        })
        .collect();
    late.sort_by_key(|l| std::cmp::Reverse(l.lost_ns));
    let mut imbalance: Vec<Imbalance> = coll
        .into_iter()
        .map(|(call, t)| Imbalance {
            call,
            last_rank: t.most_late(),
            count: t.count,
            lost_ns: t.lost_ns,
        })
        .collect();
    imbalance.sort_by_key(|i| std::cmp::Reverse(i.lost_ns));
    (late, imbalance)
}
