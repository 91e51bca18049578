//! Merge and analysis at scale: how fast `merge` and `analyze` go, and how much memory
//! they need, on generated runs of 16, 256 and 1024 ranks and 10 M events or more, one
//! thread or two (`RAYON_NUM_THREADS`). The run looks like a real halo code so that the
//! analyses find what they look for: each iteration packs, posts an `Irecv` from and an
//! `Isend` to each of its ring neighbours (±1, and ±4 from 16 ranks up), waits for the
//! receives (a Late Sender when a neighbour was slow: one rank-iteration in ten computes
//! longer before its sends), computes its interior, then waits for the sends; ranks
//! with `rank % 8 == 3` wait for their sends right after posting them (false overlap).
//! Every 4th iteration ends in an `Allreduce` and every 16th (of the others) in a
//! `Barrier`, left by all at the period's end (wait at collective).
//!
//! Each rank's timeline is a pure function of (rank, iteration), so the files are
//! written one rank at a time, streamed to disk. Generation is not timed. Each
//! measurement runs in a fresh process so that its peak memory (VmHWM) is its own.
//!
//! `cargo bench -p overlap-analyzer --bench scale [-- --ranks 16,256,1024 --events
//! 10000000 --threads 1,2 --only merge,merge-pftrace,merge-in-memory,analyze,analyze-dir,analyze-kept
//! --keep DIR] [--dirs RANKS_DIR,...]`; `merge-pftrace` is `merge` into Perfetto's
//! protobuf instead of JSON; `writers` times the two writers alone, side by side;
//! `--dirs` measures rank directories given (a preloaded run) instead of generated ones.
//! `--keep` writes the runs under DIR and reuses them when they are there. `analyze` is
//! what `overlap analyze` does (the trace given up to the analysis, `analyze_owned`);
//! `analyze-dir` is what `overlap analyze DIR` does (the rank files read twice, the run
//! never held whole: `analyze_dir`); `analyze-kept` analyses a trace kept for more
//! (`--csv`, the terminal UI).

#[path = "common/mod.rs"]
mod common;
#[path = "scale/generate.rs"]
mod generate;
#[path = "scale/stages.rs"]
mod stages;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use overlap_analyzer::analysis::{analyze, analyze_dir, analyze_owned, Report};
use overlap_analyzer::load::load_dir;
use overlap_analyzer::merge::{merge_dir, write_merged};
use overlap_analyzer::metrics::{Options, WaitKind};
use overlap_analyzer::summary::merge_to_file;

use generate::{count_events, generate, offsets};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const MIB: f64 = (1 << 20) as f64;

/// One measurement, in this (fresh) process: prints a line for people, then
/// `#fig SECONDS PEAK_BYTES` for the parent.
fn child(kind: &str, dir: &Path, label: &str, events: u64) -> Res<()> {
    // A rank directory given (`--dirs`) comes without its count: the run's, once read.
    let mut e = events as f64;
    let t0 = Instant::now();
    let (secs, line) = if kind == "merge" || kind == "merge-pftrace" {
        // What `overlap merge` does: one rank at a time, into Chrome JSON or Perfetto's
        // protobuf.
        let ext = match kind {
            "merge" => "merged.json",
            _ => "merged.pftrace",
        };
        let out = dir.with_extension(ext);
        let written = merge_to_file(dir, &out)?;
        let secs = t0.elapsed().as_secs_f64();
        let info = &written.info;
        let counted: u64 = info.ranks.iter().map(|r| r.events).sum();
        let bytes = std::fs::metadata(&out)?.len() as f64;
        std::fs::remove_file(&out)?;
        let line = format!(
            "{counted} events: merged one rank at a time into {ext} in {secs:.2} s \
             ({:.2} M events/s); output {:.0} MiB, {:.1} B per event, {:.0} MiB/s; {} \
             messages, unmatched {} sends {} receives",
            counted as f64 / secs / 1e6,
            bytes / MIB,
            bytes / counted.max(1) as f64,
            bytes / MIB / secs,
            info.messages,
            info.unmatched_sends,
            info.unmatched_receives,
        );
        (secs, line)
    } else if kind == "merge-in-memory" {
        // The library's merge that keeps every rank (what `analyze DIR` builds on).
        let out = dir.with_extension("merged.json");
        let outcome = merge_dir(dir)?;
        let first = t0.elapsed().as_secs_f64();
        write_merged(&outcome.merged, &out)?;
        let second = t0.elapsed().as_secs_f64() - first;
        let info = &outcome.merged.info;
        let counted: u64 = info.ranks.iter().map(|r| r.events).sum();
        let size = std::fs::metadata(&out)?.len() as f64 / MIB;
        std::fs::remove_file(&out)?;
        let line = format!(
            "{counted} events: read+merge {first:.2} s + write {second:.2} s; output \
             {size:.0} MiB; {} messages, unmatched {} sends {} receives",
            info.messages, info.unmatched_sends, info.unmatched_receives,
        );
        (first + second, line)
    } else if kind == "writers" {
        // The two writers of the merged file side by side, on the same merged run held
        // in memory (each reads the rank files again as it writes, as `merge` does):
        // only the writing is timed.
        let outcome = merge_dir(dir)?;
        let info = &outcome.merged.info;
        let counted: u64 = info.ranks.iter().map(|r| r.events).sum();
        let mut line = format!("{counted} events written");
        let mut proto_secs = 0.0;
        for ext in ["json", "pftrace"] {
            let out = dir.with_extension(format!("written.{ext}"));
            let t = Instant::now();
            write_merged(&outcome.merged, &out)?;
            let secs = t.elapsed().as_secs_f64();
            let bytes = std::fs::metadata(&out)?.len() as f64;
            std::fs::remove_file(&out)?;
            line.push_str(&format!(
                "; {ext}: {secs:.2} s, {:.2} M events/s, {:.0} MiB, {:.1} B per event, {:.0} \
                 MiB/s",
                counted as f64 / secs / 1e6,
                bytes / MIB,
                bytes / counted.max(1) as f64,
                bytes / MIB / secs
            ));
            proto_secs = secs;
        }
        (proto_secs, line)
    } else if kind == "stages" {
        overlap_analyzer::heap::set_thresholds();
        return stages::stages(dir, label, events);
    } else if kind == "analyze-dir" {
        // What `overlap analyze DIR` does: the rank files read twice, the run never
        // held whole.
        overlap_analyzer::heap::set_thresholds();
        let report = analyze_dir(dir, &Options::default())?.report;
        let secs = t0.elapsed().as_secs_f64();
        if events == 0 {
            e = report.run.events as f64;
        }
        (
            secs,
            report_line(&report, &format!("three readings {secs:.2} s")),
        )
    } else {
        // As the command line does before it loads a run for analysis.
        overlap_analyzer::heap::set_thresholds();
        let loaded = load_dir(dir, &mut |_, _| {})?;
        let first = t0.elapsed().as_secs_f64();
        let report = if kind == "analyze-kept" {
            // The trace kept for more (`--csv`, `--parquet`, the terminal UI).
            analyze(&loaded.trace, &Options::default()).0
        } else {
            // What `overlap analyze` does otherwise: the trace given up to the analysis.
            analyze_owned(loaded.trace, &Options::default())
        };
        let second = t0.elapsed().as_secs_f64() - first;
        if events == 0 {
            e = report.run.events as f64;
        }
        let line = format!("import {first:.2} s + metrics {second:.2} s");
        (first + second, report_line(&report, &line))
    };
    let peak = common::peak_rss()?;
    println!(
        "{kind:<15} {label}: {}; total {secs:.2} s, {:.2} M events/s, peak {:.0} MiB \
         ({:.0} B/event)",
        line,
        e / secs / 1e6,
        peak as f64 / MIB,
        peak as f64 / e,
    );
    println!("#fig {secs} {peak}");
    Ok(())
}

/// What a measurement says of the report of an analysis that took `took`.
fn report_line(report: &Report, took: &str) -> String {
    let (w, run) = (&report.wait_states, &report.run);
    {
        let of = |k: WaitKind| {
            let s = w.kinds.iter().find(|s| s.kind == k);
            s.map_or((0, 0.0), |s| (s.count, s.total_ns as f64 / 1e9))
        };
        let ((ls, ls_s), (nxn, nxn_s), (bar, bar_s)) = (
            of(WaitKind::LateSender),
            of(WaitKind::WaitAtNxN),
            of(WaitKind::WaitAtBarrier),
        );
        format!(
            "{} events: {took}; {} messages (unmatched {} sends {} receives); wait states \
             {:.3} s: late sender {ls} ({ls_s:.3} s), wait at NxN {nxn} ({nxn_s:.3} s), at \
             barrier {bar} ({bar_s:.3} s); {} false-overlap findings",
            run.events,
            run.messages,
            run.unmatched_sends,
            run.unmatched_receives,
            w.total_ns as f64 / 1e9,
            report.false_overlap.count,
        )
    }
}

/// Runs one measurement in a fresh process; returns (seconds, peak bytes).
fn measure(kind: &str, dir: &Path, label: &str, threads: u32, events: u64) -> Res<(f64, u64)> {
    let out = Command::new(std::env::current_exe()?)
        .args(["--child", kind, label, &events.to_string()])
        .arg(dir)
        .env("RAYON_NUM_THREADS", threads.to_string())
        .stderr(std::process::Stdio::inherit())
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("{}: {text}", out.status).into());
    }
    let mut fig = None;
    for line in text.lines() {
        match line.strip_prefix("#fig ") {
            Some(f) => {
                let mut w = f.split_whitespace();
                let secs: f64 = w.next().ok_or("no seconds")?.parse()?;
                let peak: u64 = w.next().ok_or("no peak")?.parse()?;
                fig = Some((secs, peak));
            }
            None => println!("{line}"),
        }
    }
    Ok(fig.ok_or("the child printed no figures")?)
}

fn list<T: std::str::FromStr>(s: &str) -> Res<Vec<T>> {
    s.split(',')
        .map(|x| x.trim().parse().map_err(|_| format!("bad list {s}").into()))
        .collect()
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("--child") {
        let [_, kind, label, events, dir] = args.as_slice() else {
            return Err(
                "--child merge|merge-in-memory|analyze|analyze-dir|analyze-kept|stages LABEL \
                 EVENTS DIR"
                    .into(),
            );
        };
        return child(kind, Path::new(dir), label, events.parse()?);
    }
    let (mut ranks, mut events, mut threads) =
        (vec![16u32, 256, 1024], 10_000_000u64, vec![1u32, 2]);
    let (mut only, mut keep): (Option<String>, Option<PathBuf>) = (None, None);
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--ranks" => ranks = list(value()?)?,
            "--events" => events = value()?.parse()?,
            "--threads" => threads = list(value()?)?,
            "--only" => only = Some(value()?.clone()),
            "--keep" => keep = Some(PathBuf::from(value()?)),
            "--dirs" => dirs = value()?.split(',').map(PathBuf::from).collect(),
            _ => return Err(format!("unknown argument {a}").into()),
        }
    }
    let kinds: Vec<&str> = match only.as_deref() {
        None => vec!["merge", "analyze"],
        Some(list) => {
            let kinds: Vec<&str> = list.split(',').map(str::trim).collect();
            if let Some(k) = kinds.iter().find(|k| {
                !matches!(
                    **k,
                    "merge"
                        | "merge-pftrace"
                        | "writers"
                        | "merge-in-memory"
                        | "analyze"
                        | "analyze-dir"
                        | "analyze-kept"
                        | "stages"
                )
            }) {
                return Err(format!(
                    "--only merge|merge-pftrace|writers|merge-in-memory|analyze|analyze-dir|analyze-kept|\
                     stages[,...], not {k}"
                )
                .into());
            }
            kinds
        }
    };

    if !dirs.is_empty() {
        // Rank directories given (a preloaded run): each measured as it is.
        for dir in &dirs {
            for &t in &threads {
                for kind in &kinds {
                    let label = format!("{} T={t}", dir.display());
                    if let Err(e) = measure(kind, dir, &label, t, 0) {
                        println!("{kind:<15} {label}: failed: {e}");
                    }
                }
            }
        }
        return Ok(());
    }
    let root = match &keep {
        Some(k) => k.clone(),
        None => std::env::temp_dir().join(format!("overlap-scale-{}", std::process::id())),
    };
    // (ranks, threads, kind) -> (seconds, peak bytes), and the events of each run.
    let mut figs: BTreeMap<(u32, u32, &str), (f64, u64)> = BTreeMap::new();
    let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
    for &r in &ranks {
        if r < 3 {
            return Err("at least 3 ranks".into());
        }
        // Events per rank-iteration on average: see `events_of` (slow: 1 in 10;
        // collectives: 1 in 4 plus 1 in 16).
        let per = 2.0 * offsets(r).len() as f64 + 4.0 + 0.1 + 0.25 + 1.0 / 16.0;
        let iterations = ((events as f64 / (f64::from(r) * per)) as u64).max(1);
        let total = count_events(r, iterations);
        counts.insert(r, total);
        let dir = root.join(format!("ranks-{r}-events-{events}"));
        if dir.is_dir() {
            println!("R={r}: reusing {} ({total} events)", dir.display());
        } else {
            let partial = dir.with_extension("partial");
            if partial.exists() {
                std::fs::remove_dir_all(&partial)?;
            }
            let t0 = Instant::now();
            let bytes = generate(&partial, r, iterations)?;
            std::fs::rename(&partial, &dir)?;
            println!(
                "R={r}: generated {total} events ({iterations} iterations, {:.0} MiB, {:.1} \
                 B/event) in {:.1} s: {}",
                bytes as f64 / MIB,
                bytes as f64 / total as f64,
                t0.elapsed().as_secs_f64(),
                dir.display(),
            );
        }
        for &t in &threads {
            for kind in &kinds {
                let label = format!("R={r} E={total} T={t}");
                // A failed measurement (out of memory...) is reported; the rest goes on.
                match measure(kind, &dir, &label, t, total) {
                    Ok(fig) => _ = figs.insert((r, t, kind), fig),
                    Err(e) => println!("{kind:<15} {label}: failed: {e}"),
                }
            }
        }
        if keep.is_none() {
            std::fs::remove_dir_all(&dir)?;
        }
    }
    if keep.is_none() {
        std::fs::remove_dir_all(&root)?;
    }
    println!("\nR ranks, E events, T threads; Me/s: million events per second; MiB, B/ev:");
    println!("peak memory, in all and per event; x: speed with T threads over 1 thread");
    println!(
        "{:>5} {:>10} {:>2} {:>10} {:>8} {:>9} {:>10} {:>10} {:>9} {:>9} {:>7} {:>7}",
        "R",
        "E",
        "T",
        "merge Me/s",
        "pf Me/s",
        "merge MiB",
        "in-mem MiB",
        "anal Me/s",
        "anal B/ev",
        "kept B/ev",
        "merge x",
        "anal x"
    );
    let show = |x: Option<f64>, digits: usize| x.map_or("-".into(), |x| format!("{x:.digits$}"));
    for &r in &ranks {
        let n = counts.get(&r).copied().unwrap_or(0);
        for &t in &threads {
            let fig = |k: &str| figs.get(&(r, t, k)).copied();
            let rate = |k: &str| fig(k).map(|f| n as f64 / f.0 / 1e6);
            let speedup = |k: &str| Some(figs.get(&(r, 1, k))?.0 / fig(k)?.0).filter(|_| t != 1);
            println!(
                "{r:>5} {n:>10} {t:>2} {:>10} {:>8} {:>9} {:>10} {:>10} {:>9} {:>9} {:>7} {:>7}",
                show(rate("merge"), 2),
                show(rate("merge-pftrace"), 2),
                show(fig("merge").map(|f| f.1 as f64 / MIB), 0),
                show(fig("merge-in-memory").map(|f| f.1 as f64 / MIB), 0),
                show(rate("analyze"), 2),
                show(fig("analyze").map(|f| f.1 as f64 / n as f64), 0),
                show(fig("analyze-kept").map(|f| f.1 as f64 / n as f64), 0),
                show(speedup("merge"), 2),
                show(speedup("analyze"), 2),
            );
        }
    }
    Ok(())
}
