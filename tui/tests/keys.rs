//! The key handling as a state machine, on a hand-built run whose answers were worked
//! out by hand:
//!
//! ```text
//! ns       0    1000      4000 4100      6000  6500     7000
//! rank 0   |work.................|Isend|more......|Wait|Barrier|
//! rank 1   |Irecv|early|Wait.................|(4600)  Barrier....|
//!                        1000 ------ 4600
//! ```
//!
//! Rank 1 waits for the message from 1000 until the Isend is posted at 4000: a Late
//! Sender of 3000 ns charged to its Wait; then it enters the Barrier at 4600 and waits
//! for rank 0 (6500): a Wait at Barrier of 1900 ns.

#[path = "../../analyzer/tests/common/mod.rs"]
mod common;

use common::{barrier, complete, compute, irecv, isend};
use overlap_analyzer::metrics::WaitKind;
use overlap_analyzer::model::EventRef;
use overlap_instrument::schema::Op;
use overlap_tui::app::{Input, PromptKind};
use overlap_tui::{App, Run, View};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn run() -> Run {
    let trace = overlap_analyzer::merge::from_events(
        "keys",
        std::path::Path::new("keys"),
        vec![
            vec![
                compute(0, 4000, "work"),
                isend(4000, 4100, 1, 7, 1 << 20, 1),
                compute(4100, 6000, "more"),
                complete(Op::Wait, 6000, 6500, &[(1, None)]),
                barrier(6500, 7000),
            ],
            vec![
                irecv(0, 100, 0, 7, 1 << 20, 1),
                compute(100, 1000, "early"),
                complete(Op::Wait, 1000, 4600, &[(1, Some((0, 7)))]),
                barrier(4600, 7000),
            ],
        ],
    );
    Run::new("keys.json".into(), trace, &Default::default())
}

fn press(app: &mut App, keys: &str) {
    for c in keys.chars() {
        key(app, KeyCode::Char(c));
    }
}

fn key(app: &mut App, code: KeyCode) {
    app.handle(Input::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

const fn at(rank: u32, index: usize) -> EventRef {
    EventRef { rank, index }
}

#[test]
fn search_selects_and_p_goes_to_the_partner_and_back() {
    let mut app = App::new(vec![run()]);
    press(&mut app, "/isend");
    assert_eq!(
        app.prompt.as_ref().map(|p| (p.kind, p.text.as_str())),
        Some((PromptKind::Search, "isend"))
    );
    key(&mut app, KeyCode::Enter);
    assert!(app.prompt.is_none());
    assert_eq!(app.timeline.selected(), Some(at(0, 1)));
    // The message goes to rank 1's Wait (the call that completed the receive).
    assert_eq!(
        app.timeline.selection.as_ref().expect("selected").links[0].to,
        at(1, 2)
    );
    press(&mut app, "p");
    assert_eq!(app.timeline.selected(), Some(at(1, 2)));
    assert_eq!(app.timeline.lane, 1);
    press(&mut app, "p");
    assert_eq!(
        app.timeline.selected(),
        Some(at(0, 1)),
        "p again goes back to the send"
    );
    // n finds no later Isend.
    press(&mut app, "n");
    assert_eq!(app.timeline.selected(), Some(at(0, 1)));
    assert!(app
        .status
        .as_deref()
        .unwrap_or("")
        .contains("no later match"));
}

#[test]
fn brackets_step_through_events_and_braces_through_calls() {
    let mut app = App::new(vec![run()]);
    press(&mut app, "0");
    // Nothing selected: from the middle of the view (3500 ns) forward on rank 0.
    press(&mut app, "]");
    assert_eq!(app.timeline.selected(), Some(at(0, 1)));
    press(&mut app, "]");
    assert_eq!(
        app.timeline.selected(),
        Some(at(0, 2)),
        "the compute span 'more'"
    );
    press(&mut app, "[[");
    assert_eq!(app.timeline.selected(), Some(at(0, 0)));
    press(&mut app, "}");
    assert_eq!(app.timeline.selected(), Some(at(0, 1)), "}} skips compute");
    press(&mut app, "}");
    assert_eq!(app.timeline.selected(), Some(at(0, 3)));
    key(&mut app, KeyCode::Down);
    press(&mut app, "]");
    assert_eq!(app.timeline.lane, 1);
    assert_eq!(app.timeline.selected().map(|e| e.rank), Some(1));
}

#[test]
fn zoom_pan_and_fit() {
    let mut app = App::new(vec![run()]);
    let fit = app.timeline.view;
    press(&mut app, "+");
    assert_eq!(app.timeline.view.per_cell, fit.per_cell / 2.0);
    press(&mut app, "--");
    assert_eq!(app.timeline.view.per_cell, fit.per_cell * 2.0);
    // Never wider than twice the run.
    press(&mut app, "-----");
    assert_eq!(app.timeline.view.per_cell, fit.per_cell * 2.0);
    let start = app.timeline.view.start;
    press(&mut app, "l");
    assert!(app.timeline.view.start > start);
    key(&mut app, KeyCode::Left);
    assert_eq!(app.timeline.view.start, start);
    press(&mut app, "f");
    assert_eq!(app.timeline.view, fit);
}

#[test]
fn a_wait_opens_on_the_timeline_with_its_cause() {
    let mut app = App::new(vec![run()]);
    press(&mut app, "2");
    assert_eq!(app.view, View::Waits);
    let waits = &app.runs[0].details.waits;
    let rows: Vec<(WaitKind, u32, usize, u64)> = app
        .waits
        .rows
        .iter()
        .map(|i| {
            (
                waits[*i].kind,
                waits[*i].rank,
                waits[*i].index,
                waits[*i].amount_ns,
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (WaitKind::LateSender, 1, 2, 3000),
            (WaitKind::WaitAtBarrier, 1, 3, 1900)
        ]
    );
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.view, View::Timeline);
    assert_eq!(app.timeline.selected(), Some(at(1, 2)));
    let cause = app
        .timeline
        .selection
        .as_ref()
        .and_then(|s| s.cause.clone())
        .expect("a cause");
    assert_eq!(
        (cause.rank, cause.event),
        (0, Some(at(0, 1))),
        "the late Isend"
    );
    // The barrier's cause is rank 0's Barrier, the last to arrive.
    press(&mut app, "2j");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.timeline.selected(), Some(at(1, 3)));
    assert_eq!(
        app.timeline
            .selection
            .and_then(|s| s.cause)
            .and_then(|c| c.event),
        Some(at(0, 4))
    );
}

#[test]
fn filters_cycle_by_kind_and_rank() {
    let mut app = App::new(vec![run()]);
    press(&mut app, "2f");
    assert_eq!(app.waits.kind, Some(WaitKind::LateSender));
    assert_eq!(app.waits.rows.len(), 1);
    press(&mut app, "f");
    assert_eq!(app.waits.kind, Some(WaitKind::WaitAtBarrier));
    press(&mut app, "f");
    assert_eq!(app.waits.kind, None);
    press(&mut app, "r");
    assert_eq!(app.waits.rank, Some(0));
    assert!(app.waits.rows.is_empty(), "rank 0 never waits");
    press(&mut app, "r");
    assert_eq!(app.waits.rows.len(), 2);
    // A rank typed (what a run of 1 000 ranks needs), then every rank again.
    press(&mut app, "R0");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.waits.rank, Some(0));
    assert!(app.waits.rows.is_empty());
    press(&mut app, "R7");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.waits.rank, Some(0), "no rank 7: the filter stays");
    assert!(app
        .status
        .as_deref()
        .unwrap_or("")
        .contains("no traced rank"));
    press(&mut app, "R");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.waits.rank, None);
    assert_eq!(app.waits.rows.len(), 2);
}

#[test]
fn help_prompts_and_quitting() {
    let mut app = App::new(vec![run()]);
    press(&mut app, "?");
    assert!(app.help);
    press(&mut app, "q");
    assert!(!app.help && !app.quit, "q closes the help first");
    press(&mut app, "g");
    assert_eq!(app.prompt.as_ref().map(|p| p.kind), Some(PromptKind::GoTo));
    press(&mut app, "5us");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.timeline.view.middle(app.geometry.lanes.width), 5000.0);
    press(&mut app, "gnonsense");
    key(&mut app, KeyCode::Enter);
    assert!(app.status.as_deref().unwrap_or("").contains("not a time"));
    press(&mut app, "/x");
    key(&mut app, KeyCode::Esc);
    assert!(app.prompt.is_none());
    press(&mut app, "6");
    assert_eq!(app.view, View::Timeline, "no Compare with one trace");
    app.handle(Input::Key(KeyEvent::new(
        KeyCode::Char('c'),
        KeyModifiers::CONTROL,
    )));
    assert!(app.quit);
}

#[test]
fn the_overlap_view_opens_a_request() {
    let mut app = App::new(vec![run()]);
    press(&mut app, "3");
    // No false overlap here: the requests table has the keys.
    assert!(app.runs[0].report.false_overlap.is_empty());
    assert_eq!(app.overlap.rows.len(), 2);
    key(&mut app, KeyCode::Enter);
    // Worst exposed wait first: rank 1's receive, completed by its Wait.
    assert_eq!(app.timeline.selected(), Some(at(1, 2)));
    press(&mut app, "3s");
    assert_eq!(app.overlap.sort.title(), "overlap");
}

#[test]
fn many_ranks_group_into_lanes_and_tabs_cycle() {
    // Five ranks, each a barrier: more ranks than the one lane the (undrawn) screen has.
    let trace = overlap_analyzer::merge::from_events(
        "five",
        std::path::Path::new("five"),
        (0..5)
            .map(|r| vec![compute(0, 100 * (r + 1), "w"), barrier(100 * (r + 1), 600)])
            .collect(),
    );
    let mut app = App::new(vec![Run::new(
        "five.json".into(),
        trace,
        &Default::default(),
    )]);
    press(&mut app, "jjj");
    assert_eq!(app.timeline.lane, 3);
    press(&mut app, "G");
    assert_eq!(app.timeline.group, 5, "every rank in the lanes on screen");
    assert_eq!(app.timeline.lanes().len(), 1);
    press(&mut app, "G");
    assert_eq!(app.timeline.group, 1);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.view, View::Waits);
    key(&mut app, KeyCode::BackTab);
    key(&mut app, KeyCode::BackTab);
    assert_eq!(
        app.view,
        View::Profile,
        "Compare is left out with one trace"
    );
}

#[test]
fn two_traces_compare_and_switch() {
    let mut app = App::new(vec![run(), run()]);
    press(&mut app, "6");
    assert_eq!(app.view, View::Compare);
    let compare = app.compare.as_ref().expect("two runs compare");
    let wall = compare
        .rows
        .iter()
        .find(|r| r.name == "run.wall")
        .expect("run.wall");
    assert_eq!((wall.a, wall.delta), (Some(7000.0), Some(0.0)));
    let per_cell = compare.view.per_cell;
    press(&mut app, "+");
    assert_eq!(
        app.compare.as_ref().map(|c| c.view.per_cell),
        Some(per_cell / 2.0)
    );
    press(&mut app, "t");
    assert_eq!(app.current, 1);
    assert!(app.status.as_deref().unwrap_or("").contains("showing"));
}

/// The Profile of the Timeline's window: rank 1's Wait (1000-4600) clipped to it, rank
/// 0's Isend (4000-4100) inside it; `w` again goes back to the whole run.
#[test]
fn the_profile_follows_the_timelines_window() {
    let mut app = App::new(vec![run()]);
    app.timeline.view = overlap_tui::nav::Viewport {
        start: 3000.0,
        per_cell: 20.0,
    };
    app.geometry.lanes.width = 100; // 3000 to 5000 ns.
    press(&mut app, "5w");
    let p = &app.runs[0].report.profile;
    let w = app.profile.window.as_ref().expect("a window");
    assert_eq!(w.span, (3000, 5000));
    let total = |rows: &[overlap_analyzer::profile::CallStats], call: &str| {
        rows.iter()
            .find(|r| r.call == call)
            .map(|r| (r.count, r.total_ns))
    };
    assert_eq!(total(&w.functions, "MPI_Wait"), Some((1, 1600)));
    assert_eq!(total(&w.functions, "MPI_Isend"), Some((1, 100)));
    assert_eq!(total(&w.functions, "MPI_Barrier"), Some((1, 400)));
    assert_eq!(total(&p.functions, "MPI_Wait"), Some((2, 4100)));
    press(&mut app, "w");
    assert!(app.profile.window.is_none());
}
