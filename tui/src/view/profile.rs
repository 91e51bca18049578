//! The Profile view: time per MPI function or per call site (`s`), in mpiP's columns,
//! ordered by a column (`o`); below it the communication matrix as a heat map (bytes
//! from the sender's row to the receiver's column) and the message sizes.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Row};
use ratatui::Frame;

use overlap_analyzer::profile::{CommMatrix, SizeClasses};

use crate::app::App;
use crate::profile::{MatrixView, ProfileRows};
use crate::text::{bytes, clean, duration, percent};
use crate::view::table::{self, Columns};
use crate::view::timeline::panel;

/// Shades of a matrix cell, from the fewest bytes to the most.
const SHADES: [&str; 4] = ["░", "▒", "▓", "█"];

/// Draws the view.
pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let run = &app.runs[app.current];
    let p = &run.report.profile;
    let ranks = p.matrix.ranks as u16;
    let bottom = (ranks + 4).clamp(6, 14).min(area.height / 2);
    let [table_area, below] =
        Layout::vertical([Constraint::Min(5), Constraint::Length(bottom)]).areas(area);
    let [matrix_area, sizes_area] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(below);
    let s = &mut app.profile;
    let by_site = s.rows == ProfileRows::Sites;
    let span = match &s.window {
        Some(w) => format!(
            "{:.6}-{:.6} s",
            w.span.0 as f64 / 1e9,
            w.span.1 as f64 / 1e9
        ),
        None => "whole run".to_string(),
    };
    let title = format!(
        " Profile: {} (s)  by {} (o)  {span} (w)  {} row(s) ",
        if by_site {
            "call sites"
        } else {
            "MPI functions"
        },
        s.sort.title(),
        s.order.len()
    );
    let block = Block::default().borders(Borders::ALL).title(title);
    // The byte columns only where the terminal is wide enough for every column whole.
    let with_bytes = table_area.width >= 106;
    let mut widths = vec![
        Constraint::Min(14),
        Constraint::Length(7),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(6),
        Constraint::Length(9),
    ];
    let mut headers = vec![
        if by_site {
            "site: function"
        } else {
            "function"
        },
        "calls",
        "total",
        "mean",
        "max",
        "MPI%",
        "wait st.",
    ];
    if with_bytes {
        widths.extend([Constraint::Length(9), Constraint::Length(9)]);
        headers.extend(["sent", "received"]);
    }
    let columns = Columns {
        headers: headers.into_iter().map(String::from).collect(),
        widths: &widths,
    };
    let len = s.order.len();
    let state = s.clone();
    app.geometry.table = table::draw(
        frame,
        table_area,
        block,
        columns,
        &mut s.cursor,
        len,
        true,
        |i| {
            let Some(x) = state.row(p, i) else {
                return Row::new(Vec::<Cell>::new());
            };
            let name = if by_site {
                let site = state.site(p, i).unwrap_or("(site unknown)");
                format!("{}: {}", clean(site), x.call)
            } else {
                x.call.to_string()
            };
            let mut cells = vec![
                Cell::from(name),
                Cell::from(x.count.to_string()),
                Cell::from(duration(x.total_ns)),
                Cell::from(duration(x.mean_ns)),
                Cell::from(duration(x.max_ns)),
                Cell::from(percent(x.mpi_share)),
                Cell::from(duration(x.wait_state_ns)),
            ];
            if with_bytes {
                cells.push(Cell::from(bytes(x.sent_bytes)));
                cells.push(Cell::from(bytes(x.received_bytes)));
            }
            Row::new(cells)
        },
    );
    let view = app.profile.matrix;
    let title = if view.is_whole(p.matrix.ranks) {
        " Bytes sent, row to column (+ zooms) ".to_string()
    } else {
        let last = |first: u32| (first + view.span).min(p.matrix.ranks) - 1;
        format!(
            " Bytes sent, ranks {}-{} to {}-{} (+ - [ ] {{ }}) ",
            view.rows,
            last(view.rows),
            view.cols,
            last(view.cols)
        )
    };
    frame.render_widget(
        panel(&title, matrix_lines(&p.matrix, matrix_area, &view)),
        matrix_area,
    );
    frame.render_widget(
        panel(" Message sizes ", size_lines(&p.sizes, sizes_area)),
        sizes_area,
    );
}

/// The heat map of the part `view` shows: a cell per rank where the area holds every
/// rank of it (a cell is two columns wide), else a cell per group of consecutive ranks,
/// so that the whole run shows at any number of ranks; the shade is the cell's bytes
/// against the largest cell's in view.
fn matrix_lines(m: &CommMatrix, area: Rect, view: &MatrixView) -> Vec<Line<'static>> {
    if m.pairs.is_empty() {
        return vec![Line::raw("No matched point-to-point messages.")];
    }
    let label = 5u16;
    let fit_cols = u32::from(area.width.saturating_sub(2 + label) / 2).max(1);
    let fit_rows = u32::from(area.height.saturating_sub(4)).max(1);
    let span = view.span.min(m.ranks).max(1);
    let side = span.min(fit_cols).min(fit_rows).max(1);
    let group = span.div_ceil(side).max(1);
    let rows = (view.rows, (view.rows + span).min(m.ranks));
    let cols = (view.cols, (view.cols + span).min(m.ranks));
    let (n_rows, n_cols) = (
        (rows.1 - rows.0).div_ceil(group),
        (cols.1 - cols.0).div_ceil(group),
    );
    let mut sums = vec![0u64; (n_rows * n_cols) as usize];
    for p in &m.pairs {
        if (rows.0..rows.1).contains(&p.from) && (cols.0..cols.1).contains(&p.to) {
            let (i, j) = ((p.from - rows.0) / group, (p.to - cols.0) / group);
            sums[(i * n_cols + j) as usize] += p.bytes;
        }
    }
    let max = sums.iter().copied().max().unwrap_or(0).max(1);
    let mut lines = Vec::new();
    let mut head = format!("{:>4} ", "");
    for to in 0..n_cols {
        head.push_str(&format!("{:>2}", (cols.0 + to * group) % 100));
    }
    lines.push(Line::raw(head));
    for from in 0..n_rows {
        let mut row = format!("{:>4} ", rows.0 + from * group);
        for to in 0..n_cols {
            match sums[(from * n_cols + to) as usize] {
                0 => row.push_str(" ."),
                b => {
                    let share = b as f64 / max as f64;
                    let i = ((share * 4.0).ceil() as usize).clamp(1, 4) - 1;
                    row.push(' ');
                    row.push_str(SHADES[i]);
                }
            }
        }
        lines.push(Line::raw(row));
    }
    let in_view = m
        .pairs
        .iter()
        .filter(|p| (rows.0..rows.1).contains(&p.from) && (cols.0..cols.1).contains(&p.to));
    if group > 1 {
        lines.push(Line::raw(format!(
            "a cell per {group} ranks ({} in all)",
            m.ranks
        )));
    } else if let Some(p) = in_view.max_by_key(|p| p.bytes) {
        lines.push(Line::raw(format!(
            "█ {} -> {}: {}, {} msg",
            p.from,
            p.to,
            bytes(p.bytes),
            p.messages
        )));
    }
    lines
}

/// The size classes of each sending function, with a bar per class as wide as the
/// area leaves.
fn size_lines(sizes: &[SizeClasses], area: Rect) -> Vec<Line<'static>> {
    if sizes.is_empty() {
        return vec![Line::raw("No matched point-to-point messages.")];
    }
    let most = sizes
        .iter()
        .flat_map(|s| s.classes.iter().map(|c| c.messages))
        .max()
        .unwrap_or(1)
        .max(1);
    let mut lines = Vec::new();
    for s in sizes {
        lines.push(Line::raw(s.call.to_string()));
        for c in &s.classes {
            let class = if c.max_bytes == 0 {
                "0 B".to_string()
            } else {
                format!("{}-{}", bytes(c.min_bytes), bytes(c.max_bytes))
            };
            let room = u64::from(area.width.saturating_sub(2 + 2 + 20 + 1 + 7 + 1)).max(1);
            let bar = "█".repeat(((c.messages * room).div_ceil(most)) as usize);
            lines.push(Line::raw(format!("  {class:<20} {:>7} {bar}", c.messages)));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use overlap_analyzer::profile::PairTraffic;

    /// 1 000 ranks on a ring, each sending to the next: grouped into cells of
    /// consecutive ranks, the diagonal (and the wrap-around corner) is what shows.
    #[test]
    fn a_thousand_ranks_group_into_cells_that_fit() {
        let m = CommMatrix {
            ranks: 1000,
            pairs: (0..1000)
                .map(|r| PairTraffic {
                    from: r,
                    to: (r + 1) % 1000,
                    messages: 1,
                    bytes: 64,
                })
                .collect(),
            by_comm: Vec::new(),
        };
        let lines = matrix_lines(&m, Rect::new(0, 0, 40, 14), &MatrixView::default());
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        // 10 rows fit: cells of 100 ranks, a header and a note.
        assert_eq!(text.len(), 12, "{text:#?}");
        assert!(text[11].contains("a cell per 100 ranks (1000 in all)"));
        for (i, row) in text[1..11].iter().enumerate() {
            let cells: Vec<&str> = row[5..].split(' ').filter(|c| !c.is_empty()).collect();
            assert_eq!(cells.len(), 10, "{row}");
            assert_ne!(cells[i], ".", "the diagonal carries the ring: {row}");
        }
        assert_ne!(
            text[10][5..].split(' ').find(|c| !c.is_empty()),
            Some("."),
            "rank 999 sends to rank 0"
        );

        // Zoomed in to 8 ranks from 500 (senders) to 8 from 504 (receivers): a cell per
        // rank, the ring's 503 -> 504 to 507 -> 508 the cells with bytes, the columns
        // labelled by rank (mod 100).
        let view = MatrixView {
            rows: 500,
            cols: 504,
            span: 8,
        };
        let text: Vec<String> = matrix_lines(&m, Rect::new(0, 0, 40, 14), &view)
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert_eq!(text.len(), 10, "{text:#?}");
        assert_eq!(text[0], "      4 5 6 7 8 91011");
        assert_eq!(text[4], " 503  █ . . . . . . .");
        assert_eq!(text[8], " 507  . . . . █ . . .");
        assert_eq!(text[9], "█ 507 -> 508: 64 B, 1 msg");
        let filled = text[1..9].iter().flat_map(|r| r.matches('█')).count();
        assert_eq!(filled, 5, "{text:#?}");
    }
}
