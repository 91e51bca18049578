//! The GPU analysis on hand-built runs whose answers were worked out by hand: staging
//! chains and their breakdown, serialized staging in the bulk order and not in the
//! pipelined one, the GPU idle while the host waits, the host blocked on copies while a
//! receive was pending, copies serialized with MPI, and the compute hiding the pipeline;
//! and the merged trace's stream tracks and chain flows.

use crate::common::*;
use overlap_analyzer::analysis;
use overlap_analyzer::gpu::{self, GpuFindingKind};
use overlap_instrument::schema::{
    stream_tid, Event, GpuEvent, GpuOp, Nanos, Op, SyncPhase, ALL_STREAMS,
};

/// A device operation (or host wait) on device 0.
#[allow(clippy::too_many_arguments)]
fn gpu(
    op: GpuOp,
    stream: u32,
    issued: u64,
    start: u64,
    end: u64,
    host: u64,
    bytes: u64,
    packet: Option<u32>,
) -> Event {
    let (src, dst) = match op {
        GpuOp::CopyD2H => (0x10_0000, host),
        GpuOp::CopyH2D => (host, 0x20_0000),
        _ => (0, 0),
    };
    Event::Gpu(GpuEvent {
        tid: 0,
        op,
        device: 0,
        stream,
        issued: Nanos(issued),
        start: Nanos(start),
        end: Nanos(end),
        bytes,
        src,
        dst,
        packet,
        name: if op == GpuOp::Kernel {
            "interior".into()
        } else {
            String::new()
        },
        clock_error: Nanos(0),
    })
}

fn wait(stream: u32, issued: u64, start: u64, end: u64, packet: Option<u32>) -> Event {
    gpu(GpuOp::HostWait, stream, issued, start, end, 0, 0, packet)
}

/// Rank 1 in both runs: two receives, a send of tag 9 back, the H2Ds after its Waitall
/// and the interior kernel throughout.
///
/// ```text
///  rank 1  Irecv0 Irecv1 ........ Send9 Waitall(320..420) H2D0(440..540) H2D1(540..640)
///  stream 0  [interior kernel 0 .................................................. 700)
///  host     ............................................... host wait 445..645 (stream 2)
/// ```
fn receiver() -> Vec<Event> {
    vec![
        with_buf(irecv(0, 10, 0, 0, 100, 1), 0xC000),
        with_buf(irecv(12, 20, 0, 1, 100, 2), 0xD000),
        with_buf(send(300, 310, 0, 9, 8), 0xF000),
        complete(
            Op::Waitall,
            320,
            420,
            &[(1, Some((0, 0))), (2, Some((0, 1)))],
        ),
        gpu(GpuOp::Kernel, 0, 0, 0, 700, 0, 0, None),
        gpu(GpuOp::CopyH2D, 2, 430, 440, 540, 0xC000, 100, Some(0)),
        gpu(GpuOp::CopyH2D, 2, 435, 540, 640, 0xD000, 100, Some(1)),
        wait(2, 436, 445, 645, None),
    ]
}

/// Rank 0, bulk: both D2Hs, a wait on the whole copy stream, then both Isends.
///
/// ```text
///  rank 0  Irecv9 ........................................... Isend0 Isend1 Waitall(250..400)
///  stream 1    [D2H p0 10..110][D2H p1 110..210]
///  host        [host wait on stream 1 ...... 10..215]   Isend0 at 220: held 215 - 110 = 105
/// ```
fn bulk_sender() -> Vec<Event> {
    vec![
        with_buf(irecv(0, 4, 1, 9, 8, 3), 0xE000),
        gpu(GpuOp::CopyD2H, 1, 5, 10, 110, 0xA000, 100, Some(0)),
        gpu(GpuOp::CopyD2H, 1, 6, 110, 210, 0xB000, 100, Some(1)),
        wait(1, 7, 10, 215, None),
        with_buf(isend(220, 230, 1, 0, 100, 1), 0xA000),
        with_buf(isend(235, 245, 1, 1, 100, 2), 0xB000),
        complete(
            Op::Waitall,
            250,
            400,
            &[(1, None), (2, None), (3, Some((1, 9)))],
        ),
    ]
}

/// Rank 0, pipelined: the host waits on packet 0's own event (recorded at 6, before
/// packet 1's copy was enqueued at 7), sends it, then sends packet 1 once its copy ends.
///
/// ```text
///  stream 1    [D2H p0 10..110][D2H p1 110..210]
///  host        [wait p0 10..112] Isend0 115 ........ Isend1 215   Waitall(250..400)
/// ```
fn pipelined_sender() -> Vec<Event> {
    vec![
        with_buf(irecv(0, 4, 1, 9, 8, 3), 0xE000),
        gpu(GpuOp::CopyD2H, 1, 5, 10, 110, 0xA000, 100, Some(0)),
        wait(1, 6, 10, 112, Some(0)),
        gpu(GpuOp::CopyD2H, 1, 7, 110, 210, 0xB000, 100, Some(1)),
        with_buf(isend(115, 125, 1, 0, 100, 1), 0xA000),
        with_buf(isend(215, 225, 1, 1, 100, 2), 0xB000),
        complete(
            Op::Waitall,
            250,
            400,
            &[(1, None), (2, None), (3, Some((1, 9)))],
        ),
    ]
}

fn finding(r: &gpu::GpuReport, kind: GpuFindingKind, rank: u32) -> Option<&gpu::GpuFinding> {
    r.findings.iter().find(|f| f.kind == kind && f.rank == rank)
}

#[test]
fn bulk_chains_and_findings() {
    let trace = run(vec![bulk_sender(), receiver()]);
    let (report, chains) = gpu::analyze(&trace).expect("the run has GPU work");
    assert_eq!(chains.len(), 2, "the tag-9 message has no copy: no chain");
    let p0 = chains
        .iter()
        .find(|c| c.packet == Some(0))
        .expect("packet 0");
    let b = p0.breakdown;
    assert_eq!(
        (
            b.d2h_ns,
            b.wait_send_ns,
            b.transfer_ns,
            b.wait_h2d_ns,
            b.h2d_ns
        ),
        (Some(105), Some(110), Some(200), Some(10), Some(110))
    );
    assert_eq!(b.total_ns, Some(535));
    let p1 = chains
        .iter()
        .find(|c| c.packet == Some(1))
        .expect("packet 1");
    assert_eq!(p1.breakdown.total_ns, Some(634));
    assert_eq!(p1.breakdown.wait_send_ns, Some(25));
    assert_eq!(report.chains.complete, 2);
    assert_eq!(report.chains.max.total_ns, Some(634));
    assert_eq!(report.chains.mean.transfer_ns, Some((200 + 185) / 2));

    let s = finding(&report, GpuFindingKind::SerializedStaging, 0).expect("serialized");
    assert_eq!((s.instances, s.of, s.lost_ns, s.worst_ns), (1, 2, 105, 105));
    assert!(s.evidence[1].contains("packet 0"), "{:?}", s.evidence);
    assert!(finding(&report, GpuFindingKind::SerializedStaging, 1).is_none());

    // Rank 0 blocked 205 in its host wait + 150 in its Waitall; the copies ran 200 of it.
    let idle = finding(&report, GpuFindingKind::GpuIdleWhileHostWaits, 0).expect("idle");
    assert_eq!(idle.lost_ns, 155);
    assert!(finding(&report, GpuFindingKind::GpuIdleWhileHostWaits, 1).is_none());
    // The receive of tag 9 was pending (4..250) through the whole host wait (10..215).
    let blocked = finding(&report, GpuFindingKind::HostBlockedOnCopies, 0).expect("blocked");
    assert_eq!(
        (blocked.instances, blocked.of, blocked.lost_ns),
        (1, 1, 205)
    );
    assert!(finding(&report, GpuFindingKind::HostBlockedOnCopies, 1).is_none());
    // No message was in flight while either rank copied.
    for rank in [0, 1] {
        let f = finding(&report, GpuFindingKind::CopiesSerializedWithMpi, rank).expect("serial");
        assert_eq!(f.lost_ns, 200, "rank {rank}");
    }
    let r0 = &report.ranks[0];
    assert_eq!((r0.d2h.count, r0.d2h.bytes, r0.d2h.busy_ns), (2, 200, 200));
    assert_eq!(
        (r0.host_blocked_ns, r0.gpu_idle_in_host_blocked_ns),
        (355, 155)
    );
    assert_eq!((r0.pipeline_ns, r0.pipeline_hidden_ns), (400, 0));
    let r1 = &report.ranks[1];
    assert_eq!((r1.pipeline_ns, r1.pipeline_hidden_ns), (400, 400));
    assert_eq!(r1.streams, vec![(0, 0), (0, 2)]);
    assert_eq!(report.pipeline_hidden, Some(0.5));
    assert_eq!(report.findings[0].lost_ns, 205, "largest loss first");
}

#[test]
fn pipelined_has_no_serialized_staging() {
    let trace = run(vec![pipelined_sender(), receiver()]);
    let (report, chains) = gpu::analyze(&trace).expect("the run has GPU work");
    assert_eq!(chains.len(), 2);
    assert!(
        report
            .findings
            .iter()
            .all(|f| f.kind != GpuFindingKind::SerializedStaging),
        "{:#?}",
        report.findings
    );
    let p0 = chains
        .iter()
        .find(|c| c.packet == Some(0))
        .expect("packet 0");
    assert_eq!(p0.breakdown.wait_send_ns, Some(5));
    // Waiting on its own packet's event still blocked the host while tag 9 was pending.
    let blocked = finding(&report, GpuFindingKind::HostBlockedOnCopies, 0).expect("blocked");
    assert_eq!(blocked.lost_ns, 102);
    // Packet 1's copy ran while packet 0 was in flight (115..420): 110..210 overlaps 95.
    let r0 = &report.ranks[0];
    assert_eq!((r0.copy_ns, r0.copy_with_messages_ns), (200, 95));
}

#[test]
fn a_wait_on_the_whole_device_covers_every_stream() {
    // The same bulk order, but the host synchronizes the device instead of the stream.
    let mut sender = bulk_sender();
    sender[3] = wait(ALL_STREAMS, 7, 10, 215, None);
    let trace = run(vec![sender, receiver()]);
    let (report, _) = gpu::analyze(&trace).expect("GPU work");
    let s = finding(&report, GpuFindingKind::SerializedStaging, 0).expect("serialized");
    assert_eq!(s.lost_ns, 105);
}

#[test]
fn a_run_without_gpu_work_has_no_gpu_section() {
    let trace = run(vec![
        vec![with_buf(isend(0, 10, 1, 0, 8, 1), 0xA000)],
        vec![recv(0, 20, 0, 0, 8)],
    ]);
    assert!(gpu::analyze(&trace).is_none());
    let (report, details) = analysis::analyze(&trace, &Default::default());
    assert!(report.gpu.is_none());
    assert!(details.chains.is_empty());
}

#[test]
fn report_text_and_json_carry_the_section() {
    let trace = run(vec![bulk_sender(), receiver()]);
    let (report, details) = analysis::analyze(&trace, &Default::default());
    assert_eq!(details.chains.len(), 2);
    assert_eq!(report.run.events, 7 + 8, "GPU work counts as events");
    let text = overlap_analyzer::report::render(&report, Default::default());
    assert!(text.contains("GPU (backend not recorded"), "{text}");
    assert!(text.contains("serialized staging on rank 0"), "{text}");
    assert!(
        text.contains("staging chains: 2 (2 with both copies)"),
        "{text}"
    );
    let json = serde_json::to_value(&report).expect("serializes");
    assert_eq!(json["gpu"]["findings"][0]["kind"], "host_blocked_on_copies");
    assert_eq!(json["gpu"]["chains"]["count"], 2);
}

#[test]
fn merged_trace_has_stream_tracks_and_chain_flows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let traces = [bulk_sender(), receiver()]
        .into_iter()
        .enumerate()
        .map(|(r, events)| {
            rank_trace(
                header(r as u32, 2, 0, "one-clock"),
                vec![sync(SyncPhase::Init, 0, 0, 0)],
                events,
            )
        })
        .collect();
    let merged = overlap_analyzer::merge::merge(traces);
    let path = dir.path().join("run.json");
    overlap_analyzer::merge::write_merged(&merged, &path).expect("written");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("JSON");
    let events = json["traceEvents"].as_array().expect("events");
    let named = |pid: u32, tid: u32| {
        events.iter().any(|e| {
            e["name"] == "thread_name" && e["pid"] == pid && e["tid"] == tid && {
                e["args"]["name"] == format!("GPU 0 stream {}", tid - stream_tid(0, 0))
            }
        })
    };
    assert!(named(0, stream_tid(0, 1)) && named(1, stream_tid(0, 2)) && named(1, stream_tid(0, 0)));
    let d2h: Vec<_> = events
        .iter()
        .filter(|e| e["cat"] == "gpu" && e["args"]["op"] == "D2H")
        .collect();
    assert_eq!(d2h.len(), 2);
    assert!(d2h.iter().all(|e| e["tid"] == stream_tid(0, 1)));
    assert_eq!(d2h[0]["name"], "D2H packet 0");
    let wait = events
        .iter()
        .find(|e| e["cat"] == "gpu" && e["args"]["op"] == "host_wait")
        .expect("host wait");
    assert_eq!(wait["tid"], 0, "a host wait stays on the host thread");
    let flows = events.iter().filter(|e| e["cat"] == "gpu_chain").count();
    assert_eq!(flows, 2 * 4, "two chains, each D2H→send and completion→H2D");

    // Read back: the same GPU work on the same ranks.
    let loaded = overlap_analyzer::load::load(&path, &mut |_, _| {}).expect("loads");
    let gpu_of = |r: u32| loaded.trace.rank(r).map(|t| t.gpu.len());
    assert_eq!((gpu_of(0), gpu_of(1)), (Some(3), Some(4)));
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let (report, _) = gpu::analyze(&loaded.trace).expect("GPU work");
    assert_eq!(report.chains.complete, 2);
}

#[test]
fn the_gate_has_gpu_metrics_only_for_gpu_runs() {
    let names = |trace: &overlap_analyzer::model::Trace| {
        let (report, _) = analysis::analyze(trace, &Default::default());
        overlap_analyzer::check::gate_metrics(&report)
            .into_iter()
            .filter(|m| m.name.starts_with("gpu."))
            .map(|m| (m.name, m.value))
            .collect::<Vec<_>>()
    };
    // Serialized staging, idle and blocked on rank 0; copies serialized on both.
    let bulk = run(vec![bulk_sender(), receiver()]);
    assert_eq!(
        names(&bulk),
        vec![
            ("gpu.findings".to_string(), Some(5.0)),
            ("gpu.pipeline_hidden".to_string(), Some(0.5)),
        ]
    );
    let plain = run(vec![
        vec![with_buf(isend(0, 10, 1, 0, 8, 1), 0xA000)],
        vec![recv(0, 20, 0, 0, 8)],
    ]);
    assert!(names(&plain).is_empty());
}

#[test]
fn diff_of_bulk_and_pipelined_shows_the_staging_won_back() {
    let report = |sender| analysis::analyze(&run(vec![sender, receiver()]), &Default::default()).0;
    let rows =
        overlap_analyzer::check::diff::diff(&report(bulk_sender()), &report(pipelined_sender()));
    let row = |name: &str| {
        rows.iter()
            .find(|r| r.name == name)
            .map(|r| (r.a, r.b))
            .unwrap_or_else(|| panic!("no row {name}"))
    };
    assert_eq!(row("gpu.serialized_staging"), (Some(105.0), Some(0.0)));
    assert_eq!(
        row("gpu.host_blocked_on_copies"),
        (Some(205.0), Some(102.0))
    );
    let plain = analysis::analyze(
        &run(vec![
            vec![with_buf(isend(0, 10, 1, 0, 8, 1), 0xA000)],
            vec![recv(0, 20, 0, 0, 8)],
        ]),
        &Default::default(),
    )
    .0;
    let rows = overlap_analyzer::check::diff::diff(&plain, &plain);
    assert!(rows.iter().all(|r| !r.name.starts_with("gpu.")));
}

#[test]
#[cfg(feature = "tables")]
fn the_gpu_chains_table_has_a_row_per_chain_with_unknown_steps_null() {
    use overlap_analyzer::tables::{tables, write_tables, TableFormat};
    // Rank 1 records no H2D for packet 1: its chain's last two steps are unknown.
    let mut recv = receiver();
    recv.remove(6);
    let trace = run(vec![bulk_sender(), recv]);
    let (report, details) = analysis::analyze(&trace, &Default::default());
    let all = tables(&trace, &report, &details);
    let dir = tempfile::tempdir().expect("tempdir");
    let written = write_tables(&all, &[(dir.path(), TableFormat::Csv)]).expect("written");
    let written = &written[0];
    let chains = written
        .iter()
        .find(|p| p.ends_with("gpu_chains.csv"))
        .expect("a gpu_chains table");
    let text = std::fs::read_to_string(chains).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "message,from,to,tag,packet,bytes,start_ns,d2h_ns,wait_send_ns,transfer_ns,wait_h2d_ns,h2d_ns,total_ns"
    );
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines.contains(&"1,0,1,0,0,100,5,105,110,200,10,110,535"),
        "{text}"
    );
    assert!(lines.contains(&"2,0,1,1,1,100,6,204,25,185,,,"), "{text}");
}

#[test]
fn gpu_work_is_aligned_with_its_rank_on_every_path() {
    // Rank 1 reads another clock from another epoch (its times land 3000 ns later on
    // the run's timeline than they read): its H2D,
    // enqueued 5 ns after its Irecv's exit, must stay 5 ns after it once aligned, read
    // as a directory or merged.
    let r0 = rank_trace(
        header(0, 2, 10_000, "clock-A"),
        vec![sync(SyncPhase::Init, 0, 0, 0)],
        vec![with_buf(isend(100, 110, 1, 0, 100, 1), 0xA000)],
    );
    let r1 = rank_trace(
        header(1, 2, 12_000, "clock-B"),
        vec![sync(SyncPhase::Init, 0, -1000, 40)],
        vec![
            with_buf(recv(150, 380, 0, 0, 100), 0xC000),
            gpu(GpuOp::CopyH2D, 2, 385, 390, 490, 0xC000, 100, Some(0)),
        ],
    );
    let dir = tempfile::tempdir().expect("tempdir");
    for t in [&r0, &r1] {
        write_rank_file(dir.path(), t, true);
    }
    let loaded = overlap_analyzer::load::load(dir.path(), &mut |_, _| {}).expect("loads");
    let merged = overlap_analyzer::merge::merge(vec![r0, r1]).to_trace(dir.path());
    for trace in [&loaded.trace, &merged] {
        let t = trace.rank(1).expect("rank 1");
        let (recv_end, copy) = (t.spans[0].end, &t.gpu[0]);
        assert_ne!(recv_end.0, 380, "the rank's times were moved");
        assert_eq!(
            (copy.issued.0 - recv_end.0, copy.start.0 - recv_end.0),
            (5, 10)
        );
        let (_, chains) = gpu::analyze(trace).expect("GPU work");
        assert_eq!(chains[0].breakdown.wait_h2d_ns, Some(5));
    }
}

#[test]
fn a_stream_held_by_a_wait_is_not_the_device_working() {
    // Stream 1 of rank 0 waits on the device from 250 to 400, through the Waitall: the
    // GPU is as idle as without it (155 ns of the host's blocked time).
    let mut sender = bulk_sender();
    sender.push(gpu(GpuOp::StreamWait, 1, 246, 250, 400, 0, 0, Some(0)));
    let (report, _) = gpu::analyze(&run(vec![sender, receiver()])).expect("GPU work");
    let idle = finding(&report, GpuFindingKind::GpuIdleWhileHostWaits, 0).expect("idle");
    assert_eq!(idle.lost_ns, 155);
    assert_eq!(report.ranks[0].d2h.busy_ns, 200);
}

/// True when `to` is reachable from `from` in `g`.
fn reaches(g: &overlap_analyzer::dag::graph::Dag, from: usize, to: usize) -> bool {
    let mut stack = vec![from];
    let mut seen = vec![false; g.len()];
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if !std::mem::replace(&mut seen[n], true) {
            stack.extend_from_slice(g.successors(n));
        }
    }
    false
}

#[test]
fn a_reordering_keeps_each_staged_send_after_its_copy() {
    // Bulk rank 0: its compute is inferred from the gaps; the gap 4..220 holds both D2H
    // copies and the host wait. Without the copies' buffer uses nothing would keep the
    // Isends after it (the gap's buffers are unknown): they use the copies' destinations.
    let trace = run(vec![bulk_sender(), receiver()]);
    let program = overlap_analyzer::ops::extract(&trace).expect("a program");
    let rank = &program.ranks[0];
    let gap = rank
        .ops
        .iter()
        .position(|o| o.measured_start_ns == 4 && o.measured_end_ns == 220)
        .expect("the gap holding the copies");
    let uses: Vec<_> = rank
        .gpu_uses
        .iter()
        .map(|u| (u.buf.addr, u.used, u.begin, u.end))
        .collect();
    assert_eq!(
        uses,
        vec![
            (0xA000, overlap_analyzer::ops::Touch::Write, gap, gap),
            (0xB000, overlap_analyzer::ops::Touch::Write, gap, gap),
        ]
    );
    // Permissive: the copies' uses alone hold the Isends (the gap's own effect unknown).
    let permissive = overlap_analyzer::dag::Mode::Permissive;
    let g = overlap_analyzer::dag::essential::essential(&program, rank, permissive);
    let isends: Vec<usize> = (0..rank.ops.len())
        .filter(|&i| rank.ops[i].call == Some(Op::Isend))
        .collect();
    assert_eq!(isends.len(), 2);
    for i in isends {
        assert!(
            reaches(&g, gap, i),
            "Isend {i} may not move before the copies' gap"
        );
    }
    // Rank 1's H2Ds read the receive buffers after the Waitall that completed them.
    let rank = &program.ranks[1];
    assert!(rank
        .gpu_uses
        .iter()
        .all(|u| u.used == overlap_analyzer::ops::Touch::Read && u.begin >= 3));
}

#[test]
fn no_gpu_finding_on_a_rank_cut_short_is_said_to_cover_what_was_recorded() {
    // Rank 0's kernel runs beside its send: nothing to find. Rank 1's file has no
    // footer (cut short): "no finding" covers only what was recorded.
    let traces = |cut: bool| {
        let r0 = rank_trace(
            header(0, 2, 0, "one-clock"),
            vec![sync(SyncPhase::Init, 0, 0, 0)],
            vec![
                with_buf(isend(0, 10, 1, 0, 8, 1), 0xA000),
                gpu(GpuOp::Kernel, 0, 0, 0, 50, 0, 0, None),
            ],
        );
        let mut r1 = rank_trace(
            header(1, 2, 0, "one-clock"),
            vec![sync(SyncPhase::Init, 0, 0, 0)],
            vec![recv(0, 20, 0, 0, 8)],
        );
        if cut {
            r1.footer = None;
        }
        overlap_analyzer::merge::merge(vec![r0, r1]).to_trace(std::path::Path::new("t.json"))
    };
    let text = |cut: bool| {
        let (report, _) = analysis::analyze(&traces(cut), &Default::default());
        assert!(report.gpu.as_ref().is_some_and(|g| g.findings.is_empty()));
        overlap_analyzer::report::render(&report, Default::default())
    };
    assert!(
        text(false).contains("  no GPU finding\n"),
        "{}",
        text(false)
    );
    let cut = text(true);
    assert!(
        cut.contains("no GPU finding in what was recorded (ranks are missing or cut short"),
        "{cut}"
    );
}
