//! The Timeline: a lane per rank (or per group of ranks), the time axis above, and the
//! side panel on the selected call: its arguments, its message, its waits.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

use crate::app::App;
use crate::selection::Selection;
use crate::text::{clean, span, time_at};
use crate::view::lanes::{self, Marks};
use crate::view::{legend, side};

/// Width of the side panel, when the terminal is wide enough to have it on the right.
const SIDE_WIDTH: u16 = 46;

/// Draws the Timeline into `area`.
pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let (main, panel) = if area.width >= 110 {
        let [m, p] =
            Layout::horizontal([Constraint::Min(40), Constraint::Length(SIDE_WIDTH)]).areas(area);
        (m, p)
    } else {
        let [m, p] = Layout::vertical([Constraint::Min(6), Constraint::Length(9)]).areas(area);
        (m, p)
    };
    let inner = Block::default().borders(Borders::ALL).inner(main);
    let [axis_row, lanes_area] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(inner);
    // The first frame, and a resize, keep the time range shown: the columns change.
    let width = lanes_area.width.saturating_sub(lanes::LABEL_WIDTH);
    let old_width = app.geometry.lanes.width;
    if old_width != width && width > 0 {
        app.timeline.view.per_cell *= f64::from(old_width.max(1)) / f64::from(width);
        app.geometry.lanes.width = width;
    }
    let lane_count = app.timeline.lanes().len();
    let rows = lanes::rows_per_lane(lane_count, lanes_area.height);
    app.geometry.lanes_shown = usize::from(lanes_area.height / rows);
    app.geometry.lane_rows = rows;
    app.keep_lane_visible();
    // No empty lanes below the last one while earlier ones are scrolled away.
    let shown = app.geometry.lanes_shown;
    app.timeline.first_lane = app
        .timeline
        .first_lane
        .min(lane_count.saturating_sub(shown));
    let run = &app.runs[app.current];
    let tl = &app.timeline;
    let filtered = tl
        .filter
        .as_ref()
        .map_or(String::new(), |f| format!("[{}]  ", f.describe()));
    let title = format!(
        " Timeline  {filtered}{} .. {}  ({}/col) ",
        time_at(tl.view.start.max(0.0), tl.view.per_cell),
        time_at(
            tl.view.start + tl.view.per_cell * f64::from(app.geometry.lanes.width),
            tl.view.per_cell
        ),
        span(tl.view.per_cell)
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .title(title)
        .title_bottom(legend(run.gpu_lanes.iter().any(Option::is_some)));
    frame.render_widget(block, main);
    let all = tl.lanes();
    let sel = tl.selection.as_ref();
    let marks = Marks {
        selected: sel.map(|s| s.event),
        target: sel.and_then(Selection::target),
        cause_rank: sel.and_then(|s| s.cause.as_ref()).map(|c| c.rank),
        cursor_lane: Some(tl.lane),
    };
    let cells = lanes::draw(
        frame.buffer_mut(),
        run,
        &all,
        tl.first_lane,
        lanes_area,
        rows,
        &tl.view,
        &marks,
    );
    lanes::axis(frame.buffer_mut(), cells, axis_row.y, &tl.view);
    let shown = usize::from(lanes_area.height / rows);
    if all.len() > shown {
        let more = format!(
            " lanes {}-{} of {} (j/k, G groups, F filters) ",
            tl.first_lane + 1,
            (tl.first_lane + shown).min(all.len()),
            all.len()
        );
        let y = main.y + main.height - 1;
        frame.buffer_mut().set_stringn(
            main.x + 2,
            y,
            more,
            usize::from(main.width.saturating_sub(4)),
            ratatui::style::Style::new(),
        );
    }
    side::draw(frame, app, panel);
    let g = &mut app.geometry;
    g.lanes = Rect {
        height: lanes_area
            .height
            .min((all.len() as u16).saturating_mul(rows)),
        ..cells
    };
}

/// A paragraph in a bordered block.
pub fn panel<'a>(title: &'a str, lines: Vec<Line<'a>>) -> Paragraph<'a> {
    Paragraph::new(lines)
        .block(Block::default().borders(Borders::ALL).title(title))
        .wrap(Wrap { trim: false })
}

/// A label as the views show trace text.
pub fn label(text: &str) -> String {
    clean(text).into_owned()
}
