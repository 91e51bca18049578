//! The bundled kernels' compute spans name the buffers they read and write, and those
//! names lie over the buffers their MPI calls name: `overlap run` under real `mpiexec`,
//! then the merged trace read back.

use std::collections::BTreeMap;

use overlap_analyzer::import::read_merged;
use overlap_analyzer::model::MergedTrace;
use overlap_instrument::schema::{BufferUse, CallEvent, Event, Op, SpanBuffers};

use crate::util::run_kernel;

/// Reads and writes, by name, of each compute span named `name` on `rank`.
type Names = (Vec<String>, Vec<String>);

fn names(b: &SpanBuffers) -> Names {
    let each = |v: &[BufferUse]| v.iter().map(|u| u.name.clone()).collect();
    (each(&b.reads), each(&b.writes))
}

fn list(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Every compute span of the trace, by name: the buffers it declared (each span of one
/// name declares the same names).
fn declared(t: &MergedTrace) -> BTreeMap<String, Names> {
    let mut out: BTreeMap<String, Names> = BTreeMap::new();
    for events in t.events.values() {
        for e in events {
            if let Event::Compute(c) = e {
                let b = c
                    .buffers
                    .as_ref()
                    .unwrap_or_else(|| panic!("compute span {:?} declares no buffers", c.name));
                let n = names(b);
                let first = out.entry(c.name.clone()).or_insert_with(|| n.clone());
                assert_eq!(*first, n, "span {:?}", c.name);
            }
        }
    }
    out
}

/// Where each name was bound on `rank` (its last address range in the trace).
fn bound(t: &MergedTrace, rank: u32) -> BTreeMap<String, (u64, u64)> {
    let mut out = BTreeMap::new();
    for e in &t.events[&rank] {
        if let Event::Compute(c) = e {
            for u in c
                .buffers
                .iter()
                .flat_map(|b| b.reads.iter().chain(&b.writes))
            {
                out.insert(u.name.clone(), (u.buf, u.len));
            }
        }
    }
    out
}

/// True when the call's buffer lies inside the named range.
fn inside(c: &CallEvent, range: (u64, u64)) -> bool {
    let (Some(buf), Some(len)) = (c.args.buf, c.args.buf_len) else {
        return false;
    };
    buf >= range.0 && buf + len <= range.0 + range.1
}

fn run(kernel: &str, ranks: u32, extra: &[&str]) -> MergedTrace {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join(format!("{kernel}.json"));
    let r = run_kernel(kernel, ranks, &out, extra);
    assert!(r.success(), "{}", r.describe());
    assert!(
        !r.stderr().contains("never bound"),
        "every name is bound:\n{}",
        r.describe()
    );
    read_merged(&out).expect("merged trace reads back")
}

#[test]
fn false_overlap_spans_name_the_buffers_its_sends_and_receives_use() {
    let t = run("false-overlap", 2, &["--iters", "2"]);
    let d = declared(&t);
    let expect = |r: &[&str], w: &[&str]| (list(r), list(w));
    assert_eq!(d["pack"], expect(&["data"], &["sendbuf"]));
    assert_eq!(d["unpack"], expect(&["recvbuf"], &["data"]));
    assert_eq!(d["compute"], expect(&["data"], &["data"]));
    assert_eq!(d.len(), 3, "{d:?}");
    for rank in 0..2 {
        let at = bound(&t, rank);
        for e in &t.events[&rank] {
            let Event::Call(c) = e else { continue };
            match c.op {
                Op::Isend => assert!(inside(c, at["sendbuf"]), "rank {rank}: {c:?}"),
                Op::Irecv => assert!(inside(c, at["recvbuf"]), "rank {rank}: {c:?}"),
                _ => {}
            }
        }
    }
}

/// 240 rows, lambda 8, 3 vectors on 2 ranks: each rank's block of 120 rows has an
/// interior. The receives land in the halos; the sends read the edge rows.
#[test]
fn toeplitz_nonblocking_names_its_halos_and_edges() {
    let t = run(
        "toeplitz",
        2,
        &[
            "--variant",
            "nonblocking",
            "--iters",
            "2",
            "--size",
            "240",
            "--lambda",
            "8",
            "--vectors",
            "3",
        ],
    );
    let d = declared(&t);
    let expect = |r: &[&str], w: &[&str]| (list(r), list(w));
    assert_eq!(d["interior"], expect(&["local"], &["y_interior"]));
    assert_eq!(
        d["boundary"],
        expect(
            &["halo_l", "edge_l", "edge_r", "halo_r"],
            &["y_head", "y_tail"]
        )
    );
    assert_eq!(d["check"], expect(&["y", "first"], &["first"]));
    assert_eq!(d["verify"], expect(&["first"], &[]));
    assert!(!d.contains_key("product"), "{d:?}");
    for rank in 0..2 {
        let at = bound(&t, rank);
        // A halo of 8 rows of 3 values, the edges twice that.
        assert_eq!(at["halo_l"].1, 8 * 3 * 8);
        assert_eq!(at["edge_r"].1, 16 * 3 * 8);
        let mut moved = 0;
        for e in &t.events[&rank] {
            let Event::Call(c) = e else { continue };
            if c.args.peer.is_some_and(|p| p < 0) {
                continue; // MPI_PROC_NULL at the open end: nothing moves
            }
            match c.op {
                Op::Isend => {
                    assert!(
                        inside(c, at["edge_l"]) || inside(c, at["edge_r"]),
                        "rank {rank}: {c:?}"
                    );
                    moved += 1;
                }
                Op::Irecv => {
                    assert!(
                        inside(c, at["halo_l"]) || inside(c, at["halo_r"]),
                        "rank {rank}: {c:?}"
                    );
                    moved += 1;
                }
                _ => {}
            }
        }
        assert_eq!(
            moved, 4,
            "rank {rank}: one send and one receive per iteration"
        );
    }
}

/// Halo3d: each `pack` writes the six faces the six Isends after it send, and each
/// `unpack` reads the six halos the six Irecvs before it filled (each size binds its
/// buffers anew, so the spans are matched with the calls around them).
pub fn check_halo3d(t: &MergedTrace, ranks: u32) {
    for rank in 0..ranks {
        let mut written: Vec<(u64, u64)> = Vec::new();
        let mut received: Vec<&CallEvent> = Vec::new();
        let (mut sends, mut unpacks) = (0, 0);
        for e in &t.events[&rank] {
            match e {
                Event::Compute(c) if c.name == "pack" => {
                    let b = c.buffers.as_ref().expect("pack declares its buffers");
                    assert_eq!(names(b).0, list(&["block"]));
                    assert_eq!(b.writes.len(), 6);
                    written = b.writes.iter().map(|u| (u.buf, u.len)).collect();
                }
                Event::Compute(c) if c.name == "unpack" => {
                    let b = c.buffers.as_ref().expect("unpack declares its buffers");
                    assert_eq!(names(b).1, list(&["block"]));
                    assert_eq!(received.len(), 6, "rank {rank}: six receives per swap");
                    for r in received.drain(..) {
                        assert!(
                            b.reads.iter().any(|u| inside(r, (u.buf, u.len))),
                            "rank {rank}: {r:?} lands in no halo unpack reads"
                        );
                    }
                    unpacks += 1;
                }
                Event::Call(c) if c.op == Op::Isend => {
                    assert!(
                        written.iter().any(|&w| inside(c, w)),
                        "rank {rank}: {c:?} sends no face pack wrote"
                    );
                    sends += 1;
                }
                Event::Call(c) if c.op == Op::Irecv => received.push(c),
                _ => {}
            }
        }
        assert!(
            sends > 0 && sends == 6 * unpacks,
            "rank {rank}: {sends}, {unpacks}"
        );
    }
}

/// Sync: the delay loop declares that it touches no buffer (said, not unknown).
pub fn check_sync(t: &MergedTrace) {
    let d = declared(t);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d["delay"], (Vec::new(), Vec::new()));
}
