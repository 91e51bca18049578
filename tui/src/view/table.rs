//! The one way the views draw a table: only the rows on screen are built (a table may
//! hold a million rows), the cursor's row is highlighted when the table has the keys,
//! and the area of its data rows is returned for the mouse.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Row, Table, TableState};
use ratatui::Frame;

use crate::lists::Cursor;
use crate::view::bold;

/// A table's columns: their headers and widths.
pub struct Columns<'a> {
    /// The header of each column.
    pub headers: Vec<String>,
    /// The width of each column.
    pub widths: &'a [Constraint],
}

/// Draws `len` rows in `block` over `area`, `row(i)` making row `i` when it is on
/// screen; returns the data rows' area.
#[allow(clippy::too_many_arguments)]
pub fn draw<'a>(
    frame: &mut Frame,
    area: Rect,
    block: Block<'a>,
    columns: Columns<'_>,
    cursor: &mut Cursor,
    len: usize,
    focused: bool,
    row: impl Fn(usize) -> Row<'a>,
) -> Rect {
    let inner = block.inner(area);
    let data = Rect {
        y: inner.y + 1,
        height: inner.height.saturating_sub(1),
        ..inner
    };
    let window = cursor.window(usize::from(data.height), len);
    let selected = (focused && !window.is_empty()).then(|| cursor.selected - window.start);
    let table = Table::new(window.map(row), columns.widths.iter().copied())
        .header(Row::new(columns.headers).style(bold()))
        .block(block)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    frame.render_stateful_widget(
        table,
        area,
        &mut TableState::default().with_selected(selected),
    );
    data
}
