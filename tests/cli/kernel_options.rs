//! Each kernel's options have one definition (the kernels crate's clap structs): `overlap
//! run KERNEL --help` and `overlap-kernels KERNEL --help` list the same options with the
//! same defaults, and those are the kernel's `Options::default()`. Without `--out`,
//! `overlap run` writes `traces/<kernel>-<variant>.pftrace` (`.json` with `--format json`)
//! and says so.

use std::collections::BTreeMap;
use std::process::Command;

use overlap_kernels::options::{false_overlap, halo3d, pingpong, sync, toeplitz};

use crate::util::{kernels_bin, mpi_lock, overlap, overlap_bin};

const KERNELS: [&str; 6] = [
    "false-overlap",
    "toeplitz",
    "pingpong",
    "sync",
    "halo3d",
    "gpu-pipeline",
];

/// `--flag` -> its default ("" when it has none), from a help text.
fn defaults_in_help(help: &str) -> BTreeMap<String, String> {
    help.lines()
        .filter_map(|line| {
            let words = line
                .trim_start()
                .strip_prefix("-n, ")
                .unwrap_or(line.trim_start());
            let flag = words.split_whitespace().next()?.strip_prefix("--")?;
            let default = line
                .split("[default: ")
                .nth(1)
                .and_then(|d| d.split(']').next())
                .unwrap_or("");
            Some((format!("--{flag}"), default.to_string()))
        })
        .filter(|(flag, _)| flag != "--help" && flag != "--version")
        .collect()
}

fn help(program: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{program:?} {args:?}");
    String::from_utf8(out.stdout).expect("utf-8 help")
}

#[test]
fn overlap_run_and_the_kernels_binary_list_the_same_options_and_defaults() {
    let launch_only = [
        "--ranks",
        "--out",
        "--format",
        "--mpiexec",
        "--kernels",
        "--hang-timeout",
        "--full",
    ];
    for kernel in KERNELS {
        let mut run = defaults_in_help(&help(&overlap_bin(), &["run", kernel, "--help"]));
        let mut bin = defaults_in_help(&help(&kernels_bin(), &[kernel, "--help"]));
        for flag in launch_only {
            assert!(
                run.remove(flag).is_some(),
                "{kernel}: overlap run has {flag}"
            );
        }
        assert!(bin.remove("--trace-dir").is_some(), "{kernel}: --trace-dir");
        assert!(
            run.len() >= 3,
            "{kernel}: options found in the help: {run:?}"
        );
        assert_eq!(run, bin, "{kernel}: overlap run vs overlap-kernels");
        // Hidden testing aids stay hidden.
        assert!(!run.contains_key("--kill-rank") && !run.contains_key("--fault-rank"));
    }
}

#[test]
fn the_defaults_in_the_help_are_the_kernels_own() {
    let defaults = |kernel: &str| defaults_in_help(&help(&kernels_bin(), &[kernel, "--help"]));
    let f = false_overlap::Options::default();
    let d = defaults("false-overlap");
    assert_eq!(d["--variant"], f.variant.name());
    assert_eq!(d["--size"], f.size.to_string());
    assert_eq!(d["--ratio"], f.ratio.to_string());
    assert_eq!(d["--iters"], f.iterations.to_string());
    assert_eq!(d["--compute"], f.compute.to_string());
    let t = toeplitz::Options::default();
    let d = defaults("toeplitz");
    assert_eq!(d["--variant"], t.variant.name());
    assert_eq!(d["--size"], t.size.to_string());
    assert_eq!(d["--lambda"], t.lambda.to_string());
    assert_eq!(d["--vectors"], t.vectors.to_string());
    assert_eq!(d["--iters"], t.iterations.to_string());
    assert_eq!(d["--product"], t.product.name());
    let p = pingpong::Options::default();
    let d = defaults("pingpong");
    assert_eq!(d["--min-bytes"], p.min_bytes.to_string());
    assert_eq!(d["--max-bytes"], p.max_bytes.to_string());
    assert_eq!(d["--max-samples"], p.stability.max_samples.to_string());
    assert_eq!(d["--min-samples"], p.stability.min_samples.to_string());
    assert_eq!(d["--rse"], (p.stability.target_rse * 100.0).to_string());
    assert_eq!(d["--point-seconds"], p.stability.max_seconds.to_string());
    let s = sync::Options::default();
    let d = defaults("sync");
    assert_eq!(d["--max-neighbours"], s.max_neighbours.to_string());
    assert_eq!(d["--delay-us"], s.delay_us.to_string());
    assert_eq!(d["--seed"], s.seed.to_string());
    assert_eq!(d["--max-samples"], "50", "sync takes more samples");
    assert_eq!(d["--max-samples"], s.stability.max_samples.to_string());
    let h = halo3d::Options::default();
    let d = defaults("halo3d");
    let sizes: Vec<String> = h.sizes.iter().map(usize::to_string).collect();
    assert_eq!(d["--sizes"], sizes.join(","));
    assert_eq!(d["--max-samples"], "20");
}

#[test]
fn without_out_the_trace_goes_to_traces_named_after_the_kernel_and_variant() {
    let dir = tempfile::tempdir().expect("temp dir");
    let _guard = mpi_lock();
    let run = |extra: &[&str]| {
        let output = Command::new(overlap_bin())
            .current_dir(dir.path())
            .args([
                "run",
                "false-overlap",
                "-n",
                "2",
                "--iters",
                "2",
                "--size",
                "512",
            ])
            .args(["--compute", "20"])
            .args(extra)
            .env("OVERLAP_KERNELS", kernels_bin())
            .output()
            .expect("overlap runs");
        crate::util::Run { output }
    };
    let first = run(&["--variant", "fixed"]);
    assert!(first.success(), "{}", first.describe());
    first.assert_stderr_has("overlap: created traces/");
    first.assert_stderr_has("the trace goes to traces/false-overlap-fixed.pftrace");
    assert!(dir
        .path()
        .join("traces/false-overlap-fixed.pftrace")
        .is_file());
    let second = run(&["--format", "json"]);
    assert!(second.success(), "{}", second.describe());
    assert!(
        !second.stderr().contains("created"),
        "traces/ exists now:\n{}",
        second.describe()
    );
    assert!(dir.path().join("traces/false-overlap-naive.json").is_file());
}

#[test]
fn a_given_out_in_a_missing_directory_is_an_error() {
    let r = overlap(&["run", "sync", "-n", "2", "--out", "/nonexistent/dir/s.json"]);
    assert_eq!(r.output.status.code(), Some(1), "{}", r.describe());
    r.assert_stderr_has(
        "cannot write /nonexistent/dir/s.json: the directory /nonexistent/dir does not exist",
    );
}
