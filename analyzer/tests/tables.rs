//! The tables `overlap analyze --csv` writes, on hand-built traces: a figure that could
//! not be made is an empty cell, never 0.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]
// The tables are the feature `tables` (on by default).
#![cfg(feature = "tables")]

use crate::common::*;
use overlap_analyzer::analysis::analyze;
use overlap_analyzer::tables::{tables, write_tables, TableFormat};
use overlap_instrument::schema::Op;

/// ```text
///  rank 0  |Isend(1) 0-1|Wait 2-4|  |Isend(1, tag 9) 5-6|        (never waited for)
///  rank 1  |Irecv(0) 0-1|Wait 1-3|
/// ```
/// Request 1 of rank 0: window 1 (1 to 2), exposed wait 2. Request 2: no call completed
/// it, so it has no window, CPU, wait, t_ovrl or overlap.
#[test]
fn a_request_never_completed_has_empty_cells_not_zeros() {
    let t = run(vec![
        vec![
            isend(0, 1, 1, 0, 8, 1),
            complete(Op::Wait, 2, 4, &[(1, None)]),
            isend(5, 6, 1, 9, 8, 2),
        ],
        vec![
            irecv(0, 1, 0, 0, 8, 1),
            complete(Op::Wait, 1, 3, &[(1, Some((0, 0)))]),
        ],
    ]);
    let (report, details) = analyze(&t, &Default::default());
    let all = tables(&t, &report, &details);
    let dir = tempfile::tempdir().unwrap();
    let written = write_tables(&all, &[(dir.path(), TableFormat::Csv)]).unwrap();
    let written = &written[0];
    let path = written
        .iter()
        .find(|p| p.ends_with("requests.csv"))
        .unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let cell = |rank: &str, request: &str, name: &str| -> String {
        let at = header.iter().position(|h| *h == name).unwrap();
        let row: Vec<&str> = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect::<Vec<&str>>())
            .find(|f| f[0] == rank && f[1] == request)
            .unwrap();
        row[at].to_string()
    };
    assert_eq!(cell("0", "1", "window_ns"), "1");
    assert_eq!(cell("0", "1", "exposed_wait_ns"), "2");
    for name in [
        "window_ns",
        "cpu_ns",
        "exposed_wait_ns",
        "t_ovrl_ns",
        "overlap",
        "progress_wait_ns",
    ] {
        assert_eq!(
            cell("0", "2", name),
            "",
            "{name} of a request never completed"
        );
    }
}
