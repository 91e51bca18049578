//! The kernels binary refuses bad command lines before touching MPI (exit 2), naming the
//! flag and the value (its parser is the kernels' own option definitions, clap's).

use std::process::Command;

fn kernels(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_overlap-kernels"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn stderr_of(args: &[&str]) -> String {
    let out = kernels(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_unknown_kernel_is_rejected_with_usage() {
    let err = stderr_of(&["frobnicate", "--trace-dir", "/tmp/x"]);
    assert!(
        err.contains("unrecognized subcommand 'frobnicate'"),
        "{err}"
    );
    assert!(err.contains("Usage: overlap-kernels"), "{err}");
}

#[test]
fn the_trace_directory_is_required() {
    let err = stderr_of(&["false-overlap"]);
    assert!(err.contains("--trace-dir <DIR>"), "{err}");
}

#[test]
fn every_kernel_names_its_bad_values() {
    let cases: [(&[&str], &str); 9] = [
        (
            &["false-overlap", "--iters", "many"],
            "invalid value 'many' for '--iters <N>'",
        ),
        (
            &["false-overlap", "--variant", "clever"],
            "[possible values: naive, fixed]",
        ),
        (
            &["toeplitz", "--variant", "eager"],
            "[possible values: blocking, nonblocking, overlapped]",
        ),
        (
            &["toeplitz", "--product", "fast"],
            "[possible values: auto, direct, fft]",
        ),
        (
            &["toeplitz", "--lambda=-3"],
            "invalid value '-3' for '--lambda <L>'",
        ),
        (
            &["pingpong", "--patterns", "single,diagonal"],
            "invalid value 'diagonal' for '--patterns <PATTERNS>'",
        ),
        (
            &["pingpong", "--lambda", "3"],
            "unexpected argument '--lambda'",
        ),
        (
            &["sync", "--kinds", "lock"],
            "[possible values: barrier, pairwise, ring, random, grid3d]",
        ),
        (
            &["halo3d", "--sizes", "8,x"],
            "invalid value 'x' for '--sizes <EDGES>'",
        ),
    ];
    for (args, expected) in cases {
        let mut all = args.to_vec();
        all.extend(["--trace-dir", "/tmp/x"]);
        let err = stderr_of(&all);
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

#[test]
fn a_results_file_in_a_missing_directory_is_refused_before_mpi_starts() {
    let err = stderr_of(&[
        "sync",
        "--trace-dir",
        "/tmp/x",
        "--json",
        "/nonexistent/dir/out.json",
    ]);
    assert!(
        err.contains(
            "invalid value '/nonexistent/dir/out.json' for '--json <FILE>': the directory \
             /nonexistent/dir does not exist"
        ),
        "{err}"
    );
}
