//! `overlap merge` on directories that are not a clean run.

use std::path::Path;

use overlap_analyzer::import::read_merged;

use crate::util::{overlap, run_false_overlap, Run};

/// `overlap merge DIR --out DIR/out.json [extra]`.
fn merge(dir: &Path, extra: &[&str]) -> Run {
    let out = dir.join("out.json");
    let mut args = vec![
        "merge",
        dir.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    overlap(&args)
}

#[test]
fn merging_an_empty_directory_explains_itself() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = merge(dir.path(), &[]);
    assert!(!run.success());
    run.assert_stderr_has("no usable per-rank trace file");
}

#[test]
fn merging_garbage_names_the_file_and_the_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("rank-0.json"), "hello").expect("write");
    let run = merge(dir.path(), &[]);
    assert!(!run.success());
    run.assert_stderr_has("rank-0.json: not an overlap trace");
    run.assert_stderr_has("no \"OVLPRANK\" magic at its start (nor the '[' that JSON rank files");
}

#[test]
fn a_missing_directory_is_an_error_not_a_panic() {
    let run = overlap(&["merge", "/nonexistent/overlap-dir", "--out", "/tmp/x.json"]);
    assert!(!run.success());
    run.assert_stderr_has("listing /nonexistent/overlap-dir");
    assert!(!run.stderr().contains("panicked"));
}

#[test]
fn run_help_lists_each_kernel_with_what_it_shows() {
    let run = overlap(&["run", "--help"]);
    assert!(run.success());
    assert!(
        run.stdout()
            .contains("false-overlap  Pairs exchanging imbalanced messages"),
        "{}",
        run.describe()
    );
}

#[test]
fn merging_a_recorded_run_again_and_strict_mode() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = dir.path().join("run.json");
    let run = run_false_overlap(2, "fixed", 3, &first, &[]);
    assert!(run.success(), "{}", run.describe());
    let ranks = dir.path().join("run.ranks");

    let again = merge(&ranks, &["--strict"]);
    assert!(again.success(), "{}", again.describe());
    let a = read_merged(&first).expect("first merge");
    let b = read_merged(&ranks.join("out.json")).expect("second merge");
    assert_eq!(a.info, b.info);
    assert_eq!(a.events, b.events);
    std::fs::remove_file(ranks.join("out.json")).expect("remove");

    // Cut rank 1's file in the middle of its last frame (the footer's).
    let rank1 = ranks.join("rank-1.ovlp");
    let bytes = std::fs::read(&rank1).expect("read");
    std::fs::write(&rank1, &bytes[..bytes.len() - 30]).expect("write");
    let lenient = merge(&ranks, &[]);
    assert!(lenient.success(), "{}", lenient.describe());
    assert!(
        lenient
            .stderr()
            .contains("warning: rank 1: trace incomplete")
            && lenient.stderr().contains("rank-1.ovlp"),
        "{}",
        lenient.describe()
    );
    std::fs::remove_file(ranks.join("out.json")).expect("remove");
    let strict = merge(&ranks, &["--strict"]);
    assert!(!strict.success(), "{}", strict.describe());
    strict.assert_stderr_has(
        "--strict: 1 rank file(s) missing, cut short or unreadable: nothing written",
    );
    strict.assert_stderr_has("warning: rank 1: trace incomplete");
    assert!(
        !ranks.join("out.json").exists(),
        "a refused merge writes nothing"
    );
}

/// An output in a directory that does not exist is refused before the run is read (the
/// merge sets its message ends aside in that directory).
#[test]
fn an_output_in_a_missing_directory_is_refused_first() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = overlap(&[
        "merge",
        dir.path().to_str().expect("utf-8"),
        "--out",
        "/nonexistent/overlap-out/m.json",
    ]);
    assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
    run.assert_stderr_has("the directory /nonexistent/overlap-out does not exist");
}
