//! `overlap run toeplitz` under real `mpiexec`: every variant verifies its product, the
//! merged trace holds the calls the variant issues (MPI_Sendrecv for blocking,
//! MPI_Irecv/MPI_Isend/MPI_Wait for the others), and only the overlapped variant
//! computes between the posts and the waits (the non-blocking one computes the same
//! interior and boundary after the waits). A corrupted halo fails the run.

use overlap_analyzer::import::read_merged;
use overlap_analyzer::model::MergedTrace;
use overlap_instrument::schema::{Event, Op};

use crate::traces::{calls, computes, count};
use crate::util::{run_kernel, Run};

const ITERS: usize = 3;

/// 240 rows, lambda 8 unless `extra` says otherwise: blocks of 60 or 120 rows, so every
/// block has an interior.
fn run(ranks: u32, variant: &str, out: &std::path::Path, extra: &[&str]) -> Run {
    let iters = ITERS.to_string();
    let mut args = vec!["--variant", variant, "--iters", &iters];
    for (flag, value) in [("--size", "240"), ("--lambda", "8"), ("--vectors", "3")] {
        if !extra.contains(&flag) {
            args.extend([flag, value]);
        }
    }
    args.extend_from_slice(extra);
    run_kernel("toeplitz", ranks, out, &args)
}

/// The relative error the run printed, which must be within the kernel's tolerance.
fn relative_error(stdout: &str) -> f64 {
    let after = stdout
        .split("verified against the serial product: relative error ")
        .nth(1)
        .unwrap_or_else(|| panic!("no verification line in:\n{stdout}"));
    after
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number after 'relative error' in:\n{stdout}"))
}

fn run_and_read(ranks: u32, variant: &str, extra: &[&str]) -> MergedTrace {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join(format!("tp-{variant}-{ranks}.json"));
    let r = run(ranks, variant, &out, extra);
    assert!(r.success(), "{}", r.describe());
    let err = relative_error(&r.stdout());
    assert!(err <= 1e-12, "relative error {err:e}\n{}", r.describe());
    assert!(
        r.stdout()
            .contains(&format!("toeplitz ({variant}): {ranks} ranks")),
        "{}",
        r.describe()
    );
    read_merged(&out).expect("merged trace reads back")
}

/// Per rank and iteration: blocking issues two MPI_Sendrecv; the others two MPI_Irecv,
/// two MPI_Isend and four MPI_Wait. The ends talk to MPI_PROC_NULL (a negative peer)
/// on their open side, as MIDAPACK does, so every rank issues the same calls.
fn check_counts(t: &MergedTrace, ranks: u32, variant: &str) {
    assert_eq!(t.info.world_size, ranks);
    for rank in 0..ranks {
        let (sendrecv, posts, waits) = match variant {
            "blocking" => (2 * ITERS, 0, 0),
            _ => (0, 2 * ITERS, 4 * ITERS),
        };
        assert_eq!(
            count(t, rank, Op::Sendrecv),
            sendrecv,
            "rank {rank} Sendrecv"
        );
        assert_eq!(count(t, rank, Op::Isend), posts, "rank {rank} Isend");
        assert_eq!(count(t, rank, Op::Irecv), posts, "rank {rank} Irecv");
        assert_eq!(count(t, rank, Op::Wait), waits, "rank {rank} Wait");
        assert_eq!(count(t, rank, Op::Waitall), 0, "rank {rank} Waitall");
        assert_eq!(
            count(t, rank, Op::Barrier),
            1,
            "rank {rank}: one barrier before"
        );
        assert_eq!(
            count(t, rank, Op::Allreduce),
            2,
            "rank {rank}: two reductions after"
        );
        let (product, interior) = match variant {
            "blocking" => (ITERS, 0),
            _ => (0, ITERS),
        };
        assert_eq!(computes(t, rank, "product"), product, "rank {rank}");
        assert_eq!(computes(t, rank, "interior"), interior, "rank {rank}");
        assert_eq!(computes(t, rank, "boundary"), interior, "rank {rank}");
        // Sends to MPI_PROC_NULL: the first rank's to the left, the last rank's to the
        // right, once per iteration; none in between.
        let null_sends = calls(t, rank)
            .iter()
            .filter(|c| c.op.sends() && c.args.peer.is_some_and(|p| p < 0))
            .count();
        let open_sides = usize::from(rank == 0) + usize::from(rank == ranks - 1);
        assert_eq!(
            null_sends,
            open_sides * ITERS,
            "rank {rank} sends to MPI_PROC_NULL"
        );
    }
    // One message each way between neighbours per iteration, each with its arrow
    // between neighbouring ranks. (The receives from MPI_PROC_NULL at the two ends
    // carry no message; the merge may count them as unmatched receives.)
    let messages = 2 * (ranks as usize - 1) * ITERS;
    assert_eq!(t.info.messages as usize, messages);
    assert_eq!(t.info.unmatched_sends, 0);
    assert!(t.info.unmatched_receives as usize <= 2 * ITERS);
    assert_eq!(t.flows.len(), messages);
    for f in &t.flows {
        let to = f.to.expect("every flow has an end");
        assert_eq!(f.from.rank.abs_diff(to.rank), 1, "flow {f:?}");
    }
}

/// Overlapped: each interior span comes after the last post and before the first wait.
/// Non-blocking: nothing is computed between a post and the waits (false overlap); the
/// interior comes after the last wait, the boundary right after it.
fn check_placement(t: &MergedTrace, ranks: u32, variant: &str) {
    for rank in 0..ranks {
        let events = &t.events[&rank];
        let op_at = |i: usize| match &events[i] {
            Event::Call(c) => Some(c.op),
            _ => None,
        };
        for (i, e) in events.iter().enumerate() {
            match (variant, e) {
                ("overlapped", Event::Compute(c)) if c.name == "interior" => {
                    assert_eq!(op_at(i - 1), Some(Op::Isend), "rank {rank}: before {i}");
                    assert_eq!(op_at(i + 1), Some(Op::Wait), "rank {rank}: after {i}");
                }
                ("nonblocking", Event::Call(c)) if c.op == Op::Isend => {
                    assert!(
                        op_at(i + 1).is_some(),
                        "rank {rank}: compute after post {i}"
                    );
                }
                ("nonblocking", Event::Compute(c)) if c.name == "interior" => {
                    assert_eq!(op_at(i - 1), Some(Op::Wait), "rank {rank}: before {i}");
                    let next = match &events[i + 1] {
                        Event::Compute(n) => n.name.as_str(),
                        _ => "a call",
                    };
                    assert_eq!(next, "boundary", "rank {rank}: after {i}");
                }
                _ => {}
            }
        }
    }
}

fn check(ranks: u32, variant: &str, extra: &[&str]) {
    let t = run_and_read(ranks, variant, extra);
    check_counts(&t, ranks, variant);
    check_placement(&t, ranks, variant);
}

#[test]
fn blocking_on_2_ranks() {
    check(2, "blocking", &[]);
}

#[test]
fn blocking_on_4_ranks() {
    check(4, "blocking", &[]);
}

#[test]
fn nonblocking_on_2_ranks() {
    check(2, "nonblocking", &[]);
}

#[test]
fn nonblocking_on_4_ranks() {
    check(4, "nonblocking", &["--product", "fft"]);
}

#[test]
fn overlapped_on_2_ranks() {
    check(2, "overlapped", &["--product", "fft"]);
}

#[test]
fn overlapped_on_4_ranks() {
    check(4, "overlapped", &[]);
}

#[test]
fn a_corrupted_halo_fails_the_run_loudly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("fault.json");
    let r = run(2, "overlapped", &out, &["--fault-rank", "1"]);
    assert!(!r.success(), "{}", r.describe());
    r.assert_stderr_has("the Toeplitz product differs from the serial product");
    r.assert_stderr_has("overlap: the kernel run failed");
}

#[test]
fn a_band_wider_than_a_block_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("wide.json");
    let r = run(4, "blocking", &out, &["--lambda", "80"]);
    assert!(!r.success(), "{}", r.describe());
    r.assert_stderr_has("invalid option: --lambda (80) is larger than the smallest block");
}
