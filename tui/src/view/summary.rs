//! The Summary: where each rank's time went (useful, in MPI, waiting) as bars, the POP
//! efficiencies as bars, and how far the clock alignment can be trusted.

use overlap_analyzer::metrics::pop::TIdealMethod;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

use crate::app::App;
use crate::lod::Activity;
use crate::text::{clean, duration, percent};
use crate::view::timeline::panel;
use crate::view::{bold, glyph};

/// A bar of `width` cells made of parts `(share, glyph, style)`.
fn bar(parts: &[(f64, Activity)], width: usize) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut used = 0usize;
    for (share, a) in parts {
        let n = ((share.clamp(0.0, 1.0) * width as f64).round() as usize).min(width - used);
        used += n;
        let (g, s) = glyph(*a);
        spans.push(Span::styled(g.repeat(n), s));
    }
    spans.push(Span::raw("·".repeat(width - used)));
    spans
}

/// Draws the view.
pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let run = app.run();
    let r = &run.report;
    let width = usize::from(area.width.saturating_sub(48)).clamp(10, 60);
    let mut lines = vec![Line::styled(
        format!(
            "{}: {} ranks, {} events, {} messages, run {}",
            clean(&r.run.program),
            r.run.ranks_traced,
            r.run.events,
            r.run.messages,
            duration(r.totals.wall_ns)
        ),
        bold(),
    )];
    if let Some(w) = &run.window {
        let text = overlap_analyzer::report::render_window(w, Default::default());
        for l in text.lines() {
            lines.push(Line::styled(
                clean(l).into_owned(),
                Style::new().fg(Color::Cyan),
            ));
        }
    }
    let cpus = &r.run.oversubscription;
    lines.push(Line::styled(
        clean(&cpus.summary()).into_owned(),
        match cpus.oversubscribed {
            Some(false) => Style::new(),
            _ => Style::new().fg(Color::Yellow),
        },
    ));
    lines.push(Line::raw(""));
    lines.push(Line::from(vec![
        Span::styled("Time per rank   ", bold()),
        Span::styled("█", glyph(Activity::Compute).1),
        Span::raw(" useful (outside MPI)  "),
        Span::styled("▒", glyph(Activity::Mpi).1),
        Span::raw(" in MPI  "),
        Span::styled("░", glyph(Activity::Waiting).1),
        Span::raw(" waiting"),
    ]));
    lines.push(Line::raw(
        "(waiting: whole calls that only wait, Wait, Test, blocking Send/Recv, Barrier; \
         the Waits tab lists wait states: the time any call spent on a late partner)",
    ));
    for b in &r.ranks {
        let wall = b.wall_ns.max(1) as f64;
        let useful = b.useful_ns as f64 / wall;
        let waiting = b.waiting_ns as f64 / wall;
        let mpi = (b.in_mpi_ns.saturating_sub(b.waiting_ns)) as f64 / wall;
        let mut spans = vec![Span::raw(format!("rank {:<5} ", b.rank))];
        spans.extend(bar(
            &[
                (useful, Activity::Compute),
                (mpi, Activity::Mpi),
                (waiting, Activity::Waiting),
            ],
            width,
        ));
        spans.push(Span::raw(format!(
            " {:>5.1}% useful {:>5.1}% waiting of {}{}",
            useful * 100.0,
            waiting * 100.0,
            duration(b.wall_ns),
            if b.complete { "" } else { " (cut short)" }
        )));
        lines.push(Line::from(spans));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("POP efficiencies", bold()));
    let p = &r.pop;
    for (name, value) in [
        ("parallel efficiency", p.parallel_efficiency),
        ("  load balance", p.load_balance),
        ("  communication eff.", p.communication_efficiency),
        ("    serialization", p.serialization_efficiency),
        ("    transfer", p.transfer_efficiency),
    ] {
        let mut spans = vec![Span::raw(format!("{name:<22}"))];
        match value {
            Some(v) => spans.extend(bar(&[(v, Activity::Compute)], width)),
            None => spans.push(Span::raw("?".repeat(width))),
        }
        spans.push(Span::raw(format!(" {}", percent(value))));
        lines.push(Line::from(spans));
    }
    lines.push(Line::raw(format!(
        "ideal-network runtime {} ({}), measured {}",
        duration(p.t_ideal_ns),
        match p.t_ideal_method {
            TIdealMethod::Replay => "replayed",
            TIdealMethod::Subtraction => "by subtraction: the replay could not finish",
        },
        duration(p.runtime_ns)
    )));
    lines.push(Line::raw(""));
    lines.push(Line::styled("Clock alignment", bold()));
    let c = &r.clock;
    let verdict = if c.shared_clock {
        (
            "every rank read rank 0's clock: exact".to_string(),
            Color::Green,
        )
    } else if c.suspect_messages > 0 || !r.run.clock_implausible.is_empty() {
        (
            format!(
                "error bound {}: some times cannot be trusted",
                duration(c.max_error_ns)
            ),
            Color::Red,
        )
    } else {
        (
            format!("aligned within {}", duration(c.max_error_ns)),
            Color::Green,
        )
    };
    lines.push(Line::styled(verdict.0, Style::new().fg(verdict.1)));
    lines.push(Line::raw(format!(
        "{} message(s) received before sent; {} wait(s) ({}) within the error bound, counted apart",
        c.suspect_messages,
        c.indeterminate_waits,
        duration(c.indeterminate_wait_ns)
    )));
    for i in &r.run.clock_implausible {
        lines.push(Line::styled(
            format!("rank {}: {}", i.rank, clean(&i.reason)),
            Style::new().fg(Color::Red),
        ));
    }
    if !r.run.missing_ranks.is_empty() || !r.run.incomplete_ranks.is_empty() {
        lines.push(Line::styled(
            format!(
                "missing ranks {:?}, cut short {:?}: figures cover what was recorded",
                r.run.missing_ranks, r.run.incomplete_ranks
            ),
            Style::new().fg(Color::Red),
        ));
    }
    if let Some(g) = &r.gpu {
        gpu_lines(&mut lines, g, crate::view::unrecorded(run));
    }
    // The regions the program marked, as `overlap analyze --full` lists them.
    let regions = overlap_analyzer::report::render_regions(
        &run.regions.summary(),
        run.regions.unknown.as_deref(),
        Default::default(),
    );
    for l in regions.lines().filter(|l| !l.contains("overlap merge DIR")) {
        lines.push(Line::raw(clean(l).into_owned()));
    }
    if let Some(g) = &r.run.gpu_unrecorded {
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            clean(&g.said()).into_owned(),
            Style::new().fg(Color::Yellow),
        ));
    }
    // The panel wraps: count the rows the lines take at this width.
    let inner = usize::from(area.width.saturating_sub(2).max(1));
    let rows: usize = lines.iter().map(|l| l.width().div_ceil(inner).max(1)).sum();
    let rows = u16::try_from(rows).unwrap_or(u16::MAX);
    let max_scroll = rows.saturating_sub(area.height.saturating_sub(2));
    app.summary_scroll = app.summary_scroll.min(max_scroll);
    let para = panel(" Summary ", lines).scroll((app.summary_scroll, 0));
    frame.render_widget(para, area);
}

/// The GPU block: backend, staging chains, and the findings (the report's `gpu`).
///
/// `unrecorded`: what the trace lacks ([`crate::view::unrecorded`]), when it lacks
/// something: no finding then means none in what was recorded.
fn gpu_lines(
    lines: &mut Vec<Line<'static>>,
    g: &overlap_analyzer::gpu::GpuReport,
    unrecorded: Option<String>,
) {
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        format!(
            "GPU ({}, device times within {})",
            g.backend
                .as_deref()
                .map_or("backend not recorded".to_string(), |b| format!(
                    "backend {}",
                    clean(b)
                )),
            duration(g.clock_error_ns)
        ),
        bold(),
    ));
    let step = |v: Option<u64>| v.map_or("unknown".to_string(), duration);
    let m = &g.chains.mean;
    lines.push(Line::raw(format!(
        "{} staging chains ({} with both copies); mean D2H {}, wait until send {}, transfer {}, \
         wait until H2D {}, H2D {}",
        g.chains.count,
        g.chains.complete,
        step(m.d2h_ns),
        step(m.wait_send_ns),
        step(m.transfer_ns),
        step(m.wait_h2d_ns),
        step(m.h2d_ns)
    )));
    lines.push(Line::raw(format!(
        "the compute hid {} of the pipeline",
        g.pipeline_hidden
            .map_or("unknown".to_string(), |f| format!("{:.0}%", f * 100.0))
    )));
    if g.findings.is_empty() {
        lines.push(match unrecorded {
            None => Line::styled("no GPU finding", Style::new().fg(Color::Green)),
            Some(why) => Line::raw(format!("no GPU finding in what was recorded ({why})")),
        });
    }
    for f in &g.findings {
        lines.push(Line::styled(
            format!(
                "{} on rank {}: {} ({} of {})",
                f.kind.title(),
                f.rank,
                duration(f.lost_ns),
                f.instances,
                f.of
            ),
            Style::new().fg(Color::Red),
        ));
    }
}
