//! Lanes of a run over a viewport: one row per lane, each cell the activity that
//! dominates it ([`crate::lod`]), with the selected call, the call it is linked to and
//! the arrow between them drawn over it. Shared by the Timeline and the Compare view.
//! The cost is a fixed number of pyramid look-ups per cell, whatever the zoom.

use overlap_analyzer::model::{EventRef, What};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

use crate::gpu_lane::dominant;
use crate::lod::Mix;
use crate::nav::{self, Viewport};
use crate::run::Run;
use crate::text::{clean, time_at};
use crate::view::{glyph, gpu_glyph};

/// What is drawn over the activity.
#[derive(Clone, Copy, Debug, Default)]
pub struct Marks {
    /// The selected call.
    pub selected: Option<EventRef>,
    /// The call linked to it (a message's other end, a wait's cause).
    pub target: Option<EventRef>,
    /// The rank a wait waited for, marked on its label when the call is unknown.
    pub cause_rank: Option<u32>,
    /// The lane with the cursor.
    pub cursor_lane: Option<usize>,
}

/// Spans looked at for names per lane and frame, at most: zoomed out, spans are too
/// narrow to name, and the look stays bounded however many start on screen.
const NAMED_SPANS_MAX: usize = 20_000;

/// Writes the name of each span of rank `pos` wider than its name plus two columns
/// (calls without their `MPI_` prefix, compute spans by name) over its cells in row `y`.
fn name_spans(buf: &mut Buffer, run: &Run, pos: usize, y: u16, cells: Rect, view: &Viewport) {
    let t = &run.trace.ranks[pos];
    let (t0, t1) = (
        view.start,
        view.start + view.per_cell * f64::from(cells.width),
    );
    let first = crate::lod::starting_before(t, t0).saturating_sub(crate::lod::LOOK_BACK);
    let last = crate::lod::starting_before(t, t1);
    for s in t.spans[first..last].iter().take(NAMED_SPANS_MAX) {
        let (a, b) = (s.start.0 as f64, s.end.0 as f64);
        if b <= t0 || a >= t1 {
            continue;
        }
        let (ca, cb) = (
            ((a - t0) / view.per_cell).max(0.0),
            ((b - t0) / view.per_cell).min(f64::from(cells.width)),
        );
        let name = match s.what {
            What::Call(op, _) => op.mpi_name().trim_start_matches("MPI_").to_string(),
            What::Compute(id) => clean(t.name(id)).into_owned(),
        };
        let room = (cb - ca).floor() as usize;
        let len = name.chars().count();
        if room < len + 2 {
            continue;
        }
        let x = cells.x + ca.ceil() as u16 + 1;
        let style = glyph(crate::lod::activity(s, false))
            .1
            .add_modifier(Modifier::BOLD);
        buf.set_stringn(x, y, &name, len, style);
    }
}

/// Width of the lane labels.
pub const LABEL_WIDTH: u16 = 9;

/// Rows per lane in `height` rows: 1 when the lanes fill the height, up to 3 (two rows of
/// activity and a gap) when there is room.
pub fn rows_per_lane(lanes: usize, height: u16) -> u16 {
    (usize::from(height) / lanes.max(1)).clamp(1, 3) as u16
}

/// Draws `lanes[first..]` into `area` (labels then cells), `rows` rows each (the last
/// one a gap when there are 3); returns the cells' area.
#[allow(clippy::too_many_arguments)]
pub fn draw(
    buf: &mut Buffer,
    run: &Run,
    lanes: &[Vec<usize>],
    first: usize,
    area: Rect,
    rows: u16,
    view: &Viewport,
    marks: &Marks,
) -> Rect {
    let rows = rows.max(1);
    let filled = if rows == 3 { 2 } else { rows };
    let cells = Rect {
        x: area.x + LABEL_WIDTH,
        width: area.width.saturating_sub(LABEL_WIDTH),
        ..area
    };
    let label_style = Style::new().add_modifier(Modifier::DIM);
    let shown = usize::from(area.height / rows);
    for (row, (lane_no, lane)) in lanes.iter().enumerate().skip(first).take(shown).enumerate() {
        let y = area.y + row as u16 * rows;
        let label = nav::lane_label(run, lane);
        let mut style = if marks.cursor_lane == Some(lane_no) {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            label_style
        };
        if marks
            .cause_rank
            .is_some_and(|r| lane.iter().any(|&p| run.trace.ranks[p].rank == r))
        {
            style = style.fg(Color::Magenta).add_modifier(Modifier::BOLD);
        }
        buf.set_stringn(
            area.x,
            y,
            format!("{label:<w$}", w = usize::from(LABEL_WIDTH - 1)),
            usize::from(LABEL_WIDTH - 1),
            style,
        );
        // With two rows of activity, the second shows the device of ranks with GPU work.
        let gpu = filled >= 2 && lane.iter().any(|&p| run.gpu_lanes[p].is_some());
        if gpu {
            buf.set_stringn(
                area.x,
                y + 1,
                "  gpu",
                usize::from(LABEL_WIDTH - 1),
                label_style,
            );
        }
        for col in 0..cells.width {
            let (t0, t1) = view.cell(col);
            let mut mix = Mix::default();
            for &pos in lane {
                mix.add(&run.lods[pos].mix(&run.trace.ranks[pos], &run.trace.compute[pos], t0, t1));
            }
            let width = (t1 - t0) * lane.len() as f64;
            let (g, s) = glyph(mix.dominant(width));
            for dy in 0..filled {
                if let Some(c) = buf.cell_mut((cells.x + col, y + dy)) {
                    c.set_symbol(g).set_style(s);
                }
            }
            if gpu {
                let (copy, kernel) = lane
                    .iter()
                    .filter_map(|&p| run.gpu_lanes[p].as_ref())
                    .map(|l| l.mix(t0, t1))
                    .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
                let (g, s) = gpu_glyph(dominant((copy, kernel), width));
                if let Some(c) = buf.cell_mut((cells.x + col, y + filled - 1)) {
                    c.set_symbol(g).set_style(s);
                }
            }
        }
        // A lane of one rank names its calls and compute spans wide enough to hold it.
        if let [pos] = lane[..] {
            name_spans(buf, run, pos, y, cells, view);
        }
    }
    // The lane of each rank's position (a filter leaves some in none).
    let mut lane_at: Vec<Option<usize>> = vec![None; run.trace.ranks.len()];
    for (i, lane) in lanes.iter().enumerate() {
        for &p in lane {
            lane_at[p] = Some(i);
        }
    }
    let lane_of = |e: EventRef| run.position(e.rank).and_then(|p| lane_at[p]);
    let row_of = |e: EventRef| {
        let lane = lane_of(e)?;
        let row = lane.checked_sub(first)?;
        (row < shown).then_some(area.y + row as u16 * rows)
    };
    let cols_of = |e: EventRef| {
        let (a, b) = nav::bounds(run, e)?;
        let w = cells.width;
        let (ca, cb) = (
            (a - view.start) / view.per_cell,
            (b - view.start) / view.per_cell,
        );
        if cb < 0.0 || ca >= f64::from(w) {
            return None;
        }
        let first = ca.max(0.0) as u16;
        let last = (cb.ceil().max(ca.max(0.0) + 1.0) as u16).min(w);
        Some((first, last.max(first + 1).min(w)))
    };
    // The host's rows of the lane holding `e` (its GPU row is left as it is).
    let host_rows = |e: EventRef| {
        let gpu = lane_of(e)
            .and_then(|l| lanes.get(l))
            .is_some_and(|lane| lane.iter().any(|&p| run.gpu_lanes[p].is_some()));
        if filled >= 2 && gpu {
            filled - 1
        } else {
            filled
        }
    };
    let mut paint = |e: EventRef, style: Style| {
        if let (Some(y), Some((a, b))) = (row_of(e), cols_of(e)) {
            for x in a..b {
                for dy in 0..host_rows(e) {
                    if let Some(c) = buf.cell_mut((cells.x + x, y + dy)) {
                        c.set_style(style);
                    }
                }
            }
        }
    };
    if let Some(t) = marks.target {
        paint(
            t,
            Style::new()
                .fg(Color::Magenta)
                .add_modifier(Modifier::REVERSED | Modifier::BOLD),
        );
    }
    if let Some(s) = marks.selected {
        paint(
            s,
            Style::new()
                .fg(Color::Cyan)
                .add_modifier(Modifier::REVERSED | Modifier::BOLD),
        );
    }
    if let (Some(s), Some(t)) = (marks.selected, marks.target) {
        let bottom = |y: Option<u16>| y.map(|y| y + filled - 1);
        let (ys, yt) = (row_of(s), row_of(t));
        // From the bottom of the upper call to the top of the lower one.
        let (ys, yt) = match ys.cmp(&yt) {
            std::cmp::Ordering::Greater => (ys, bottom(yt)),
            std::cmp::Ordering::Less => (bottom(ys), yt),
            std::cmp::Ordering::Equal => (ys, yt),
        };
        arrow(
            buf,
            cells,
            (ys, cols_of(s)),
            (yt, cols_of(t)),
            run,
            view,
            (s, t),
        );
    }
    cells
}

/// The arrow from the selected call to its target: a line of `│ ╲ ╱` through the lanes
/// between, and `▼`/`▲` on the target (`◆` when both are on one lane).
fn arrow(
    buf: &mut Buffer,
    cells: Rect,
    from: (Option<u16>, Option<(u16, u16)>),
    to: (Option<u16>, Option<(u16, u16)>),
    run: &Run,
    view: &Viewport,
    (s, t): (EventRef, EventRef),
) {
    let (Some(y0), Some(y1)) = (from.0, to.0) else {
        return;
    };
    // Columns even when off screen: the line is clipped, not dropped.
    let col = |e: EventRef| nav::bounds(run, e).map(|(a, _)| (a - view.start) / view.per_cell);
    let (Some(c0), Some(c1)) = (col(s), col(t)) else {
        return;
    };
    let style = Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD);
    let head = match y1.cmp(&y0) {
        std::cmp::Ordering::Greater => "▼",
        std::cmp::Ordering::Less => "▲",
        std::cmp::Ordering::Equal => "◆",
    };
    if let Some((a, _)) = to.1 {
        if let Some(c) = buf.cell_mut((cells.x + a, y1)) {
            c.set_symbol(head).set_style(style);
        }
    }
    let (lo, hi) = (y0.min(y1), y0.max(y1));
    let line = if (c1 - c0).abs() < 1.0 {
        "│"
    } else if (c1 > c0) == (y1 > y0) {
        "╲"
    } else {
        "╱"
    };
    for y in lo + 1..hi {
        let f = f64::from(y - y0.min(y1)) / f64::from(hi - lo);
        let x = if y1 > y0 {
            c0 + (c1 - c0) * f
        } else {
            c1 + (c0 - c1) * f
        };
        if x >= 0.0 && x < f64::from(cells.width) {
            if let Some(c) = buf.cell_mut((cells.x + x as u16, y)) {
                c.set_symbol(line).set_style(style);
            }
        }
    }
}

/// The time axis: a label every 16 columns or so, at the time of its first column.
pub fn axis(buf: &mut Buffer, cells: Rect, y: u16, view: &Viewport) {
    let step = 16u16;
    let style = Style::new().add_modifier(Modifier::DIM);
    let mut x = 0u16;
    while x + 8 < cells.width {
        let label = format!("|{}", time_at(view.cell(x).0.max(0.0), view.per_cell));
        buf.set_stringn(cells.x + x, y, &label, usize::from(cells.width - x), style);
        x += step.max(label.chars().count() as u16 + 2);
    }
}
