//! `overlap merge` on directories that are not a clean run.

use crate::util::overlap;

#[test]
fn merging_an_empty_directory_explains_itself() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.json");
    let run = overlap(&[
        "merge",
        dir.path().to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(!run.success());
    assert!(
        run.stderr().contains("no usable per-rank trace file"),
        "{}",
        run.describe()
    );
}

#[test]
fn merging_garbage_names_the_file_and_the_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("rank-0.json"), "hello").expect("write");
    let out = dir.path().join("out.json");
    let run = overlap(&[
        "merge",
        dir.path().to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(!run.success());
    let err = run.stderr();
    assert!(
        err.contains("rank-0.json: not an overlap trace"),
        "{}",
        run.describe()
    );
    assert!(
        err.contains("does not start with '['"),
        "{}",
        run.describe()
    );
}

#[test]
fn a_missing_directory_is_an_error_not_a_panic() {
    let run = overlap(&["merge", "/nonexistent/overlap-dir", "--out", "/tmp/x.json"]);
    assert!(!run.success());
    assert!(
        run.stderr().contains("listing /nonexistent/overlap-dir"),
        "{}",
        run.describe()
    );
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
