//! The Timeline's rank filters (`F`, `W`): by a list of ranks and ranges, by a search,
//! by the worst waits, on the demo trace (4 ranks, snapshots at 80x24 and 200x50) and on
//! a hand-built run whose waits are worked out below.

#[path = "../../analyzer/tests/common/mod.rs"]
mod common;
mod screen;

use screen::{demo, draw, keys};

use overlap_instrument::schema::{CallArgs, Op};
use overlap_tui::{nav, App, Run};

/// The ranks shown, as ranks.
fn shown(app: &App) -> Vec<u32> {
    let run = app.run();
    (app.timeline.shown.iter())
        .map(|&p| run.trace.ranks[p].rank)
        .collect()
}

#[test]
fn the_demo_filtered_by_ranks_then_by_its_worst_waits() {
    let mut app = App::new(vec![demo("naive")]);
    keys(&mut app, "F1,3\n");
    assert_eq!(shown(&app), [1, 3]);
    let small = draw(&mut app, 80, 24);
    insta::assert_snapshot!("timeline_ranks_1_3_80x24", small.backend());
    assert!(format!("{}", small.backend()).contains("[ranks 1,3]"));

    // The worst-waiting ranks, most wait-state time first.
    keys(&mut app, "Fworst 2\n");
    let waits = &app.run().report.wait_states.per_rank_ns;
    let mut by_wait: Vec<(u64, u32)> = waits.iter().map(|(r, ns)| (*ns, *r)).collect();
    by_wait.sort_by_key(|&(ns, r)| (std::cmp::Reverse(ns), r));
    let want: Vec<u32> = by_wait
        .iter()
        .filter(|w| w.0 > 0)
        .take(2)
        .map(|w| w.1)
        .collect();
    assert_eq!(shown(&app), want);
    insta::assert_snapshot!("timeline_worst_2_200x50", draw(&mut app, 200, 50).backend());

    // Empty: every rank again; a filter that keeps none changes nothing and says so.
    keys(&mut app, "F\n");
    assert_eq!(shown(&app), [0, 1, 2, 3]);
    keys(&mut app, "F9\n");
    assert_eq!(shown(&app), [0, 1, 2, 3]);
    assert!(app
        .status
        .as_deref()
        .unwrap_or("")
        .contains("no rank to show"));
    keys(&mut app, "Fnine\n");
    assert!(app
        .status
        .as_deref()
        .unwrap_or("")
        .contains("is not a rank"));
}

/// Six ranks enter a barrier 10 ns apart and leave it together; ranks 2 and 5 also
/// call MPI_Waitall (completing nothing):
///
/// ```text
///  rank 0  |Barrier ----------------------------- 50 --|   Wait at Barrier 50
///  rank 1        |Barrier ----------------------- 40 --|   40
///  rank 2              |Barrier ----------------- 30 --|Waitall|   30
///  rank 3                    |Barrier ----------- 20 --|   20
///  rank 4                          |Barrier ----- 10 --|   10
///  rank 5                                |Barrier 0 ---|Waitall|
///         0     10    20    30    40    50             60
/// ```
#[test]
fn filters_pick_ranks_by_search_and_by_waits() {
    let ranks: Vec<Vec<_>> = (0..6u64)
        .map(|r| {
            let mut events = vec![common::barrier(10 * r, 60)];
            if r == 2 || r == 5 {
                events.push(common::call(Op::Waitall, 62, 64, CallArgs::default()));
            }
            events
        })
        .collect();
    let trace = common::run(ranks);
    let run = Run::new("hand-built".into(), trace, &common::opts());
    let mut app = App::new(vec![run]);
    keys(&mut app, "F/waitall\n");
    assert_eq!(shown(&app), [2, 5]);
    keys(&mut app, "Fw 3\n");
    assert_eq!(shown(&app), [0, 1, 2]);
    // Grouped two to a lane: the lanes are the ranks shown, labelled by what they hold.
    keys(&mut app, "F0,2-3,5\n");
    app.timeline.group = 2;
    let lanes = app.timeline.lanes();
    assert_eq!(lanes, [vec![0, 2], vec![3, 5]]);
    let labels: Vec<String> = lanes
        .iter()
        .map(|l| nav::lane_label(app.run(), l))
        .collect();
    assert_eq!(labels, ["r0..2", "r3..5"]);
    keys(&mut app, "F2-3\n");
    let l = app.timeline.lanes();
    assert_eq!(nav::lane_label(app.run(), &l[0]), "r2-3");
    // Selecting a call on a rank not shown shows every rank again.
    app.select(
        overlap_analyzer::model::EventRef { rank: 5, index: 0 },
        None,
    );
    assert_eq!(shown(&app), [0, 1, 2, 3, 4, 5]);
    assert_eq!(
        nav::lane_of(app.run(), &app.timeline.lanes(), 5),
        Some(app.timeline.lane)
    );
}
