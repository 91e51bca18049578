//! Merging hand-built per-rank traces: alignment, matching, flags and missing data, with
//! answers worked out by hand.

use crate::common::*;
use overlap_analyzer::import::read_merged;
use overlap_analyzer::merge::{merge, merge_dir, write_merged, EventRef, Merged};
use overlap_analyzer::summary::merge_to_file;
use overlap_analyzer::summary::summarize;
use overlap_instrument::schema::{Nanos, Op, SyncPhase};

/// Two ranks on different clocks. Rank 1's clock reads 1000 ns less than rank 0's
/// (offset -1000) and its epoch is 9_000 on its clock, i.e. 10_000 on rank 0's, the same
/// instant as rank 0's epoch. So after alignment both ranks' local times are the run's
/// times. Run start = 10_000 (reference clock).
///
/// ```text
/// ns         0    100  200  300  400  500  600  700  800
/// rank 0          |Is1|Is2|           |Send9|     |Waitall(1,2)|  |Send11| |Is77|
///                 100 120             300-360     400-500        600-610  700-710
/// rank 1   |Recv11|  |Ir1|Ir2|   |Recv9 .........|  |Wait(2)|Wait(1)|
///           20-30    50  70      150 ------- 380    390-420  430-450
/// ```
///
/// Messages (non-overtaking per source, destination, tag, comm):
///
/// ```text
/// tag 5:  Isend(req 1) -> Irecv(req 1, posted first), completed by Wait(1) @ 430-450
///         Isend(req 2) -> Irecv(req 2),               completed by Wait(2) @ 390-420
/// tag 9:  Send @ 300 -> Recv @ 150-380
/// tag 11: Send @ 600 -> Recv @ 20-30: completes 570 ns before the send is posted:
///         clock-suspect (backwards by 600 - 30 = 570)
/// tag 77: Isend(req 3) @ 700: never received: unmatched send
/// ```
fn two_ranks() -> Vec<overlap_analyzer::model::RankTrace> {
    let r0 = rank_trace(
        header(0, 2, 10_000, "clock-A"),
        vec![
            sync(SyncPhase::Init, 0, 0, 0),
            sync(SyncPhase::Final, 800, 0, 0),
        ],
        vec![
            isend(100, 110, 1, 5, 8, 1),
            isend(120, 130, 1, 5, 8, 2),
            send(300, 360, 1, 9, 8),
            complete(Op::Waitall, 400, 500, &[(1, None), (2, None)]),
            send(600, 610, 1, 11, 8),
            isend(700, 710, 1, 77, 8, 3),
        ],
    );
    let r1 = rank_trace(
        header(1, 2, 9_000, "clock-B"),
        vec![
            sync(SyncPhase::Init, 0, -1000, 40),
            sync(SyncPhase::Final, 800, -1000, 60),
        ],
        vec![
            recv(20, 30, 0, 11, 8),
            irecv(50, 60, 0, 5, 8, 1),
            irecv(70, 80, 0, 5, 8, 2),
            recv(150, 380, 0, 9, 8),
            complete(Op::Wait, 390, 420, &[(2, Some((0, 5)))]),
            complete(Op::Wait, 430, 450, &[(1, Some((0, 5)))]),
        ],
    );
    vec![r1, r0]
}

fn op_at(m: &Merged, r: EventRef) -> (Op, u64) {
    let t = &m.timelines[r.rank as usize];
    let s = t.spans.get(r.index).expect("event exists");
    (s.op().expect("a call"), s.start.0)
}

#[test]
fn matches_in_non_overtaking_order_and_flags_clock_suspects() {
    let m = merge(two_ranks());
    assert_eq!(
        m.timelines.iter().map(|r| r.rank).collect::<Vec<_>>(),
        vec![0, 1]
    );
    // Both ranks align onto the same times.
    assert_eq!(m.timelines[1].spans[0].start, Nanos(20));
    assert_eq!(m.timelines[0].spans[0].start, Nanos(100));

    let got: Vec<_> = m
        .messages
        .iter()
        .map(|msg| {
            (
                msg.tag,
                op_at(&m, msg.send()),
                op_at(&m, msg.recv_post()),
                msg.completion().map(|c| op_at(&m, c)),
                msg.clock_suspect,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                5,
                (Op::Isend, 100),
                (Op::Irecv, 50),
                Some((Op::Wait, 430)),
                false
            ),
            (
                5,
                (Op::Isend, 120),
                (Op::Irecv, 70),
                Some((Op::Wait, 390)),
                false
            ),
            (
                9,
                (Op::Send, 300),
                (Op::Recv, 150),
                Some((Op::Recv, 150)),
                false
            ),
            (
                11,
                (Op::Send, 600),
                (Op::Recv, 20),
                Some((Op::Recv, 20)),
                true
            ),
        ]
    );
    assert_eq!(m.info.messages, 4);
    assert_eq!(m.info.unmatched_sends, 1);
    assert_eq!(m.info.unmatched_receives, 0);
    assert_eq!(m.info.clock_suspect.len(), 1);
    let s = &m.info.clock_suspect[0];
    assert_eq!((s.send_rank, s.recv_rank, s.tag), (0, 1, 11));
    assert_eq!(
        (s.send_ns, s.recv_complete_ns, s.backwards_ns),
        (600, 30, 570)
    );
    assert_eq!(m.info.max_clock_error_ns, 60);
    assert!(!m.info.ranks[1].shared_clock);
    // Request lifetimes: three posts on rank 0, two on rank 1.
    assert_eq!(m.requests.len(), 5);
    let never: Vec<_> = m
        .requests
        .iter()
        .filter(|r| r.completion().is_none())
        .collect();
    assert_eq!(never.len(), 1);
    assert_eq!((never[0].rank, never[0].request()), (0, 3));
}

#[test]
fn merged_file_has_flows_requests_and_metadata() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("merged.json");
    let m = merge(two_ranks());
    write_merged(&m, &out).expect("written");
    let t = read_merged(&out).expect("read back");
    assert_eq!(t.process_names[&0], "rank 0 (node0)");
    assert_eq!(t.process_names[&1], "rank 1 (node1)");
    // The suspect message is an instant, not an arrow: 3 flows.
    assert_eq!(t.flows.len(), 3);
    // Arrows leave just inside the send's start and enter just inside the end of the
    // call that completed the receive.
    let tag9 = t
        .flows
        .iter()
        .find(|f| f.from.ns == 301)
        .expect("flow from Send@300-360");
    let to = tag9.to.expect("has an end");
    assert_eq!((to.rank, to.ns), (1, 379), "end of Recv 150-380");
    for f in &t.flows {
        assert!(
            f.to.expect("end").ns >= f.from.ns,
            "no arrow points back: {f:?}"
        );
    }
    assert_eq!(t.requests.len(), 5);
    let isend1 = t
        .requests
        .iter()
        .find(|r| r.rank == 0 && r.begin_ns == 100)
        .expect("Isend req 1");
    assert_eq!(isend1.name, "Isend → 1");
    assert_eq!(
        isend1.end_ns,
        Some(500),
        "completed by the Waitall ending at 500"
    );
    let never = t
        .requests
        .iter()
        .find(|r| r.name.ends_with("(never completed)"))
        .expect("req 3");
    assert_eq!(never.end_ns, Some(710));
    assert_eq!(t.info, m.info);
    let text = std::fs::read_to_string(&out).expect("read");
    assert!(text.starts_with("{\"otherData\":"));
    assert!(
        text.contains("\"ph\":\"i\""),
        "clock-suspect instant written"
    );
}

#[test]
fn offsets_are_interpolated_between_init_and_final() {
    // Rank 1's clock falls behind: its offset goes from -1000 at local 0 to -2000 at
    // local 1_000_000. Its Send at local 500_000 lands at 500_000 + 1500 on rank 0's clock.
    //   rank 0 (epoch 1_000):  |Recv 400_000 ... 600_000|
    //   rank 1 (epoch 0):              |Send local 500_000..500_100|
    let r0 = rank_trace(
        header(0, 2, 1_000, "A"),
        vec![sync(SyncPhase::Init, 0, 0, 0)],
        vec![recv(400_000, 600_000, 1, 3, 8)],
    );
    let r1 = rank_trace(
        header(1, 2, 0, "B"),
        vec![
            sync(SyncPhase::Init, 0, -1000, 10),
            sync(SyncPhase::Final, 1_000_000, -2000, 10),
        ],
        vec![send(500_000, 500_100, 0, 3, 8)],
    );
    let m = merge(vec![r0, r1]);
    // Run start: min(1_000 + 0 + 0, 0 + 0 + 1000) = 1_000.
    let send = &m.timelines[1].spans[0];
    assert_eq!(send.start, Nanos(500_000 + 1500 - 1_000));
    assert_eq!(m.timelines[0].spans[0].start, Nanos(400_000));
    assert_eq!(m.messages.len(), 1);
    assert!(!m.messages[0].clock_suspect);
    assert_eq!(
        m.info.ranks[1].drift_ppb,
        Some(-1e6),
        "rank 1's clock runs slow"
    );
}

#[test]
fn ranks_sharing_rank_0s_clock_are_not_corrected() {
    // Same clock domain: the measured offset (+777 ± 50) is noise and is not applied.
    let r0 = rank_trace(
        header(0, 2, 5_000, "boot-1"),
        vec![sync(SyncPhase::Init, 0, 0, 0)],
        vec![send(10, 20, 1, 0, 8)],
    );
    let r1 = rank_trace(
        header(1, 2, 5_000, "boot-1"),
        vec![sync(SyncPhase::Init, 0, 777, 50)],
        vec![recv(15, 30, 0, 0, 8)],
    );
    let m = merge(vec![r0, r1]);
    assert_eq!(m.timelines[1].spans[0].start, Nanos(15));
    assert!(m.info.ranks[1].shared_clock);
    assert_eq!(
        m.info.ranks[1].init_offset_ns, 777,
        "the measurement is still reported"
    );
    assert_eq!(m.info.max_clock_error_ns, 0);
}

#[test]
fn a_single_rank_merges_alone() {
    let r0 = rank_trace(
        header(0, 1, 0, "A"),
        vec![],
        vec![compute(0, 100, "solve"), barrier(100, 110)],
    );
    let m = merge(vec![r0]);
    assert_eq!(m.messages.len(), 0);
    let s = summarize(&m.to_trace(std::path::Path::new("x")));
    assert_eq!(s.ranks[0].compute_ns, 100);
    assert_eq!(s.ranks[0].waiting_ns, 10);
    assert_eq!(s.wall, Nanos(110));
}

#[test]
fn summary_splits_compute_mpi_and_waiting() {
    // rank 0: |compute 0-100|Isend 100-110|compute 110-300|Waitall 300-400|
    //   wall 400, compute 290, in MPI 110, waiting 100 (the Waitall)
    let r0 = rank_trace(
        header(0, 1, 0, "A"),
        vec![],
        vec![
            compute(0, 100, "pack"),
            isend(100, 110, 0, 1, 8, 1),
            compute(110, 300, "compute"),
            complete(Op::Waitall, 300, 400, &[(1, None)]),
        ],
    );
    let s = summarize(&merge(vec![r0]).to_trace(std::path::Path::new("x")));
    let r = &s.ranks[0];
    assert_eq!(
        (r.wall_ns, r.compute_ns, r.in_mpi_ns, r.waiting_ns),
        (400, 290, 110, 100)
    );
    assert_eq!(r.calls[&Op::Isend], 1);
    assert!(s.to_table().contains("72.5%"), "{}", s.to_table());
}

#[test]
fn truncated_and_missing_ranks_are_reported_and_the_rest_merged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut ranks = two_ranks();
    ranks.sort_by_key(|r| r.rank());
    // Rank 0 complete; rank 1 cut short (no footer, no ']'); world of 3: rank 2 missing.
    let mut r0 = ranks[0].clone();
    r0.header.size = 3;
    let mut r1 = ranks[1].clone();
    r1.header.size = 3;
    write_rank_file(dir.path(), &r0, true);
    write_rank_file(dir.path(), &r1, false);
    std::fs::write(dir.path().join("rank-9.json"), "not a trace").expect("write");
    std::fs::write(dir.path().join("merged.json"), "{}").expect("not a rank file: ignored");
    let outcome = merge_dir(dir.path()).expect("merges what it can");
    let m = &outcome.merged;
    assert_eq!(m.timelines.len(), 2);
    assert_eq!(m.info.missing_ranks, vec![2]);
    assert_eq!(m.info.incomplete.len(), 1);
    assert_eq!(m.info.incomplete[0].rank, 1);
    assert!(m.info.incomplete[0].file.ends_with("rank-1.json"));
    assert_eq!(m.info.incomplete[0].events_read, 6);
    assert!(m.info.incomplete[0].reason.contains("without its footer"));
    assert_eq!(outcome.unreadable.len(), 1);
    assert!(outcome.unreadable[0].path.ends_with("rank-9.json"));
    assert_eq!(m.info.messages, 4);
}

#[test]
fn nothing_to_merge_is_an_empty_run_not_a_panic() {
    let m = merge(Vec::new());
    assert!(m.timelines.is_empty());
    assert_eq!((m.info.world_size, m.info.messages), (0, 0));
    assert_eq!(
        summarize(&m.to_trace(std::path::Path::new("x"))).wall,
        Nanos(0)
    );
}

/// `merge_dir` keeps only the compact timelines and reads each rank file again as it
/// writes the merged file: the file is the one a merge held in memory writes, byte for
/// byte, events in each rank's order of start. So is the file of `merge_to_file`, which
/// holds one rank at a time and sets the message ends aside on disk (the clock-suspect
/// message and the unmatched send of [`two_ranks`] included), leaving nothing behind.
#[test]
fn the_merged_file_from_rank_files_is_the_one_from_memory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ranks = dir.path().join("run.ranks");
    std::fs::create_dir(&ranks).expect("ranks dir");
    for t in two_ranks() {
        write_rank_file(&ranks, &t, true);
    }
    let (from_files, from_memory) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let outcome = merge_dir(&ranks).expect("merges");
    write_merged(&outcome.merged, &from_files).expect("written from the files");
    write_merged(&merge(two_ranks()), &from_memory).expect("written from memory");
    let (a, b) = (
        std::fs::read(&from_files).expect("a"),
        std::fs::read(&from_memory).expect("b"),
    );
    assert!(a == b, "the two merged files differ");
    let streamed = dir.path().join("c.json");
    let written = merge_to_file(&ranks, &streamed).expect("merged one rank at a time");
    assert!(
        std::fs::read(&streamed).expect("c") == a,
        "merge_to_file's file differs"
    );
    let info = &written.info;
    assert_eq!((info.messages, info.unmatched_sends), (4, 1));
    assert_eq!(info.clock_suspect.len(), 1);
    let left = std::fs::read_dir(dir.path()).expect("dir").count();
    assert_eq!(
        left, 4,
        "the rank directory and three merged files, no temporary file"
    );
}

/// A rank file deleted or rewritten between the merge and the writing of the merged
/// file is named, and nothing is written.
#[test]
fn a_rank_file_changed_before_the_write_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ranks = dir.path().join("run.ranks");
    std::fs::create_dir(&ranks).expect("ranks dir");
    let traces = two_ranks();
    let files: Vec<_> = traces
        .iter()
        .map(|t| write_rank_file(&ranks, t, true))
        .collect();
    let out = dir.path().join("merged.json");

    let outcome = merge_dir(&ranks).expect("merges");
    // Rank 1's file loses its last event (the file of `traces[0]`, rank 1).
    let mut shorter = traces[0].clone();
    shorter.events.pop();
    write_rank_file(&ranks, &shorter, true);
    let e = write_merged(&outcome.merged, &out).expect_err("a changed file");
    let text = e.to_string();
    assert!(text.contains("changed since it was read"), "{text}");
    assert!(text.contains(&files[0].display().to_string()), "{text}");
    assert!(!out.exists());

    let outcome = merge_dir(&ranks).expect("merges again");
    std::fs::remove_file(&files[1]).expect("remove rank 0's file");
    let e = write_merged(&outcome.merged, &out).expect_err("a file gone");
    assert!(
        e.to_string().contains(&files[1].display().to_string()),
        "{e}"
    );
    assert!(!out.exists());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left.len(), 1, "no temporary file left: {left:?}");
}
