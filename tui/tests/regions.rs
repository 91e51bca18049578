//! Regions the program marked with `MPI_Pcontrol`, and windows, in the TUI: `g` goes to
//! a region (the view fits its span), the Summary lists the regions and the window the
//! run was cut to.

#[path = "../../analyzer/tests/common/mod.rs"]
mod common;
mod screen;

use common::pcontrol;

use screen::{keys, screen};

use overlap_analyzer::window::{cut, Choice};
use overlap_tui::{App, Run, View};

/// ```text
///  time     0    100  110        300 310       1000
///  rank 0  |Barrier|Pc+ solve|....|Pc- solve|...|Barrier|
///  rank 1  |Barrier|  |Pc+ solve|.....|Pc- solve|..|Barrier|
///  solve: 100 (rank 0's enter) to 330 (rank 1's leave)
/// ```
fn marked() -> overlap_analyzer::model::Trace {
    common::run(vec![
        vec![
            common::barrier(0, 50),
            pcontrol(100, 110, 1, "solve"),
            pcontrol(300, 310, -1, "solve"),
            common::barrier(900, 1000),
        ],
        vec![
            common::barrier(0, 50),
            pcontrol(120, 130, 1, "solve"),
            pcontrol(320, 330, -1, "solve"),
            common::barrier(950, 1000),
        ],
    ])
}

#[test]
fn go_to_a_region_and_see_the_regions() {
    let run = Run::new("marked".into(), marked(), &common::opts());
    let mut app = App::new(vec![run]);
    screen(&mut app, 120, 30);
    keys(&mut app, "gsolve\n");
    assert_eq!(app.view, View::Timeline);
    let v = app.timeline.view;
    let width = app.geometry.lanes.width;
    assert_eq!(v.start, 100.0);
    assert!(
        (v.start + v.per_cell * f64::from(width) - 330.0).abs() < 1e-6,
        "{v:?}"
    );
    assert_eq!(app.status.as_deref(), Some("region solve"));
    keys(&mut app, "gsolve#2\n");
    let said = app.status.clone().unwrap_or_default();
    assert!(
        said.contains("has 1 instance(s) on its ranks, not 2"),
        "{said}"
    );
    keys(&mut app, "4");
    let summary = screen(&mut app, 120, 30);
    assert!(summary.contains("Regions (MPI_Pcontrol): 1"), "{summary}");
    assert!(summary.contains("solve"), "{summary}");
}

/// A run cut to a window says so first in its Summary.
#[test]
fn the_summary_says_the_window() {
    let choice = Choice {
        region: Some("solve".into()),
        ranks: Some(vec![1]),
        ..Choice::default()
    };
    let c = cut(marked(), &choice).expect("a window");
    let run = Run::new("marked".into(), c.trace, &common::opts()).in_window(c.report);
    let mut app = App::new(vec![run]);
    keys(&mut app, "4");
    let summary = screen(&mut app, 120, 30);
    assert!(
        summary.contains("Window: 100 ns to 330 ns of the run (region solve), 1 rank(s) of 2"),
        "{summary}"
    );
}
