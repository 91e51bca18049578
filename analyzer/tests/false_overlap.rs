//! False overlap on hand-built traces (the pattern of the bundled kernel, naive and
//! fixed): the findings worked out by hand, what the report lists of them and the table
//! that lists every one.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::metrics::false_overlap::Limit;
use overlap_instrument::schema::Op;

/// Rank 0 of the false-overlap pattern; rank 1 mirrors it. S = send buffer 0x1000,
/// R = receive buffer 0x2000.
fn pattern(me: i32, fixed: bool) -> Vec<Ev> {
    let peer = 1 - me;
    let s = |e| with_buf(e, 0x1000);
    let r = |e| with_buf(e, 0x2000);
    if !fixed {
        // |Irecv 0-1|Isend 1-2|Waitall(r) 2-4|Waitall(s) 4-10|unpack 10-12|compute 12-30|
        // |Irecv 30-31|Isend(S again) 31-32|Waitall(r) 32-33|Waitall(s) 33-34|
        vec![
            r(irecv(0, 1, peer, 5, 100, 1)),
            s(isend(1, 2, peer, 5, 100, 2)),
            complete(Op::Waitall, 2, 4, &[(1, Some((peer, 5)))]),
            complete(Op::Waitall, 4, 10, &[(2, None)]),
            compute(10, 12, "unpack"),
            compute(12, 30, "compute"),
            r(irecv(30, 31, peer, 5, 100, 3)),
            s(isend(31, 32, peer, 5, 100, 4)),
            complete(Op::Waitall, 32, 33, &[(3, Some((peer, 5)))]),
            complete(Op::Waitall, 33, 34, &[(4, None)]),
        ]
    } else {
        // |Irecv 0-1|Isend 1-2|Waitall(r) 2-4|unpack 4-6|compute 6-24|Waitall(s) 24-25|
        // |Irecv 25-26|Isend 26-27|Waitall(r) 27-28|Waitall(s) 28-29|
        vec![
            r(irecv(0, 1, peer, 5, 100, 1)),
            s(isend(1, 2, peer, 5, 100, 2)),
            complete(Op::Waitall, 2, 4, &[(1, Some((peer, 5)))]),
            compute(4, 6, "unpack"),
            compute(6, 24, "compute"),
            complete(Op::Waitall, 24, 25, &[(2, None)]),
            r(irecv(25, 26, peer, 5, 100, 3)),
            s(isend(26, 27, peer, 5, 100, 4)),
            complete(Op::Waitall, 27, 28, &[(3, Some((peer, 5)))]),
            complete(Op::Waitall, 28, 29, &[(4, None)]),
        ]
    }
}

type Ev = overlap_instrument::schema::Event;

/// The naive pattern's two findings (one per rank, each lost 6, hideable 6: below), the
/// report listing one: it counts and sums both and lists rank 0's (equal losses go by
/// rank); the tables list both, with where each wait may move.
#[test]
#[cfg(feature = "tables")]
fn the_report_lists_the_worst_findings_and_the_table_every_one() {
    use overlap_analyzer::analysis::analyze;
    use overlap_analyzer::metrics::Options;
    let t = run(vec![pattern(0, false), pattern(1, false)]);
    let one = Options {
        findings: 1,
        ..opts()
    };
    let (r, details) = analyze(&t, &one);
    let fo = &r.false_overlap;
    assert_eq!((fo.count, fo.lost_ns, fo.hideable_ns), (2, 12, 12));
    assert_eq!(fo.worst.len(), 1);
    assert_eq!((fo.worst[0].rank, fo.unlisted()), (0, 1));
    let group = &r.by_site.false_overlap;
    assert_eq!((group.len(), group[0].count, group[0].total_ns), (1, 2, 12));
    assert_eq!(details.findings.len(), 2);
    let all = overlap_analyzer::tables::tables(&t, &r, &details);
    let dir = tempfile::tempdir().unwrap();
    let format = overlap_analyzer::tables::TableFormat::Csv;
    overlap_analyzer::tables::write_tables(&all, &[(dir.path(), format)]).unwrap();
    let csv = std::fs::read_to_string(dir.path().join("false_overlap.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "rank,index,call,start_ns,duration_ns,sends,mixed,lost_ns,independent_work_ns,\
         independent_spans,hideable_ns,limit,move_before_index,move_after_index,\
         proven_hideable_ns,proven_limit,site"
    );
    // The wait is event 3 (4-10). It may move before the Isend at 31 (event 7), that
    // is after the Irecv at 30 (event 6), the last call before it, if unpack and
    // compute (which declare nothing) do not write the send buffer: nothing is proven.
    // No site recorded.
    for (line, rank) in lines[1..].iter().zip(["0", "1"]) {
        assert_eq!(
            *line,
            format!("{rank},3,MPI_Waitall,4,6,1,false,6,20,2,6,buffer_reuse,7,6,,,")
        );
    }
    assert_eq!(lines.len(), 3);
}

#[test]
fn false_overlap_is_found_on_the_early_send_wait_and_not_once_deferred() {
    let naive = report(&run(vec![pattern(0, false), pattern(1, false)]));
    // Per rank: the send Waitall at 4-10 lost 6 with an empty window (2-4: a Waitall);
    // unpack (2) and compute (18) ran after it until the send buffer's next use by the
    // Isend at 31: 20 independent, hideable min(6, 20) = 6. The last send Waitall
    // (33-34) has nothing after it.
    assert_eq!(naive.false_overlap.count, 2, "{:#?}", naive.false_overlap);
    for (f, rank) in naive.false_overlap.worst.iter().zip([0, 1]) {
        assert_eq!(f.rank, rank);
        assert_eq!(
            (f.wait.call, f.wait.start_ns, f.wait.index),
            ("MPI_Waitall", 4, 3)
        );
        assert_eq!(f.lost_ns, 6);
        assert_eq!(f.requests.len(), 1);
        assert_eq!((f.requests[0].request, f.requests[0].bytes), (2, 100));
        assert_eq!(f.requests[0].window_cpu_ns, 0);
        let m = &f.possible;
        assert_eq!((m.independent_work_ns, m.independent_spans), (20, 2));
        assert_eq!(m.independent_names, vec!["unpack", "compute"]);
        let to = m.move_before.as_ref().unwrap();
        assert_eq!((to.call, to.start_ns, to.index), ("MPI_Isend", 31, 7));
        assert_eq!(m.limit, Limit::BufferReuse);
        assert_eq!(m.hideable_ns, 6);
        // unpack declared nothing: what it does to the send buffer is unknown, so the
        // move is only possible.
        assert_eq!(f.proven, None);
        let needs = f.needs.as_ref().unwrap();
        assert_eq!(needs.compute.name.as_deref(), Some("unpack"));
        assert_eq!((needs.must_not, needs.addr), ("write", Some(0x1000)));
        assert!(!f.mixed);
    }
    let fixed = report(&run(vec![pattern(0, true), pattern(1, true)]));
    // The deferred Waitall (24-25) has 20 of compute in its window (2-24).
    assert!(fixed.false_overlap.is_empty(), "{:#?}", fixed.false_overlap);
}
