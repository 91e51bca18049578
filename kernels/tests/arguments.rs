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
