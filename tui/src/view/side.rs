//! The side panel of the Timeline: everything known about the selected event. For a
//! call: its arguments (peer, tag, bytes, communicator, request, call site), the calls
//! linked to it (the message's other end first, marked on the lanes with an arrow; `p`
//! goes there), the wait states charged to it, its request's overlap; for a wait opened
//! from the Waits view, its cause. For a compute span: its name and buffers.

use overlap_analyzer::model::{EventRef, Span as TraceSpan, What};
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

use crate::app::App;
use crate::run::Run;
use crate::selection::Selection;
use crate::text::{bytes, clean, duration, percent};
use crate::view::bold;
use crate::view::timeline::panel;

/// An event's name: the MPI function, or the compute span's name.
pub fn event_name(run: &Run, e: EventRef, s: &TraceSpan) -> String {
    match s.what {
        What::Call(op, _) => op.mpi_name().to_string(),
        What::Compute(id) => {
            let t = run.trace.rank(e.rank);
            format!("compute {}", clean(t.map_or("?", |t| t.name(id))))
        }
    }
}

/// A call as a line names it: `rank 1 MPI_Waitall at 0.0123 s`.
fn call_line(run: &Run, e: EventRef) -> String {
    match run.trace.span(e) {
        Some(s) => format!(
            "rank {} {} at {:.6} s",
            e.rank,
            event_name(run, e, s),
            s.start.0 as f64 / 1e9
        ),
        None => format!("rank {} event {}", e.rank, e.index),
    }
}

fn field(name: &str, value: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{name:<10}"), Style::new().fg(Color::Gray)),
        Span::raw(value),
    ])
}

/// Draws the panel.
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let run = app.run();
    let Some(sel) = &app.timeline.selection else {
        let lines = vec![
            Line::raw("Nothing selected."),
            Line::raw(""),
            Line::raw("[ ] previous/next event, { } MPI call,"),
            Line::raw("/ search, click an event."),
            Line::raw("p jumps to the selected call's partner."),
        ];
        frame.render_widget(panel(" Selection ", lines), area);
        return;
    };
    let e = sel.event;
    let Some(s) = run.trace.span(e) else { return };
    let t = run.trace.rank(e.rank);
    let mut lines = vec![Line::styled(event_name(run, e, s), bold())];
    let thread = t
        .and_then(|t| t.threads.get(&s.tid))
        .map_or_else(|| format!("tid {}", s.tid), |n| clean(n).into_owned());
    lines.push(field("rank", format!("{} ({thread})", e.rank)));
    lines.push(field("start", format!("{:.9} s", s.start.0 as f64 / 1e9)));
    lines.push(field("length", duration(s.duration().0)));
    match (s.what, t) {
        (What::Call(_, _), Some(t)) => {
            if let Some((_, c)) = t.call(e.index) {
                if let Some(p) = c.peer() {
                    lines.push(field("peer", peer(p)));
                }
                if let Some(tag) = c.tag() {
                    lines.push(field("tag", tag.to_string()));
                }
                if let Some(b) = c.bytes() {
                    lines.push(field("bytes", bytes(b)));
                }
                if let Some(r) = t.recv_half(c) {
                    let from = r.peer.map_or("?".to_string(), peer);
                    let tag = r.tag.map_or("?".to_string(), |t| t.to_string());
                    lines.push(field("receives", format!("from {from}, tag {tag}")));
                }
                if let Some(root) = c.root() {
                    lines.push(field("root", root.to_string()));
                }
                lines.push(field("comm", c.comm.to_string()));
                if let Some(w) = c.win() {
                    lines.push(field("window", w.to_string()));
                }
                if let Some(r) = c.request() {
                    lines.push(field("request", format!("#{r}")));
                }
                let done = t.completions(c);
                if !done.is_empty() {
                    let ids: Vec<String> = done
                        .iter()
                        .take(6)
                        .map(|d| d.request().map_or("-".into(), |r| format!("#{r}")))
                        .collect();
                    let more = if done.len() > 6 {
                        format!(" +{}", done.len() - 6)
                    } else {
                        String::new()
                    };
                    lines.push(field("completes", format!("{}{more}", ids.join(" "))));
                }
                // A call path (`--callpath`): the call's own line, then a line per caller.
                match run.details.sites.of_call(&run.trace, e.rank, e.index) {
                    Some(site) => {
                        let own = site.label.split(" ← ").next().unwrap_or(&site.label);
                        lines.push(field("site", clean(own).into_owned()));
                        for caller in &site.callers {
                            lines.push(field("  from", clean(caller).into_owned()));
                        }
                    }
                    None => lines.push(field("site", "not recorded".into())),
                }
            }
        }
        (What::Compute(_), Some(t)) => match t.access(e.index) {
            Some(a) => {
                let names = |v: &[overlap_analyzer::model::NamedBuffer]| {
                    v.iter()
                        .map(|b| clean(&b.name).into_owned())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                lines.push(field("reads", names(&a.reads)));
                lines.push(field("writes", names(&a.writes)));
            }
            None => lines.push(field("buffers", "not declared".into())),
        },
        _ => {}
    }
    links(&mut lines, sel, run);
    for w in sel
        .facts
        .waits
        .iter()
        .filter_map(|i| run.details.waits.get(*i))
    {
        let from = w.peer.map_or(String::new(), |p| format!(" for rank {p}"));
        let flag = if w.indeterminate {
            " (within clock error)"
        } else {
            ""
        };
        lines.push(Line::styled(
            format!("{}: {}{from}{flag}", w.kind.title(), duration(w.amount_ns)),
            Style::new().fg(Color::Red),
        ));
    }
    for r in sel
        .facts
        .requests
        .iter()
        .filter_map(|i| run.details.requests.get(*i))
    {
        lines.push(field(
            "overlap",
            format!(
                "{}, exposed wait {}",
                percent(r.overlap()),
                r.exposed_wait()
                    .map_or("unknown (never completed)".to_string(), duration)
            ),
        ));
    }
    for c in sel
        .facts
        .chains
        .iter()
        .filter_map(|i| run.details.chains.get(*i))
    {
        let step = |v: Option<u64>| v.map_or("unknown".to_string(), duration);
        let b = &c.breakdown;
        lines.push(Line::styled(
            format!(
                "staging{}: D2H {}, wait {}, transfer {}, wait {}, H2D {}",
                c.packet
                    .map_or(String::new(), |p| format!(" of packet {p}")),
                step(b.d2h_ns),
                step(b.wait_send_ns),
                step(b.transfer_ns),
                step(b.wait_h2d_ns),
                step(b.h2d_ns)
            ),
            Style::new().fg(Color::Cyan),
        ));
    }
    if let Some(f) = sel
        .facts
        .finding
        .and_then(|i| run.report.false_overlap.worst.get(i))
    {
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            format!(
                "False overlap: lost {} on {} send(s)",
                duration(f.lost_ns),
                f.requests.len()
            ),
            bold().fg(Color::Red),
        ));
        lines.extend(crate::view::overlap::evidence_lines(f).into_iter().skip(1));
    }
    if let Some(c) = &sel.cause {
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            format!("cause of {}:", c.what),
            bold().fg(Color::Magenta),
        ));
        lines.push(Line::raw(match c.event {
            Some(ev) => format!("  {}", call_line(run, ev)),
            None => format!("  rank {} (the analysis does not name its call)", c.rank),
        }));
    }
    frame.render_widget(panel(" Selection ", lines), area);
}

/// The calls linked to the selection; the marked one with its arrow.
fn links(lines: &mut Vec<Line<'static>>, sel: &Selection, run: &Run) {
    if sel.links.is_empty() {
        return;
    }
    lines.push(Line::raw(""));
    for (i, l) in sel.links.iter().enumerate().take(8) {
        let size = l
            .bytes
            .map_or(String::new(), |b| format!(" ({})", bytes(b)));
        let text = format!("{} {}{size}", l.kind.title(), call_line(run, l.to));
        if i == sel.marked {
            lines.push(Line::styled(
                format!("→ {text}  [p]"),
                Style::new().fg(Color::Magenta),
            ));
        } else {
            lines.push(Line::raw(format!("  {text}")));
        }
    }
    if sel.links.len() > 8 {
        lines.push(Line::raw(format!(
            "  and {} more (o: next)",
            sel.links.len() - 8
        )));
    }
}

/// A peer (world rank); a negative one is one of MPI's constants, named as MPICH
/// numbers them.
fn peer(p: i32) -> String {
    match p {
        -2 => "-2 (MPI_ANY_SOURCE in MPICH)".into(),
        -1 => "-1 (MPI_PROC_NULL in MPICH)".into(),
        p => p.to_string(),
    }
}
