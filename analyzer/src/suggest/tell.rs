//! A move in words ([`tell`]): what moves, from where, to where, and what it crosses
//! without knowing what it does to a buffer ([`assumed`]). The leaf that the groups'
//! parts ([`super::group`]) and the moves a permissive order adds ([`super::possible`])
//! share.

use std::fmt::Write;

use crate::dag::Period;
use crate::ops::{Knowledge, OpKind, RankProgram};

use super::describe::{assumptions, Assumption, Namer};
use super::moves::Move;

/// Short names of `ops` (in that order), completions of one call shown as one line.
pub(super) fn lines(namer: &Namer, rank: &RankProgram, ops: &[usize]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut last_call: Option<u32> = None;
    for &i in ops {
        let op = &rank.ops[i];
        let completion = matches!(op.kind, OpKind::Complete { .. });
        if completion && last_call == Some(op.span) {
            // Same Wait call as the line before: fold its request into that line.
            let name = namer.short(rank, i);
            if let (Some(prev), Some(open)) = (out.last_mut(), name.find('[')) {
                if let (Some(p_close), Some(close)) = (prev.find(']'), name.find(']')) {
                    let added = format!(", {}", &name[open + 1..close]);
                    prev.insert_str(p_close, &added);
                    continue;
                }
            }
        }
        last_call = completion.then_some(op.span);
        out.push(namer.short(rank, i));
    }
    out
}

/// A move in words: what moves, from where, to where.
pub(super) struct Told {
    pub text: String,
    pub what: String,
    pub from_after: Option<String>,
    pub to_before: Option<String>,
    pub next_iteration: bool,
}

/// Move `m` of `rank` in words (`period`: the rank's iteration).
pub(super) fn tell(namer: &Namer, rank: &RankProgram, m: &Move, period: Option<Period>) -> Told {
    let what = if m.ops.len() > 1 {
        let call = rank.ops[m.ops[0]].call.map_or("MPI call", |c| c.mpi_name());
        let site = namer
            .site(rank.rank, rank.ops[m.ops[0]].span as usize)
            .map_or(String::new(), |s| format!(" at {s}"));
        format!("{call}{site} ({} requests)", m.ops.len())
    } else {
        namer.long(rank, m.ops[0])
    };
    let from_after = m.after.map(|a| namer.short(rank, a));
    let to_before = m.before.map(|b| namer.short(rank, b));
    let next_iteration = match (period, m.before) {
        (Some(per), Some(b)) => per.scope(b) > per.scope(m.ops[0]),
        _ => false,
    };
    let mut text = format!("move {what}");
    // Moved to a learned first touch inside a gap: said by the touch's line.
    if let Some(to) = m.before.and_then(|b| to_touch(namer, rank, b)) {
        let _ = write!(text, " to just before {to}");
        if next_iteration {
            text.push_str(" of the next iteration");
        }
        return Told {
            text,
            what,
            from_after,
            to_before,
            next_iteration,
        };
    }
    // Moved just over the operation before it: say so, not "from after X to before X".
    let over_predecessor = m.after.is_some() && m.after == m.before;
    if let (Some(a), false) = (&from_after, over_predecessor) {
        let _ = write!(text, " from after {a}");
    }
    match &to_before {
        Some(b) if over_predecessor => {
            let _ = write!(text, " to just before {b}, the operation it followed");
        }
        Some(b) => {
            let _ = write!(text, " to before {b}");
            if next_iteration {
                text.push_str(" of the next iteration");
            }
        }
        None => text.push_str(" to the end"),
    }
    Told {
        text,
        what,
        from_after,
        to_before,
        next_iteration,
    }
}

/// The point just before operation `b` of `rank` when it is a part of a gap that starts
/// at a learned first touch, in words: `halo.c:72 (main) (the first read of the receive
/// buffer)`; a touch in a library's function (`memcpy`) is said with the call after which
/// it came, the nearest place of the program's own.
fn to_touch(namer: &Namer, rank: &RankProgram, b: usize) -> Option<String> {
    let l = rank.cut_at(b)?;
    let first = namer.touch_what(l);
    let place = namer.touch_place(rank, l);
    if !namer.touch_in_library(rank, l) {
        return Some(format!("{place} (the {first})"));
    }
    let after = namer.site(rank.rank, rank.ops[b].span as usize);
    Some(match after {
        Some(call) => format!("{place} (the {first}), called after {call}"),
        None => format!("{place} (the {first})"),
    })
}

/// Where each operation of `rank` is in `order`.
pub(super) fn positions(rank: &RankProgram, order: &[usize]) -> Vec<usize> {
    let mut position = vec![0usize; rank.ops.len()];
    for (p, &i) in order.iter().enumerate() {
        position[i] = p;
    }
    position
}

/// What move `m` crosses without knowing what it does to the buffer (`position`: the
/// order it is a move of).
pub(super) fn assumed(
    namer: &Namer,
    knowledge: &mut Knowledge,
    rank: &RankProgram,
    m: &Move,
    position: &[usize],
) -> Vec<Assumption> {
    let mut found = Vec::new();
    for &o in &m.ops {
        // The operations it crosses lie between it and where it lands.
        let land = [m.before, m.now_after].into_iter().flatten();
        let (lo, hi) = land.fold((o, o), |(lo, hi), x| (lo.min(x), hi.max(x)));
        for a in assumptions(namer, knowledge, rank, o, position, (lo, hi)) {
            if !found.contains(&a) {
                found.push(a);
            }
        }
    }
    found
}
