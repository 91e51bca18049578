//! Inputs that are hostile or damaged (issue 37): a fifo named inside a trace, a device
//! given as a baseline, one bad event in a single-line merged file, a run description
//! or a clock reading no run can have, baselines with impossible values, files that are
//! no trace at all. Each case asserts the exit code and what the user is told.
//!
//! The traces are the version-5 test data (two ranks of the false-overlap kernel, the
//! rank files and their merged file), so no MPI run is needed.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use overlap_format::stream::{calibration_payload, frame, FrameKind, FRAME_HEADER_LEN};

use crate::util::{output_within, overlap_bin, Run};

/// The version-5 test data: `rank-0.ovlp`, `rank-1.ovlp` and their merged `run.json`.
fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("analyzer/tests/data/v5-false-overlap")
}

/// Runs `overlap ARGS` in `dir` with `env` set, for 60 s at most (a hang fails the test).
fn overlap_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(overlap_bin());
    cmd.args(args).current_dir(dir).envs(env.iter().copied());
    let output = output_within(&mut cmd, Duration::from_secs(60));
    let run = Run { output };
    assert!(
        !run.stderr().contains("panicked"),
        "it panicked:\n{}",
        run.describe()
    );
    run
}

fn code(r: &Run) -> Option<i32> {
    r.output.status.code()
}

/// The merged test trace as its opening (`otherData`) and its events, one value each.
fn merged_parts() -> (serde_json::Value, Vec<serde_json::Value>) {
    let text = std::fs::read_to_string(data().join("run.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = v["traceEvents"].as_array().unwrap().clone();
    (v["otherData"].clone(), events)
}

/// Writes a merged file of `info` and `events` (each a JSON text), on one line or one
/// event a line.
fn write_merged(path: &Path, info: &serde_json::Value, events: &[String], one_line: bool) {
    let sep = if one_line { "," } else { ",\n" };
    let text = format!(
        "{{\"otherData\":{info}{sep}\"traceEvents\":[{}]}}\n",
        events.join(sep)
    );
    std::fs::write(path, text).unwrap();
}

fn texts(events: &[serde_json::Value]) -> Vec<String> {
    events.iter().map(|e| e.to_string()).collect()
}

/// Index of the first MPI call of rank 0 that names a peer.
fn first_call_with_peer(events: &[serde_json::Value]) -> usize {
    events
        .iter()
        .position(|e| e["ph"] == "X" && e["pid"] == 0 && e["args"]["peer"].as_i64() >= Some(0))
        .unwrap()
}

/// The events count of the summary line (`..., N events, ...`).
fn events_traced(r: &Run) -> u64 {
    let out = r.stdout();
    let before = out.split(" events").next().unwrap();
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn a_fifo_named_by_a_trace_does_not_hang_analyze() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        return;
    }
    let (mut info, mut events) = merged_parts();
    info["ranks"][0]["code_maps"] = format!("0-ffffffff 0 {}\n", fifo.display()).into();
    let i = first_call_with_peer(&events);
    events[i]["args"]["site"] = 0x0012_3456.into();
    write_merged(&dir.path().join("t.json"), &info, &texts(&events), false);
    let r = overlap_in(dir.path(), &["analyze", "t.json", "--full"], &[]);
    assert_eq!(code(&r), Some(0), "{}", r.describe());
    r.assert_stdout_has("not symbolized: a fifo, not an object file");
}

#[test]
fn a_device_or_fifo_as_baseline_is_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let trace = data().join("run.json");
    let r = overlap_in(
        dir.path(),
        &["check", trace.to_str().unwrap(), "--baseline", "/dev/zero"],
        &[],
    );
    assert_eq!(code(&r), Some(2), "{}", r.describe());
    r.assert_stderr_has("/dev/zero: not a regular file (a character device)");
}

#[test]
fn one_bad_event_in_a_single_line_merged_file_loses_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let (info, events) = merged_parts();
    let mut bad = texts(&events);
    let i = first_call_with_peer(&events);
    bad[i] =
        r#"{"name":"MPI_Send","cat":"mpi","ph":"X","ts":"soon","dur":1,"pid":0,"tid":0,"args":{}}"#
            .into();
    write_merged(&dir.path().join("good.json"), &info, &texts(&events), true);
    write_merged(&dir.path().join("bad.json"), &info, &bad, true);
    let good = overlap_in(dir.path(), &["analyze", "good.json"], &[]);
    let r = overlap_in(dir.path(), &["analyze", "bad.json"], &[]);
    assert_eq!(code(&r), Some(0), "{}", r.describe());
    assert_eq!(
        events_traced(&r),
        events_traced(&good) - 1,
        "{}",
        r.describe()
    );
    r.assert_stderr_has("byte offset");
    r.assert_stderr_has("not a valid trace event, skipped");
    r.assert_stderr_has("1 part(s) of the file left out");
    assert!(!r.stderr().contains("cut short"), "{}", r.describe());
    // A gate cannot trust it.
    overlap_in(
        dir.path(),
        &["baseline", "good.json", "--out", "b.json"],
        &[],
    );
    let r = overlap_in(
        dir.path(),
        &["check", "bad.json", "--baseline", "b.json"],
        &[],
    );
    assert_eq!(code(&r), Some(2), "{}", r.describe());
}

#[test]
fn a_run_description_no_run_can_have_is_refused_or_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (info, events) = merged_parts();
    let mut world0 = info.clone();
    world0["world_size"] = 0.into();
    write_merged(&dir.path().join("w0.json"), &world0, &texts(&events), false);
    let r = overlap_in(dir.path(), &["analyze", "w0.json"], &[]);
    assert_eq!(code(&r), Some(1), "{}", r.describe());
    r.assert_stderr_has("w0.json: not a readable merged trace: its world_size is 0");

    let mut pid7 = events.clone();
    let i = first_call_with_peer(&events);
    pid7[i]["pid"] = 7.into();
    write_merged(&dir.path().join("pid7.json"), &info, &texts(&pid7), false);
    let r = overlap_in(dir.path(), &["analyze", "pid7.json"], &[]);
    assert_eq!(code(&r), Some(0), "{}", r.describe());
    r.assert_stdout_has("2 of 2 ranks traced");
    r.assert_stderr_has("its rank (pid) 7 is beyond the world of 2 rank(s)");

    let mut peer999 = events.clone();
    peer999[i]["args"]["peer"] = 999.into();
    write_merged(&dir.path().join("p.json"), &info, &texts(&peer999), false);
    let r = overlap_in(dir.path(), &["analyze", "p.json"], &[]);
    assert_eq!(code(&r), Some(0), "{}", r.describe());
    r.assert_stdout_has("name a peer outside the world");
}

/// `bytes` of a rank file with the reading of its last calibration frame replaced.
fn with_last_calibration(bytes: &[u8], reading: (u64, u64)) -> Vec<u8> {
    let mut at = 16;
    let mut last = None;
    while at + FRAME_HEADER_LEN <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        if bytes[at + 4] == FrameKind::Calibration as u8 {
            last = Some((at, len));
        }
        at += FRAME_HEADER_LEN + len;
    }
    let (at, len) = last.unwrap();
    let mut out = bytes[..at].to_vec();
    frame(
        &mut out,
        FrameKind::Calibration,
        0,
        &[&calibration_payload(&[reading])],
    );
    out.extend_from_slice(&bytes[at + FRAME_HEADER_LEN + len..]);
    out
}

#[test]
fn a_wrapped_calibration_reading_is_left_out_not_a_run_of_centuries() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = dir.path().join("ranks");
    std::fs::create_dir(&ranks).unwrap();
    let rank0 = std::fs::read(data().join("rank-0.ovlp")).unwrap();
    let last = rank0.len() - 16 - 20 - 16;
    let tsc = u64::from_le_bytes(rank0[last..last + 8].try_into().unwrap());
    let wrapped = with_last_calibration(&rank0, (tsc, u64::MAX - 4));
    std::fs::write(ranks.join("rank-0.ovlp"), wrapped).unwrap();
    std::fs::copy(data().join("rank-1.ovlp"), ranks.join("rank-1.ovlp")).unwrap();
    let r = overlap_in(dir.path(), &["analyze", "ranks"], &[]);
    assert_eq!(code(&r), Some(0), "{}", r.describe());
    r.assert_stderr_has("not a time of this run, left out");
    let line = r.stdout().lines().next().unwrap_or_default().to_string();
    let run = line.split("run ").nth(1).unwrap_or_default();
    assert!(!run.ends_with(" s") || run.len() < 12, "{line}");
}

fn baseline_with(dir: &Path, name: &str, edit: impl Fn(&mut serde_json::Value)) {
    let mut b: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("b.json")).unwrap()).unwrap();
    edit(&mut b);
    std::fs::write(dir.join(name), b.to_string()).unwrap();
}

#[test]
fn baselines_with_impossible_values_are_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let trace = data().join("run.json");
    let trace = trace.to_str().unwrap();
    let made = overlap_in(dir.path(), &["baseline", trace, "--out", "b.json"], &[]);
    assert_eq!(code(&made), Some(0), "{}", made.describe());
    baseline_with(dir.path(), "neg.json", |b| {
        b["metrics"][0]["value"] = (-3).into()
    });
    baseline_with(dir.path(), "huge.json", |b| {
        b["metrics"][1]["value"] = 1e308.into()
    });
    baseline_with(dir.path(), "dup.json", |b| {
        let first = b["metrics"][0].clone();
        b["metrics"].as_array_mut().unwrap().push(first);
    });
    for (file, said) in [
        (
            "neg.json",
            "false_overlap.findings: its value -3 is a count below 0",
        ),
        ("huge.json", "pop.parallel_efficiency: its value"),
        (
            "dup.json",
            "false_overlap.findings: the metric is listed twice",
        ),
    ] {
        let r = overlap_in(dir.path(), &["check", trace, "--baseline", file], &[]);
        assert_eq!(code(&r), Some(2), "{file}: {}", r.describe());
        r.assert_stderr_has(&format!("{file}: not a usable baseline: {said}"));
    }
}

#[test]
fn files_that_are_no_trace_or_damaged_are_told_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let random: Vec<u8> = (0..4096u32)
        .map(|i| ((i * 7919 + 13) % 251) as u8)
        .collect();
    std::fs::write(dir.path().join("random.ovlp"), &random).unwrap();
    let r = overlap_in(dir.path(), &["analyze", "random.ovlp"], &[]);
    assert_eq!(code(&r), Some(1), "{}", r.describe());
    r.assert_stderr_has("random.ovlp: not an overlap trace: no \"OVLPRANK\" magic");

    // In a directory: skipped, the path said once.
    let ranks = dir.path().join("ranks");
    std::fs::create_dir(&ranks).unwrap();
    std::fs::write(ranks.join("rank-0.ovlp"), &random).unwrap();
    let mut rank1 = std::fs::read(data().join("rank-1.ovlp")).unwrap();
    std::fs::write(ranks.join("rank-1.ovlp"), &rank1).unwrap();
    let r = overlap_in(dir.path(), &["analyze", "ranks"], &[]);
    assert_eq!(code(&r), Some(0), "{}", r.describe());
    r.assert_stderr_has("ranks/rank-0.ovlp: skipped: not an overlap trace: no \"OVLPRANK\"");
    assert_eq!(
        r.stderr().matches("rank-0.ovlp").count(),
        1,
        "{}",
        r.describe()
    );

    // A frame failing its checksum mid-file: corruption, not a death.
    let second_page = rank1.len() - 16 - 20 - (16 + 16) - 20;
    rank1[second_page] ^= 0xff;
    std::fs::write(ranks.join("rank-1.ovlp"), &rank1).unwrap();
    std::fs::copy(data().join("rank-0.ovlp"), ranks.join("rank-0.ovlp")).unwrap();
    let r = overlap_in(dir.path(), &["analyze", "ranks"], &[]);
    r.assert_stderr_has("checksum");
    assert!(!r.stderr().contains("died"), "{}", r.describe());
}

#[test]
fn one_rank_file_is_analyzed_as_the_one_rank_traced() {
    let dir = tempfile::tempdir().unwrap();
    let rank0 = data().join("rank-0.ovlp");
    let r = overlap_in(dir.path(), &["analyze", rank0.to_str().unwrap()], &[]);
    assert_eq!(code(&r), Some(0), "{}", r.describe());
    r.assert_stdout_has("1 of 2 ranks traced");
    assert!(!r.stderr().contains("traceEvents"), "{}", r.describe());
}

#[test]
fn merge_help_names_the_rank_files_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let r = overlap_in(dir.path(), &["merge", "--help"], &[]);
    r.assert_stdout_has("rank-N.ovlp");
    assert!(!r.stdout().contains("rank-N.json"), "{}", r.describe());
}
