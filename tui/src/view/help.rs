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
        "fit the whole run; go to a time (1.5, 250ms, 12us) or a region (NAME[#K])",
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
    (
        "F   W",
        "show ranks: 0-15,64 | /search | worst N (empty: all); the worst waiting",
    ),
    ("", "Waits, Overlap, Profile, Compare"),
    ("j k  PgUp PgDn  g G", "rows"),
    (
        "Enter",
        "open the selected wait, finding or request on the Timeline",
    ),
    (
        "f   r   R",
        "Waits: filter by kind, by rank (next; or type one)",
    ),
    (
        "h l   s   g",
        "Overlap: findings or requests; sort requests; findings by site",
    ),
    (
        "s   o   w",
        "Profile: functions or sites; next order; the Timeline's window",
    ),
    (
        "+ -  [ ]  { }",
        "Profile: zoom the matrix; move its senders; its receivers",
    ),
];

/// Draws the overlay centred over `area`, from line `scroll` of the keys (j/k scroll it
/// where the terminal is too short for all of them, long lines wrapped). Returns the
/// furthest it can scroll.
pub fn draw(frame: &mut Frame, area: Rect, scroll: u16) -> u16 {
    let width = 100.min(area.width);
    let texts: Vec<String> = KEYS
        .iter()
        .map(|(k, what)| {
            if k.is_empty() {
                (*what).to_string()
            } else {
                format!("  {k:<24} {what}")
            }
        })
        .collect();
    // Rows the keys take once wrapped inside the borders.
    let inner = usize::from(width.saturating_sub(2).max(1));
    let rows: usize = texts
        .iter()
        .map(|t| t.chars().count().div_ceil(inner).max(1))
        .sum();
    let rows = u16::try_from(rows).unwrap_or(u16::MAX);
    let height = rows.saturating_add(2).min(area.height);
    let fits = height >= rows.saturating_add(2);
    let max_scroll = if fits { 0 } else { rows + 2 - height };
    let scroll = scroll.min(max_scroll);
    let [row] = Layout::vertical([Constraint::Length(height)])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::horizontal([Constraint::Length(width)])
        .flex(Flex::Center)
        .areas(row);
    let lines: Vec<Line> = KEYS
        .iter()
        .zip(texts)
        .map(|((k, _), text)| {
            if k.is_empty() {
                Line::styled(text, bold())
            } else {
                Line::raw(text)
            }
        })
        .collect();
    let title = if fits {
        " Keys (? or Esc closes) "
    } else {
        " Keys (j k scroll, ? or Esc closes) "
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(panel(title, lines).scroll((scroll, 0)), popup);
    max_scroll
}
