//! The run id under real MPI: every rank of one `overlap trace` (preload) or `overlap
//! run` (Rust layer) run carries the same id, chosen by rank 0 and broadcast at
//! MPI_Init without appearing as a traced call; two runs differ; and `overlap merge` of
//! a directory holding rank files of two runs refuses, naming the files.

use std::path::Path;

use overlap_analyzer::import::{read_merged, read_rank_file};
use overlap_instrument::schema::{Event, Op};

use crate::trace::{program, trace};
use crate::util::{overlap, run_false_overlap};

/// The run ids of `dir`'s two rank files.
fn run_ids(dir: &Path) -> [String; 2] {
    [0, 1].map(|r| {
        let t = read_rank_file(&dir.join(format!("rank-{r}.ovlp"))).expect("rank file reads");
        assert!(
            t.header.start_unix_ns > 1_600_000_000_000_000_000,
            "a wall-clock start"
        );
        t.header.run_id
    })
}

#[test]
fn ranks_of_one_traced_run_share_its_id_and_a_mixed_directory_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    for out in [&a, &b] {
        let run = trace(2, &program("calls"), out);
        assert!(run.success(), "{}", run.describe());
    }
    let ids_a = run_ids(&dir.path().join("a.ranks"));
    let ids_b = run_ids(&dir.path().join("b.ranks"));
    assert_eq!(ids_a[0], ids_a[1]);
    assert_eq!(ids_b[0], ids_b[1]);
    assert_eq!(ids_a[0].len(), 16, "{ids_a:?}");
    assert!(ids_a[0].bytes().all(|c| c.is_ascii_hexdigit()), "{ids_a:?}");
    assert_ne!(ids_a[0], ids_b[0], "two runs, two ids");
    let merged = read_merged(&a).expect("merged");
    assert_eq!(merged.info.run_id, ids_a[0]);
    // The broadcast is the recorder's: the program's one MPI_Bcast is all there is.
    for (rank, events) in &merged.events {
        let bcasts = events
            .iter()
            .filter(|e| matches!(e, Event::Call(c) if c.op == Op::Bcast))
            .count();
        assert_eq!(bcasts, 1, "rank {rank}");
    }

    // Rank 1 of run b dropped into run a's directory.
    let ranks_a = dir.path().join("a.ranks");
    std::fs::copy(
        dir.path().join("b.ranks/rank-1.ovlp"),
        ranks_a.join("rank-1.ovlp"),
    )
    .expect("copy");
    let out = dir.path().join("mixed.json");
    let run = overlap(&[
        "merge",
        ranks_a.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(!run.success(), "{}", run.describe());
    let from = |file: &str, id: &str| format!("{file} from run {id}, program \"calls\"");
    run.assert_stderr_has("the rank files are not from one run (they differ in run id)");
    run.assert_stderr_has(&from("rank-0.ovlp", &ids_a[0]));
    run.assert_stderr_has(&from("rank-1.ovlp", &ids_b[0]));
    run.assert_stderr_has("a reused trace directory? remove the old files");
    assert!(!out.exists(), "nothing merged");
    // Analysing the directory refuses the same way.
    let run = overlap(&["analyze", ranks_a.to_str().expect("utf-8")]);
    assert!(!run.success(), "{}", run.describe());
    run.assert_stderr_has(&from("rank-1.ovlp", &ids_b[0]));
}

#[test]
fn ranks_of_one_kernel_run_share_its_id() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("run.json");
    let run = run_false_overlap(2, "fixed", 2, &out, &[]);
    assert!(run.success(), "{}", run.describe());
    let ids = run_ids(&dir.path().join("run.ranks"));
    assert_eq!(ids[0], ids[1]);
    assert_eq!(ids[0].len(), 16, "{ids:?}");
    assert_eq!(read_merged(&out).expect("merged").info.run_id, ids[0]);
}
