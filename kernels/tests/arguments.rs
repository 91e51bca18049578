//! The kernels binary refuses bad command lines before touching MPI, with a usage text.

use std::process::Command;

fn kernels(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_overlap-kernels"))
        .args(args)
        .output()
        .expect("binary runs")
}

#[test]
fn unknown_kernel_is_rejected_with_usage() {
    let out = kernels(&["frobnicate", "--trace-dir", "/tmp/x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown kernel 'frobnicate'"), "{err}");
    assert!(err.contains("usage: overlap-kernels"), "{err}");
}

#[test]
fn bad_values_name_the_flag() {
    let out = kernels(&["false-overlap", "--trace-dir", "/tmp/x", "--iters", "many"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--iters: 'many' is not a valid number"));
    let out = kernels(&[
        "false-overlap",
        "--trace-dir",
        "/tmp/x",
        "--variant",
        "clever",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("'clever' is not naive or fixed"));
    let out = kernels(&["false-overlap"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--trace-dir is required"));
}

fn stderr_of(args: &[&str]) -> String {
    let out = kernels(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn every_kernel_names_its_bad_values() {
    let cases: [(&[&str], &str); 7] = [
        (
            &["toeplitz", "--variant", "eager"],
            "--variant: 'eager' is not blocking, nonblocking or overlapped",
        ),
        (
            &["toeplitz", "--product", "fast"],
            "--product: 'fast' is not auto, direct or fft",
        ),
        (
            &["toeplitz", "--lambda", "-3"],
            "--lambda: '-3' is not a valid number",
        ),
        (
            &["pingpong", "--patterns", "single,diagonal"],
            "--patterns: 'diagonal' is not one of single, multiple, crossing",
        ),
        (
            &["pingpong", "--lambda", "3"],
            "unknown option '--lambda' for pingpong",
        ),
        (
            &["sync", "--kinds", "lock"],
            "--kinds: 'lock' is not one of barrier",
        ),
        (
            &["halo3d", "--sizes", "8,x"],
            "--sizes: 'x' is not a valid number",
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
            "--json /nonexistent/dir/out.json: the directory /nonexistent/dir does not exist"
        ),
        "{err}"
    );
}
