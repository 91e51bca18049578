//! Failing cleanly: a closed or full stdout, outputs that cannot be written, inputs
//! that are not files, names that would drive the terminal. Each case asserts what the
//! user sees, the exit code, and what is left on disk.
//!
//! The traces are the version-3 preload files kept as test data (two ranks of a small C
//! program), so no MPI run is needed.

#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::{overlap, overlap_bin, Run};

/// A copy of the two-rank test trace in `dir`, its host names replaced by `host`.
fn trace_dir(dir: &Path, host: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("analyzer/tests/data/v3-preload-calls");
    let out = dir.join("ranks");
    std::fs::create_dir(&out).unwrap();
    let host_json = serde_json::to_string(host).unwrap();
    let host_json = &host_json[1..host_json.len() - 1];
    for rank in 0..2 {
        let name = format!("rank-{rank}.json");
        let text = std::fs::read_to_string(src.join(&name)).unwrap();
        let text = text
            .replace("\"host\":\"vm\"", &format!("\"host\":\"{host_json}\""))
            .replace("(vm)", &format!("({host_json})"));
        std::fs::write(out.join(&name), text).unwrap();
    }
    out
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn no_panic(r: &Run) {
    assert!(
        !r.stderr().contains("panicked"),
        "it panicked:\n{}",
        r.describe()
    );
}

#[test]
fn a_closed_stdout_ends_quietly_with_success() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = trace_dir(dir.path(), "vm");
    let mut child = Command::new(overlap_bin())
        .args(["analyze", "--json"])
        .arg(&ranks)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read one byte, as `| head -c 1` does, then close the pipe.
    let mut first = [0u8; 1];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    let r = Run { output: out };
    no_panic(&r);
    assert_eq!(r.output.status.code(), Some(0), "{}", r.describe());
    assert!(
        !r.stderr().contains("error"),
        "a closed pipe is not an error:\n{}",
        r.describe()
    );
}

#[test]
fn a_full_stdout_is_an_error_with_exit_2() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        eprintln!("skipped: this system has no /dev/full to make stdout full");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ranks = trace_dir(dir.path(), "vm");
    let out = Command::new(overlap_bin())
        .arg("analyze")
        .arg(&ranks)
        .stdout(std::fs::OpenOptions::new().write(true).open(full).unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let r = Run { output: out };
    no_panic(&r);
    assert_eq!(r.output.status.code(), Some(2), "{}", r.describe());
    r.assert_stderr_has("writing to standard output: No space left on device");
}

#[test]
fn a_self_trace_that_cannot_be_written_is_an_error_before_the_analysis() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = trace_dir(dir.path(), "vm");
    let r = overlap(&[
        "analyze",
        ranks.to_str().unwrap(),
        "--self-trace",
        "/dev/full",
    ]);
    no_panic(&r);
    assert_eq!(r.output.status.code(), Some(1), "{}", r.describe());
    r.assert_stderr_has("/dev/full: it exists and is not a regular file (a character device)");
    assert!(r.stdout().is_empty(), "no report:\n{}", r.describe());
    // A good one is written whole, and is a Chrome trace.
    let good = dir.path().join("self.json");
    let r = overlap(&[
        "analyze",
        ranks.to_str().unwrap(),
        "--self-trace",
        good.to_str().unwrap(),
    ]);
    assert!(r.success(), "{}", r.describe());
    let spans: serde_json::Value = serde_json::from_slice(&std::fs::read(&good).unwrap()).unwrap();
    assert!(spans.as_array().is_some_and(|a| !a.is_empty()), "{spans}");
}

#[test]
fn a_fifo_is_refused_instead_of_read_forever() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trace.json");
    if !Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("skipped: mkfifo could not make a fifo here");
        return;
    }
    let r = overlap(&["analyze", fifo.to_str().unwrap()]);
    no_panic(&r);
    assert_eq!(r.output.status.code(), Some(1), "{}", r.describe());
    r.assert_stderr_has("trace.json: not a regular file (a fifo)");
    // A fifo among the rank files is skipped with the same reason; the others are used.
    let ranks = trace_dir(dir.path(), "vm");
    std::fs::remove_file(ranks.join("rank-1.json")).unwrap();
    Command::new("mkfifo")
        .arg(ranks.join("rank-1.json"))
        .status()
        .unwrap();
    let r = overlap(&["analyze", ranks.to_str().unwrap()]);
    no_panic(&r);
    r.assert_stderr_has("rank-1.json: skipped: not a regular file (a fifo)");
    assert_eq!(
        r.stderr().matches("rank-1.json").count(),
        1,
        "{}",
        r.describe()
    );
}

#[test]
fn names_from_the_trace_cannot_drive_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    // A host name that would set the window title and clear the screen.
    let ranks = trace_dir(dir.path(), "vm\u{1b}]0;pwned\u{7}\u{1b}[2J");
    let merged = dir.path().join("merged.json");
    for args in [
        vec!["analyze", ranks.to_str().unwrap()],
        vec![
            "merge",
            ranks.to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ],
        vec!["analyze", merged.to_str().unwrap()],
    ] {
        let r = overlap(&args);
        assert!(r.success(), "{}", r.describe());
        for text in [r.stdout(), r.stderr()] {
            assert!(!text.contains('\u{1b}'), "raw ESC in {args:?}:\n{text}");
            assert!(!text.contains('\u{7}'), "raw BEL in {args:?}:\n{text}");
        }
        let all = r.stdout() + &r.stderr();
        if all.contains("pwned") {
            assert!(all.contains("\\x1b]0;pwned\\x07"), "{all}");
        }
    }
    // JSON keeps the name as it is (escaped the JSON way).
    let r = overlap(&["analyze", "--json", ranks.to_str().unwrap()]);
    assert!(!r.stdout().contains('\u{1b}'), "{}", r.stdout());
}

#[test]
fn an_io_error_says_its_cause_once() {
    let r = overlap(&["analyze", "/no/such/trace.json"]);
    assert_eq!(r.output.status.code(), Some(1), "{}", r.describe());
    assert_eq!(
        r.stderr().matches("No such file or directory").count(),
        1,
        "{}",
        r.describe()
    );
}

#[test]
fn outputs_never_create_missing_directories() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = trace_dir(dir.path(), "vm");
    let missing = dir.path().join("no/such");
    let merged = missing.join("merged.json");
    let r = overlap(&[
        "merge",
        ranks.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(r.output.status.code(), Some(1), "{}", r.describe());
    r.assert_stderr_has("the directory");
    r.assert_stderr_has("does not exist");
    let base = missing.join("base.json");
    let r = overlap(&[
        "baseline",
        ranks.to_str().unwrap(),
        "--out",
        base.to_str().unwrap(),
    ]);
    assert!(!r.success(), "{}", r.describe());
    r.assert_stderr_has("does not exist");
    let tables = missing.join("tables");
    let r = overlap(&[
        "analyze",
        ranks.to_str().unwrap(),
        "--csv",
        tables.to_str().unwrap(),
    ]);
    assert!(!r.success(), "{}", r.describe());
    assert!(!dir.path().join("no").exists(), "nothing was created");
    // The table directory itself is made when its parent exists.
    let tables = dir.path().join("tables");
    let r = overlap(&[
        "analyze",
        ranks.to_str().unwrap(),
        "--csv",
        tables.to_str().unwrap(),
    ]);
    assert!(r.success(), "{}", r.describe());
    assert!(entries(&tables).iter().all(|n| n.ends_with(".csv")));
}

/// A file-size limit makes every write past it fail: the merged trace is then not
/// written at all (no partial file to be read as valid later), and the message names
/// what could not be written. `ulimit -f` counts 512-byte blocks in sh. The merge first
/// sets its 27 messages' ends aside in a temporary file of about 7 KiB next to the
/// output, then writes the merged trace (about 45 KiB): at 1 KiB the first fails, at
/// 8 KiB the second. Either way the old file is kept whole and nothing is left behind.
#[test]
fn a_full_disk_leaves_no_partial_merged_trace() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = trace_dir(dir.path(), "vm");
    let merged = dir.path().join("merged.json");
    std::fs::write(&merged, "the previous merged trace").unwrap();
    let cases = [
        (
            2,
            format!(
                "setting message ends aside in a temporary file in {}: File too large",
                dir.path().display()
            ),
        ),
        (16, format!("writing {}: File too large", merged.display())),
    ];
    for (blocks, message) in cases {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -f {blocks} && exec \"$0\" merge \"$1\" --out \"$2\""
            ))
            .arg(overlap_bin())
            .arg(&ranks)
            .arg(&merged)
            .output()
            .unwrap();
        let r = Run { output: out };
        no_panic(&r);
        // An output refused for room, the merge's temporary file's or its own: exit 2.
        assert_eq!(r.output.status.code(), Some(2), "{}", r.describe());
        r.assert_stderr_has(&message);
        assert_eq!(
            std::fs::read_to_string(&merged).unwrap(),
            "the previous merged trace",
            "the old file is kept whole"
        );
        assert_eq!(
            entries(dir.path()),
            ["merged.json", "ranks"],
            "no temporary file is left"
        );
    }
}
