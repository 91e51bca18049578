//! The keys of each view (the global ones are in [`crate::app`]). Vim keys and arrows
//! do the same; `?` lists them all ([`crate::view::help`]).

use overlap_analyzer::model::EventRef;
use ratatui::crossterm::event::{KeyCode, KeyEvent};

use crate::app::{App, PromptKind};
use crate::lists::OverlapPane;
use crate::nav::{self, Viewport};
use crate::selection::Cause;

/// How much of the width `h`/`l` pan.
const PAN_SHARE: f64 = 0.125;

/// Zoom and pan keys, shared by the Timeline and the Compare view: true when `k` was one.
fn zoom_pan(view: &mut Viewport, k: KeyEvent, width: u16, anchor: f64, fit: (u64, u64)) -> bool {
    let w = f64::from(width.max(1));
    let run_ns = fit.1 - fit.0;
    match k.code {
        KeyCode::Char('+' | '=') => view.zoom(0.5, anchor, run_ns, width),
        KeyCode::Char('-' | '_') => view.zoom(2.0, anchor, run_ns, width),
        KeyCode::Char('h') | KeyCode::Left => view.pan(-w * PAN_SHARE),
        KeyCode::Char('l') | KeyCode::Right => view.pan(w * PAN_SHARE),
        KeyCode::Char('H') => view.pan(-w),
        KeyCode::Char('L') => view.pan(w),
        KeyCode::Char('0' | 'f') => *view = Viewport::fit(fit.0, fit.1, width),
        _ => return false,
    }
    true
}

/// The Timeline's keys.
pub fn timeline(app: &mut App, k: KeyEvent) {
    let width = app.geometry.lanes.width;
    let run = &app.runs[app.current];
    let tl = &mut app.timeline;
    let anchor = tl
        .selected()
        .and_then(|e| nav::bounds(run, e))
        .map(|(a, b)| (a + b) / 2.0)
        .filter(|t| tl.view.column(*t, width).is_some())
        .unwrap_or_else(|| tl.view.middle(width));
    if zoom_pan(&mut tl.view, k, width, anchor, run.extent) {
        return;
    }
    let lanes = tl.lanes().len();
    let page = app.geometry.lanes_shown.max(1);
    match k.code {
        KeyCode::Char('j') | KeyCode::Down => tl.lane = (tl.lane + 1).min(lanes.saturating_sub(1)),
        KeyCode::Char('k') | KeyCode::Up => tl.lane = tl.lane.saturating_sub(1),
        KeyCode::PageDown => tl.lane = (tl.lane + page).min(lanes.saturating_sub(1)),
        KeyCode::PageUp => tl.lane = tl.lane.saturating_sub(page),
        KeyCode::Char('g') => app.ask(PromptKind::GoTo),
        KeyCode::Char('F') => app.ask(PromptKind::RankFilter),
        KeyCode::Char('W') => {
            // The ranks with the worst waits, as many as the screen shows; again: all.
            let worst = crate::filter::RankFilter::WorstWaits(page);
            let filter = (tl.filter.as_ref() != Some(&worst)).then_some(worst);
            app.status = Some(tl.set_filter(run, filter));
        }
        KeyCode::Char('G') => {
            // One rank per lane, or every rank shown on screen in groups.
            let ranks = tl.shown.len();
            tl.group = if tl.group > 1 {
                1
            } else {
                ranks.div_ceil(page).max(1)
            };
            tl.lane = tl
                .selected()
                .and_then(|e| nav::lane_of(run, &tl.lanes(), e.rank))
                .unwrap_or(0);
            tl.first_lane = 0;
            app.status = Some(if tl.group > 1 {
                format!("{} ranks per lane", tl.group)
            } else {
                "one rank per lane".into()
            });
        }
        KeyCode::Char(c @ ('[' | ']' | '{' | '}')) => {
            let forward = matches!(c, ']' | '}');
            let calls_only = matches!(c, '{' | '}');
            let Some(pos) = tl.lanes().get(tl.lane).and_then(|l| l.first().copied()) else {
                return;
            };
            let t = &run.trace.ranks[pos];
            let from = tl.selected().filter(|e| e.rank == t.rank).map(|e| e.index);
            match nav::step(t, from, tl.view.middle(width), forward, calls_only) {
                Some(index) => {
                    let e = EventRef {
                        rank: t.rank,
                        index,
                    };
                    app.select(e, None);
                }
                None => app.status = Some("no more events on this rank".into()),
            }
            return;
        }
        KeyCode::Char('p') => {
            let Some(sel) = &tl.selection else {
                app.status = Some("select an event first ([ ] or a click)".into());
                return;
            };
            let Some(to) = sel.marked_link().map(|l| l.to) else {
                app.status = Some("the selected event has no partner".into());
                return;
            };
            let from = sel.event;
            app.select(to, None);
            // Back to where we came from with the next p, when it is a link of the new one.
            if let Some(sel) = app.timeline.selection.as_mut() {
                if let Some(i) = sel.links.iter().position(|l| l.to == from) {
                    sel.marked = i;
                }
            }
            return;
        }
        // The next link of the selection is the one marked (and `p` goes to).
        KeyCode::Char('o') => {
            if let Some(sel) = tl.selection.as_mut() {
                sel.mark_next();
            }
        }
        KeyCode::Char('c') | KeyCode::Enter => {
            if let Some((a, b)) = tl.selected().and_then(|e| nav::bounds(run, e)) {
                tl.view.show(a, b, width);
                tl.view.center((a + b) / 2.0, width);
            }
        }
        KeyCode::Esc => tl.selection = None,
        _ => {}
    }
    app.keep_lane_visible();
}

/// The Waits view's keys.
pub fn waits(app: &mut App, k: KeyEvent) {
    let run = &app.runs[app.current];
    let w = &mut app.waits;
    let page = usize::from(app.geometry.table.height.max(1));
    match k.code {
        KeyCode::Char('f') => w.cycle_kind(run),
        KeyCode::Char('r') => w.cycle_rank(run),
        KeyCode::Char('R') => app.ask(crate::app::PromptKind::WaitsRank),
        KeyCode::Enter => {
            let Some(i) = w.rows.get(w.cursor.selected).copied() else {
                return;
            };
            let wait = &run.details.waits[i];
            let e = EventRef {
                rank: wait.rank,
                index: wait.index,
            };
            let cause = wait.peer.map(|peer| Cause {
                rank: peer,
                event: wait.peer_index.map(|index| EventRef { rank: peer, index }),
                what: format!(
                    "{} of {}",
                    wait.kind.title(),
                    crate::text::duration(wait.amount_ns)
                ),
            });
            app.select(e, cause);
        }
        _ => table_keys(&mut w.cursor, k, w.rows.len(), page),
    }
}

/// The Overlap view's keys.
pub fn overlap(app: &mut App, k: KeyEvent) {
    let run = &app.runs[app.current];
    let o = &mut app.overlap;
    let page = usize::from(app.geometry.table.height.max(1));
    match k.code {
        KeyCode::Char('s') => o.next_sort(run),
        KeyCode::Char('g') => {
            o.by_site = !o.by_site;
            o.findings = crate::lists::Cursor::default();
            o.pane = OverlapPane::Findings;
        }
        KeyCode::Char('h' | 'l') | KeyCode::Left | KeyCode::Right => {
            o.pane = match o.pane {
                OverlapPane::Findings => OverlapPane::Requests,
                OverlapPane::Requests => OverlapPane::Findings,
            };
        }
        KeyCode::Enter => {
            let e = match o.pane {
                OverlapPane::Findings if o.by_site => run
                    .report
                    .by_site
                    .false_overlap
                    .get(o.findings.selected)
                    .map(|g| (g.worst_rank, g.worst_index)),
                OverlapPane::Findings => run
                    .report
                    .false_overlap
                    .worst
                    .get(o.findings.selected)
                    .map(|f| (f.wait.rank, f.wait.index)),
                OverlapPane::Requests => o
                    .rows
                    .get(o.requests.selected)
                    .map(|i| &run.details.requests[*i])
                    .map(|r| (r.rank, r.completion_index().unwrap_or(r.post_index()))),
            };
            if let Some((rank, index)) = e {
                app.select(EventRef { rank, index }, None);
            }
        }
        _ => {
            let (cursor, len) = o.focused(run);
            table_keys(cursor, k, len, page);
        }
    }
}

/// The Summary's keys: scrolling.
pub fn summary(app: &mut App, k: KeyEvent) {
    match k.code {
        KeyCode::Char('j') | KeyCode::Down => {
            app.summary_scroll = app.summary_scroll.saturating_add(1)
        }
        KeyCode::Char('k') | KeyCode::Up => {
            app.summary_scroll = app.summary_scroll.saturating_sub(1)
        }
        KeyCode::Char('g') | KeyCode::Home => app.summary_scroll = 0,
        _ => {}
    }
}

/// The Profile view's keys: functions or sites, the order, the rows.
pub fn profile(app: &mut App, k: KeyEvent) {
    let p = &app.runs[app.current].report.profile;
    let page = usize::from(app.geometry.table.height.max(1));
    let s = &mut app.profile;
    match k.code {
        KeyCode::Char('s') => s.toggle_rows(p),
        KeyCode::Char('o') => s.next_sort(p),
        KeyCode::Char('+' | '=') => s.matrix.zoom(0.5, p.matrix.ranks),
        KeyCode::Char('-' | '_') => s.matrix.zoom(2.0, p.matrix.ranks),
        KeyCode::Char(c @ ('[' | ']' | '{' | '}')) => s.matrix.pan(
            matches!(c, '[' | ']'),
            matches!(c, ']' | '}'),
            p.matrix.ranks,
        ),
        KeyCode::Char('w') => {
            let run = &app.runs[app.current];
            let span = if app.profile.window.is_some() {
                None
            } else {
                let v = app.timeline.view;
                let width = f64::from(app.geometry.lanes.width.max(1));
                let (a, b) = (v.start.max(0.0), v.start + v.per_cell * width);
                Some((a as u64, b.max(a + 1.0) as u64))
            };
            app.profile.set_window(run, span);
        }
        _ => {
            let len = s.order.len();
            table_keys(&mut s.cursor, k, len, page);
        }
    }
}

/// The Compare view's keys: the timelines' zoom and pan, the diff table's rows.
pub fn compare(app: &mut App, k: KeyEvent) {
    let width = app.geometry.compare[0].width;
    let page = usize::from(app.geometry.table.height.max(1));
    let longest = app.longest_run();
    let Some(c) = app.compare.as_mut() else {
        return;
    };
    let anchor = c.view.middle(width);
    if zoom_pan(&mut c.view, k, width, anchor, (0, longest)) {
        return;
    }
    let len = c.rows.len();
    table_keys(&mut c.cursor, k, len, page);
}

/// Moving in a table: j/k, arrows, pages, g/G, Home/End.
fn table_keys(cursor: &mut crate::lists::Cursor, k: KeyEvent, len: usize, page: usize) {
    match k.code {
        KeyCode::Char('j') | KeyCode::Down => cursor.step(1, len),
        KeyCode::Char('k') | KeyCode::Up => cursor.step(-1, len),
        KeyCode::PageDown | KeyCode::Char(' ') => cursor.step(page as isize, len),
        KeyCode::PageUp => cursor.step(-(page as isize), len),
        KeyCode::Char('g') | KeyCode::Home => cursor.to_end(false, len),
        KeyCode::Char('G') | KeyCode::End => cursor.to_end(true, len),
        _ => {}
    }
}
