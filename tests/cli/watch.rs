//! `overlap trace --buffers` on the C programs of tests/programs/watch_*.c: each runs
//! with the buffer watch exactly as without tracing (same output, same exit status),
//! and what the watch learned of each request's buffer is what the program did: the
//! kind of its first touch, the line of the instruction (or of the system call) that
//! made it, and when, between the call that completed the request and the next.

use std::path::Path;
use std::process::Command;

use overlap_analyzer::load::{load, load_dir};
use overlap_analyzer::model::{Timeline, Trace};
use overlap_analyzer::sites::SiteTable;
use overlap_instrument::schema::{
    LearnedUse, Nanos, Op, Outcome, Touch, UnwatchedReason, WatchEnd,
};

use crate::mpis::{open_mpi, program_in, Mpi};
use crate::trace::program_line;
use crate::util::{mpi_lock, output_within, overlap_bin, Run, LAUNCH_LIMIT};

/// `LAUNCHER -n RANKS PROGRAM ARGS` of `mpi`, traced with `--buffers` into `out`, or
/// untraced when `out` is `None`; `env` set for both.
fn launch(
    mpi: Mpi,
    ranks: u32,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    out: Option<&Path>,
) -> Run {
    let _guard = mpi_lock();
    let mut cmd = match out {
        Some(out) => {
            let mut c = Command::new(overlap_bin());
            c.args(["trace", "--buffers", "--out"])
                .arg(out)
                .arg("--")
                .arg(mpi.launcher());
            c
        }
        None => Command::new(mpi.launcher()),
    };
    cmd.args(["-n", &ranks.to_string()]).arg(program).args(args);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SLURM_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(mpi.env().iter().copied())
        .envs(env.iter().copied());
    Run {
        output: output_within(&mut cmd, LAUNCH_LIMIT),
    }
}

/// tests/programs/NAME run untraced, then traced with `--buffers` into `out`: the same
/// standard output and exit status. Returns the traced run.
fn same_as_untraced(mpi: Mpi, name: &str, args: &[&str], env: &[(&str, &str)], out: &Path) -> Run {
    let program = program_in(mpi, name);
    let plain = launch(mpi, 2, &program, args, env, None);
    let traced = launch(mpi, 2, &program, args, env, Some(out));
    assert_eq!(
        traced.output.status.code(),
        plain.output.status.code(),
        "the exit status is unchanged\nuntraced: {}\ntraced: {}",
        plain.describe(),
        traced.describe()
    );
    assert_eq!(
        traced.stdout(),
        plain.stdout(),
        "the output is unchanged\n{}",
        traced.describe()
    );
    traced
}

/// The run as the analysis loads it, from the merged file; the same facts as from the
/// rank files (the merged trace carries them whole).
fn loaded(out: &Path) -> Trace {
    let merged = load(out, &mut |_, _| {})
        .expect("the merged trace loads")
        .trace;
    let ranks = out.with_extension("ranks");
    let direct = load_dir(&ranks, &mut |_, _| {})
        .expect("the rank files load")
        .trace;
    for (m, d) in merged.ranks.iter().zip(&direct.ranks) {
        assert_eq!(m.learned, d.learned, "rank {}: merged = rank files", m.rank);
        assert_eq!(m.unwatched, d.unwatched, "rank {}", m.rank);
    }
    merged
}

/// A rank's timeline.
fn rank(trace: &Trace, rank: u32) -> &Timeline {
    trace.rank(rank).expect("the rank is in the trace")
}

/// The end of the call that completed `request` on `t`.
fn completed_at(t: &Timeline, request: u64) -> Nanos {
    (0..t.spans.len())
        .find(|&i| {
            t.call(i).is_some_and(|(_, c)| {
                t.completions(c)
                    .iter()
                    .any(|d| d.request() == Some(request))
            })
        })
        .map(|i| t.spans[i].end)
        .unwrap_or_else(|| panic!("rank {}: request {request} completed", t.rank))
}

/// The MPI call of `t` in progress at `at`, if any.
fn call_during(t: &Timeline, at: Nanos) -> Option<Op> {
    (0..t.spans.len())
        .filter(|&i| t.spans[i].start < at && at < t.spans[i].end)
        .find_map(|i| t.call(i).map(|(op, _)| op))
}

/// The use learned of `request`'s buffer on `t`.
fn learned(t: &Timeline, request: u64) -> &LearnedUse {
    t.learned
        .iter()
        .find(|l| l.request == request)
        .unwrap_or_else(|| panic!("rank {}: a watch of request {request}: {:?}", t.rank, t))
}

/// A first touch: its kind, its line (`file:line`) and its time.
#[derive(Debug)]
struct Touched {
    touch: Touch,
    line: String,
    earliest: Nanos,
    latest: Nanos,
}

/// What the watch of `request` on `t` says of a first touch (panics if it was
/// untouched), with the line of its instruction from the site table.
fn touched(trace: &Trace, table: &SiteTable, t: &Timeline, request: u64) -> Touched {
    let l = learned(t, request);
    let Outcome::Used {
        earliest,
        latest,
        touch,
        ip,
        ..
    } = l.outcome
    else {
        panic!("rank {}: request {request} touched: {l:?}", t.rank)
    };
    let ip = ip.unwrap_or_else(|| panic!("an instruction: {l:?}"));
    let site = table
        .touch(t.rank, ip.get())
        .unwrap_or_else(|| panic!("{ip:#x} symbolized"));
    let line = format!(
        "{}:{}",
        site.file
            .as_deref()
            .and_then(|f| f.rsplit('/').next())
            .unwrap_or("?"),
        site.line.unwrap_or(0)
    );
    let _ = trace;
    Touched {
        touch,
        line,
        earliest,
        latest,
    }
}

/// `file:line` of the line of tests/programs/FILE holding `text`.
fn at_line(file: &str, text: &str) -> String {
    format!("{file}:{}", program_line(file, text))
}

/// Checks the ordering every watch of `t` must have: it begins when the call that
/// completed its request ends, and its first touch comes after, between two calls
/// (none of the programs touches a buffer inside an MPI call).
fn check_ordering(t: &Timeline) {
    for l in &t.learned {
        assert_eq!(
            l.from,
            completed_at(t, l.request),
            "rank {}: the watch of request {} begins as its completion ends",
            t.rank,
            l.request
        );
        if let Outcome::Used {
            earliest, latest, ..
        } = l.outcome
        {
            assert!(l.from <= earliest && earliest <= latest, "{l:?}");
            assert_eq!(
                call_during(t, latest),
                None,
                "rank {}: request {} touched between calls: {l:?}",
                t.rank,
                l.request
            );
        }
    }
}

/// `read(2)` into a send buffer works and is its first write, at the line of the read;
/// `write(2)` from a receive buffer works and is its first read, at the line of the
/// write. The last send's buffer is never touched again: untouched to the end.
#[test]
fn system_calls_on_watched_buffers_work_and_are_their_first_touch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("read.json");
    let run = same_as_untraced(Mpi::Default, "watch_read", &[], &[], &out);
    run.assert_stdout_has("received 402628608.0 in 3 rounds, file matches");
    let trace = loaded(&out);
    let table = SiteTable::build(&trace);
    let read = at_line("watch_read.c", "read(2) into the send buffer");
    let write = at_line("watch_read.c", "write(2) from the receive buffer");
    let (sender, receiver) = (rank(&trace, 0), rank(&trace, 1));
    for t in [sender, receiver] {
        check_ordering(t);
        assert_eq!(t.unwatched, [], "rank {}: every buffer watched", t.rank);
        assert_eq!(t.learned.len(), 3, "rank {}: {:?}", t.rank, t.learned);
    }
    for l in &sender.learned[..2] {
        let u = touched(&trace, &table, sender, l.request);
        assert_eq!((u.touch, u.line.as_str()), (Touch::Write, read.as_str()));
        assert_eq!(u.earliest, u.latest, "a system call is one instant");
        assert_eq!(l.reads, None, "a send buffer's reads are not watched");
    }
    assert!(
        matches!(
            sender.learned[2].outcome,
            Outcome::Untouched {
                why: WatchEnd::RunEnded,
                ..
            }
        ),
        "{:?}",
        sender.learned[2]
    );
    for l in &receiver.learned {
        let u = touched(&trace, &table, receiver, l.request);
        assert_eq!((u.touch, u.line.as_str()), (Touch::Read, write.as_str()));
        assert!(l.reads.is_some() && l.writes.is_some(), "{l:?}");
    }
}

/// A halo exchange with buffers of several pages: each receive buffer's first read is at
/// the unpack line, after the compute (the marker call that ends it); each send
/// buffer's first write at its pack line, after the unpack, before the next Isend.
#[test]
fn a_halo_exchange_learns_where_each_buffer_is_next_used() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("halo.json");
    same_as_untraced(Mpi::Default, "watch_halo", &[], &[], &out);
    let trace = loaded(&out);
    let table = SiteTable::build(&trace);
    let unpack = at_line("watch_halo.c", "/* unpack */");
    let pack_l = at_line("watch_halo.c", "/* pack left */");
    let pack_r = at_line("watch_halo.c", "/* pack right */");
    for t in &trace.ranks {
        check_ordering(t);
        assert_eq!(t.unwatched, [], "rank {}", t.rank);
        // Posts per iteration: Irecv left, Irecv right, Isend left, Isend right.
        let posts: Vec<(u64, Op)> = (0..t.spans.len())
            .filter_map(|i| {
                let (op, c) = t.call(i)?;
                let request = c.request()?;
                matches!(op, Op::Isend | Op::Irecv).then_some((request, op))
            })
            .collect();
        assert_eq!(posts.len(), 16, "rank {}: 4 iterations of 4 posts", t.rank);
        for (k, round) in posts.chunks(4).enumerate() {
            let last = k == 3;
            let marker = (0..t.spans.len())
                .filter(|&i| t.call(i).is_some_and(|(op, _)| op == Op::Iprobe))
                .nth(k)
                .map(|i| t.spans[i].end)
                .expect("the marker of the iteration");
            let mut unpacked = Nanos(0);
            for &(request, op) in &round[..2] {
                assert_eq!(op, Op::Irecv);
                let u = touched(&trace, &table, t, request);
                assert_eq!((u.touch, u.line.as_str()), (Touch::Read, unpack.as_str()));
                assert!(u.earliest >= marker, "read after the compute: {u:?}");
                unpacked = unpacked.max(u.latest);
            }
            for (&(request, op), pack) in round[2..].iter().zip([&pack_l, &pack_r]) {
                assert_eq!(op, Op::Isend);
                if last {
                    assert!(
                        matches!(learned(t, request).outcome, Outcome::Untouched { .. }),
                        "the last send buffers are not written again"
                    );
                    continue;
                }
                let u = touched(&trace, &table, t, request);
                assert_eq!((u.touch, u.line.as_str()), (Touch::Write, pack.as_str()));
                // Its edges were still as sent at the unpack's faults: the write came
                // after the receive buffers' reads.
                assert!(u.earliest >= unpacked.min(u.latest), "{u:?}");
                assert!(u.latest >= unpacked, "written after the unpack: {u:?}");
            }
        }
    }
}

/// What is not watched says why: a buffer smaller than a page, one on the stack, one
/// sent twice at once (the first to complete shares its pages with the other, still in
/// flight); a worker thread's read of a receive buffer is recorded at its line.
#[test]
fn unwatched_buffers_say_why_and_another_thread_is_watched_too() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("unwatched.json");
    let run = same_as_untraced(Mpi::Default, "watch_unwatched", &[], &[], &out);
    run.assert_stdout_has("small 120, stacked 2096128, twice 0, worker 8192");
    let trace = loaded(&out);
    let table = SiteTable::build(&trace);
    let why = |t: &Timeline, request: u64| {
        t.unwatched
            .iter()
            .find(|u| u.request == request)
            .map(|u| u.why)
    };
    let (zero, one) = (rank(&trace, 0), rank(&trace, 1));
    for t in [zero, one] {
        check_ordering(t);
        assert_eq!(why(t, 1), Some(UnwatchedReason::SmallerThanPage));
        assert_eq!(why(t, 2), Some(UnwatchedReason::OnStack));
    }
    assert_eq!(why(zero, 3), Some(UnwatchedReason::SharedWithActive));
    let refill = touched(&trace, &table, zero, 4);
    assert_eq!(
        (refill.touch, refill.line),
        (
            Touch::Write,
            at_line("watch_unwatched.c", "refill the buffer sent twice")
        )
    );
    let compare = at_line("watch_unwatched.c", "twice[i] - other[i]");
    for request in [3, 4] {
        let u = touched(&trace, &table, one, request);
        assert_eq!((u.touch, u.line.as_str()), (Touch::Read, compare.as_str()));
    }
    let worker = touched(&trace, &table, one, 5);
    assert_eq!(
        (worker.touch, worker.line),
        (
            Touch::Read,
            at_line("watch_unwatched.c", "the worker reads the receive buffer")
        )
    );
}

/// A non-blocking collective's buffers are watched one each (its result's first read,
/// its send buffer's first write, at their lines); one whose extent depends on every
/// rank's displacements is not; a blocking collective on a watched buffer ends the watch
/// (handed to MPI) and works.
#[test]
fn a_collectives_buffers_are_watched_where_their_extent_is_known() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("nbc.json");
    let run = same_as_untraced(Mpi::Default, "watch_nbc", &[], &[], &out);
    run.assert_stdout_has("sum 67108864, mixed 4096, again 4");
    let trace = loaded(&out);
    let table = SiteTable::build(&trace);
    let line = |l: &LearnedUse| {
        let Outcome::Used { touch, ip, .. } = l.outcome else {
            return None;
        };
        let site = table.touch(0, ip?.get())?;
        let file = site.file.as_deref()?.rsplit('/').next()?;
        Some((touch, format!("{file}:{}", site.line?)))
    };
    for t in &trace.ranks {
        check_ordering(t);
        let of = |request: u64| -> Vec<&LearnedUse> {
            t.learned.iter().filter(|l| l.request == request).collect()
        };
        let first = of(1);
        assert_eq!(first.len(), 2, "rank {}: two buffers: {first:?}", t.rank);
        if t.rank == 0 {
            let mut lines: Vec<_> = first.iter().filter_map(|l| line(l)).collect();
            lines.sort();
            assert_eq!(
                lines,
                vec![
                    (Touch::Read, at_line("watch_nbc.c", "read the reduction")),
                    (
                        Touch::Write,
                        at_line("watch_nbc.c", "refill the send buffer")
                    ),
                ]
            );
        }
        assert_eq!(
            t.unwatched
                .iter()
                .map(|u| (u.request, u.why))
                .collect::<Vec<_>>(),
            vec![(2, UnwatchedReason::NoBuffer)],
            "rank {}: the alltoallv's extent is unknown",
            t.rank
        );
        let handed = of(3)
            .into_iter()
            .find(|l| l.reads.is_some())
            .expect("the result buffer's watch");
        assert!(
            matches!(
                handed.outcome,
                Outcome::Untouched {
                    why: WatchEnd::HandedToMpi,
                    ..
                }
            ),
            "{handed:?}"
        );
    }
}

/// A watched buffer the program frees, grows with realloc or unmaps: the watch ends
/// there (released), and the memory the program gets back at the same place works.
#[test]
fn memory_released_under_a_watch_ends_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("free.json");
    let run = same_as_untraced(Mpi::Default, "watch_free", &[], &[], &out);
    run.assert_stdout_has("refilled 16384, grown 134225920, remapped 32768, sent back 1");
    let trace = loaded(&out);
    let t = rank(&trace, 1);
    check_ordering(t);
    for request in 1..=3 {
        assert!(
            matches!(
                learned(t, request).outcome,
                Outcome::Untouched {
                    why: WatchEnd::Released,
                    ..
                }
            ),
            "request {request}: {:?}",
            learned(t, request)
        );
    }
}

/// The program's own SIGSEGV handler (installed before MPI_Init, replaced after it) is
/// what sigaction reports, a real segfault at the end reaches it (exit status 42), and
/// with SIGSEGV back at its default the rank dies by the signal, as untraced. A child
/// forked while a receive buffer is watched reads it; the parent's first read is still
/// its own, at the sum line.
fn check_own_sigsegv(mpi: Mpi) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("segv.json");
    // Flushed often, so that what the ranks learned reaches their files before they
    // die.
    let env = [("OVERLAP_FLUSH_MS", "10")];
    let run = same_as_untraced(mpi, "watch_segv", &["handler"], &env, &out);
    assert_eq!(run.output.status.code(), Some(42), "{}", run.describe());
    run.assert_stdout_has("handlers reported as set");
    run.assert_stdout_has("caught the segfault");
    let trace = load(&out, &mut |_, _| {}).expect("loads").trace;
    let table = SiteTable::build(&trace);
    let sum = at_line("watch_segv.c", "sum += in[i]");
    for t in &trace.ranks {
        // The receive buffers' watches (the handler finalizes before the rank exits, but
        // a watch the fault ended early may be missing): each first read at the sum
        // line, the one of round 1, read by the child forked while it was watched, too.
        let reads: Vec<(u64, String)> = t
            .learned
            .iter()
            .filter(|l| l.reads.is_some())
            .map(|l| (l.request, touched(&trace, &table, t, l.request).line))
            .collect();
        assert!(
            reads.iter().any(|(request, _)| *request == 3),
            "rank {}: round 1's receive (request 3) recorded: {reads:?}",
            t.rank
        );
        assert!(reads.iter().all(|(_, line)| *line == sum), "{reads:?}");
    }
    // Killed by the signal: the launcher says so on its standard output, naming the
    // process, so only the program's own line is compared there.
    let program = program_in(mpi, "watch_segv");
    let plain = launch(mpi, 2, &program, &["default"], &[], None);
    let killed = launch(mpi, 2, &program, &["default"], &[], Some(&out));
    assert_eq!(
        killed.output.status.code(),
        plain.output.status.code(),
        "{}\n{}",
        plain.describe(),
        killed.describe()
    );
    assert!(!killed.success(), "{}", killed.describe());
    let first = |r: &Run| r.stdout().lines().next().map(str::to_string);
    assert_eq!(first(&killed), first(&plain));
    assert!(
        first(&plain).is_some_and(|l| l.starts_with("handlers reported as set")),
        "{}",
        plain.describe()
    );
}

#[test]
fn the_programs_own_sigsegv_is_left_as_it_set_it() {
    check_own_sigsegv(Mpi::Default);
}

#[test]
fn the_programs_own_sigsegv_is_left_as_it_set_it_under_open_mpi() {
    if let Some(mpi) = open_mpi() {
        check_own_sigsegv(mpi);
    }
}
