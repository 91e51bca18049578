//! The Overlap view: the false-overlap findings with their evidence (the wait, the
//! independent work after it, where the wait could go, the time it could hide), and the
//! requests table, sorted by exposed wait, overlap, size, peer or rank (`s`). `g` groups
//! the findings by call site (one row per line of source, its worst instance's evidence
//! below). `h`/`l` move between the two tables; Enter opens the selected wait (a group's
//! worst) or request on the Timeline.

use overlap_analyzer::metrics::false_overlap::Limit;
use overlap_analyzer::metrics::request_metrics::RequestClass;
use overlap_analyzer::metrics::{CallRef, Finding, RequestRow};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Row};
use ratatui::Frame;

use crate::app::App;
use crate::lists::OverlapPane;
use crate::text::{bytes, clean, duration, percent};
use crate::view::table::{self, Columns};
use crate::view::timeline::panel;
use crate::view::{bold, unrecorded};

fn call(c: &CallRef) -> String {
    let site = c
        .site
        .as_deref()
        .map_or(String::new(), |s| format!(" {}", clean(s)));
    format!("rank {} {}{site}", c.rank, c.call)
}

fn focus_style(on: bool) -> Style {
    if on {
        bold()
    } else {
        Style::new().add_modifier(Modifier::DIM)
    }
}

/// Draws the view.
pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let [top, evidence, bottom] = Layout::vertical([
        Constraint::Percentage(30),
        Constraint::Length(9),
        Constraint::Min(5),
    ])
    .areas(area);
    let run = &app.runs[app.current];
    let o = &mut app.overlap;
    let findings = &run.report.false_overlap.worst;
    let groups = &run.report.by_site.false_overlap;
    let focused = o.pane == OverlapPane::Findings;
    let block = |title: String| {
        Block::default()
            .borders(Borders::ALL)
            .title(title)
            .border_style(focus_style(focused))
    };
    let rows = if o.by_site {
        let title = format!(
            " False overlap by call site: {} site(s) (g: each finding)  Enter: the worst on the Timeline ",
            groups.len()
        );
        let widths = [
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(9),
            Constraint::Length(6),
            Constraint::Min(20),
        ];
        let columns = Columns {
            headers: ["lost", "worst", "findings", "ranks", "site: wait"]
                .map(String::from)
                .to_vec(),
            widths: &widths,
        };
        table::draw(
            frame,
            top,
            block(title),
            columns,
            &mut o.findings,
            groups.len(),
            focused,
            |i| {
                let g = &groups[i];
                Row::new(vec![
                    Cell::from(duration(g.total_ns)),
                    Cell::from(duration(g.worst_ns)),
                    Cell::from(g.count.to_string()),
                    Cell::from(g.ranks.to_string()),
                    Cell::from(format!(
                        "{}: {}",
                        clean(g.site.as_deref().unwrap_or("(site unknown)")),
                        g.call
                    )),
                ])
            },
        )
    } else {
        let title = format!(
            " False overlap: {} finding(s), largest loss first (g: by site)  Enter: the wait on the Timeline ",
            findings.len()
        );
        let widths = [
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(12),
            Constraint::Min(20),
        ];
        let columns = Columns {
            headers: ["lost", "hideable", "indep. work", "wait"]
                .map(String::from)
                .to_vec(),
            widths: &widths,
        };
        table::draw(
            frame,
            top,
            block(title),
            columns,
            &mut o.findings,
            findings.len(),
            focused,
            |i| {
                let f = &findings[i];
                Row::new(vec![
                    Cell::from(duration(f.lost_ns)),
                    Cell::from(duration(f.possible.hideable_ns)),
                    Cell::from(duration(f.possible.independent_work_ns)),
                    Cell::from(call(&f.wait)),
                ])
            },
        )
    };
    if focused {
        app.geometry.table = rows;
    }
    let selected = if o.by_site {
        // The group's worst instance, when the report lists it.
        groups.get(o.findings.selected).and_then(|g| {
            findings
                .iter()
                .find(|f| f.wait.rank == g.worst_rank && f.wait.index == g.worst_index)
        })
    } else {
        findings.get(o.findings.selected)
    };
    let lines = match selected {
        Some(f) => evidence_lines(f),
        None if o.by_site && !groups.is_empty() => vec![Line::raw(
            "Its worst finding is not among those the report lists in full (--findings).",
        )],
        None => vec![Line::raw(match unrecorded(run) {
            Some(what) => format!("No false overlap in what was recorded ({what})."),
            None => "No false overlap: no wait lost time on sends while independent work \
                     followed it."
                .to_string(),
        })],
    };
    frame.render_widget(panel(" Evidence ", lines), evidence);

    let reqs = &run.details.requests;
    let title = format!(
        " Requests: {} by {} (s)  Enter: its completion on the Timeline ",
        reqs.len(),
        o.sort.title()
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .title(title)
        .border_style(focus_style(o.pane == OverlapPane::Requests));
    // Narrow: no window column, and the post's name as short as the table needs.
    let wide = bottom.width >= 100;
    let mut widths = vec![
        Constraint::Length(5),
        Constraint::Length(6),
        Constraint::Length(if wide { 11 } else { 9 }),
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(7),
    ];
    let mut headers = vec![
        "rank", "req", "post", "peer", "tag", "size", "exposed", "overlap",
    ];
    if wide {
        widths.push(Constraint::Length(10));
        headers.push("window");
    }
    widths.push(Constraint::Min(8));
    headers.push("site");
    let columns = Columns {
        headers: headers.into_iter().map(String::from).collect(),
        widths: &widths,
    };
    let focused = o.pane == OverlapPane::Requests;
    let order = &o.rows;
    let rows = table::draw(
        frame,
        bottom,
        block,
        columns,
        &mut o.requests,
        order.len(),
        focused,
        |i| {
            let r = &reqs[order[i]];
            let mut cells = vec![
                Cell::from(r.rank.to_string()),
                Cell::from(format!("#{}", r.request)),
                Cell::from(
                    r.post_span(&run.trace)
                        .and_then(|s| s.op())
                        .map_or("?", |op| op.mpi_name()),
                ),
                Cell::from(r.peer().map_or("-".into(), |p| p.to_string())),
                Cell::from(r.tag().map_or("-".into(), |t| t.to_string())),
                Cell::from(size(r)),
                // Unknown (no call completed the request): "-", not 0.
                Cell::from(r.exposed_wait().map_or("-".into(), duration)),
                Cell::from(percent(r.overlap())),
            ];
            if wide {
                cells.push(Cell::from(r.window().map_or("-".into(), duration)));
            }
            cells.push(Cell::from(
                run.details
                    .sites
                    .label_of_call(&run.trace, r.rank, r.post_index())
                    .map_or("-".into(), |s| clean(&s).into_owned()),
            ));
            Row::new(cells)
        },
    );
    if focused {
        app.geometry.table = rows;
    }
}

/// A request's size. The analysis counts a collective's or one-sided request's size
/// it has no record of as 0, so a 0 there is shown as not recorded; a point-to-point
/// size is always recorded, and 0 bytes is then a real size.
fn size(r: &RequestRow) -> String {
    match r.kind {
        RequestClass::Collective | RequestClass::OneSided if r.bytes == 0 => "-".into(),
        _ => bytes(r.bytes),
    }
}

/// What a finding rests on, line by line.
pub fn evidence_lines(f: &Finding) -> Vec<Line<'static>> {
    let mut lines = vec![Line::raw(format!(
        "{} lost {} waiting on {} send(s){}",
        call(&f.wait),
        duration(f.lost_ns),
        f.requests.len(),
        if f.mixed {
            " (it also completed receives: only the sends can move)"
        } else {
            ""
        }
    ))];
    for r in f.requests.iter().take(2) {
        lines.push(Line::raw(format!(
            "  #{} {} to {} tag {} {} , compute in its window {}",
            r.request,
            r.post.call,
            r.peer.map_or("?".into(), |p| p.to_string()),
            r.tag.map_or("?".into(), |t| t.to_string()),
            bytes(r.bytes),
            duration(r.window_cpu_ns)
        )));
    }
    let m = &f.possible;
    let names: Vec<String> = m
        .independent_names
        .iter()
        .map(|n| clean(n).into_owned())
        .collect();
    lines.push(Line::raw(format!(
        "independent work after it: {} in {} span(s) {}",
        duration(m.independent_work_ns),
        m.independent_spans,
        if names.is_empty() {
            String::new()
        } else {
            format!("({})", names.join(", "))
        }
    )));
    let to = |m: &overlap_analyzer::metrics::false_overlap::WaitMove| {
        let before = match (&m.before_compute, &m.move_before) {
            (Some(c), _) => match &c.name {
                Some(n) => format!("before compute \"{}\"", clean(n)),
                None => "before the compute after the last call".into(),
            },
            (None, Some(b)) => format!("before {}", call(b)),
            (None, None) => "to the end of the rank's work".into(),
        };
        match &m.move_after {
            Some(a) => format!("{before}, after {}", call(a)),
            None => before,
        }
    };
    let limit = |l: Limit| match l {
        Limit::BufferReuse => "the next call using the buffer",
        Limit::SamePeerAndTag => "the next send to the same peer and tag (no buffer recorded)",
        Limit::LearnedUse => "the program's first touch of the buffer, learned",
        Limit::DeclaredUse => "a compute span that declares the buffer",
        Limit::UnknownCompute => "compute whose effect on the buffer is unknown",
        Limit::EndOfTrace => "nothing later depends on it",
    };
    match &f.proven {
        Some(p) => lines.push(Line::raw(format!(
            "proven: move the wait {}: hides up to {} (limit: {})",
            to(p),
            duration(p.hideable_ns),
            limit(p.limit)
        ))),
        None => lines.push(Line::raw(
            "no move is proven: nothing known of the compute after it",
        )),
    }
    if let Some(n) = &f.needs {
        lines.push(Line::raw(format!(
            "possible if that compute does not {} {}: move the wait {}: hides up to {} (limit: {})",
            n.must_not,
            n.buffer,
            to(m),
            duration(m.hideable_ns),
            limit(m.limit)
        )));
    }
    lines
}
