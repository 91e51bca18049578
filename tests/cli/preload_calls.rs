//! `overlap trace` on the test programs that exercise what MPICH does with request
//! handles (tests/programs/handles.c) and the calls beyond point-to-point and classic
//! collectives (tests/programs/nbc_rma.c): every request posted is completed in the
//! merged trace, every call is recorded as many times as the program issued it, window
//! ids agree across ranks, and no time the program spent in MPI counts as useful.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use overlap_analyzer::analysis::analyze;
use overlap_analyzer::import::read_merged;
use overlap_analyzer::load::load;
use overlap_analyzer::metrics::budget::budgets;
use overlap_analyzer::metrics::{Options, WaitKind};
use overlap_instrument::schema::{Event, Op};

use crate::mpis::{open_mpi, program_in, trace_in, untraced_then_traced, Launch, Mpi};
use crate::traces::{calls, counts};
use crate::util::Run;

/// `key=value` words of the stderr lines starting with `prefix`, by rank.
fn reported(run: &Run, prefix: &str) -> BTreeMap<u32, BTreeMap<String, u64>> {
    run.stderr()
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(|l| {
            let fields: BTreeMap<String, u64> = l
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_string(), v.parse().expect("a number")))
                .collect();
            (fields["rank"] as u32, fields)
        })
        .collect()
}

/// The requests of each rank that no call completed and the program did not free, from
/// the analysis of the merged trace at `out` (the merged file draws those up to the
/// rank's end, so its slices always end).
pub(crate) fn never_completed(out: &Path) -> BTreeMap<u32, BTreeSet<u64>> {
    requests_where(out, |r| r.completion().is_none() && r.freed().is_none())
}

/// The requests of each rank that the program freed before any call completed them.
fn freed(out: &Path) -> BTreeMap<u32, BTreeSet<u64>> {
    requests_where(out, |r| r.freed().is_some())
}

fn requests_where(
    out: &Path,
    keep: impl Fn(&overlap_analyzer::model::RequestLife) -> bool,
) -> BTreeMap<u32, BTreeSet<u64>> {
    let loaded = load(out, &mut |_, _| {}).expect("the merged trace loads");
    let mut found: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
    for r in loaded.trace.requests.iter().filter(|r| keep(r)) {
        found.entry(r.rank).or_default().insert(r.request());
    }
    found
}

fn check_handles(mpi: Mpi, ranks: u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("handles.json");
    let run = trace_in(mpi, ranks, &program_in(mpi, "handles"), &[], &[], &out);
    assert!(run.success(), "{}", run.describe());
    let posted = reported(&run, "posted ");
    assert_eq!(posted.len(), ranks as usize, "{}", run.describe());
    assert!(
        posted.values().all(|p| p["shared"] == 1),
        "the MPI gave live requests one shared handle (the case under test): {posted:?}"
    );
    let t = read_merged(&out).expect("merged trace reads back");
    assert_eq!(
        never_completed(&out),
        BTreeMap::new(),
        "all completed or freed"
    );
    let let_go = freed(&out);
    for (rank, p) in &posted {
        let mine = t.requests.iter().filter(|r| r.rank == *rank).count();
        assert_eq!(mine as u64, p["requests"], "rank {rank}: every post");
        // The two sends the program lets go with Request_free have no completion: the
        // program never learns when they end, and the analysis names them freed. Every
        // other request completed, the 200 windows of 64 sends included.
        let freed: BTreeSet<u64> = calls(&t, *rank)
            .iter()
            .filter(|c| c.op == Op::RequestFree)
            .filter_map(|c| c.args.request)
            .collect();
        assert_eq!(freed.len(), 2, "rank {rank}");
        assert_eq!(let_go.get(rank), Some(&freed), "rank {rank}");
    }
    assert_eq!((t.info.unmatched_sends, t.info.unmatched_receives), (0, 0));
    run.assert_records_every_call();
}

#[test]
fn requests_sharing_a_handle_are_all_completed_on_2_and_4_ranks() {
    check_handles(Mpi::Default, 2);
    check_handles(Mpi::Default, 4);
}

#[test]
fn requests_sharing_a_handle_are_all_completed_under_open_mpi() {
    let Some(mpi) = open_mpi() else { return };
    check_handles(mpi, 2);
    check_handles(mpi, 4);
}

fn check_nbc_rma(mpi: Mpi, ranks: u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("nbc_rma.json");
    let (_, run) = untraced_then_traced(&Launch::of(mpi), ranks, "nbc_rma", &out);
    // Communicator constructors are recorded now; packing is not.
    // Each rank packs and unpacks once.
    run.assert_stderr_has(&format!(
        "this program calls MPI functions overlap does not record: MPI_Pack ×{ranks}, \
         MPI_Unpack ×{ranks}; time inside them counts as computation",
    ));
    let issued = reported(&run, "issued ");
    let in_mpi = reported(&run, "in_mpi ");
    let t = read_merged(&out).expect("merged trace reads back");

    // Every call recorded, as many times as issued.
    for (rank, got) in counts(&t) {
        let mut want: BTreeMap<Op, usize> = issued[&rank]
            .iter()
            .filter(|(k, _)| *k != "rank")
            .map(|(k, v)| {
                let op = Op::from_mpi_name(k).unwrap_or_else(|| panic!("{k} is an Op"));
                (op, *v as usize)
            })
            .collect();
        want.insert(Op::Init, 1);
        want.insert(Op::Finalize, 1);
        assert_eq!(got, want, "rank {rank}\n{}", run.describe());
    }

    // Every request completed: 8 non-blocking collectives, 9 persistent starts (where the
    // MPI has persistent collectives: MPI 4), Rput, Rget and Raccumulate per rank.
    let persistent = issued[&0].contains_key("MPI_Allreduce_init");
    let per_rank = 11 + if persistent { 9 } else { 0 };
    assert_eq!(t.requests.len(), (per_rank * ranks) as usize);
    assert_eq!(never_completed(&out), BTreeMap::new(), "all completed");

    check_windows(&t, ranks, persistent);

    // No MPI time counts as useful: the analysis' time in MPI of each rank is at least
    // what the program measured around its calls, but for the recording's own cost
    // (the program's clock also runs while the preload stamps and records).
    let loaded = load(&out, &mut |_, _| {}).expect("loads");
    let (per_rank, _) = budgets(&loaded.trace);
    for b in &per_rank {
        let program = &in_mpi[&b.rank];
        let slack = 5_000_000 + 200_000 * program["calls"];
        assert!(
            b.in_mpi_ns + slack >= program["ns"],
            "rank {}: {} ns in MPI in the analysis, {} ns measured by the program",
            b.rank,
            b.in_mpi_ns,
            program["ns"]
        );
    }
    check_waits_explained(&loaded.trace, &per_rank, persistent);
}

/// Rank 0 sleeps 30 ms before its Ibarrier, its first persistent Allreduce start (MPI
/// 4), a fence, and each of its two exposure epochs (Win_post): the others' waits there
/// are wait states of the right kind, each at least most of the sleep, and no rank's
/// wait states exceed its time in MPI.
fn check_waits_explained(
    trace: &overlap_analyzer::model::Trace,
    per_rank: &[overlap_analyzer::metrics::RankBudget],
    persistent: bool,
) {
    let (report, details) = analyze(trace, &Options::default());
    // Every wait names the peer's call it waited for; each nap shows as a wait of at
    // least most of it on rank 0's call after the sleep.
    let cause = |w: &overlap_analyzer::metrics::WaitInstance| {
        let e = overlap_analyzer::model::EventRef {
            rank: w.peer?,
            index: w.peer_index?,
        };
        trace.span(e)?.op()
    };
    for w in &details.waits {
        assert!(cause(w).is_some(), "{w:?} names no call of its peer");
    }
    let naps = [
        (WaitKind::WaitAtBarrier, Op::Ibarrier),
        (WaitKind::WaitAtNxN, Op::Start),
        (WaitKind::WaitAtFence, Op::WinFence),
        (WaitKind::LatePost, Op::WinPost),
    ];
    for (kind, call) in naps.into_iter().filter(|n| persistent || n.1 != Op::Start) {
        assert!(
            details.waits.iter().any(|w| w.kind == kind
                && w.peer == Some(0)
                && w.amount_ns >= 25_000_000
                && cause(w) == Some(call)),
            "no {kind:?} of 25 ms or more caused by rank 0's {call:?}"
        );
    }
    let total = |kind: WaitKind| {
        let k = report.wait_states.kinds.iter().find(|k| k.kind == kind);
        k.map_or(0, |k| k.total_ns)
    };
    let nap = 25_000_000;
    for (kind, naps) in [
        (WaitKind::WaitAtBarrier, 1),
        (WaitKind::WaitAtNxN, u64::from(persistent)),
        (WaitKind::WaitAtFence, 1),
        (WaitKind::LatePost, 2),
    ] {
        assert!(
            total(kind) >= naps * nap,
            "{kind:?}: {} ns, want at least {naps} x {nap}",
            total(kind)
        );
    }
    for b in per_rank {
        let waits = report.wait_states.per_rank_ns.get(&b.rank).copied();
        assert!(
            waits.unwrap_or(0) <= b.in_mpi_ns,
            "rank {}: wait states {waits:?} ns, in MPI {} ns",
            b.rank,
            b.in_mpi_ns
        );
    }
}

/// Both windows have one id on every rank, different from each other; accesses name
/// their window and their target as a world rank; Win_start and Win_post name their
/// group; the exclusive lock says so.
fn check_windows(t: &overlap_analyzer::model::MergedTrace, ranks: u32, persistent: bool) {
    let mut ids: BTreeMap<Op, Vec<Option<u32>>> = BTreeMap::new();
    for rank in 0..ranks {
        let right = ((rank + 1) % ranks) as i32;
        let left = ((rank + ranks - 1) % ranks) as i32;
        let cs = calls(t, rank);
        let created = cs
            .iter()
            .find(|c| c.op == Op::WinCreate)
            .and_then(|c| c.args.win);
        let allocated = cs
            .iter()
            .find(|c| c.op == Op::WinAllocate)
            .and_then(|c| c.args.win);
        ids.entry(Op::WinCreate).or_default().push(created);
        ids.entry(Op::WinAllocate).or_default().push(allocated);
        let mut locks = 0;
        for c in &cs {
            let a = &c.args;
            match c.op {
                Op::Put | Op::Rput => {
                    assert_eq!((a.win, a.peer, a.bytes), (created, Some(right), Some(4)));
                }
                Op::Rget => assert_eq!((a.win, a.peer), (created, Some(left))),
                Op::GetAccumulate => assert_eq!((a.win, a.peer), (allocated, Some(right))),
                Op::WinStart => assert_eq!(a.group, [right], "rank {rank}"),
                Op::WinPost => assert_eq!(a.group, [left], "rank {rank}"),
                Op::WinLock => {
                    // The first lock is exclusive (to the right), the second shared.
                    let exclusive = u8::from(locks == 0);
                    let target = if locks == 0 { right } else { left };
                    assert_eq!((a.exclusive, a.peer), (Some(exclusive), Some(target)));
                    locks += 1;
                }
                Op::Ibcast => assert_eq!(a.root, Some(0)),
                _ => {}
            }
            if c.op.is_window_call() {
                assert!(a.win.is_some(), "rank {rank}: {:?} names its window", c.op);
            }
        }
        let started = cs.iter().filter(|c| c.op == Op::Startall).count();
        assert_eq!(started, if persistent { 3 } else { 0 });
    }
    let created = &ids[&Op::WinCreate];
    let allocated = &ids[&Op::WinAllocate];
    assert!(created[0].is_some() && allocated[0].is_some());
    assert!(created.iter().all(|w| *w == created[0]), "{created:?}");
    assert!(
        allocated.iter().all(|w| *w == allocated[0]),
        "{allocated:?}"
    );
    assert_ne!(created[0], allocated[0]);
    let events = t.events.values().flatten();
    assert_eq!(
        events
            .clone()
            .any(|e| matches!(e, Event::Call(c) if c.op == Op::AllreduceInit)),
        persistent
    );
}

#[test]
fn every_collective_and_one_sided_call_is_recorded_on_2_ranks() {
    check_nbc_rma(Mpi::Default, 2);
}

#[test]
fn every_collective_and_one_sided_call_is_recorded_on_4_ranks() {
    check_nbc_rma(Mpi::Default, 4);
}

#[test]
fn every_collective_and_one_sided_call_is_recorded_under_open_mpi() {
    let Some(mpi) = open_mpi() else { return };
    check_nbc_rma(mpi, 2);
    check_nbc_rma(mpi, 4);
}

#[test]
fn a_program_that_starts_mpi_through_a_session_is_told_why_it_is_not_traced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("session.json");
    let run = trace_in(
        Mpi::Default,
        2,
        &program_in(Mpi::Default, "session"),
        &[],
        &[],
        &out,
    );
    assert!(!run.success(), "nothing to merge");
    run.assert_stdout_has("session: 2 ranks, sum 1");
    run.assert_stderr_has("this program starts MPI through MPI_Session_init");
    run.assert_stderr_has("only through MPI_Session_init are not traced");
    let told = run
        .stderr()
        .matches("starts MPI through MPI_Session_init")
        .count();
    assert_eq!(told, 1, "said once\n{}", run.describe());
}
