//! What a frame costs on a 1 M-event run (the targets: the first frame within 1 s
//! after loading ends, any redraw within 16 ms at every zoom level, not growing with the
//! events in view). Drawn on ratatui's TestBackend, 200 x 50, so the terminal's own
//! speed is left out.
//!
//! The run: 8 ranks in pairs, each iteration `compute, Irecv, Isend, Waitall`, with a
//! Barrier every 50 iterations, jittered, built in memory and merged like files are
//! (`cargo bench -p overlap-tui --bench redraw [-- EVENTS | -- TRACE]`; a path reads a
//! real trace instead).

#[path = "../../analyzer/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{barrier, complete, compute, irecv, isend};
use overlap_instrument::schema::{Event, Op};
use overlap_tui::app::Input;
use overlap_tui::{App, Run};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;

const RANKS: u32 = 8;

fn events(total: u64) -> Vec<Vec<Event>> {
    let per_rank = total / u64::from(RANKS);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |base: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        base + rng % (base / 2 + 1)
    };
    let mut ranks = vec![Vec::new(); RANKS as usize];
    let iterations = per_rank / 4;
    let mut clocks = vec![0u64; RANKS as usize];
    for i in 0..iterations {
        // The pair's iteration starts when both are ready (they exchange).
        for pair in 0..RANKS / 2 {
            let (a, b) = (2 * pair as usize, 2 * pair as usize + 1);
            let start = clocks[a].max(clocks[b]);
            for (me, peer) in [(a, b), (b, a)] {
                let mut t = start;
                let c = next(8_000);
                let r = &mut ranks[me];
                r.push(compute(t, t + c, "work"));
                t += c;
                let req = 2 * i + 1;
                r.push(irecv(t, t + 300, peer as i32, 1, 4096, req));
                t += 300;
                r.push(isend(t, t + 400, peer as i32, 1, 4096, req + 1));
                t += 400;
                let w = next(2_000);
                r.push(complete(
                    Op::Waitall,
                    t,
                    t + w,
                    &[(req, Some((peer as i32, 1))), (req + 1, None)],
                ));
                clocks[me] = t + w;
            }
        }
        if i % 50 == 49 {
            let end = clocks.iter().copied().max().unwrap_or(0) + 500;
            for (me, r) in ranks.iter_mut().enumerate() {
                r.push(barrier(clocks[me], end));
                clocks[me] = end;
            }
        }
    }
    ranks
}

fn press(app: &mut App, code: KeyCode) {
    app.handle(Input::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

fn timed(terminal: &mut Terminal<TestBackend>, app: &mut App) -> Duration {
    let t = Instant::now();
    terminal
        .draw(|f| overlap_tui::view::draw(f, app))
        .expect("drawn");
    t.elapsed()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let arg = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let started = Instant::now();
    let trace = match arg.as_deref().map(str::parse::<u64>) {
        Some(Err(_)) => {
            let path = Path::new(arg.as_deref().unwrap_or_default());
            overlap_analyzer::load::load(path, &mut |_, _| {})
                .expect("the trace reads")
                .trace
        }
        Some(Ok(n)) => overlap_analyzer::merge::from_events("bench", Path::new("bench"), events(n)),
        None => {
            overlap_analyzer::merge::from_events("bench", Path::new("bench"), events(1_000_000))
        }
    };
    let n: usize = trace.ranks.iter().map(|t| t.spans.len()).sum();
    println!(
        "{n} events on {} ranks, {} messages (built in {})",
        trace.ranks.len(),
        trace.messages.len(),
        ms(started.elapsed())
    );
    let t = Instant::now();
    let (report, details) = overlap_analyzer::analysis::analyze(&trace, &Default::default());
    let analysis = t.elapsed();
    let t = Instant::now();
    let run = Run::with_analysis("bench".into(), trace, report, details);
    let pyramid = t.elapsed();
    let bins: usize = run.lods.iter().map(|l| l.bins()).sum();
    println!(
        "analysis {}; level-of-detail pyramids {} ({} bins, {:.1} MiB)",
        ms(analysis),
        ms(pyramid),
        bins,
        bins as f64 * 12.0 / (1 << 20) as f64
    );
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).expect("terminal");
    let t = Instant::now();
    let mut app = App::new(vec![run]);
    let state = t.elapsed();
    terminal
        .draw(|f| overlap_tui::view::draw(f, &mut app))
        .expect("drawn");
    let first = t.elapsed();
    println!(
        "first frame after loading ends: {} (the views' state {}, drawing {}; with the pyramids: {})",
        ms(first),
        ms(state),
        ms(first - state),
        ms(first + pyramid)
    );

    let mut worst = Duration::ZERO;
    println!(
        "\n{:>14} {:>12} {:>10}",
        "ns per column", "events", "redraw"
    );
    press(&mut app, KeyCode::Char('0'));
    timed(&mut terminal, &mut app);
    loop {
        let v = app.timeline.view;
        let width = app.geometry.lanes.width;
        let (a, b) = (v.start, v.start + v.per_cell * f64::from(width));
        let in_view: usize = app.runs[0]
            .trace
            .ranks
            .iter()
            .map(|t| {
                overlap_tui::lod::starting_before(t, b) - overlap_tui::lod::starting_before(t, a)
            })
            .sum();
        let mut samples: Vec<Duration> = (0..5).map(|_| timed(&mut terminal, &mut app)).collect();
        samples.sort();
        worst = worst.max(samples[4]);
        println!(
            "{:>14.1} {:>12} {:>10} (max {})",
            v.per_cell,
            in_view,
            ms(samples[2]),
            ms(samples[4])
        );
        if v.per_cell <= 1.0 {
            break;
        }
        press(&mut app, KeyCode::Char('+'));
    }
    println!();
    for (name, keys) in [
        ("pan right (l)", vec![KeyCode::Char('l')]),
        ("fit all (0)", vec![KeyCode::Char('0')]),
        ("select next call (})", vec![KeyCode::Char('}')]),
        ("Waits view (2)", vec![KeyCode::Char('2')]),
        ("Overlap view (3)", vec![KeyCode::Char('3')]),
        ("Summary view (4)", vec![KeyCode::Char('4')]),
        ("Timeline again (1)", vec![KeyCode::Char('1')]),
    ] {
        let t = Instant::now();
        for k in keys {
            press(&mut app, k);
        }
        let handled = t.elapsed();
        let d = timed(&mut terminal, &mut app);
        worst = worst.max(d);
        println!("{name:<24} key {:>9}  redraw {:>9}", ms(handled), ms(d));
    }
    println!("\nslowest redraw: {} (target: 16 ms)", ms(worst));
}
