//! `overlap run gpu-pipeline` on the host backend under real `mpiexec`: both variants
//! verify every packet at 2 and 4 ranks; the merged trace has the copies on per-stream
//! tracks with their packets, each D2H ending in the very buffer its Isend sends and
//! each H2D starting from the very buffer its Irecv filled; an injected swap of two
//! received packets fails the run, naming the packet; `--smoke` reports its figures.

use std::collections::BTreeMap;
use std::path::Path;

use overlap_analyzer::gpu::GpuFindingKind;
use overlap_analyzer::import::read_merged;
use overlap_instrument::schema::{
    stream_tid, Event, GpuOp, ParamValue, ALL_STREAMS, GPU_BACKEND_PARAM,
};
use serde_json::Value;

use crate::util::{run_kernel, Run};

/// Small and quick: 4 KiB packets, 2 exchanges, a short interior computation.
const QUICK: [&str; 8] = [
    "--backend",
    "host",
    "--iters",
    "2",
    "--packet-bytes",
    "4K",
    "--interior-sweeps",
    "4",
];

fn run(ranks: u32, out: &Path, extra: &[&str]) -> Run {
    let mut args = QUICK.to_vec();
    args.extend_from_slice(extra);
    run_kernel("gpu-pipeline", ranks, out, &args)
}

fn hex(v: &Value) -> u64 {
    let s = v.as_str().unwrap_or_else(|| panic!("an address: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hexadecimal")
}

/// Checks a successful run of `variant` on `ranks` ranks with `chunks` packets per face.
fn check(ranks: u32, variant: &str, chunks: u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("gpu.json");
    let chunks_arg = chunks.to_string();
    let r = run(
        ranks,
        &out,
        &["--variant", variant, "--chunks", &chunks_arg],
    );
    assert!(r.success(), "{}", r.describe());
    let packets = 6 * chunks;
    r.assert_stdout_has(&format!(
        "every packet verified on the device: {} packets",
        ranks * packets * 2
    ));
    r.assert_stdout_has(&format!("gpu-pipeline ({variant}, host-emulated backend"));

    // The model: the header's backend, and each rank's copies with their packets.
    let t = read_merged(&out).expect("merged trace reads back");
    assert_eq!(
        t.info.params.get(GPU_BACKEND_PARAM),
        Some(&ParamValue::Text("host-emulated".into()))
    );
    assert_eq!(
        t.info.params.get("variant"),
        Some(&ParamValue::Text(variant.into()))
    );
    for rank in 0..ranks {
        let gpu: Vec<_> = t.events[&rank]
            .iter()
            .filter_map(|e| match e {
                Event::Gpu(g) => Some(g),
                _ => None,
            })
            .collect();
        let with = |op: GpuOp| -> Vec<u32> {
            let mut p: Vec<u32> = gpu
                .iter()
                .filter(|g| g.op == op)
                .filter_map(|g| g.packet)
                .collect();
            p.sort_unstable();
            p
        };
        let (d2h, h2d, d2d) = (
            with(GpuOp::CopyD2H),
            with(GpuOp::CopyH2D),
            with(GpuOp::CopyD2D),
        );
        assert!(!d2h.is_empty(), "rank {rank}: no D2H with a packet");
        assert_eq!(d2h, h2d, "rank {rank}: the packets out are the packets in");
        assert_eq!(
            d2h.len() + d2d.len(),
            2 * packets as usize,
            "rank {rank}: every packet of both exchanges, by MPI or on the device"
        );
        for g in &gpu {
            if g.op == GpuOp::HostWait {
                assert!(g.stream < 4 || g.stream == ALL_STREAMS, "{g:?}");
            } else {
                assert!(g.start <= g.end && g.issued <= g.start, "{g:?}");
                assert_eq!(g.clock_error.0, 0, "host readings: {g:?}");
            }
        }
        let waits = gpu.iter().filter(|g| g.op == GpuOp::HostWait).count();
        assert!(waits > 0, "rank {rank}: host waits recorded");
        // The D2H stream waits on the device for the sealed packets, on its own track.
        assert!(
            gpu.iter()
                .any(|g| g.op == GpuOp::StreamWait && g.stream == 1),
            "rank {rank}: the copy stream's wait for the checksum kernel"
        );
    }

    // The analysis: every message is a whole staging chain; bulk's sends waited for all
    // the copies (serialized staging on every rank), pipelined's never did.
    let loaded = overlap_analyzer::load::load(&out, &mut |_, _| {}).expect("loads");
    let (report, _) = overlap_analyzer::analysis::analyze(&loaded.trace, &Default::default());
    let g = report.gpu.as_ref().expect("the run has a gpu section");
    assert_eq!(g.backend.as_deref(), Some("host-emulated"));
    assert_eq!(
        g.chains.count, report.run.messages,
        "every message is staged"
    );
    assert_eq!(
        g.chains.complete, g.chains.count,
        "both copies of every chain"
    );
    let serialized: Vec<u32> = g
        .findings
        .iter()
        .filter(|f| f.kind == GpuFindingKind::SerializedStaging)
        .map(|f| f.rank)
        .collect();
    if variant == "bulk" {
        let mut sorted = serialized.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..ranks).collect::<Vec<_>>(), "{:#?}", g.findings);
    } else {
        assert!(serialized.is_empty(), "{:#?}", g.findings);
    }

    // The wire: copies on their stream's track, chained to MPI by address.
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("trace")).expect("JSON");
    let events = json["traceEvents"].as_array().expect("events");
    for rank in 0..u64::from(ranks) {
        let on = |name: &str| -> Vec<&Value> {
            events
                .iter()
                .filter(|e| e["pid"] == rank && e["name"] == name)
                .collect()
        };
        let gpu: Vec<&Value> = events
            .iter()
            .filter(|e| e["pid"] == rank && e["cat"] == "gpu")
            .collect();
        let copies = |op: &str| -> BTreeMap<u64, (u64, u64, u64)> {
            gpu.iter()
                .filter(|e| e["args"]["op"] == op && e["args"]["packet"].is_u64())
                .map(|e| {
                    let a = &e["args"];
                    assert_eq!(
                        e["tid"],
                        u64::from(stream_tid(0, a["stream"].as_u64().unwrap_or(99) as u32))
                    );
                    (
                        a["packet"].as_u64().unwrap_or(0),
                        (
                            hex(&a["src"]),
                            hex(&a["dst"]),
                            a["bytes"].as_u64().unwrap_or(0),
                        ),
                    )
                })
                .collect()
        };
        let (d2h, h2d) = (copies("D2H"), copies("H2D"));
        assert!(gpu
            .iter()
            .any(|e| e["tid"] == stream_tid(0, 1) && e["args"]["op"] == "D2H"));
        assert!(gpu
            .iter()
            .any(|e| e["tid"] == stream_tid(0, 2) && e["args"]["op"] == "H2D"));
        for isend in on("MPI_Isend") {
            let a = &isend["args"];
            let packet = a["tag"].as_u64().expect("tag") - 500;
            let (_, dst, bytes) = d2h[&packet];
            assert_eq!(
                a["buf"].as_u64(),
                Some(dst),
                "rank {rank}: Isend of packet {packet}"
            );
            assert_eq!(a["bytes"].as_u64(), Some(bytes));
        }
        let flows = |ph: &str| {
            events
                .iter()
                .filter(|e| e["pid"] == rank && e["cat"] == "gpu_chain" && e["ph"] == ph)
                .count()
        };
        // Each Isend's D2H flows into it; each received packet's completion into its H2D.
        assert_eq!(
            flows("f") + flows("s"),
            2 * (on("MPI_Isend").len() + on("MPI_Irecv").len())
        );
        for irecv in on("MPI_Irecv") {
            let a = &irecv["args"];
            let packet = a["tag"].as_u64().expect("tag") - 500;
            let (src, _, _) = h2d[&packet];
            assert_eq!(
                a["buf"].as_u64(),
                Some(src),
                "rank {rank}: Irecv of packet {packet}"
            );
        }
    }
}

#[test]
fn pipelined_verifies_every_packet_at_2_ranks() {
    check(2, "pipelined", 1);
}

#[test]
fn bulk_verifies_every_packet_at_2_ranks() {
    check(2, "bulk", 1);
}

#[test]
fn pipelined_verifies_every_packet_at_4_ranks_in_chunks() {
    check(4, "pipelined", 2);
}

#[test]
fn bulk_verifies_every_packet_at_4_ranks() {
    check(4, "bulk", 1);
}

fn swapped(ranks: u32, variant: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("swap.json");
    let r = run(ranks, &out, &["--variant", variant, "--inject-swap"]);
    assert!(
        !r.success(),
        "a swapped packet must fail the run:\n{}",
        r.describe()
    );
    let last = ranks - 1;
    r.assert_stderr_has(&format!("rank {last}: error: packet "));
    r.assert_stderr_has("checksum mismatch on the device after its copy");
    r.assert_stderr_has("transposed or corrupt; its contents check as packet ");
    r.assert_stderr_has("the two were transposed");
}

#[test]
fn a_swap_of_two_received_packets_fails_the_pipelined_run_naming_the_packet() {
    swapped(2, "pipelined");
}

#[test]
fn a_swap_of_two_received_packets_fails_the_bulk_run_naming_the_packet() {
    swapped(4, "bulk");
}

#[test]
fn the_smoke_test_checks_every_size_and_sets_bandwidth_against_the_peaks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("smoke.json");
    let r = run(2, &out, &["--smoke", "--smoke-max", "64K"]);
    assert!(r.success(), "{}", r.describe());
    r.assert_stdout_has("copy peaks (one 384 KiB copy each way, best of 3): D2H ");
    // Two sizes, 6 packets per rank, 2 exchanges each, 2 ranks.
    r.assert_stdout_has("smoke test: 48 packets verified");
    let stdout = r.stdout();
    for size in ["4 KiB", "64 KiB"] {
        let row = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(size))
            .unwrap_or_else(|| panic!("no row for {size}:\n{stdout}"));
        assert!(row.contains(" 24 "), "{row}");
        assert_eq!(row.matches("MB/s").count(), 4, "{row}");
        assert_eq!(row.matches('%').count(), 3, "{row}");
    }
    assert!(
        !stdout.contains("1 MiB"),
        "--smoke-max caps the sizes:\n{stdout}"
    );
    assert!(
        stdout.contains("no figure below 50 % of its peak")
            || stdout.contains("below 50 % of its peak (marked !)")
            || stdout.contains("below 50 % of their peaks (marked !)"),
        "{stdout}"
    );
}
