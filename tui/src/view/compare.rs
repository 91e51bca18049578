//! The Compare view (two traces): `overlap diff`'s table, and the two runs' timelines
//! one above the other on the same time scale (each from its own start), so that a
//! change shows where in the iteration it happened.

use overlap_analyzer::check::diff::number;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::{Block, Borders, Cell, Row};
use ratatui::Frame;

use crate::app::App;
use crate::nav::{self, Viewport};
use crate::text::{clean, span};
use crate::view::lanes::{self, Marks};
use crate::view::legend;
use crate::view::table::{self, Columns};

/// Draws the view.
pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let Some(c) = app.compare.as_mut() else {
        return;
    };
    let [table_area, a_area, b_area] = Layout::vertical([
        Constraint::Percentage(40),
        Constraint::Percentage(30),
        Constraint::Percentage(30),
    ])
    .areas(area);
    let (a_name, b_name) = (
        clean(&app.runs[0].label).into_owned(),
        clean(&app.runs[1].label).into_owned(),
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" overlap diff  (j/k rows; +/- h/l zoom and pan the timelines) ");
    let widths = [
        Constraint::Length(34),
        Constraint::Length(16),
        Constraint::Length(16),
        Constraint::Length(14),
    ];
    let columns = Columns {
        headers: vec!["metric".to_string(), a_name, b_name, "delta".to_string()],
        widths: &widths,
    };
    let diff = &c.rows;
    app.geometry.table = table::draw(
        frame,
        table_area,
        block,
        columns,
        &mut c.cursor,
        diff.len(),
        true,
        |i| {
            let r = &diff[i];
            Row::new(vec![
                Cell::from(r.name.clone()),
                Cell::from(number(r.a, r.unit, false)),
                Cell::from(number(r.b, r.unit, false)),
                Cell::from(number(r.delta, r.unit, true)),
            ])
        },
    );
    let mut view = c.view;
    // The first frame, and a resize, keep the time range shown: the columns change.
    let width = Block::default()
        .borders(Borders::ALL)
        .inner(a_area)
        .width
        .saturating_sub(lanes::LABEL_WIDTH);
    if app.geometry.compare[0].width != width && width > 0 {
        view.per_cell *= f64::from(app.geometry.compare[0].width.max(1)) / f64::from(width);
    }
    let mut drawn = [Rect::default(); 2];
    for (i, (run, area)) in app.runs.iter().zip([a_area, b_area]).enumerate() {
        let title = format!(" {}  {} ", clean(&run.label), span(view.per_cell) + "/col");
        let block = Block::default()
            .borders(Borders::ALL)
            .title(title)
            .title_bottom(legend(run.gpu_lanes.iter().any(Option::is_some)));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [axis_row, lanes_area] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(inner);
        // Each run from its own start: the same offset shows the same time into the run.
        let shifted = Viewport {
            start: view.start + run.extent.0 as f64,
            ..view
        };
        let group = run
            .trace
            .ranks
            .len()
            .div_ceil(usize::from(lanes_area.height.max(1)))
            .max(1);
        let all = nav::lanes(&nav::every_rank(run), group);
        let rows = lanes::rows_per_lane(all.len(), lanes_area.height);
        let cells = lanes::draw(
            frame.buffer_mut(),
            run,
            &all,
            0,
            lanes_area,
            rows,
            &shifted,
            &Marks::default(),
        );
        lanes::axis(frame.buffer_mut(), cells, axis_row.y, &view);
        drawn[i] = cells;
    }
    if let Some(c) = app.compare.as_mut() {
        c.view = view;
    }
    app.geometry.compare = drawn;
}
