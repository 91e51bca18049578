//! Reading per-rank files: what a cut-short file still gives, and the errors for files
//! that cannot be used, each naming the file, the place and the reason.

use std::path::Path;

use crate::common::*;
use overlap_analyzer::import::{parse_rank_trace, read_rank_file};
use overlap_analyzer::model::Place;
use overlap_analyzer::Error;
use overlap_instrument::schema::{Op, SyncPhase};

fn sample() -> overlap_analyzer::model::RankTrace {
    rank_trace(
        header(0, 2, 42, "A"),
        vec![
            sync(SyncPhase::Init, 0, 0, 0),
            sync(SyncPhase::Final, 500, 0, 0),
        ],
        vec![
            isend(10, 20, 1, 3, 64, 1),
            compute(20, 200, "compute"),
            complete(Op::Waitall, 200, 300, &[(1, None)]),
        ],
    )
}

fn written(closed: bool) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write_rank_file(dir.path(), &sample(), closed);
    let text = std::fs::read_to_string(path).expect("read");
    (dir, text)
}

fn parse(text: &str) -> overlap_analyzer::Result<overlap_analyzer::model::RankTrace> {
    parse_rank_trace(Path::new("rank-0.json"), text.as_bytes())
}

#[test]
fn a_complete_file_round_trips() {
    let (dir, _) = written(true);
    let t = read_rank_file(&dir.path().join("rank-0.json")).expect("reads");
    let expected = sample();
    assert_eq!(t.header, expected.header);
    assert_eq!(t.events, expected.events);
    assert_eq!(t.syncs, expected.syncs);
    assert!(t.is_complete());
    assert_eq!(t.threads[&0], "main");
}

#[test]
fn a_file_without_footer_or_bracket_keeps_every_event() {
    let (_d, text) = written(false);
    let t = parse(&text).expect("reads");
    assert_eq!(t.events.len(), 3);
    assert!(t.problems.is_empty());
    assert!(!t.is_complete());
    assert!(t
        .incompleteness()
        .expect("incomplete")
        .contains("without its footer"));
}

#[test]
fn a_half_written_last_event_is_cut_and_reported() {
    let (_d, text) = written(false);
    // Cut the last event (the Waitall) in the middle.
    let cut = text.rfind("MPI_Waitall").expect("present") + 5;
    let t = parse(&text[..cut]).expect("reads the prefix");
    assert_eq!(t.events.len(), 2);
    let p = &t.problems[0];
    assert_eq!(
        p.event_index, 6,
        "process_name, header, thread_name, sync, 2 events, then it"
    );
    assert_eq!(p.place, Place::Line(8));
    assert!(p.reason.contains("ends in the middle of this event"), "{p}");
}

#[test]
fn an_unknown_call_is_skipped_and_named() {
    let (_d, text) = written(true);
    let text = text.replacen("MPI_Waitall", "MPI_Frobnicate", 1);
    let t = parse(&text).expect("reads the rest");
    assert_eq!(t.events.len(), 2);
    assert_eq!(t.problems.len(), 1);
    let p = &t.problems[0];
    assert!(
        p.to_string()
            .contains("event 6 (line 8): unknown MPI call \"MPI_Frobnicate\""),
        "{p}"
    );
    // What follows the bad event is still read.
    assert!(t.footer.is_some());
    assert_eq!(t.syncs.len(), 2);
    assert!(!t.is_complete());
}

#[test]
fn a_corrupt_line_is_reported_with_its_place_and_skipped() {
    let (_d, text) = written(true);
    let text = text.replacen("{\"name\":\"compute\"", "{\"name\" \"compute\"", 1);
    let t = parse(&text).expect("reads the rest");
    assert_eq!(t.events.len(), 2, "the Isend before and the Waitall after");
    let p = &t.problems[0];
    assert!(
        p.to_string()
            .starts_with("event 5 (line 7): not a valid trace event"),
        "{p}"
    );
    assert!(t
        .incompleteness()
        .expect("incomplete")
        .contains("event 5 (line 7)"));
}

#[test]
fn a_corrupt_event_on_a_single_line_file_loses_only_itself() {
    let (_d, text) = written(true);
    let one_line = text.replace('\n', "");
    let at = one_line
        .find("\"name\":\"compute\"")
        .expect("the compute span");
    let ts = at + one_line[at..].find("\"ts\":").expect("its ts") + 5;
    let one_line = format!("{}soon{}", &one_line[..ts], &one_line[ts..]);
    let t = parse(&one_line).expect("reads the rest");
    assert_eq!(t.events.len(), 2, "the Isend before and the Waitall after");
    assert!(t.footer.is_some(), "{:?}", t.problems);
    assert_eq!(t.problems.len(), 1, "{:?}", t.problems);
}

#[test]
fn bad_args_are_reported() {
    let (_d, text) = written(true);
    let text = text.replacen("\"peer\":1", "\"peer\":\"one\"", 1);
    let t = parse(&text).expect("reads");
    let p = &t.problems[0];
    assert!(p.reason.contains("MPI_Isend: bad args"), "{p}");
    assert_eq!(t.events.len(), 2);
}

#[test]
fn not_json_is_not_a_trace() {
    let err = parse("hello world").expect_err("refused");
    assert!(matches!(err, Error::NotATrace { .. }));
    assert_eq!(
        err.to_string(),
        "rank-0.json: not an overlap trace: it does not start with '[' (a per-rank trace is a JSON array of events)"
    );
    let err = parse("").expect_err("refused");
    assert!(err.to_string().contains("the file is empty"));
    let err = parse("[ 42, 43 ]").expect_err("refused");
    assert!(
        err.to_string().contains("first value is not a trace event"),
        "{err}"
    );
}

#[test]
fn another_format_version_is_refused() {
    let (_d, text) = written(true);
    let text = text.replacen("\"format_version\":3", "\"format_version\":99", 1);
    let supported = overlap_instrument::schema::FORMAT_VERSION;
    let err = parse(&text).expect_err("refused");
    assert!(
        matches!(
            err,
            Error::Version {
                found: 99,
                supported: s,
                ..
            } if s == supported
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("rank-0.json: trace format version 99, but this overlap reads versions 1 to {supported}")
    );
}

#[test]
fn older_versions_still_read() {
    for old in 1..3 {
        let (_d, text) = written(true);
        let text = text.replacen(
            "\"format_version\":3",
            &format!("\"format_version\":{old}"),
            1,
        );
        parse(&text).expect("older versions only lacked what later ones added");
    }
}

#[test]
fn another_format_is_refused() {
    let (_d, text) = written(true);
    let text = text.replacen(
        "\"format\":\"overlap-trace\"",
        "\"format\":\"something-else\"",
        1,
    );
    let err = parse(&text).expect_err("refused");
    assert!(
        err.to_string().contains("format is \"something-else\""),
        "{err}"
    );
}

#[test]
fn events_before_the_header_are_refused() {
    let text = "[\n{\"name\":\"MPI_Barrier\",\"cat\":\"mpi\",\"ph\":\"X\",\"ts\":1.0,\"dur\":1.0,\"pid\":0,\"tid\":0,\"args\":{}}\n]";
    let err = parse(text).expect_err("refused");
    assert!(matches!(err, Error::NoHeader { .. }), "{err:?}");
}

mod load {
    //! Loading for analysis: merged files streamed, directories merged, both tolerant.
    // A failed step of a test is a failed test: unwrap says where.
    #![allow(clippy::unwrap_used)]

    use std::io::Write;

    use crate::common::*;
    use overlap_analyzer::analysis::analyze;
    use overlap_analyzer::load::{load, load_dir, load_merged};
    use overlap_analyzer::merge::{merge, write_merged};
    use overlap_analyzer::metrics::Options;
    use overlap_analyzer::model::Place;
    use overlap_instrument::schema::{Op, SyncPhase};

    fn two_ranks() -> Vec<overlap_analyzer::model::RankTrace> {
        // rank 0  |c 0-10|Isend 10-11|Wait 11-12|Barrier 12-20|
        // rank 1  |Irecv 0-1|Wait 1 ------ 15|Barrier 15-20|
        let size = 2;
        vec![
            rank_trace(
                header(0, size, 0, "b"),
                vec![sync(SyncPhase::Init, 0, 0, 0)],
                vec![
                    compute(0, 10, "c"),
                    isend(10, 11, 1, 0, 8, 1),
                    complete(Op::Wait, 11, 12, &[(1, None)]),
                    barrier(12, 20),
                ],
            ),
            rank_trace(
                header(1, size, 0, "b"),
                vec![sync(SyncPhase::Init, 0, 0, 0)],
                vec![
                    irecv(0, 1, 0, 0, 8, 1),
                    complete(Op::Wait, 1, 15, &[(1, Some((0, 0)))]),
                    barrier(15, 20),
                ],
            ),
        ]
    }

    #[test]
    fn a_merged_file_and_its_directory_give_the_same_analysis() {
        let dir = tempfile::tempdir().unwrap();
        let ranks = dir.path().join("run.ranks");
        std::fs::create_dir_all(&ranks).unwrap();
        for t in two_ranks() {
            write_rank_file(&ranks, &t, true);
        }
        let merged_path = dir.path().join("run.json");
        write_merged(&merge(two_ranks()), &merged_path).unwrap();
        let from_dir = load_dir(&ranks, &mut |_, _| {}).unwrap();
        let from_file = load(&merged_path, &mut |_, _| {}).unwrap();
        assert!(from_file.problems.is_empty(), "{:?}", from_file.problems);
        let a = analyze(&from_dir.trace, &Options::default()).0;
        let mut b = analyze(&from_file.trace, &Options::default()).0;
        b.run.source = a.run.source.clone();
        assert_eq!(a, b);
        // rank 1 waited 10 - 1 = 9 for the sender.
        assert_eq!(a.wait_states.kinds[0].total_ns, 9);
        assert_eq!(from_file.trace.messages.len(), 1);
    }

    #[test]
    fn a_merged_file_laid_out_otherwise_reads_the_same() {
        // One line for everything, and pretty-printed (events over many lines).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        write_merged(&merge(two_ranks()), &path).unwrap();
        let expected = load_merged(&path, &mut |_, _| {}).unwrap().trace;
        let value: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for text in [
            serde_json::to_string(&value).unwrap(),
            serde_json::to_string_pretty(&value).unwrap(),
        ] {
            std::fs::write(&path, text).unwrap();
            let got = load_merged(&path, &mut |_, _| {}).unwrap();
            assert!(got.problems.is_empty(), "{:?}", got.problems);
            assert_eq!(got.trace.ranks, expected.ranks);
            assert_eq!(got.trace.messages, expected.messages);
        }
    }

    #[test]
    fn a_merged_file_cut_short_with_a_corrupt_line_keeps_everything_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        write_merged(&merge(two_ranks()), &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        // Corrupt rank 0's Isend line, and drop the closing "]" and "}".
        let isend = lines.iter().position(|l| l.contains("MPI_Isend")).unwrap();
        lines[isend] = "{\"name\":\"MPI_Isend\",\"ph\":\"X\",garbage".into();
        while lines
            .last()
            .is_some_and(|l| l.trim() == "]" || l.trim() == "}")
        {
            lines.pop();
        }
        let mut f = std::fs::File::create(&path).unwrap();
        writeln!(f, "{}", lines.join("\n")).unwrap();
        drop(f);
        let loaded = load_merged(&path, &mut |_, _| {}).unwrap();
        assert_eq!(loaded.problems.len(), 2, "{:?}", loaded.problems);
        assert_eq!(loaded.problems[0].place, Place::Line(isend as u64 + 1));
        assert!(loaded.problems[0]
            .reason
            .contains("not a valid trace event"));
        assert!(loaded.problems[1].reason.contains("no closing bracket"));
        let events: usize = loaded.trace.ranks.iter().map(|t| t.spans.len()).sum();
        assert_eq!(events, 6, "all but the corrupt Isend");
        // Rank 0 lost its Isend: fewer events than the merge wrote.
        let inc = &loaded.trace.info.incomplete;
        assert_eq!(inc.len(), 1, "{inc:?}");
        assert_eq!(inc[0].rank, 0);
        assert!(
            inc[0].reason.contains("cut short: 3 of 4 events"),
            "{inc:?}"
        );
        // The message lost its send: the receive is unmatched.
        assert_eq!(loaded.trace.messages.len(), 0);
    }

    #[test]
    fn a_directory_with_a_rank_cut_short_is_analysed_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let mut ts = two_ranks();
        write_rank_file(dir.path(), &ts[0], true);
        ts[1].events.truncate(2);
        write_rank_file(dir.path(), &ts[1], false);
        let loaded = load_dir(dir.path(), &mut |_, _| {}).unwrap();
        let r = analyze(&loaded.trace, &Options::default()).0;
        assert_eq!(r.run.incomplete_ranks, vec![1]);
        assert_eq!(loaded.trace.info.incomplete[0].events_read, 2);
        assert_eq!(r.wait_states.kinds[0].total_ns, 9);
    }

    #[test]
    fn not_a_merged_trace_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        std::fs::write(&path, "{\"hello\": 1}\n").unwrap();
        let e = load(&path, &mut |_, _| {}).unwrap_err().to_string();
        assert!(e.contains("x.json") && e.contains("traceEvents"), "{e}");
    }
}
