//! The mouse: the wheel zooms a timeline at the pointer (scrolls a table), a click
//! selects the event under it (a row, a tab), a drag pans.

use overlap_analyzer::model::EventRef;
use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use crate::app::{App, View};
use crate::nav;

/// Handles one mouse event.
pub fn handle(app: &mut App, m: MouseEvent) {
    let at = Position::new(m.column, m.row);
    if m.row == 0 {
        if let MouseEventKind::Down(MouseButton::Left) = m.kind {
            if let Some((_, _, v)) = app
                .geometry
                .tabs
                .iter()
                .find(|(a, b, _)| (*a..*b).contains(&m.column))
            {
                app.view = *v;
            }
        }
        return;
    }
    match app.view {
        View::Timeline if app.geometry.lanes.contains(at) || app.timeline.drag.is_some() => {
            timeline(app, m)
        }
        View::Compare if app.geometry.compare.iter().any(|r| r.contains(at)) => compare(app, m),
        View::Waits | View::Overlap | View::Profile | View::Compare => table(app, m, at),
        _ => {}
    }
}

fn timeline(app: &mut App, m: MouseEvent) {
    let area = app.geometry.lanes;
    let col = m
        .column
        .saturating_sub(area.x)
        .min(area.width.saturating_sub(1));
    let run = &app.runs[app.current];
    let tl = &mut app.timeline;
    let (t0, t1) = tl.view.cell(col);
    let run_ns = run.extent.1 - run.extent.0;
    match m.kind {
        MouseEventKind::ScrollUp => tl.view.zoom(0.8, (t0 + t1) / 2.0, run_ns, area.width),
        MouseEventKind::ScrollDown => tl.view.zoom(1.25, (t0 + t1) / 2.0, run_ns, area.width),
        MouseEventKind::Down(MouseButton::Left) => {
            tl.drag = Some((m.column, tl.view.start));
            let rows = app.geometry.lane_rows.max(1);
            let lane = tl.first_lane + usize::from((m.row - area.y) / rows);
            let Some(lane_ranks) = tl.lanes().get(lane).cloned() else {
                return;
            };
            tl.lane = lane;
            let hit = lane_ranks.into_iter().find_map(|pos| {
                let t = &run.trace.ranks[pos];
                nav::event_near(t, (t0 + t1) / 2.0, tl.view.per_cell).map(|index| EventRef {
                    rank: t.rank,
                    index,
                })
            });
            if let Some(e) = hit {
                let keep = app.timeline.view;
                app.select(e, None);
                // A click selects in place: the view does not jump.
                app.timeline.view = keep;
            }
        }
        MouseEventKind::Drag(MouseButton::Left) => {
            if let Some((from, start)) = tl.drag {
                let moved = f64::from(m.column) - f64::from(from);
                tl.view.start = start - moved * tl.view.per_cell;
            }
        }
        MouseEventKind::Up(_) => tl.drag = None,
        _ => {}
    }
}

fn compare(app: &mut App, m: MouseEvent) {
    let area = app.geometry.compare[0];
    let col = m.column.saturating_sub(area.x);
    let longest = app.longest_run();
    let Some(c) = app.compare.as_mut() else {
        return;
    };
    let (t0, t1) = c.view.cell(col);
    match m.kind {
        MouseEventKind::ScrollUp => c.view.zoom(0.8, (t0 + t1) / 2.0, longest, area.width),
        MouseEventKind::ScrollDown => c.view.zoom(1.25, (t0 + t1) / 2.0, longest, area.width),
        _ => {}
    }
}

fn table(app: &mut App, m: MouseEvent, at: Position) {
    let area: Rect = app.geometry.table;
    let len = match app.view {
        View::Waits => app.waits.rows.len(),
        View::Overlap => {
            let run = &app.runs[app.current];
            app.overlap.focused(run).1
        }
        View::Profile => app.profile.order.len(),
        _ => app.compare.as_ref().map_or(0, |c| c.rows.len()),
    };
    let cursor = match app.view {
        View::Waits => &mut app.waits.cursor,
        View::Overlap => {
            let run = &app.runs[app.current];
            app.overlap.focused(run).0
        }
        View::Profile => &mut app.profile.cursor,
        _ => match app.compare.as_mut() {
            Some(c) => &mut c.cursor,
            None => return,
        },
    };
    match m.kind {
        MouseEventKind::ScrollUp => cursor.step(-3, len),
        MouseEventKind::ScrollDown => cursor.step(3, len),
        MouseEventKind::Down(MouseButton::Left) if area.contains(at) => {
            let row = cursor.offset + usize::from(at.y - area.y);
            if row < len {
                cursor.selected = row;
            }
        }
        _ => {}
    }
}
