//! The "Hung run" section of the text report: one line per rank saying where it is stuck
//! and on whom it waits, then the wait-for graph, its cycle, and the ranks waited for
//! that are not blocked in MPI.

use std::fmt::Write as _;

use crate::hang::graph::Edge;
use crate::hang::{
    analyze, BlockedCall, HangReport, RankHang, RankState, Verdict, Waited, WaitedKind,
};
use crate::model::Trace;
use crate::sites::SiteTable;
use crate::units::duration;

/// The "Hung run" section of the text report, when any rank dumped: for the launcher,
/// which prints it after merging a run it stopped, without the whole analysis.
pub fn section_of(trace: &Trace) -> Option<String> {
    let h = analyze(trace, &SiteTable::build(trace))?;
    let mut o = String::new();
    render(&mut o, &h);
    Some(o)
}

/// Appends the section to `o` when there is one.
pub fn section(o: &mut String, h: Option<&HangReport>) {
    if let Some(h) = h {
        render(o, h);
    }
}

/// Appends the section to `o`.
pub fn render(o: &mut String, h: &HangReport) {
    let blocked = h.ranks.iter().filter(|r| r.state.blocked()).count();
    let title = match h.verdict {
        Verdict::Hung => format!(
            "Hung run: {blocked} of {} ranks stuck in MPI (no call completed for the hang \
             timeout)",
            h.ranks.len()
        ),
        Verdict::StoppedInCalls => format!(
            "Run stopped inside MPI: {blocked} of {} ranks were in calls that never completed",
            h.ranks.len()
        ),
        Verdict::WentOn if h.ranks.iter().all(|r| r.calls.is_empty()) => {
            "In-flight dump: no rank was inside an MPI call when it dumped".to_string()
        }
        Verdict::WentOn => {
            "In-flight dump: every call in flight at the dump completed afterwards (the run \
             went on)"
                .to_string()
        }
    };
    let _ = writeln!(o, "\n{title}");
    if h.ranks.iter().any(|r| !r.calls.is_empty()) {
        let _ = writeln!(
            o,
            "  (since: when the call was entered, from the run's start, MPI_Init included; \
             then how long before the dump)"
        );
    }
    for r in &h.ranks {
        rank_lines(o, r);
    }
    if !h.wait_for.is_empty() {
        let edges: Vec<String> = h.wait_for.iter().map(edge).collect();
        let _ = writeln!(o, "  wait-for: {}", edges.join(", "));
    }
    match &h.cycle {
        Some(cycle) => {
            let path: Vec<String> = cycle.iter().map(|r| format!("rank {r}")).collect();
            let _ = writeln!(o, "  wait-for cycle: {}", path.join(" -> "));
        }
        None if blocked > 0 => {
            let _ = writeln!(o, "  no wait-for cycle among the ranks blocked");
        }
        None => {}
    }
    for n in &h.waited_not_blocked {
        let by: Vec<String> = n.waited_by.iter().map(u32::to_string).collect();
        let _ = writeln!(
            o,
            "  rank {} {} (waited for by rank{} {})",
            n.rank,
            state_words(n.state),
            if by.len() == 1 { "" } else { "s" },
            by.join(", ")
        );
    }
    if h.verdict != Verdict::WentOn {
        let _ = writeln!(
            o,
            "  (no event records a call that never completed: its time is in no figure of \
             this report)"
        );
    }
}

fn edge(e: &Edge) -> String {
    let any = if e.any { " (or another)" } else { "" };
    format!("rank {} -> rank {}{any}", e.from, e.to)
}

/// What a rank that is not blocked is doing, as words.
fn state_words(s: RankState) -> &'static str {
    match s {
        RankState::Stalled | RankState::InCall => "is blocked in MPI",
        RankState::WentOn => "was in MPI at its dump and went on",
        RankState::NotInMpi => "is not in MPI at its dump: computing",
        RankState::Finalized => "finalized: it finished its MPI work and exited",
        RankState::NoDump => "left no dump: it exited, was killed, or could not answer",
        RankState::NoTrace => "has no trace file",
    }
}

fn rank_lines(o: &mut String, r: &RankHang) {
    if r.calls.is_empty() {
        let _ = writeln!(o, "  rank {} {}", r.rank, state_words(r.state));
        return;
    }
    let threads = r.calls.len() > 1 || r.calls.iter().any(|c| c.tid != 0);
    for c in &r.calls {
        let who = if threads {
            format!("rank {} thread {}", r.rank, c.tid)
        } else {
            format!("rank {}", r.rank)
        };
        let how = match (c.completed_after_dump, r.state) {
            (true, _) => "was in",
            (false, RankState::Stalled) => "blocked in",
            (false, _) => "inside",
        };
        let site = c
            .site
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        let tail = match (c.completed_after_dump, r.state) {
            (true, _) => ", completed after the dump",
            (false, RankState::Stalled) => "",
            (false, _) => ", never completed",
        };
        let _ = writeln!(
            o,
            "  {who} {how} {}{}{site} since {:.3} s, {} before the dump{tail}",
            c.call,
            waits(c),
            c.start_ns as f64 / 1e9,
            duration(c.blocked_ns),
        );
    }
}

/// What a call waits for, as words following its name.
fn waits(c: &BlockedCall) -> String {
    let p2p: Vec<&Waited> = c
        .waits_for
        .iter()
        .filter(|w| w.kind != WaitedKind::Collective || w.request.is_some())
        .collect();
    if let Some(n) = c.requests {
        let plural = if n == 1 { "" } else { "s" };
        let list: Vec<String> = p2p.iter().map(|w| one(w, true)).collect();
        return match list.len() {
            0 => format!(" ({n} request{plural}; no uncompleted post of the rank is in the trace)"),
            k if k as u32 == n => format!(" ({n} request{plural}: {})", list.join(", ")),
            k => format!(
                " ({n} request{plural}; the rank's {k} uncompleted posts: {})",
                list.join(", ")
            ),
        };
    }
    if let Some(coll) = c
        .waits_for
        .iter()
        .find(|w| w.kind == WaitedKind::Collective)
    {
        let root = c.root.map(|r| format!(" (root {r})")).unwrap_or_default();
        let on = match coll.comm {
            Some(0) => format!("{root} on MPI_COMM_WORLD"),
            Some(id) => format!("{root} on communicator {id} (its members are not in the trace)"),
            None => root,
        };
        let missing: Vec<String> = c
            .waits_for
            .iter()
            .filter_map(|w| w.rank.filter(|_| w.kind == WaitedKind::Collective))
            .map(|r| r.to_string())
            .collect();
        return match missing.len() {
            0 => on,
            1 => format!("{on}, waiting for rank {}", missing[0]),
            _ => format!("{on}, waiting for ranks {}", missing.join(", ")),
        };
    }
    let parts: Vec<String> = p2p.iter().map(|w| one(w, false)).collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" {}", parts.join(" and "))
    }
}

/// One thing waited for: `from rank 0 tag 7`, `send to rank 1 tag 3 (request 5)`.
fn one(w: &Waited, named: bool) -> String {
    let who = match (w.rank, w.any_source) {
        (Some(r), _) => format!("rank {r}"),
        (None, true) => "any rank".to_string(),
        (None, false) => "an unknown rank".to_string(),
    };
    let tag = match w.tag {
        Some(t) if t < 0 => " any tag".to_string(),
        Some(t) => format!(" tag {t}"),
        None => String::new(),
    };
    let request = w
        .request
        .map(|r| format!(" (request {r})"))
        .unwrap_or_default();
    let (verb, noun) = match w.kind {
        WaitedKind::Receive => ("from", "receive"),
        WaitedKind::Send => ("to", "send"),
        WaitedKind::OneSided => ("at", "one-sided"),
        WaitedKind::Collective => {
            let on = w
                .comm
                .map(|c| format!(" on communicator {c}"))
                .unwrap_or_default();
            return format!("collective{on}{request}");
        }
    };
    if named {
        format!("{noun} {verb} {who}{tag}{request}")
    } else {
        format!("{verb} {who}{tag}{request}")
    }
}

#[cfg(test)]
mod tests;
