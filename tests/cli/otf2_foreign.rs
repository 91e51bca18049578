//! An OTF2 archive written by another writer, as Score-P writes them: a script using
//! the OTF2 library's Python bindings (python3-otf2, for Debian's /usr/bin/python3)
//! emits a 4-rank halo exchange, which `overlap analyze` reads with the verdicts its
//! timeline makes (times in microseconds, timer resolution 1e6, from T0):
//!
//! ```text
//!  rank 0  |Irecv x2|~~~~~~~~~ stencil ~~~~~~~~~|Isend x2 @5000|Waitall|~boundary~|Barrier|
//!  rank 1  |Irecv x2|Isend x2|~~~ stencil ~~~|Waitall 3000 ......... 5003|~boundary~|Barrier|
//!  rank 2  |Irecv x2|Isend x2|Waitall 204..1704|~ stencil ~|Waitall 2900..3003|~boundary~|...
//!  rank 3  |Irecv x2|~~~~ stencil ~~~~|Isend x2 @3000|Waitall 3002 ....... 5004|~boundary~|...
//! ```
//!
//! - Late Sender, rank 1 from rank 0: its Waitall enters at 3000, rank 0 sends to it at
//!   5001: 2001 us; rank 3 from rank 0: 5000 - 3002 = 1998 us; rank 2 from rank 3: 3000
//!   - 2900 = 100 us.
//! - False overlap, rank 2: its sends are waited for at once (204 to 1704, 1500 us)
//!   with the stencil's compute after the wait: the largest finding. Rank 1, which
//!   computes between its posts and its wait, has none.
//! - Compute is the exclusive time of the program's regions (`main` encloses every
//!   call), named with their source lines: on rank 0, main's 101 to 200, the stencil's
//!   202 to 5000 and the boundary's 5003 to 6000, 5894 us; `MPI_Pack` (100 to 101),
//!   which overlap does not model, is neither compute nor a call.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::otf2::otf2_print_counts;
use crate::util::overlap;

/// The writer: `python3 halo.py ARCHIVE_DIR`.
const HALO_PY: &str = r#"# A 4-rank halo exchange written as Score-P would, by the OTF2 library's Python
# bindings: ring neighbours, one step. Times in microseconds (timer resolution 1e6),
# from T0.
import sys
import otf2
from otf2.enums import Paradigm, RegionRole, GroupType, CollectiveOp

T0 = 1_000_000
path = sys.argv[1]
with otf2.writer.open(path, timer_resolution=1_000_000) as trace:
    d = trace.definitions
    root = d.system_tree_node("machine")
    node = d.system_tree_node("node0", parent=root)
    locs = []
    for r in range(4):
        g = d.location_group("MPI Rank %d" % r, system_tree_parent=node)
        locs.append(d.location("Master thread", group=g))
    d.group("COMM_WORLD locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
    world = d.comm("MPI_COMM_WORLD", group=d.group("MPI_COMM_WORLD", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI, members=list(range(4))))

    def mpi(name, role=RegionRole.POINT2POINT):
        return d.region(name, region_role=role, paradigm=Paradigm.MPI)

    init, fin = mpi("MPI_Init", RegionRole.FUNCTION), mpi("MPI_Finalize", RegionRole.FUNCTION)
    irecv, isend, waitall = mpi("MPI_Irecv"), mpi("MPI_Isend"), mpi("MPI_Waitall")
    barrier = mpi("MPI_Barrier", RegionRole.BARRIER)
    pack = mpi("MPI_Pack", RegionRole.FUNCTION)
    main = d.region("main", region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER, source_file="halo.c", begin_line_number=20)
    stencil = d.region("stencil", region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER, source_file="halo.c", begin_line_number=60)
    boundary = d.region("boundary", region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER, source_file="halo.c", begin_line_number=80)

    BYTES, TAG = 4 << 20, 7
    # Per rank: (when its sends are posted, when its Waitall starts, compute before the
    # sends (late sender), compute between posts and wait).
    #  rank 0 computes first and sends late (at 5000): ranks 1 and 3 wait for it (Late
    #  Sender); rank 2 waits at once after its posts (false overlap) for rank 3, which
    #  also sends late (at 3000).
    plan = {
        0: dict(sends=5000, wait=5002, wait_end=5003, pre="stencil", mid=None),
        1: dict(sends=202, wait=3000, wait_end=5003, pre=None, mid="stencil"),
        2: dict(sends=202, wait=2900, wait_end=3003, pre=None, mid="stencil", send_wait=1704),
        3: dict(sends=3000, wait=3002, wait_end=5004, pre="stencil", mid=None),
    }
    for r in range(4):
        w = trace.event_writer_from_location(locs[r])
        left, right = (r + 3) % 4, (r + 1) % 4
        p = plan[r]
        t = lambda us: T0 + us
        w.enter(t(0), main)
        w.enter(t(0), init); w.leave(t(100), init)
        w.enter(t(100), pack); w.leave(t(101), pack)
        w.enter(t(200), irecv); w.mpi_irecv_request(t(200), 1); w.leave(t(201), irecv)
        w.enter(t(201), irecv); w.mpi_irecv_request(t(201), 2); w.leave(t(202), irecv)
        if p["pre"]:
            w.enter(t(202), stencil); w.leave(t(p["sends"]), stencil)
        s = p["sends"]
        w.enter(t(s), isend); w.mpi_isend(t(s), left, world, TAG, BYTES, 3); w.leave(t(s + 1), isend)
        w.enter(t(s + 1), isend); w.mpi_isend(t(s + 1), right, world, TAG, BYTES, 4); w.leave(t(s + 2), isend)
        sends_done = "send_wait" in p
        if sends_done:
            # False overlap: the sends waited for at once, the stencil after.
            sw = p["send_wait"]
            w.enter(t(s + 2), waitall)
            w.mpi_isend_complete(t(sw), 3)
            w.mpi_isend_complete(t(sw), 4)
            w.leave(t(sw), waitall)
            w.enter(t(sw), stencil); w.leave(t(p["wait"]), stencil)
        elif p["mid"]:
            w.enter(t(s + 2), stencil); w.leave(t(p["wait"]), stencil)
        w.enter(t(p["wait"]), waitall)
        e = p["wait_end"]
        w.mpi_irecv(t(e), left, world, TAG, BYTES, 1)
        w.mpi_irecv(t(e), right, world, TAG, BYTES, 2)
        if not sends_done:
            w.mpi_isend_complete(t(e), 3)
            w.mpi_isend_complete(t(e), 4)
        w.leave(t(e), waitall)
        w.enter(t(e), boundary); w.leave(t(6000), boundary)
        w.enter(t(6000), barrier); w.mpi_collective_begin(t(6000))
        w.mpi_collective_end(t(6010), CollectiveOp.BARRIER, world, 0xFFFFFFFF, 0, 0)
        w.leave(t(6010), barrier)
        w.enter(t(6010), fin); w.leave(t(6100), fin)
        w.leave(t(6100), main)
"#;

/// `(rank, peer, amount_ns)` of the worst findings of wait state `kind` in the JSON
/// report `r`, sorted (none when the report has no such kind).
pub(crate) fn worst(r: &serde_json::Value, kind: &str) -> Vec<(u64, u64, u64)> {
    let kinds = r["wait_states"]["kinds"].as_array().expect("kinds");
    let Some(k) = kinds.iter().find(|k| k["kind"] == kind) else {
        return Vec::new();
    };
    let field = |w: &serde_json::Value, name: &str| {
        w[name]
            .as_u64()
            .unwrap_or_else(|| panic!("{kind}: a finding without {name}: {w}"))
    };
    let mut found: Vec<(u64, u64, u64)> = (k["worst"].as_array().expect("worst").iter())
        .map(|w| (field(w, "rank"), field(w, "peer"), field(w, "amount_ns")))
        .collect();
    found.sort();
    found
}

/// Runs the python3-otf2 script `text` (Debian's /usr/bin/python3), which writes an
/// archive into the directory it is given: `dir/scorep-NAME`. Its anchor file.
pub(crate) fn write_with_python(dir: &Path, name: &str, text: &str) -> PathBuf {
    let script = dir.join(format!("{name}.py"));
    std::fs::write(&script, text).expect("write the script");
    let archive = dir.join(format!("scorep-{name}"));
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(&archive)
        .output()
        .expect("/usr/bin/python3 runs");
    assert!(
        out.status.success(),
        "the OTF2 writer failed (python3-otf2 installed? make setup): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    archive.join("traces.otf2")
}

#[test]
fn an_archive_of_another_writer_gives_its_verdicts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let anchor = write_with_python(tmp.path(), "halo", HALO_PY);
    assert!(otf2_print_counts(&anchor)
        .get("ENTER")
        .is_some_and(|n| *n > 0));
    let run = overlap(&["analyze", anchor.to_str().expect("utf-8"), "--json"]);
    assert!(run.success(), "{}", run.describe());
    let r: serde_json::Value = serde_json::from_str(&run.stdout()).expect("JSON");
    assert_eq!(r["run"]["world_size"], 4);
    assert_eq!(r["run"]["messages"], 8, "every message matched");
    assert_eq!(r["run"]["unmatched_sends"], 0);
    assert_eq!(r["run"]["compute_source"], "spans");

    assert_eq!(
        worst(&r, "late_sender"),
        vec![(1, 0, 2_001_000), (2, 3, 100_000), (3, 0, 1_998_000)]
    );
    let kinds = r["wait_states"]["kinds"].as_array().expect("kinds");
    for k in kinds.iter().filter(|k| k["kind"] != "late_sender") {
        assert_eq!(k["count"], 0, "no other wait state: {k}");
    }

    let findings = r["false_overlap"]["worst"]
        .as_array()
        .expect("false overlap");
    let first = &findings[0];
    assert_eq!(
        (first["rank"].as_u64(), first["wait"]["call"].as_str()),
        (Some(2), Some("MPI_Waitall"))
    );
    assert_eq!(first["wait"]["start_ns"], 204_000);
    assert_eq!(first["lost_ns"], 1_500_000);
    assert!(
        findings.iter().all(|f| f["rank"] != 1),
        "rank 1 computed in its window: {findings:?}"
    );

    // Compute: the regions' exclusive time, named by their regions and lines.
    let rank0 = &r["ranks"][0];
    assert_eq!(
        (rank0["rank"].as_u64(), rank0["host"].as_str()),
        (Some(0), Some("node0"))
    );
    assert_eq!(rank0["compute_ns"], 5_894_000);
    assert_eq!(
        rank0["wall_ns"], 5_910_000,
        "from MPI_Init's end to MPI_Finalize's start"
    );
    let text = overlap(&["analyze", anchor.to_str().expect("utf-8"), "--full"]);
    assert!(text.success(), "{}", text.describe());
    text.assert_stdout_has("stencil (halo.c:60)");
}
