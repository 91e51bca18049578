//! The run replayed on an ideal network (zero latency, infinite bandwidth), for POP's
//! `T_ideal`.
//!
//! Each rank replays its events in order. Time outside MPI (compute spans and the gaps
//! between events) keeps its measured length; an MPI call takes no time at all, except
//! that it cannot finish before what it depends on has happened in the replay:
//!
//! - a call that completes a receive (Recv, Sendrecv, Wait*, Test) waits for the
//!   matching send to have been posted;
//! - a collective waits for every member of its instance ([`super::collectives`]) to
//!   have entered it.
//!
//! Sends are posted when the call is entered and complete at once (an ideal network
//! buffers everything), so a Sendrecv exchange never waits on itself. Waits that an ideal
//! network would remove (transfers, and the delays they pass on to partners) vanish;
//! waits caused by other ranks' work remain. So `T_ideal` separates serialization from
//! transfer without the trace's transfer delays leaking into either.
//!
//! ```text
//!  measured  r0 |c 4|Isend|Wait 3|c 4|        replayed  r0 |c 4|Isend|c 4|      T_ideal 9
//!            r1 |c 5|Irecv|Wait 2|c 4|                  r1 |c 5|Irecv|c 4|
//! ```

use crate::model::{Trace, What};

use super::collectives::NONE;
const NOT_YET: u64 = u64::MAX;

/// The replayed runtime, ns, or `None` when the replay cannot finish (a dependence on
/// an event the trace lacks, e.g. a rank cut short).
pub fn replay(trace: &Trace) -> Option<u64> {
    let n = trace.ranks.len();
    let slot = |rank: u32| trace.ranks.binary_search_by_key(&rank, |t| t.rank).ok();
    // The sends each call waits for, per rank, as (call index, rank slot, send index),
    // sorted by call: the dependences of call i are a contiguous run.
    let mut deps: Vec<Vec<(u32, u32, u32)>> = vec![Vec::new(); n];
    // Replay time each send was posted at, per rank and event (NOT_YET before).
    let mut posted: Vec<Vec<u64>> = vec![Vec::new(); n];
    for m in &trace.messages {
        let (Some(c), Some(sr)) = (m.completion, slot(m.send.rank)) else {
            continue;
        };
        if let Some(cr) = slot(c.rank) {
            deps[cr].push((c.index as u32, sr as u32, m.send.index as u32));
            if posted[sr].is_empty() {
                posted[sr] = vec![NOT_YET; trace.ranks[sr].spans.len()];
            }
        }
    }
    for d in &mut deps {
        d.sort_unstable();
    }
    let collectives = super::collectives::instances(trace);
    let (instance, members) = (&collectives.of, &collectives.members);
    let mut entered: Vec<(usize, u64)> = vec![(0, 0); members.len()];
    let mut pos = vec![0usize; n];
    let mut dep_at = vec![0usize; n];
    let mut arrived_at: Vec<Option<usize>> = vec![None; n];
    let mut clock: Vec<u64> = trace
        .ranks
        .iter()
        .map(|t| t.extent().map_or(0, |e| e.0 .0))
        .collect();
    let mut last_end: Vec<u64> = clock.clone();
    loop {
        let mut progress = false;
        let mut done = true;
        for (r, t) in trace.ranks.iter().enumerate() {
            while let Some(s) = t.spans.get(pos[r]) {
                let i = pos[r];
                let gap = s.start.0.saturating_sub(last_end[r]);
                let mut at = clock[r] + gap;
                if let What::Compute(_) = s.what {
                    at += s.duration().0;
                } else {
                    // A send is posted on entry, before any receive the same call
                    // completes (a Sendrecv exchange must not wait on itself).
                    if let Some(p) = posted[r].get_mut(i) {
                        if *p == NOT_YET {
                            *p = at;
                        }
                    }
                    // Receives it completes: their sends must have been posted.
                    let list = &deps[r];
                    let mut j = dep_at[r];
                    while list.get(j).is_some_and(|d| (d.0 as usize) < i) {
                        j += 1;
                    }
                    dep_at[r] = j;
                    let mut ready = true;
                    while let Some(&(call, sr, si)) = list.get(j) {
                        if call as usize != i {
                            break;
                        }
                        match posted[sr as usize].get(si as usize) {
                            Some(&p) if p != NOT_YET => at = at.max(p),
                            _ => ready = false,
                        }
                        j += 1;
                    }
                    if !ready {
                        break;
                    }
                    let id = instance[r][i];
                    if id != NONE {
                        let e = &mut entered[id as usize];
                        if arrived_at[r] != Some(i) {
                            arrived_at[r] = Some(i);
                            e.0 += 1;
                            e.1 = e.1.max(at);
                        }
                        if e.0 < members[id as usize].len() {
                            // Wait here until every member is in.
                            clock[r] = at;
                            last_end[r] = s.start.0;
                            break;
                        }
                        at = at.max(e.1);
                    }
                }
                clock[r] = at;
                last_end[r] = last_end[r].max(s.end.0).max(s.start.0);
                pos[r] += 1;
                progress = true;
            }
            if pos[r] < t.spans.len() {
                done = false;
            }
        }
        if done {
            break;
        }
        if !progress {
            return None;
        }
    }
    let start = trace
        .ranks
        .iter()
        .filter_map(|t| t.extent())
        .map(|e| e.0 .0)
        .min()
        .unwrap_or(0);
    clock.iter().max().map(|c| c.saturating_sub(start))
}
