//! Every view drawn with ratatui's TestBackend on the demo traces (the false-overlap
//! kernel, naive and fixed, 4 ranks, 4 iterations, kept in `tests/data`), checked
//! against snapshots (`cargo insta review` after a deliberate change). Also: a
//! terminal too small gets a message, and names from the trace never reach the
//! terminal with their control characters.

#[path = "../../analyzer/tests/common/mod.rs"]
mod common;
mod screen;

use screen::{demo, draw, keys};

use std::path::Path;

use overlap_instrument::schema::{Event, GpuEvent, GpuOp, Nanos, Op};

use overlap_tui::app::Input;
use overlap_tui::{App, Run};
use ratatui::crossterm::event::KeyModifiers;

#[test]
fn timeline() {
    let mut app = App::new(vec![demo("naive")]);
    insta::assert_snapshot!("timeline_whole_run", draw(&mut app, 140, 36).backend());
    keys(&mut app, "+++/MPI_Isend\n");
    insta::assert_snapshot!("timeline_isend_selected", draw(&mut app, 140, 36).backend());
    keys(&mut app, "p");
    insta::assert_snapshot!("timeline_partner", draw(&mut app, 140, 36).backend());
    // Narrow: the side panel goes below the lanes.
    insta::assert_snapshot!("timeline_narrow", draw(&mut app, 100, 30).backend());
}

#[test]
fn waits() {
    let mut app = App::new(vec![demo("naive")]);
    keys(&mut app, "2");
    insta::assert_snapshot!("waits", draw(&mut app, 140, 36).backend());
    // At 80x24 every column the table keeps is whole.
    let narrow = draw(&mut app, 80, 24);
    insta::assert_snapshot!("waits_80x24", narrow.backend());
    let text = format!("{}", narrow.backend());
    assert!(
        text.contains("Late Sender") && text.contains("MPI_Waitall"),
        "{text}"
    );
    keys(&mut app, "\n");
    insta::assert_snapshot!(
        "waits_opened_on_the_timeline",
        draw(&mut app, 140, 36).backend()
    );
}

#[test]
fn overlap() {
    let mut app = App::new(vec![demo("naive")]);
    keys(&mut app, "3j");
    insta::assert_snapshot!("overlap", draw(&mut app, 140, 40).backend());
    insta::assert_snapshot!("overlap_80x24", draw(&mut app, 80, 24).backend());
    keys(&mut app, "\n");
    insta::assert_snapshot!("overlap_finding_opened", draw(&mut app, 140, 40).backend());
    // Grouped by call site: one row per line of source; Enter opens the worst.
    keys(&mut app, "3g");
    insta::assert_snapshot!("overlap_by_site", draw(&mut app, 140, 40).backend());
    let groups = &app.runs[0].report.by_site.false_overlap;
    let (rank, index) = (groups[0].worst_rank, groups[0].worst_index);
    keys(&mut app, "\n");
    assert_eq!(
        app.timeline.selected(),
        Some(overlap_analyzer::model::EventRef { rank, index })
    );
}

#[test]
fn summary() {
    let mut app = App::new(vec![demo("fixed")]);
    keys(&mut app, "4");
    insta::assert_snapshot!("summary", draw(&mut app, 120, 30).backend());
}

/// The profile at the smallest common terminal and a large one; then by call site,
/// ordered by calls.
#[test]
fn profile() {
    let mut app = App::new(vec![demo("naive")]);
    keys(&mut app, "5");
    insta::assert_snapshot!("profile_80x24", draw(&mut app, 80, 24).backend());
    insta::assert_snapshot!("profile_200x50", draw(&mut app, 200, 50).backend());
    keys(&mut app, "so");
    insta::assert_snapshot!("profile_sites_by_calls", draw(&mut app, 140, 36).backend());
    // The matrix zoomed to 2 ranks a side, its senders moved on by one: ranks 2-3 to 1-2.
    keys(&mut app, "+]");
    let zoomed = draw(&mut app, 200, 50);
    insta::assert_snapshot!("profile_matrix_zoomed_200x50", zoomed.backend());
    assert!(format!("{}", zoomed.backend()).contains("Bytes sent, ranks 2-3 to 1-2"));
}

/// The demo's four ranks held to one CPU (their recorded affinity set by hand): the
/// Summary says they time-shared it, under its first line.
#[test]
fn the_summary_says_ranks_sharing_cpus() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/false-overlap-fixed.json");
    let mut trace = overlap_analyzer::load::load(&path, &mut |_, _| {})
        .expect("the demo trace reads")
        .trace;
    for r in &mut trace.info.ranks {
        r.cpu_affinity = Some("0".into());
    }
    let mut app = App::new(vec![Run::new("shared".into(), trace, &Default::default())]);
    keys(&mut app, "4");
    let text = format!("{}", draw(&mut app, 200, 30).backend());
    assert!(
        text.contains("oversubscribed: 4 ranks ran on 1 CPU(s) of host vm (4×): waits include"),
        "{text}"
    );
}

#[test]
fn compare_and_help() {
    let mut app = App::new(vec![demo("naive"), demo("fixed")]);
    keys(&mut app, "6");
    insta::assert_snapshot!("compare", draw(&mut app, 140, 40).backend());
    keys(&mut app, "?");
    insta::assert_snapshot!("help", draw(&mut app, 140, 40).backend());
    // At 80x24 the keys scroll: the last ones come into view.
    let short = format!("{}", draw(&mut app, 80, 24).backend());
    assert!(short.contains("j k scroll"), "{short}");
    assert!(!short.contains("Profile: functions or sites"), "{short}");
    keys(&mut app, &"j".repeat(40));
    let scrolled = format!("{}", draw(&mut app, 80, 24).backend());
    assert!(
        scrolled.contains("Profile: functions or sites"),
        "{scrolled}"
    );
}

#[test]
fn a_terminal_too_small_gets_a_message() {
    let mut app = App::new(vec![demo("fixed")]);
    let t = draw(&mut app, 40, 10);
    let text = format!("{}", t.backend());
    assert!(text.contains("terminal too small"), "{text}");
    // Keys still work, and a later larger frame draws the view.
    keys(&mut app, "+");
    let t = draw(&mut app, 120, 30);
    assert!(format!("{}", t.backend()).contains("Timeline"));
}

#[test]
fn names_from_the_trace_never_reach_the_terminal_raw() {
    let evil = "pack\u{1b}[2J\u{1b}]0;pwned\u{7}";
    let trace = overlap_analyzer::merge::from_events(
        "evil\u{1b}[31m",
        Path::new("evil"),
        vec![vec![
            common::compute(0, 1000, evil),
            common::barrier(1000, 1100),
        ]],
    );
    let mut app = App::new(vec![Run::new(
        "evil\u{1b}[1m.json".into(),
        trace,
        &Default::default(),
    )]);
    keys(&mut app, "/pack\n");
    assert!(
        app.timeline.selected().is_some(),
        "the span is found by its name"
    );
    for view in ["1", "2", "3", "4", "5"] {
        keys(&mut app, view);
        let t = draw(&mut app, 120, 30);
        let buffer = t.backend().buffer();
        let raw = buffer
            .content()
            .iter()
            .any(|c| c.symbol().chars().any(char::is_control));
        assert!(!raw, "view {view} drew a control character");
        if view == "1" {
            let text = format!("{}", t.backend());
            assert!(text.contains("pack\\u{1b}[2J"), "{text}");
        }
    }
}

#[test]
fn the_mouse_selects_zooms_and_drags() {
    use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut app = App::new(vec![demo("naive")]);
    draw(&mut app, 140, 36);
    let lanes = app.geometry.lanes;
    let mouse = |app: &mut App, kind, column, row| {
        app.handle(Input::Mouse(MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        }));
    };
    // A click on rank 1's lane, in its long first wait.
    let (col, row) = (lanes.x + 5, lanes.y + app.geometry.lane_rows);
    mouse(&mut app, MouseEventKind::Down(MouseButton::Left), col, row);
    mouse(&mut app, MouseEventKind::Up(MouseButton::Left), col, row);
    let e = app
        .timeline
        .selected()
        .expect("the click selected an event");
    assert_eq!(e.rank, 1);
    assert_eq!(app.timeline.lane, 1);
    let before = app.timeline.view;
    mouse(&mut app, MouseEventKind::ScrollUp, col, row);
    assert!(
        app.timeline.view.per_cell < before.per_cell,
        "the wheel zooms in"
    );
    let zoomed = app.timeline.view;
    mouse(
        &mut app,
        MouseEventKind::Down(MouseButton::Left),
        col + 20,
        row,
    );
    mouse(
        &mut app,
        MouseEventKind::Drag(MouseButton::Left),
        col + 10,
        row,
    );
    mouse(
        &mut app,
        MouseEventKind::Up(MouseButton::Left),
        col + 10,
        row,
    );
    assert_eq!(
        app.timeline.view.start,
        zoomed.start + 10.0 * zoomed.per_cell,
        "dragged 10 columns left"
    );
    // A click on a tab switches the view.
    let (x, _, _) = app.geometry.tabs[1];
    mouse(&mut app, MouseEventKind::Down(MouseButton::Left), x + 1, 0);
    assert_eq!(app.view, overlap_tui::View::Waits);
}

/// A GPU device operation or host wait on device 0 (a D2H's host side is `dst`, an
/// H2D's `src`).
fn gpu(op: GpuOp, stream: u32, times: (u64, u64, u64), host: u64, packet: u32) -> Event {
    let (src, dst) = match op {
        GpuOp::CopyD2H => (0x10_0000, host),
        _ => (host, 0x20_0000),
    };
    Event::Gpu(GpuEvent {
        tid: 0,
        op,
        device: 0,
        stream,
        issued: Nanos(times.0),
        start: Nanos(times.1),
        end: Nanos(times.2),
        bytes: 100,
        src,
        dst,
        packet: (op != GpuOp::HostWait).then_some(packet),
        name: String::new(),
        clock_error: Nanos(0),
    })
}

#[test]
fn the_summary_shows_the_gpu_findings() {
    use common::{complete, irecv, isend, with_buf};
    // Rank 0 waits on its whole copy stream before sending packet 0, whose copy ended
    // at 110: held until 215 (the bulk order of analyzer/tests/gpu.rs).
    let sender = vec![
        gpu(GpuOp::CopyD2H, 1, (5, 10, 110), 0xA000, 0),
        gpu(GpuOp::CopyD2H, 1, (6, 110, 210), 0xB000, 1),
        gpu(GpuOp::HostWait, 1, (7, 10, 215), 0, 0),
        with_buf(isend(220, 230, 1, 0, 100, 1), 0xA000),
        with_buf(isend(235, 245, 1, 1, 100, 2), 0xB000),
        complete(Op::Waitall, 250, 400, &[(1, None), (2, None)]),
    ];
    let receiver = vec![
        with_buf(irecv(0, 10, 0, 0, 100, 1), 0xC000),
        with_buf(irecv(12, 20, 0, 1, 100, 2), 0xD000),
        complete(
            Op::Waitall,
            320,
            420,
            &[(1, Some((0, 0))), (2, Some((0, 1)))],
        ),
        gpu(GpuOp::CopyH2D, 2, (430, 440, 540), 0xC000, 0),
        gpu(GpuOp::CopyH2D, 2, (435, 540, 640), 0xD000, 1),
    ];
    let trace = common::run(vec![sender, receiver]);
    let mut app = App::new(vec![Run::new("gpu".into(), trace, &Default::default())]);
    keys(&mut app, "4");
    let text = format!("{}", draw(&mut app, 160, 60).backend());
    assert!(text.contains("GPU (backend not recorded"), "{text}");
    assert!(
        text.contains("2 staging chains (2 with both copies)"),
        "{text}"
    );
    assert!(
        text.contains("serialized staging on rank 0: 105 ns (1 of 2)"),
        "{text}"
    );
    // The first Isend's side panel gives its packet's chain, step by step.
    keys(&mut app, "1/MPI_Isend\n");
    let text = format!("{}", draw(&mut app, 160, 40).backend());
    assert!(
        text.contains("staging of packet 0: D2H 105 ns, wait 110"),
        "{text}"
    );
    assert!(
        text.contains("transfer 200 ns, wait 10 ns, H2D 110 ns"),
        "{text}"
    );
    // Each rank's lane has a second row for its device: copies `≡`, in the legend too.
    let gpu_rows: Vec<&str> = text.lines().filter(|l| l.contains("│  gpu")).collect();
    assert_eq!(gpu_rows.len(), 2, "{text}");
    assert!(gpu_rows.iter().all(|l| l.contains('≡')), "{text}");
    assert!(text.contains("≡ GPU copy"), "{text}");
}

/// At 80x24 the Summary wraps its long lines; scrolled to the end, its last line shows.
#[test]
fn the_summary_scrolls_to_its_last_wrapped_line() {
    let mut app = App::new(vec![demo("fixed")]);
    keys(&mut app, "4");
    draw(&mut app, 80, 24);
    keys(&mut app, &"j".repeat(60));
    let text = format!("{}", draw(&mut app, 80, 24).backend());
    let wide = format!("{}", draw(&mut app, 200, 60).backend());
    // The last non-empty line of the whole Summary, as the wide terminal shows it.
    let last = wide
        .lines()
        .rfind(|l| l.starts_with("\"│") && l.trim_matches(['"', '│', ' ']).len() > 3)
        .map(|l| l.trim_matches(['"', '│', ' ']).to_string())
        .unwrap_or_default();
    let tail: String = last
        .chars()
        .rev()
        .take(12)
        .collect::<String>()
        .chars()
        .rev()
        .collect();
    assert!(text.contains(tail.trim()), "{tail:?} in\n{text}");
}
