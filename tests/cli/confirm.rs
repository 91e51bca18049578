//! `overlap suggest TRACE --confirm CHANGED... --original ORIGINAL...` on C programs whose
//! fix is known, traced by the preload under `mpiexec -n 2` (never more ranks than the
//! CI's 2 cores): the measured gain (difference of medians) against the predicted one,
//! and the verdict the documented rule gives from the printed figures. Which verdict a
//! run gets depends on the machine's timing: the tests check that it follows from the
//! figures, never a figure itself.
//!
//! The truth of each program, per step of one rank (what each phase touches; `|` marks an
//! MPI call, the rest is compute the preload sees as the gaps between calls):
//!
//! ```text
//! halo.c early   |Irecv|Irecv| pack: writes sendbuf |Isend|Isend|Waitall r|Waitall s|
//!                interior: neither buffer  unpack: reads recvbuf  boundary: neither
//! halo.c late    |Irecv|Irecv|Waitall s (previous step)| pack |Isend|Isend| interior
//!                |Waitall r| unpack  boundary
//!   the fix: the sends' wait deferred to just before the next pack (its first write),
//!   the receives' wait to just before the unpack (its first read)
//!
//! pipeline.c single, producer  |Wait (previous)| produce: writes block, first to last
//!                              |Isend block|Wait|  -> the next produce at once
//!                    consumer  |Irecv block|Wait| consume: reads block, first to last
//!   nothing can move: every wait is followed at once by a use of its buffer, and the
//!   consumer's next Irecv (which overwrites the block) follows the consume
//!
//! nomove.c  |Irecv next|Isend cur| work: reads cur |Waitall| swap (no buffer touched)
//!   the posts follow the wait that freed their buffers, the wait precedes the next
//!   posts, which reuse both: the only legal moves (the Isend above the Irecv, the
//!   Waitall past the swap) gain nothing
//! ```
//!
//! With the preload alone, the compute between calls is taken to touch every buffer
//! (safe by default) until the buffer watch (`overlap trace --buffers`) proves it does
//! not: its first touches cut the gaps (halo.c's interior and unpack are one gap), and a
//! wait moves to the touch. A move that gains nothing measurable is listed in the JSON
//! with its verdict (every move of the consensus is) and not suggested: "nothing to
//! move" is said of what is suggested.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::trace::{program, program_line, trace_with};
use crate::util::{
    mpi_lock, output_within, overlap, overlap_bin, suggest_on_a_network, Run, LAUNCH_LIMIT,
};

/// `overlap trace --out DIR/NAME-K.json -- mpiexec -n 2 PROGRAM ARGS...`, K = 1..=runs.
fn traced_runs(dir: &Path, name: &str, runs: usize, args: &[&str]) -> Vec<PathBuf> {
    let exe = program(name);
    (1..=runs)
        .map(|k| {
            let form: String = args.iter().map(|a| format!("-{a}")).collect();
            let out = dir.join(format!("{name}{form}-{k}.json"));
            let run = trace_with(2, &exe, args, &[], &out);
            assert!(run.success(), "{}", run.describe());
            run.assert_stdout_has(&format!("{name}: checksum"));
            out
        })
        .collect()
}

fn suggest_json(args: &[&str]) -> Value {
    let run = overlap(args);
    assert!(run.success(), "{}", run.describe());
    serde_json::from_str(&run.stdout()).expect("suggest --json prints JSON")
}

fn paths(p: &[PathBuf]) -> Vec<&str> {
    p.iter().map(|p| p.to_str().unwrap()).collect()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("{v} is a count"))
}

fn i(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("{v} is a number"))
}

/// The value at fractional position `at` of `sorted`, linear between its neighbours.
fn quartile(sorted: &[u64], at: f64) -> u64 {
    let below = at.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let frac = at - below as f64;
    (sorted[below] as f64 + frac * (sorted[above] as f64 - sorted[below] as f64)).round() as u64
}

/// A side's runs as printed: its median, range and quartiles are those of its measured
/// times; returns the median and the interquartile range.
fn check_side(side: &Value, traces: &[&str]) -> (u64, u64) {
    let names: Vec<&str> = side["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(names, traces, "{side:#}");
    let mut times: Vec<u64> = side["measured_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .collect();
    assert_eq!(times.len(), traces.len());
    times.sort_unstable();
    let n = times.len();
    let median = if n % 2 == 1 {
        times[n / 2]
    } else {
        (times[n / 2 - 1] + times[n / 2]) / 2
    };
    assert_eq!(u(&side["median_ns"]), median, "{side:#}");
    assert_eq!(u(&side["min_ns"]), times[0]);
    assert_eq!(u(&side["max_ns"]), times[n - 1]);
    let last = (n - 1) as f64;
    let (q1, q3) = (
        quartile(&times, last / 4.0),
        quartile(&times, 3.0 * last / 4.0),
    );
    assert_eq!((u(&side["q1_ns"]), u(&side["q3_ns"])), (q1, q3), "{side:#}");
    (median, q3 - q1)
}

/// The verdict docs/suggest.md's rule gives from the figures of `gain` (enough runs, a
/// prediction and cores for every rank given).
fn documented_verdict(gain: &Value) -> &'static str {
    let (p, m) = (&gain["predicted"], &gain["measured"]);
    let (pm, lo, hi) = (i(&p["ns"]), i(&p["low_ns"]), i(&p["high_ns"]));
    let (g, s, n) = (i(&m["ns"]), i(&m["spread_ns"]), i(&m["noise_ns"]));
    let in_range = lo - s <= g && g <= hi + s;
    let in_share = (pm - g).abs() as f64 <= 0.25 * g.abs() as f64;
    let measurable = g.abs() > n;
    let predicted_measurable = lo > n || hi < -n;
    match (in_range || in_share, measurable) {
        (true, true) => "confirmed",
        (false, _) if measurable || predicted_measurable => "not_confirmed",
        _ => "not_confirmable",
    }
}

/// halo.c early (3 runs: the analysed trace and 2 more) against halo.c late (3 runs): the
/// JSON holds both sides, the gains and a verdict that follows from them; the text says
/// it in a few lines; with only the analysed trace for the original, no verdict.
#[test]
fn the_measured_gain_is_set_against_the_predicted_one() {
    let dir = tempfile::tempdir().unwrap();
    let early = traced_runs(dir.path(), "halo", 3, &["early"]);
    let late = traced_runs(dir.path(), "halo", 3, &["late"]);
    let (early, late) = (paths(&early), paths(&late));
    let mut args = vec!["suggest", early[0], "--json", "--confirm"];
    args.extend(&late);
    args.push("--original");
    args.extend(&early[1..]);
    let s = suggest_json(&args);
    let c = &s["confirmation"];
    let (original, original_iqr) = check_side(&c["original"], &early);
    let (changed, changed_iqr) = check_side(&c["changed"], &late);

    // Measured: the difference of the medians, ± half the sum of the interquartile
    // ranges, over a noise floor that is the original runs' or the spread, the larger.
    let gain = &c["gain"];
    let measured = &gain["measured"];
    assert_eq!(
        i(&measured["ns"]),
        original as i64 - changed as i64,
        "{c:#}"
    );
    let spread = (original_iqr + changed_iqr) / 2;
    assert_eq!(u(&measured["spread_ns"]), spread);
    assert_eq!(u(&measured["noise_ns"]), original_iqr.max(spread));
    // Predicted: the replayed measured order minus the replayed suggested order.
    let predicted = &gain["predicted"];
    assert_eq!(
        i(&predicted["ns"]),
        i(&s["replay"]["replayed"]["ns"]) - i(&s["suggested"]["ns"]),
        "{s:#}"
    );
    assert!(i(&predicted["low_ns"]) <= i(&predicted["ns"]));
    assert!(i(&predicted["ns"]) <= i(&predicted["high_ns"]));
    if i(&measured["ns"]) != 0 {
        let ratio = i(&predicted["ns"]) as f64 / i(&measured["ns"]) as f64;
        assert!((gain["ratio"].as_f64().unwrap() - ratio).abs() < 1e-9);
    }
    // Two ranks on this machine: the cores were enough, unless it has one.
    let cores = std::thread::available_parallelism().unwrap().get();
    let verdict = &gain["verdict"];
    if cores >= 2 {
        assert_eq!(c["cores"]["state"], "enough", "{c:#}");
        let expected = documented_verdict(gain);
        assert_eq!(verdict["verdict"], expected, "{gain:#}");
        if expected == "not_confirmable" {
            assert_eq!(verdict["why"]["reason"], "within_noise", "{gain:#}");
        }
    } else {
        assert_eq!(verdict["why"]["reason"], "oversubscribed", "{gain:#}");
    }
    // The run times against the replay, and the re-run's iterations, rank by rank.
    assert!(
        c["error"].is_number() && c["self_error"].is_number(),
        "{c:#}"
    );
    assert_eq!(c["orders"].as_array().unwrap().len(), 2);

    // The text: the two sides, the gains, the verdict, the run times, the iterations.
    let mut args = vec!["suggest", early[0], "--confirm"];
    args.extend(&late);
    args.push("--original");
    args.extend(&early[1..]);
    let text = overlap(&args);
    assert!(text.success(), "{}", text.describe());
    let out = text.stdout();
    let confirm: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("confirm: "))
        .take_while(|l| !l.starts_with("note: "))
        .collect();
    assert!((4..=6).contains(&confirm.len()), "{out}");
    assert!(
        confirm[0].starts_with("confirm: original 3 runs, median "),
        "{out}"
    );
    assert!(confirm[0].contains("; changed 3 runs, median "), "{out}");
    assert!(confirm[1].starts_with("  gain predicted "), "{out}");
    let said = verdict["verdict"].as_str().unwrap().replace('_', " ");
    assert!(confirm[2].starts_with(&format!("  {said}: ")), "{out}");
    assert!(confirm[3].starts_with("  run time predicted "), "{out}");
    assert!(confirm[4].starts_with("  re-run's iteration: "), "{out}");

    // The analysed trace alone for the original: too few runs for a verdict, said so.
    let mut args = vec!["suggest", early[0], "--json", "--confirm"];
    args.extend(&late);
    let s = suggest_json(&args);
    let verdict = &s["confirmation"]["gain"]["verdict"];
    if cores >= 2 {
        assert_eq!(verdict["verdict"], "not_confirmable", "{verdict:#}");
        assert_eq!(verdict["why"]["reason"], "too_few_runs");
        assert_eq!(verdict["why"]["original"], 1);
        assert_eq!(verdict["why"]["changed"], 3);
    }
    let mut args = vec!["suggest", early[0], "--confirm"];
    args.extend(&late);
    let text = overlap(&args);
    text.assert_stdout_has("add more with --original");
}

#[test]
fn original_runs_need_changed_ones() {
    let run = overlap(&["suggest", "a.json", "--original", "b.json"]);
    assert!(!run.success());
    run.assert_stderr_has("--confirm");
}

/// `overlap trace --buffers --out OUT -- mpiexec -n 2 PROGRAM ARGS...`: the buffer watch.
fn trace_buffers(name: &str, args: &[&str], out: &Path) -> Run {
    let exe = program(name);
    let _guard = mpi_lock();
    let mut cmd = Command::new(overlap_bin());
    cmd.args(["trace", "--buffers", "--out"])
        .arg(out)
        .args(["--", "mpiexec", "-n", "2"])
        .arg(exe)
        .args(args);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SLURM_") {
            cmd.env_remove(k);
        }
    }
    Run {
        output: output_within(&mut cmd, LAUNCH_LIMIT),
    }
}

/// Every move of every group (of the consensus: suggested, or listed with why not).
fn moves(s: &Value) -> Vec<&Value> {
    s["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["moves"].as_array().unwrap())
        .collect()
}

/// Whether move `m` is suggested (said to gain, alone or with the others).
fn suggested(m: &Value) -> bool {
    m["verdict"] == "gains" || m["verdict"] == "gains_together"
}

fn text_of(m: &Value) -> &str {
    m["text"].as_str().unwrap()
}

/// halo.c early, watched: the receives' wait moves to just before the unpack (its first
/// read, inside the gap that holds the interior compute too), in the same step, and the
/// step's move is suggested (it hides the interior compute of the slower rank's step);
/// the sends' wait, if it moves, stays before the next pack's first write of its buffer;
/// no move needs an assumption.
#[test]
fn the_halo_fix_is_suggested_from_the_watched_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("halo.json");
    let run = trace_buffers("halo", &["early"], &out);
    assert!(run.success(), "{}", run.describe());
    run.assert_stdout_has("halo: checksum");
    let s = suggest_json(&["suggest", out.to_str().unwrap(), "--json"]);
    let wait_recv = program_line("halo.c", "/* early: the receives */");
    let wait_send = program_line("halo.c", "/* early: the sends */");
    let isend = program_line("halo.c", "MPI_Isend(sendbuf, HALO");
    let unpack = program_line("halo.c", "memcpy(ghost, recvbuf");
    let pack = [
        program_line("halo.c", "memcpy(sendbuf, field"),
        program_line("halo.c", "memcpy(sendbuf + HALO"),
    ];
    let all = moves(&s);
    for m in &all {
        assert_eq!(m["assumptions"].as_array().unwrap().len(), 0, "{m:#}");
    }
    let of_call = |line: u32| {
        all.iter()
            .filter(move |m| {
                m["what"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("at halo.c:{line} "))
            })
            .collect::<Vec<_>>()
    };
    let recv = of_call(wait_recv);
    assert!(!recv.is_empty(), "the receives' wait moves: {s:#}");
    for m in &recv {
        // Just before the unpack of its own step: never into the next one.
        let text = text_of(m);
        assert!(
            text.contains(&format!("to just before halo.c:{unpack} "))
                && text.ends_with("(the first read of the receive buffer)"),
            "{m:#}"
        );
        assert_eq!(m["next_iteration"], false, "{m:#}");
    }
    // The step's move (every step of the loop; the first, before the iteration is
    // matched, is one of its own and may hide too little) is suggested.
    let loop_moves: Vec<_> = (recv.iter())
        .filter(|m| m["iterations"].as_u64().unwrap() > 1)
        .collect();
    assert!(!loop_moves.is_empty(), "{s:#}");
    for m in loop_moves {
        assert_eq!(m["verdict"], "gains", "{m:#}");
    }
    for m in of_call(wait_send) {
        // Past the next step's Irecvs at most: never past its pack, before its Isends;
        // inside the pack, before the first write of its own buffer at most.
        let to = m["to_before"].as_str().unwrap_or("the end");
        assert!(!to.starts_with("MPI_Isend"), "{m:#}");
        assert!(!to.contains(&format!("halo.c:{isend} (main) and")), "{m:#}");
        let text = text_of(m);
        if let Some(at) = text.split(" to just before halo.c:").nth(1) {
            let line: u32 = at.split(' ').next().unwrap().parse().unwrap();
            assert!(pack.contains(&line), "{m:#}");
            assert!(
                text.ends_with("(the first write of the send buffer)"),
                "{m:#}"
            );
        }
    }
}

/// pipeline.c single, watched: every wait is followed at once by a use of its buffer,
/// and the consumer's next receive by nothing it may pass. A wait moves at most to its
/// buffer's first use (past the few µs between the wait's return and the first touch,
/// where the gap is cut), which gains nothing: nothing is suggested, nothing to move.
#[test]
fn nothing_moves_in_a_pipeline_read_right_after_its_wait() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pipeline.json");
    let run = trace_buffers("pipeline", &["single"], &out);
    assert!(run.success(), "{}", run.describe());
    run.assert_stdout_has("pipeline: checksum");
    let path = out.to_str().unwrap();
    let s = suggest_json(&["suggest", path, "--json"]);
    let produce = program_line("pipeline.c", "block[i] = b + 1e-6 * i");
    let consume = program_line("pipeline.c", "sum += block[i] * (1 + 1e-9 * p)");
    let wait_send = program_line("pipeline.c", "/* single: right after */");
    for m in moves(&s) {
        assert!(!suggested(m), "{m:#}");
        let text = text_of(m);
        // Only the waits move (the consumer's Irecv stays after the consume).
        assert!(text.starts_with("move MPI_Wait "), "{m:#}");
        let to_use = |line: u32, first: &str| {
            text.contains(&format!(" to just before pipeline.c:{line} "))
                && text.ends_with(&format!("(the first {first})"))
        };
        // The last block's send: past the loop, its buffer freed after it.
        let last_send = text.contains(&format!("at pipeline.c:{wait_send} "))
            && m["iterations"] == 1
            && m["to_before"]
                .as_str()
                .is_none_or(|t| t.starts_with("the compute after"));
        assert!(
            to_use(produce, "write of the send buffer")
                || to_use(consume, "read of the receive buffer")
                || last_send,
            "{m:#}"
        );
    }
    let text = overlap(&["suggest", path]);
    // The network is fitted to the run's clean transfers. A run on a loaded machine may
    // have too few: then no move's gain can be told, and the moves are listed with
    // their gains unknown (none said to gain, as the JSON above), not as nothing.
    if text.stdout().contains("the network is unknown") {
        text.assert_stdout_has("gains unknown: no network");
    } else {
        text.assert_stdout_has("nothing to move");
    }
}

/// nomove.c, with and without the watch: the only legal moves (the Waitall past the
/// swap, to the next step's posts; the last step's past the end of the loop) gain
/// nothing: none is suggested, nothing to move.
#[test]
fn nothing_moves_in_a_ring_that_already_overlaps() {
    let dir = tempfile::tempdir().unwrap();
    let plain = traced_runs(dir.path(), "nomove", 1, &[]);
    let watched = dir.path().join("watched.json");
    let run = trace_buffers("nomove", &[], &watched);
    assert!(run.success(), "{}", run.describe());
    let waitall = program_line("nomove.c", "MPI_Waitall(2, req");
    let irecv = program_line("nomove.c", "MPI_Irecv(next");
    let isend = program_line("nomove.c", "MPI_Isend(cur");
    for path in [plain[0].to_str().unwrap(), watched.to_str().unwrap()] {
        // Gains need a network: a run that fitted none is replayed on a given one.
        let (s, args) = suggest_on_a_network(path, &[]);
        for m in moves(&s) {
            assert!(!suggested(m), "{path}: {m:#}");
            let what = m["what"].as_str().unwrap();
            let to = m["to_before"].as_str();
            let wait = what.contains(&format!("at nomove.c:{waitall} "));
            let post = what.contains(&format!("at nomove.c:{isend} "));
            let before_irecv = to.is_some_and(|t| t.contains(&format!("(nomove.c:{irecv} ")));
            let past_the_loop = to.is_none_or(|t| t.starts_with("the compute after"));
            assert!(
                (wait && (before_irecv || past_the_loop)) || (post && before_irecv),
                "{path}: {m:#}"
            );
        }
        let text = overlap(&args.iter().map(String::as_str).collect::<Vec<_>>());
        text.assert_stdout_has("nothing to move");
    }
}
