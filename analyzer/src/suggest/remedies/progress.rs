//! The progress remedy: the order replayed with progress only inside MPI calls and with
//! asynchronous progress, and the completions whose waits the difference shortens.

use std::collections::BTreeMap;

use crate::ops::{OpKind, Program, RequestRole};
use crate::replay::{self, NetworkFit, ProgressMode};

use super::super::{predict, Namer, Suggestion};
use super::{ProgressGain, ProgressRemedy, ProgressSite};

/// Completion sites named by the progress remedy.
const PROGRESS_SITES: usize = 3;

/// The progress remedy for `suggestion` (made from the program `namer` names, on
/// `fit`, with the model's uncertainty on a gain `uncertainty_ns`): the suggested order
/// (the measured one when it was rejected) replayed with and without progress during
/// compute.
pub fn progress(
    namer: &Namer,
    suggestion: &Suggestion,
    fit: &NetworkFit,
    uncertainty_ns: u64,
) -> ProgressRemedy {
    let program = namer.program;
    if suggestion.progress == ProgressMode::Async {
        return ProgressRemedy::AlreadyAsync;
    }
    let orders = if suggestion.rejected.is_none() && !suggestion.orders.is_empty() {
        suggestion.orders.clone()
    } else {
        replay::measured_orders(program)
    };
    let run = |progress| predict(program, &orders, fit, progress);
    let (Ok((in_mpi, slow)), Ok((with_progress, fast))) =
        (run(ProgressMode::InMpi), run(ProgressMode::Async))
    else {
        let reason = run(ProgressMode::InMpi)
            .and(run(ProgressMode::Async))
            .err()
            .map_or_else(String::new, |e| e.to_string());
        return ProgressRemedy::NotReplayable { reason };
    };
    let gain_ns = in_mpi.ns as i64 - with_progress.ns as i64;
    if gain_ns <= uncertainty_ns as i64 {
        return ProgressRemedy::NothingToGain { gain_ns };
    }
    ProgressRemedy::Gains(ProgressGain {
        in_mpi,
        with_progress,
        gain_ns,
        sites: progress_sites(namer, &orders, &slow, &fast, fit),
    })
}

/// Per completion site: how much shorter its waits get with progress during compute.
fn progress_sites(
    namer: &Namer,
    orders: &[Vec<usize>],
    slow: &replay::Replay,
    fast: &replay::Replay,
    fit: &NetworkFit,
) -> Vec<ProgressSite> {
    let program: &Program = namer.program;
    #[derive(Default)]
    struct Acc {
        shortened: u64,
        requests: u64,
        pure: u64,
        compute: BTreeMap<String, u64>,
        test_cost: u64,
    }
    let mut by_site: BTreeMap<String, Acc> = BTreeMap::new();
    for (slot, rank) in program.ranks.iter().enumerate() {
        let (Some(s), Some(f)) = (slow.ranks.get(slot), fast.ranks.get(slot)) else {
            continue;
        };
        let mut position = vec![0usize; rank.ops.len()];
        for (p, &i) in orders[slot].iter().enumerate() {
            position[i] = p;
        }
        let test_cost = rank
            .ops
            .iter()
            .filter(|o| {
                matches!(o.kind, OpKind::Local)
                    && o.call.is_some_and(|c| c.mpi_name() == "MPI_Test")
            })
            .map(|o| o.cost_ns)
            .min()
            .unwrap_or(0);
        for (i, op) in rank.ops.iter().enumerate() {
            let OpKind::Complete { request } = op.kind else {
                continue;
            };
            let q = &program.requests[request];
            if !matches!(q.role, RequestRole::Send | RequestRole::Recv) {
                continue;
            }
            let waited = |t: &replay::OpTime| t.end_ns.saturating_sub(t.start_ns + op.cost_ns);
            let shortened = waited(&s.ops[i]).saturating_sub(waited(&f.ops[i]));
            if shortened == 0 {
                continue;
            }
            let call = op.call.map_or("MPI call", |c| c.mpi_name());
            let wait = match namer.site(rank.rank, op.span as usize) {
                Some(site) => format!("{call} at {site}"),
                None => call.to_string(),
            };
            let acc = by_site.entry(wait).or_default();
            acc.shortened += shortened;
            acc.requests += 1;
            acc.pure = acc.pure.max(fit.mid.transfer_ns(q.bytes));
            acc.test_cost = acc.test_cost.max(test_cost);
            // The compute inside the request's window, in the replayed order.
            let (from, to) = (position[q.post()], position[i]);
            for &c in &orders[slot][from.min(to)..to.max(from)] {
                let o = &rank.ops[c];
                if matches!(o.kind, OpKind::Compute { .. }) {
                    *acc.compute.entry(namer.compute(rank, c)).or_default() += o.cost_ns;
                }
            }
        }
    }
    let mut out: Vec<ProgressSite> = by_site
        .into_iter()
        .map(|(wait, acc)| ProgressSite {
            compute: acc
                .compute
                .iter()
                .max_by_key(|(name, ns)| (**ns, std::cmp::Reverse(name.as_str())))
                .map_or_else(
                    || "no compute (the window is empty)".to_string(),
                    |(n, _)| n.clone(),
                ),
            wait,
            shortened_ns: acc.shortened,
            requests: acc.requests,
            test_every_ns: (acc.pure / 4).max(20 * acc.test_cost),
        })
        .collect();
    out.sort_by_key(|s| (std::cmp::Reverse(s.shortened_ns), s.wait.clone()));
    out.truncate(PROGRESS_SITES);
    out
}
