//! The help overlay (`?`): every key, by view. `docs/tui.md` carries the same list.

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Clear;
use ratatui::Frame;

use crate::view::bold;
use crate::view::timeline::panel;

/// The keys, as (keys, what they do); a line with empty keys is a heading.
pub const KEYS: &[(&str, &str)] = &[
    ("", "Everywhere"),
    (
        "1-6  Tab  S-Tab",
        "Timeline, Waits, Overlap, Summary, Profile, Compare",
    ),
    (
        "/   n   N",
        "search calls, compute names, call sites; next, previous",
    ),
    ("t", "the other trace (with two traces)"),
    ("?   Esc", "this help; close it"),
    ("q   Ctrl-C", "quit"),
    ("", "Timeline"),
    (
        "+ -   wheel",
        "zoom in, out (at the selection, or the pointer)",
    ),
    ("h l  <- ->  drag", "pan; H L a whole screen"),
    (
        "0  f   g",
        "fit the whole run; go to a time (1.5, 250ms, 12us)",
    ),
    ("j k  Up Down  PgUp PgDn", "lane"),
    ("[ ]   { }", "previous/next event; previous/next MPI call"),
    ("click", "select the event under the pointer"),
    (
        "p   o",
        "jump to the partner (message, request); mark the next link",
    ),
    ("c  Enter   Esc", "centre on the selection; clear it"),
    ("G", "a lane per rank, or every rank on screen in groups"),
    ("", "Waits, Overlap, Profile, Compare"),
    ("j k  PgUp PgDn  g G", "rows"),
    (
        "Enter",
        "open the selected wait, finding or request on the Timeline",
    ),
    ("f   r", "Waits: filter by kind, by rank"),
    ("h l   s", "Overlap: findings or requests; sort requests"),
    (
        "s   o",
        "Profile: functions or call sites; order by the next column",
    ),
];

/// Draws the overlay centred over `area`.
pub fn draw(frame: &mut Frame, area: Rect) {
    let height = (KEYS.len() as u16 + 2).min(area.height);
    let width = 100.min(area.width);
    let [row] = Layout::vertical([Constraint::Length(height)])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::horizontal([Constraint::Length(width)])
        .flex(Flex::Center)
        .areas(row);
    let lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| {
            if k.is_empty() {
                Line::styled(*what, bold())
            } else {
                Line::raw(format!("  {k:<24} {what}"))
            }
        })
        .collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(panel(" Keys (? or Esc closes) ", lines), popup);
}
