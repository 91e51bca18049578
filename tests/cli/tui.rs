//! `overlap tui`: its errors before the screen is switched, and the whole walk a user
//! makes, end to end in a real terminal (tmux: send-keys, capture-pane): open the naive
//! demo trace, zoom in until the lanes name their calls, select an MPI_Isend, jump to its partner, open a false-overlap
//! finding from the Overlap view and land on its wait, open the help, quit; and the
//! terminal given back on SIGTERM and SIGHUP.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::util::{overlap, overlap_bin};

fn demo_trace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tui/tests/data/false-overlap-naive.json")
}

#[test]
fn an_unreadable_trace_is_the_same_error_as_for_analyze() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, b"{ not a trace").expect("write");
    let bad = bad.to_str().expect("utf-8 path");
    let tui = overlap(&["tui", bad]);
    let analyze = overlap(&["analyze", bad]);
    assert_eq!(tui.output.status.code(), Some(1), "{}", tui.describe());
    assert_eq!(tui.stderr(), analyze.stderr());
    tui.assert_stderr_has("bad.json");
    let missing = overlap(&["tui", "/nonexistent/run.json"]);
    assert_eq!(missing.output.status.code(), Some(1));
    missing.assert_stderr_has("/nonexistent/run.json");
}

#[test]
fn without_a_terminal_it_says_so() {
    let run = overlap(&["tui", demo_trace().to_str().expect("utf-8")]);
    assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
    run.assert_stderr_has("needs a terminal");
}

/// A tmux server of its own, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts a server on a socket no other `Tmux` of this process has used: reusing the
    /// socket of one just killed can meet its exiting server ("server exited
    /// unexpectedly"). A start that fails anyway is retried, its error kept.
    fn start(command: &str) -> Tmux {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let mut errors = Vec::new();
        for _ in 0..3 {
            let socket = format!(
                "overlap-tui-test-{}-{}",
                std::process::id(),
                STARTED.fetch_add(1, Ordering::Relaxed)
            );
            let t = Tmux { socket };
            let out = t
                .cmd(&[
                    "new-session",
                    "-d",
                    "-x",
                    "150",
                    "-y",
                    "42",
                    "-s",
                    "t",
                    command,
                ])
                .output()
                .expect("tmux runs: the project's set-up (scripts/bootstrap.sh) installs it");
            if out.status.success() {
                return t;
            }
            errors.push(String::from_utf8_lossy(&out.stderr).into_owned());
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("tmux could not start: {errors:?}");
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]).args(args);
        c
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            let ok = self
                .cmd(&["send-keys", "-t", "t", k])
                .status()
                .expect("send-keys");
            assert!(ok.success());
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    fn text(&self, text: &str) {
        let ok = self
            .cmd(&["send-keys", "-t", "t", "-l", text])
            .status()
            .expect("send-keys");
        assert!(ok.success());
    }

    fn screen(&self) -> String {
        let out = self
            .cmd(&["capture-pane", "-p", "-t", "t"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits (up to 30 s) until the screen shows every one of `needles`.
    fn wait_for(&self, needles: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if needles.iter().all(|n| s.contains(n)) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the screen never showed {needles:?}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Tmux {
    /// Waits (up to 30 s) until the screen no longer shows `needle`.
    fn wait_for_gone(&self, needle: &str) {
        let start = Instant::now();
        while self.screen().contains(needle) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the screen kept {needle:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).status();
    }
}

fn zoom_of(screen: &str) -> String {
    let line = screen
        .lines()
        .find(|l| l.starts_with("[Timeline]"))
        .unwrap_or("");
    line.split("zoom ")
        .nth(1)
        .and_then(|z| z.split("/col").next())
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_walk_through_the_naive_demo_in_a_real_terminal() {
    let command = format!(
        "{} tui {}; echo EXIT=$?; sleep 60",
        overlap_bin().display(),
        demo_trace().display()
    );
    let t = Tmux::start(&command);
    let first = t.wait_for(&["1 Timeline", "rank 3", "Nothing selected"]);
    let zoom = zoom_of(&first);
    // Zoomed in until the lanes name their calls (without `MPI_`, on the lanes' rows).
    let named = |screen: &str| {
        screen.lines().any(|l| {
            l.contains("rank")
                && ["Waitall", "Barrier", "Isend", "Irecv"]
                    .iter()
                    .any(|n| l.contains(n) && !l.contains(&format!("MPI_{n}")))
        })
    };
    let mut screen = first.clone();
    for _ in 0..12 {
        if named(&screen) {
            break;
        }
        t.keys(&["+"]);
        std::thread::sleep(Duration::from_millis(200));
        screen = t.screen();
    }
    assert!(named(&screen), "call names on the lanes:\n{screen}");
    t.keys(&["0"]);
    t.wait_for(&[&format!("zoom {zoom}/col")]);
    t.keys(&["+", "+", "+"]);
    let zoomed = t.wait_for(&["[Timeline]"]);
    assert_ne!(
        zoom_of(&zoomed),
        zoom,
        "zooming in changes the scale:\n{zoomed}"
    );
    t.keys(&["/"]);
    t.text("MPI_Isend");
    t.keys(&["Enter"]);
    let sent = t.wait_for(&["sel: rank", "MPI_Isend", "message to rank"]);
    assert!(
        sent.contains("peer") && sent.contains("bytes") && sent.contains("site"),
        "{sent}"
    );
    t.keys(&["p"]);
    let partner = t.wait_for(&["message from rank", "MPI_Waitall"]);
    assert!(
        partner.contains("sel: rank") && partner.contains("MPI_Waitall"),
        "{partner}"
    );
    t.keys(&["3"]);
    t.wait_for(&["False overlap:", "finding(s)", "Evidence"]);
    t.keys(&["Enter"]);
    let wait = t.wait_for(&[
        "[Timeline]",
        "False overlap: lost",
        "sel: rank 0 MPI_Waitall",
    ]);
    assert!(
        wait.contains("kernels/src/false_overlap.rs:191"),
        "the finding's wait:\n{wait}"
    );
    t.keys(&["?"]);
    t.wait_for(&["Keys (? or Esc closes)", "jump to the partner"]);
    t.keys(&["Escape"]);
    // The help gone before `q`: an Escape and a key read together are Alt+key.
    t.wait_for_gone("Keys (? or Esc closes)");
    t.keys(&["q"]);
    let after = t.wait_for(&["EXIT=0"]);
    assert!(
        !after.contains("1 Timeline"),
        "the terminal is given back:\n{after}"
    );
}

/// A window of the demo (`--ranks 1-3 --from 100ms`), then the Timeline's ranks
/// filtered (`F`, `W`), in a real terminal.
#[test]
fn a_window_and_a_filter_in_a_real_terminal() {
    let command = format!(
        "{} tui {} --ranks 1-3 --from 100ms; echo EXIT=$?; sleep 60",
        overlap_bin().display(),
        demo_trace().display()
    );
    let t = Tmux::start(&command);
    let first = t.wait_for(&["1 Timeline", "rank 3", "Nothing selected"]);
    assert!(
        first.contains("[100.00 ms to ") && first.contains("ranks 1-3]"),
        "the window in the run's label:\n{first}"
    );
    assert!(!first.contains("rank 0 "), "rank 0 is left out:\n{first}");
    t.keys(&["4"]);
    t.wait_for(&["Window: 100.00 ms to", "3 rank(s) of 4", "ranks asked: 1-3"]);
    t.keys(&["1", "F"]);
    t.wait_for(&["show ranks (0-15,64 | /text | worst N; empty: all)"]);
    t.text("2");
    t.keys(&["Enter"]);
    let two = t.wait_for(&["[ranks 2]", "showing ranks 2: 1 rank(s)"]);
    assert!(
        !two.contains("rank 1 ") && !two.contains("rank 3 "),
        "{two}"
    );
    t.keys(&["W"]);
    t.wait_for(&["worst-waiting ranks]"]);
    t.keys(&["W"]);
    t.wait_for(&["showing every rank: 3 rank(s)"]);
    t.keys(&["q"]);
    t.wait_for(&["EXIT=0"]);
}

#[test]
fn sigterm_and_sighup_give_the_terminal_back() {
    for (signal, code) in [("TERM", 143), ("HUP", 129)] {
        signal_gives_the_terminal_back(signal, code);
    }
}

fn signal_gives_the_terminal_back(signal: &str, code: i32) {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let command = format!(
        "sh -c 'echo $$ > {}; exec {} tui {}'; echo EXIT=$?; sleep 60",
        pid_file.display(),
        overlap_bin().display(),
        demo_trace().display()
    );
    let t = Tmux::start(&command);
    t.wait_for(&["1 Timeline", "rank 3"]);
    let pid = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .to_string();
    let ok = Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .expect("kill");
    assert!(ok.success());
    let after = t.wait_for(&[&format!("EXIT={code}")]);
    assert!(
        !after.contains("1 Timeline"),
        "SIG{signal}: the terminal is given back:\n{after}"
    );
    // Raw mode is off: the terminal echoes what is typed.
    t.text("echo typed-back");
    t.keys(&["Enter"]);
    t.wait_for(&["typed-back"]);
}
