//! `overlap merge` writing Perfetto's protobuf, and the analysis commands given one: a
//! clear answer naming the rank directory to read instead, with the exit status of
//! other files that are no trace.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::util::{output_within, overlap_bin, Run};

fn ranks() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("analyzer/tests/data/v5-false-overlap")
}

/// Runs `overlap ARGS` in `dir`, for 60 s at most.
fn overlap_in(dir: &Path, args: &[&str]) -> Run {
    let mut cmd = Command::new(overlap_bin());
    cmd.args(args).current_dir(dir);
    let run = Run {
        output: output_within(&mut cmd, Duration::from_secs(60)),
    };
    assert!(!run.stderr().contains("panicked"), "{}", run.describe());
    run
}

#[test]
fn merge_writes_protobuf_for_a_pftrace_name_and_json_for_a_json_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ranks = ranks();
    let r = overlap_in(
        dir.path(),
        &[
            "merge",
            ranks.to_str().expect("utf-8"),
            "--out",
            "run.pftrace",
        ],
    );
    assert!(r.success(), "{}", r.describe());
    r.assert_stdout_has("into run.pftrace");
    let bytes = std::fs::read(dir.path().join("run.pftrace")).expect("written");
    assert_eq!(bytes.first(), Some(&0x0a), "a Trace.packet field first");
    let r = overlap_in(
        dir.path(),
        &["merge", ranks.to_str().expect("utf-8"), "--out", "run.json"],
    );
    assert!(r.success(), "{}", r.describe());
    let json = std::fs::read(dir.path().join("run.json")).expect("written");
    assert!(json.starts_with(b"{\"otherData\""));
    assert!(
        bytes.len() < json.len(),
        "{} B of protobuf, {} B of JSON",
        bytes.len(),
        json.len()
    );
    // A name that says neither takes --format; one that says the other is refused.
    let r = overlap_in(
        dir.path(),
        &[
            "merge",
            ranks.to_str().expect("utf-8"),
            "--out",
            "run.trace",
            "--format",
            "pftrace",
        ],
    );
    assert!(r.success(), "{}", r.describe());
    assert_eq!(
        std::fs::read(dir.path().join("run.trace")).expect("written"),
        bytes
    );
    let r = overlap_in(
        dir.path(),
        &[
            "merge",
            ranks.to_str().expect("utf-8"),
            "--out",
            "x.json",
            "--format",
            "pftrace",
        ],
    );
    assert!(!r.success());
    r.assert_stderr_has("--format pftrace but x.json is named as a json file");
    assert!(!dir.path().join("x.json").exists());
}

#[test]
fn the_analysis_given_a_pftrace_names_the_rank_directory_to_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ranks = ranks();
    let r = overlap_in(
        dir.path(),
        &[
            "merge",
            ranks.to_str().expect("utf-8"),
            "--out",
            "run.pftrace",
        ],
    );
    assert!(r.success(), "{}", r.describe());
    std::fs::write(dir.path().join("garbage.json"), b"hello").expect("write");
    // The status of a file that is no trace, command by command.
    let baseline =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/baselines/false-overlap-fixed.json");
    let baseline = baseline.to_str().expect("utf-8");
    let commands: [&[&str]; 5] = [
        &["analyze", "FILE"],
        &["diff", "FILE", "FILE"],
        &["suggest", "FILE"],
        &["check", "FILE", "--baseline", baseline],
        &["tui", "FILE"],
    ];
    for args in commands {
        let with = |file: &str| -> Vec<String> {
            args.iter()
                .map(|a| {
                    if *a == "FILE" {
                        file.into()
                    } else {
                        (*a).into()
                    }
                })
                .collect()
        };
        let garbage = overlap_in(
            dir.path(),
            &with("garbage.json")
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        let r = overlap_in(
            dir.path(),
            &with("run.pftrace")
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        assert!(!r.success(), "{}", r.describe());
        assert_eq!(
            r.output.status.code(),
            garbage.output.status.code(),
            "{args:?}: {}",
            r.describe()
        );
        r.assert_stderr_has("run.pftrace: not an overlap trace: a Perfetto protobuf trace");
        r.assert_stderr_has("the rank directory it was merged from");
    }
    // Beside its rank directory (as `overlap trace` and `run` leave it): that is named.
    let copy = dir.path().join("run.ranks");
    std::fs::create_dir(&copy).expect("mkdir");
    for f in std::fs::read_dir(&ranks).expect("ranks") {
        let f = f.expect("entry").path();
        if f.extension().is_some_and(|e| e == "ovlp") {
            std::fs::copy(&f, copy.join(f.file_name().expect("name"))).expect("copy");
        }
    }
    let r = overlap_in(dir.path(), &["analyze", "run.pftrace"]);
    assert!(!r.success());
    r.assert_stderr_has("overlap's analysis reads its rank directory run.ranks");
    let r = overlap_in(dir.path(), &["analyze", "run.ranks"]);
    assert!(r.success(), "{}", r.describe());
}

#[test]
fn merge_writes_a_window_of_the_run_as_protobuf_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ranks = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("analyzer/tests/data/reports/false-overlap/ranks");
    let ranks = ranks.to_str().expect("utf-8");
    let window = ["--from", "180ms", "--to", "200ms", "--ranks", "0-2"];
    let mut args = vec!["merge", ranks, "--out", "w.pftrace"];
    args.extend(window);
    let r = overlap_in(dir.path(), &args);
    assert!(r.success(), "{}", r.describe());
    let whole = overlap_in(dir.path(), &["merge", ranks, "--out", "all.pftrace"]);
    assert!(whole.success(), "{}", whole.describe());
    let (part, all) = (
        std::fs::metadata(dir.path().join("w.pftrace"))
            .expect("written")
            .len(),
        std::fs::metadata(dir.path().join("all.pftrace"))
            .expect("written")
            .len(),
    );
    assert!(
        part < all,
        "the window ({part} B) is smaller than the run ({all} B)"
    );
    let mut args = vec!["merge", ranks, "--out", "w.json"];
    args.extend(window);
    let r = overlap_in(dir.path(), &args);
    assert!(!r.success());
    r.assert_stderr_has("w.json: a window of the run (--from, --to, --ranks, --region) is written as Perfetto's protobuf (.pftrace) only");
    let r = overlap_in(
        dir.path(),
        &["merge", ranks, "--out", "x.pftrace", "--ranks", "3-1"],
    );
    assert!(!r.success());
    r.assert_stderr_has("'3-1' for '--ranks <LIST>': \"3-1\" is not a range of ranks (low-high)");
    let r = overlap_in(
        dir.path(),
        &[
            "merge",
            ranks,
            "--out",
            "x.pftrace",
            "--from",
            "2ms",
            "--to",
            "1ms",
        ],
    );
    assert!(!r.success());
    r.assert_stderr_has(
        "--from/--to/--ranks: the window ends (1000000 ns) before it starts (2000000 ns)",
    );
}
