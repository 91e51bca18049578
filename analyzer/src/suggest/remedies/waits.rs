//! The late-partner and imbalance remedies, from the run's wait states.

use std::collections::BTreeMap;

use crate::metrics::wait_states::{self, WaitInstance, WaitKind};
use crate::model::Trace;
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

/// The compute of `rank` just before its event `index`, in words: the span named, or
/// the gap since its thread's previous call. A call made in a loop of the same call (a
/// post among a thousand at one site) was late because of what came before the loop,
/// not the gap since the previous round: the calls at its site just before it are
/// stepped over, and the words say how many.
fn compute_before(trace: &Trace, sites: &SiteTable, rank: u32, index: usize) -> String {
    let Some(t) = trace.rank(rank) else {
        return "unknown".into();
    };
    let Some(here) = t.spans.get(index) else {
        return "unknown".into();
    };
    let site = |j: usize| {
        let call = t.call(j).map(|(op, _)| op.mpi_name());
        call.zip(sites.label_of_call(trace, rank, j))
    };
    let here_site = site(index);
    let late = call_words(trace, sites, rank, index);
    let mut in_a_row = 1usize;
    let in_words = |in_a_row: usize| match in_a_row {
        1 => late.clone(),
        n => format!("the first of {n} {late} in a row"),
    };
    for j in (0..index).rev() {
        let s = &t.spans[j];
        if s.tid != here.tid {
            continue;
        }
        return match s.what {
            crate::model::What::Compute(id) if in_a_row == 1 => {
                format!("compute \"{}\"", t.name(id))
            }
            crate::model::What::Compute(id) => {
                format!("compute \"{}\" before {}", t.name(id), in_words(in_a_row))
            }
            _ if here_site.is_some() && site(j) == here_site => {
                in_a_row += 1;
                continue;
            }
            _ => format!(
                "the compute between {} and {}",
                call_words(trace, sites, rank, j),
                in_words(in_a_row)
            ),
        };
    }
    format!("the compute before {}", in_words(in_a_row))
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
