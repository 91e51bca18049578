//! The host backend on its own: packets through the emulated device and back.

#![allow(clippy::unwrap_used)]

use overlap_instrument::recorder::{MemorySink, RecorderConfig};
use overlap_instrument::schema::Event;

use super::*;

/// Two packets through the emulated device and back, as one rank's own exchange:
/// pack and seal, D2H into pinned memory, H2D into the receive buffer, verify.
fn round_trip(swap: bool) -> (Vec<u64>, Vec<overlap_instrument::schema::GpuEvent>) {
    let sink = MemorySink::new();
    let rec = Recorder::new(sink.clone(), RecorderConfig::default()).unwrap();
    let mut d = HostDevice::new(&rec).unwrap();
    let (bytes, packets) = (256, 2u32);
    let all = bytes * packets as usize;
    let (send, recv, status) = (
        d.alloc(all).unwrap(),
        d.alloc(all).unwrap(),
        d.alloc(16).unwrap(),
    );
    let host = d.alloc_pinned(all).unwrap();
    let pack = Launch::Pack {
        buf: send,
        packets,
        packet_bytes: bytes,
        rank: 3,
        iteration: 1,
    };
    d.launch(Stream::Compute, pack).unwrap();
    let seal = Launch::Checksum {
        buf: send,
        packets,
        packet_bytes: bytes,
        tag_base: 500,
    };
    let sealed = d.launch(Stream::Compute, seal).unwrap();
    d.stream_wait(Stream::D2H, sealed).unwrap();
    let mut out = Vec::new();
    for p in 0..packets as usize {
        out.push(
            d.copy_d2h(
                Stream::D2H,
                (send, p * bytes),
                (host, p * bytes),
                bytes,
                Some(p as u32),
            )
            .unwrap(),
        );
    }
    for &op in &out {
        d.wait(op).unwrap();
    }
    if swap {
        let base = d.host_ptr(host);
        // SAFETY: two whole packets of the pinned buffer, no copy pending.
        unsafe { std::ptr::swap_nonoverlapping(base, base.add(bytes), bytes) };
    }
    for p in 0..packets {
        let at = p as usize * bytes;
        d.copy_h2d(Stream::H2D, (host, at), (recv, at), bytes, Some(p))
            .unwrap();
        let v = Launch::Verify {
            buf: recv,
            packet: p,
            packet_bytes: bytes,
            tag_base: 500,
            status,
        };
        d.launch(Stream::H2D, v).unwrap();
    }
    d.sync_stream(Stream::H2D).unwrap();
    let mut raw = [0u8; 16];
    d.download(status, 0, &mut raw).unwrap();
    d.sync_device().unwrap();
    d.release_ops().unwrap();
    drop(d);
    rec.finish().unwrap();
    let gpu = sink
        .recorded()
        .events
        .into_iter()
        .filter_map(|e| match e {
            Event::Gpu(g) => Some(g),
            _ => None,
        })
        .collect();
    let st = raw
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
        .collect();
    (st, gpu)
}

#[test]
fn packets_survive_the_round_trip_and_every_operation_is_recorded() {
    let (status, gpu) = round_trip(false);
    assert_eq!(status, [0, 0], "both packets verify");
    let count = |op: GpuOp| gpu.iter().filter(|g| g.op == op).count();
    assert_eq!(count(GpuOp::CopyD2H), 3, "two packets and the status");
    assert_eq!(count(GpuOp::CopyH2D), 2);
    assert_eq!(count(GpuOp::Kernel), 4, "pack, checksum, two verifies");
    // Event waits (2 packets, the download), the stream and the device synchronize.
    assert_eq!(count(GpuOp::HostWait), 5);
    let d2h: Vec<_> = gpu
        .iter()
        .filter(|g| g.op == GpuOp::CopyD2H && g.packet.is_some())
        .collect();
    assert_eq!(
        d2h[1].dst - d2h[0].dst,
        256,
        "the exact pinned addresses, packet by packet"
    );
    assert_eq!(d2h[0].stream, Stream::D2H.id());
    let waits: Vec<_> = gpu.iter().filter(|g| g.op == GpuOp::HostWait).collect();
    assert_eq!(waits[0].packet, Some(0), "an event wait names its packet");
    assert!(
        waits.iter().any(|w| w.stream == ALL_STREAMS),
        "the device synchronize"
    );
    for g in &gpu {
        assert!(g.start <= g.end, "{g:?}");
    }
}

#[test]
fn swapped_packets_fail_their_verification() {
    let (status, _) = round_trip(true);
    assert!(status.iter().all(|&s| s != 0), "{status:?}");
}
