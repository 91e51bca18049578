//! One-sided communication in an archive of another writer: a script using the OTF2
//! library's Python bindings (python3-otf2) writes, as Score-P does, a general active
//! target epoch with OTF2's RMA records only (no overlap attributes), on a window over
//! a communicator of world ranks 0 and 2 (so that a record's `remote`, a rank of that
//! communicator, is not the world rank). Times in microseconds from T0:
//!
//! ```text
//!  rank 0 (origin)  |Win_create 100-200|Start 200-210|Put 210 ..... 1000|Get 1000-1010|~work 1010-3000~|Complete 3000-3010|~work~|Win_free 4000-4100|
//!  rank 1           |~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~ alone 100-4100 ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~|
//!  rank 2 (target)  |Win_create 100-200|~prepare 200-1000~|Post 1000-1005|Wait 1005 .................. 3010|~use 3010-4000~|Win_free 4000-4100|
//! ```
//!
//! - Late Post, rank 0 (peer 2): its Put (to remote 1 of the window's communicator,
//!   world rank 2) was still running when rank 2 posted: 1000 - 210 = 790 us. Its
//!   Win_start returned before the post and did not wait.
//! - Early Wait, rank 2 (peer 0): from its Win_wait's entry to the end of the origin's
//!   last operation, the Get: 1010 - 1005 = 5 us.
//! - Late Complete, rank 2 (peer 0): from there to the origin's Win_complete: 3000 -
//!   1010 = 1990 us.
//!
//! Without the RMA records (targets, groups), none of these could be found: the epochs
//! are matched by the groups of their `RmaGroupSync`s and the Put by its target. The
//! Put and the Win_wait carry their source code location (OTF2's `SOURCE_CODE_LOCATION`
//! attribute): their findings are at `epoch.c:41` and `epoch.c:77`.

use crate::otf2::otf2_print_counts;
use crate::otf2_foreign::{worst, write_with_python};
use crate::util::overlap;

/// The writer: `python3 epoch.py ARCHIVE_DIR`.
const EPOCH_PY: &str = r#"# An active-target epoch (Post/Start/Complete/Wait) with a Put and a Get, written
# as Score-P would by the OTF2 library's Python bindings. Times in microseconds.
import sys
import otf2
from otf2.enums import (Paradigm, RegionRole, GroupType, CollectiveOp, RmaSyncLevel,
                        RmaWinFlag, Type)

T0 = 1_000_000
t = lambda us: T0 + us
path = sys.argv[1]
with otf2.writer.open(path, timer_resolution=1_000_000) as trace:
    d = trace.definitions
    node = d.system_tree_node("node0", parent=d.system_tree_node("machine"))
    locs = [d.location("Master thread", group=d.location_group("MPI Rank %d" % r, system_tree_parent=node)) for r in range(3)]
    d.group("COMM_WORLD locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
    d.comm("MPI_COMM_WORLD", group=d.group("MPI_COMM_WORLD", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI, members=[0, 1, 2]))
    even = d.comm("even", group=d.group("even", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI, members=[0, 2]))
    win = d.rma_win("window", comm=even, flags=RmaWinFlag.CREATE_DESTROY_EVENTS)
    # Epoch groups: world ranks.
    targets = d.group("targets", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI, members=[2])
    origins = d.group("origins", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI, members=[0])

    def mpi(name, role=RegionRole.RMA):
        return d.region(name, region_role=role, paradigm=Paradigm.MPI)

    init, fin = mpi("MPI_Init", RegionRole.FUNCTION), mpi("MPI_Finalize", RegionRole.FUNCTION)
    create, free = mpi("MPI_Win_create", RegionRole.COLL_OTHER), mpi("MPI_Win_free", RegionRole.COLL_OTHER)
    start, complete = mpi("MPI_Win_start"), mpi("MPI_Win_complete")
    post, wait = mpi("MPI_Win_post"), mpi("MPI_Win_wait")
    put, get = mpi("MPI_Put"), mpi("MPI_Get")
    work = d.region("work", region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER, source_file="epoch.c", begin_line_number=30)
    both = RmaSyncLevel.PROCESS | RmaSyncLevel.MEMORY
    # Where the calls were made, as OTF2 attaches it to an event.
    at = d.attribute("SOURCE_CODE_LOCATION", type=Type.SOURCE_CODE_LOCATION)
    line = lambda n: {at: d.source_code_location("epoch.c", n)}

    def collective(w, region, begin, end, make, op):
        w.enter(t(begin), region); w.rma_collective_begin(t(begin))
        make(t(end))
        w.rma_collective_end(t(end), op, both, win, 0xFFFFFFFF, 0, 0)
        w.leave(t(end), region)

    for r in range(3):
        w = trace.event_writer_from_location(locs[r])
        w.enter(t(0), init); w.leave(t(100), init)
        if r == 1:
            w.enter(t(100), work); w.leave(t(4100), work)
        else:
            collective(w, create, 100, 200, lambda at: w.rma_win_create(at, win), CollectiveOp.CREATE_HANDLE)
        if r == 0:
            w.enter(t(200), start); w.rma_group_sync(t(210), RmaSyncLevel.PROCESS, win, targets); w.leave(t(210), start)
            w.enter(t(210), put, attributes=line(41)); w.rma_put(t(210), win, 1, 4096, 1); w.leave(t(1000), put)
            w.enter(t(1000), get); w.rma_get(t(1000), win, 1, 1024, 2); w.leave(t(1010), get)
            w.enter(t(1010), work); w.leave(t(3000), work)
            w.enter(t(3000), complete)
            w.rma_op_complete_blocking(t(3010), win, 1); w.rma_op_complete_blocking(t(3010), win, 2)
            w.rma_group_sync(t(3010), both, win, targets); w.leave(t(3010), complete)
            w.enter(t(3010), work); w.leave(t(4000), work)
        if r == 2:
            w.enter(t(200), work); w.leave(t(1000), work)
            w.enter(t(1000), post); w.rma_group_sync(t(1005), RmaSyncLevel.PROCESS, win, origins); w.leave(t(1005), post)
            w.enter(t(1005), wait, attributes=line(77)); w.rma_group_sync(t(3010), both, win, origins); w.leave(t(3010), wait)
            w.enter(t(3010), work); w.leave(t(4000), work)
        if r != 1:
            collective(w, free, 4000, 4100, lambda at: w.rma_win_destroy(at, win), CollectiveOp.DESTROY_HANDLE)
        w.enter(t(4100), fin); w.leave(t(4200), fin)
"#;

#[test]
fn one_sided_epochs_of_another_writer_give_their_wait_states() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let anchor = write_with_python(tmp.path(), "epoch", EPOCH_PY);
    let printed = otf2_print_counts(&anchor);
    assert_eq!(printed.get("RMA_PUT"), Some(&1), "{printed:?}");
    let run = overlap(&["analyze", anchor.to_str().expect("utf-8"), "--json"]);
    assert!(run.success(), "{}", run.describe());
    let r: serde_json::Value = serde_json::from_str(&run.stdout()).expect("JSON");
    assert_eq!(r["run"]["world_size"], 3);
    assert_eq!(worst(&r, "late_post"), vec![(0, 2, 790_000)]);
    assert_eq!(worst(&r, "early_wait"), vec![(2, 0, 5_000)]);
    assert_eq!(worst(&r, "late_complete"), vec![(2, 0, 1_990_000)]);
    // The calls' sites, from their source code locations.
    let mut sites: Vec<(String, String)> = r["by_site"]["wait_states"]
        .as_array()
        .expect("by site")
        .iter()
        .map(|s| (s["kind"].to_string(), s["site"].to_string()))
        .collect();
    sites.sort();
    assert_eq!(
        sites,
        [
            ("\"early_wait\"", "\"epoch.c:77\""),
            ("\"late_complete\"", "\"epoch.c:77\""),
            ("\"late_post\"", "\"epoch.c:41\""),
        ]
        .map(|(k, s)| (k.to_string(), s.to_string()))
    );
}
