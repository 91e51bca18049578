//! Drawing: the frame (tabs, the view, the status bar, the help overlay and the
//! prompt), one module per view. Drawing reads the [`App`] and records in its
//! [`crate::app::Geometry`] where things went, for the mouse; it never changes what is
//! selected. Every string from the trace goes through [`crate::text::clean`].

pub mod compare;
pub mod help;
pub mod lanes;
pub mod overlap;
pub mod profile;
pub mod side;
pub mod summary;
pub mod table;
pub mod timeline;
pub mod waits;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::{App, PromptKind, View};
use crate::gpu_lane::GpuActivity;
use crate::lod::Activity;
use crate::text::{clean, span, time_at};

/// The smallest terminal the views are drawn in.
pub const MIN_SIZE: (u16, u16) = (60, 16);

/// How an activity is drawn: a glyph that reads without colour, and a colour.
pub fn glyph(a: Activity) -> (&'static str, Style) {
    match a {
        Activity::Idle => (" ", Style::new()),
        Activity::Compute => ("█", Style::new().fg(Color::Green)),
        Activity::Mpi => ("▒", Style::new().fg(Color::Yellow)),
        Activity::Waiting => ("░", Style::new().fg(Color::Red)),
    }
}

/// The glyph and colour of a GPU cell: kernels `▆` (blue), copies `≡` (cyan).
pub fn gpu_glyph(a: GpuActivity) -> (&'static str, Style) {
    match a {
        GpuActivity::Idle => (" ", Style::new()),
        GpuActivity::Kernel => ("▆", Style::new().fg(Color::Blue)),
        GpuActivity::Copy => ("≡", Style::new().fg(Color::Cyan)),
    }
}

/// The legend of the glyphs; with the GPU's when `gpu` (a run with GPU work).
pub fn legend(gpu: bool) -> Line<'static> {
    let mut spans = Vec::new();
    for (a, name) in [
        (Activity::Compute, " compute  "),
        (Activity::Mpi, " MPI  "),
        (Activity::Waiting, " waiting"),
    ] {
        let (g, s) = glyph(a);
        spans.push(Span::styled(g, s));
        spans.push(Span::raw(name));
    }
    if gpu {
        for (a, name) in [
            (GpuActivity::Kernel, " GPU kernel  "),
            (GpuActivity::Copy, " GPU copy"),
        ] {
            let (g, s) = gpu_glyph(a);
            spans.push(Span::raw("  "));
            spans.push(Span::styled(g, s));
            spans.push(Span::raw(name));
        }
    }
    Line::from(spans)
}

/// The style of a title or a header.
pub fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

/// What the trace lacks, when it lacks something: an empty table then says "in what
/// was recorded", never that there is none.
pub fn unrecorded(run: &crate::run::Run) -> Option<String> {
    let r = &run.report.run;
    let mut parts = Vec::new();
    if !r.missing_ranks.is_empty() {
        parts.push(format!("ranks {:?} have no trace", r.missing_ranks));
    }
    if !r.incomplete_ranks.is_empty() {
        parts.push(format!("ranks {:?} were cut short", r.incomplete_ranks));
    }
    if !r.completeness_known {
        parts.push("the file is too old to say whether it is complete".into());
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Draws the whole frame.
pub fn draw(frame: &mut Frame, app: &mut App) {
    let area = frame.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        let text = format!(
            "terminal too small: {}x{}, overlap tui needs at least {}x{} (q quits)",
            area.width, area.height, MIN_SIZE.0, MIN_SIZE.1
        );
        frame.render_widget(
            Paragraph::new(text).wrap(ratatui::widgets::Wrap { trim: true }),
            area,
        );
        return;
    }
    let [tabs, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_tabs(frame, app, tabs);
    match app.view {
        View::Timeline => timeline::draw(frame, app, body),
        View::Waits => waits::draw(frame, app, body),
        View::Overlap => overlap::draw(frame, app, body),
        View::Summary => summary::draw(frame, app, body),
        View::Profile => profile::draw(frame, app, body),
        View::Compare => compare::draw(frame, app, body),
    }
    draw_status(frame, app, status);
    if app.help {
        app.geometry.help_scroll_max = help::draw(frame, area, app.help_scroll);
    }
}

fn draw_tabs(frame: &mut Frame, app: &mut App, area: Rect) {
    let mut spans = Vec::new();
    let mut x = area.x;
    app.geometry.tabs.clear();
    for (i, v) in View::ALL.iter().enumerate() {
        if !app.views().contains(v) {
            continue;
        }
        let text = format!(" {} {} ", i + 1, v.title());
        let w = text.chars().count() as u16;
        app.geometry.tabs.push((x, x + w, *v));
        x += w + 1;
        let style = if *v == app.view {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        } else {
            Style::new()
        };
        spans.push(Span::styled(text, style));
        spans.push(Span::raw(" "));
    }
    let run = app.run();
    let name = format!(
        "{}{}",
        clean(&run.label),
        if app.runs.len() > 1 {
            "  (t: other trace)"
        } else {
            ""
        }
    );
    spans.push(Span::styled(
        format!(" {name}"),
        Style::new().add_modifier(Modifier::DIM),
    ));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    if let Some(p) = &app.prompt {
        let label = match p.kind {
            PromptKind::Search => "search (call, compute or site): /",
            PromptKind::GoTo => "go to time (1.5, 250ms, 12us) or region (NAME[#K]): ",
            PromptKind::WaitsRank => "waits of rank (empty: all): ",
            PromptKind::RankFilter => "show ranks (0-15,64 | /text | worst N; empty: all): ",
        };
        let line = Line::from(vec![
            Span::styled(label, bold()),
            Span::raw(clean(&p.text).into_owned()),
            Span::styled("█", Style::new().add_modifier(Modifier::SLOW_BLINK)),
        ]);
        frame.render_widget(Paragraph::new(line), area);
        return;
    }
    let mut parts = vec![format!("[{}]", app.view.title())];
    let (view, width) = match app.view {
        View::Compare => match &app.compare {
            Some(c) => (Some(c.view), app.geometry.compare[0].width),
            None => (None, 0),
        },
        View::Timeline => (Some(app.timeline.view), app.geometry.lanes.width),
        _ => (None, 0),
    };
    if let Some(v) = view {
        parts.push(format!("zoom {}/col", span(v.per_cell)));
        parts.push(format!("cursor {}", time_at(v.middle(width), v.per_cell)));
    }
    if let Some(e) = app.timeline.selected() {
        let run = app.run();
        if let Some(s) = run.trace.span(e) {
            parts.push(format!(
                "sel: rank {} {}",
                e.rank,
                side::event_name(run, e, s)
            ));
        }
    }
    let text = match &app.status {
        Some(msg) => format!("{}  | {}", clean(msg), parts.join("  ")),
        None => format!("{}  | ? help  q quit", parts.join("  ")),
    };
    frame.render_widget(
        Paragraph::new(text).style(Style::new().add_modifier(Modifier::REVERSED)),
        area,
    );
}
