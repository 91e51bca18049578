//! The Waits view: every wait-state instance, worst first, filtered by kind (`f`) and
//! rank (`r`); Enter opens the selected one on the Timeline with its cause marked.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Row};
use ratatui::Frame;

use crate::app::App;
use crate::text::{clean, duration};
use crate::view::table::{self, Columns};
use crate::view::timeline::panel;
use crate::view::unrecorded;

/// Draws the view.
pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let [table_area, info] =
        Layout::vertical([Constraint::Min(5), Constraint::Length(6)]).areas(area);
    let run = &app.runs[app.current];
    let w = &mut app.waits;
    let waits = &run.details.waits;
    let title = format!(
        " Waits: {} of {} instances  kind: {} (f)  rank: {} (r)  Enter: show on Timeline ",
        w.rows.len(),
        waits.len(),
        w.kind.map_or("all", |k| k.title()),
        w.rank.map_or("all".to_string(), |r| r.to_string())
    );
    let block = Block::default().borders(Borders::ALL).title(title);
    // Narrower than the whole row: the clock note moves into the waited column (`*`,
    // explained below the table) and the other columns keep their width.
    let wide = table_area.width >= 110;
    let mut widths = vec![
        Constraint::Length(10),
        Constraint::Length(16),
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Length(12),
        Constraint::Length(10),
    ];
    let mut headers = vec!["waited", "kind", "rank", "for", "call", "at"];
    if wide {
        widths.push(Constraint::Length(18));
        headers.push("");
    }
    widths.push(Constraint::Min(10));
    headers.push("site");
    let columns = Columns {
        headers: headers.into_iter().map(String::from).collect(),
        widths: &widths,
    };
    let rows = &w.rows;
    app.geometry.table = table::draw(
        frame,
        table_area,
        block,
        columns,
        &mut w.cursor,
        rows.len(),
        true,
        |r| {
            let x = &waits[rows[r]];
            let site = run
                .details
                .sites
                .label_of_call(&run.trace, x.rank, x.index)
                .map_or_else(|| "-".to_string(), |l| clean(&l).into_owned());
            let waited = if x.indeterminate && !wide {
                format!("{}*", duration(x.amount_ns))
            } else {
                duration(x.amount_ns)
            };
            let mut cells = vec![
                Cell::from(waited),
                Cell::from(x.kind.title()),
                Cell::from(x.rank.to_string()),
                Cell::from(x.peer.map_or("-".to_string(), |p| p.to_string())),
                Cell::from(x.call),
                Cell::from(format!("{:.6} s", x.start_ns as f64 / 1e9)),
            ];
            if wide {
                cells.push(Cell::from(if x.indeterminate {
                    "within clock error"
                } else {
                    ""
                }));
            }
            cells.push(Cell::from(site));
            Row::new(cells)
        },
    );
    let mut lines = vec![];
    match w.rows.get(w.cursor.selected).map(|i| &waits[*i]) {
        Some(x) => {
            lines.push(Line::raw(format!(
                "rank {} waited {} in {} ({}){}",
                x.rank,
                duration(x.amount_ns),
                x.call,
                x.kind.title(),
                x.peer.map_or(String::new(), |p| format!(" for rank {p}"))
            )));
            lines.push(Line::raw(format!(
                "clock error bound {}{}{}{}",
                duration(x.error_bound_ns),
                if x.indeterminate {
                    " (* the wait is within it: counted apart)"
                } else {
                    ""
                },
                if x.clock_suspect {
                    "; the partner's time was clipped (clock suspect)"
                } else {
                    ""
                },
                x.split_from_ns
                    .map_or(String::new(), |s| format!("; split from {}", duration(s)))
            )));
            lines.push(Line::raw(
                "Enter: the call on the Timeline, its cause marked",
            ));
        }
        None if waits.is_empty() => lines.push(Line::raw(match unrecorded(run) {
            Some(what) => format!("No wait states in what was recorded ({what})."),
            None => "No wait states in this run.".to_string(),
        })),
        None => lines.push(Line::raw(
            "No wait of this kind and rank: f and r change the filter.",
        )),
    }
    frame.render_widget(panel(" Wait ", lines), info);
}
