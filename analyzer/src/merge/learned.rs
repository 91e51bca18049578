//! What a rank learned of its requests' buffers (`overlap trace --buffers`), in the
//! merged trace: one instant of category `buffer` per watch ("first write of the send
//! buffer of request 17", at the touch) and per unwatched completion, on the thread of
//! the call that completed the request, its `args` every field of the fact
//! ([`LearnedArgs`]), so that the merged file carries them to the analysis as the rank
//! files do.

use overlap_format::schema::wire::{format_event, InstantScope, Phase, WireEvent};
use overlap_format::schema::wire::{Category, ObjectWriter};
use overlap_format::schema::LearnedArgs;

use crate::fxhash::FxHashMap;
use crate::model::{Timeline, What};

/// The thread of the call that completed each request `wanted` names.
fn completing_threads(t: &Timeline, wanted: &FxHashMap<u64, u32>) -> FxHashMap<u64, u32> {
    let mut out = FxHashMap::default();
    for s in &t.spans {
        let What::Call(_, id) = s.what else { continue };
        let Some(call) = t.calls.get(id as usize) else {
            continue;
        };
        for d in t.completions(call) {
            if let Some(r) = d.request().filter(|r| wanted.contains_key(r)) {
                out.insert(r, s.tid);
            }
        }
    }
    out
}

/// Rank `t`'s learned buffer uses and unwatched completions, each with the thread of
/// the call that completed its request (0 when none did).
pub(crate) fn learned_instants(t: &Timeline) -> Vec<(u32, LearnedArgs)> {
    if t.learned.is_empty() && t.unwatched.is_empty() {
        return Vec::new();
    }
    let wanted: FxHashMap<u64, u32> = t
        .learned
        .iter()
        .map(|l| l.request)
        .chain(t.unwatched.iter().map(|u| u.request))
        .map(|r| (r, 0))
        .collect();
    let threads = completing_threads(t, &wanted);
    let all = t
        .learned
        .iter()
        .map(|l| (l.request, LearnedArgs::of_use(l)))
        .chain(
            t.unwatched
                .iter()
                .map(|u| (u.request, LearnedArgs::of_unwatched(u))),
        );
    all.map(|(request, args)| (threads.get(&request).copied().unwrap_or(0), args))
        .collect()
}

/// Writes rank `t`'s learned buffer uses and unwatched completions as instants.
pub(crate) fn write_learned<W: std::io::Write>(
    t: &Timeline,
    w: &mut ObjectWriter<W>,
) -> std::io::Result<()> {
    let mut text = Vec::new();
    let mut n = 0;
    for (tid, args) in learned_instants(t) {
        let mut ev = WireEvent::new(args.title(), Phase::Instant, t.rank, tid);
        ev.cat = Some(Category::Buffer);
        ev.ts = Some(args.at());
        ev.s = Some(InstantScope::Thread);
        ev.args = Some(&args);
        format_event(&mut text, &ev)?;
        n += 1;
    }
    w.write_formatted(&text, n)
}
