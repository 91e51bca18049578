//! Every traced call under real `mpiexec -n 2` (the `traced_calls` example): what each
//! rank recorded, and how the merge matched it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use overlap_analyzer::import::read_rank_file;
use overlap_analyzer::merge::merge_dir;
use overlap_instrument::schema::{Event, Op};

fn example() -> PathBuf {
    // Examples are built next to the test binaries' directory by `cargo test`.
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let p = dir.join("examples").join("traced_calls");
    assert!(
        p.is_file(),
        "{} not built (cargo test builds examples)",
        p.display()
    );
    p
}

#[test]
fn every_call_is_recorded_and_every_message_matched() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new("mpiexec")
        .args(["-n", "2"])
        .arg(example())
        .arg(dir.path())
        .output()
        .expect("mpiexec runs");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome = merge_dir(dir.path()).expect("merges");
    assert!(outcome.unreadable.is_empty());
    let m = &outcome.merged;
    assert!(m.info.incomplete.is_empty(), "{:?}", m.info.incomplete);

    // The calls as recorded, read from the rank files (the merge keeps compact timelines).
    for t in &m.timelines {
        let file = dir.path().join(format!("rank-{}.ovlp", t.rank));
        let a = read_rank_file(&file).expect("a rank file");
        let mut ops: BTreeMap<Op, usize> = BTreeMap::new();
        let mut tests_done = 0;
        for e in &a.events {
            if let Event::Call(c) = e {
                *ops.entry(c.op).or_default() += 1;
                if c.op == Op::Test && c.args.flag == Some(1) {
                    tests_done += 1;
                    assert_eq!(c.args.completed.len(), 1);
                }
                if c.op == Op::Test && c.args.flag == Some(0) {
                    assert!(c.args.completed.is_empty());
                }
            }
        }
        let r = a.rank();
        let get = |op| ops.get(&op).copied().unwrap_or(0);
        // Rank 0: Send(tag 1), Isend(3), Irecv(4), Recv(5, reversed comm); rank 1 the
        // mirror. Both: Sendrecv, Wait, Test(s), Allreduce, Barrier.
        assert_eq!(get(Op::Send), 1, "rank {r} Send (tag 1 or tag 5)");
        assert_eq!(get(Op::Recv), 1, "rank {r} Recv (tag 1 or tag 5)");
        assert_eq!(get(Op::Sendrecv), 1, "rank {r}");
        assert_eq!(get(Op::Isend) + get(Op::Irecv), 2, "rank {r}");
        assert_eq!(get(Op::Wait), 1, "rank {r}");
        assert_eq!(tests_done, 1, "rank {r}: one Test completed");
        assert_eq!(get(Op::Allreduce), 1, "rank {r}");
        assert_eq!(get(Op::Barrier), 1, "rank {r}");
        let names: Vec<&str> = a
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Compute(c) => Some(c.name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, vec!["guard-span", "layer-span"], "rank {r}");
        let allreduce = a
            .events
            .iter()
            .find_map(|e| match e {
                Event::Call(c) if c.op == Op::Allreduce => Some(c),
                _ => None,
            })
            .expect("allreduce");
        assert_eq!(allreduce.args.send_bytes, Some(32));
    }

    // tag 1, tag 2 (x2), tag 3, tag 4, tag 5: six messages, all matched, none suspect.
    assert_eq!(m.info.messages, 6);
    assert_eq!(m.info.unmatched_sends, 0);
    assert_eq!(m.info.unmatched_receives, 0);
    assert!(m.info.clock_suspect.is_empty());
    let tag5 = m
        .messages
        .iter()
        .find(|x| x.tag == 5)
        .expect("tag 5 matched");
    // Sent by world rank 1 (comm rank 0 of the reversed communicator) to world rank 0.
    assert_eq!((tag5.send().rank, tag5.recv_post().rank), (1, 0));
    let call = |r: overlap_analyzer::model::EventRef| {
        let t = &m.timelines[r.rank as usize];
        let (op, c) = t.call(r.index).expect("a call");
        (op, c.clone(), t.completions(c).len())
    };
    let (_, send, _) = call(tag5.send());
    assert_eq!((send.peer(), send.comm), (Some(0), 1));
    let tag4 = m
        .messages
        .iter()
        .find(|x| x.tag == 4)
        .expect("tag 4 matched");
    let done = tag4.completion().expect("completed");
    let (op, _, completed) = call(done);
    assert_eq!(
        (op, completed),
        (Op::Test, 1),
        "a Test that completed its request"
    );
}
