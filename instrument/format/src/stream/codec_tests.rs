//! Round trips of every kind of record, their sizes, and garbage refused without a panic.

use super::*;
use crate::call_data::Access;
use crate::schema::{CommId, GpuOp, RequestId};
use crate::stream::varint::{Reader, RecordBuf};

fn transfer(peer: i32, buf: u64) -> Transfer {
    Transfer {
        peer,
        tag: 7,
        bytes: 8,
        comm: CommId::WORLD,
        buf,
        buf_len: 8,
    }
}

fn every_call() -> Vec<(Op, CallData)> {
    let collective = Collective {
        comm: CommId(12),
        send_bytes: 64,
        recv_bytes: 256,
        root: Some(3),
    };
    let access = Access {
        target: 2,
        bytes: 4096,
        win: 1,
        buf: 0x7f00_0000_1000,
        buf_len: 4096,
    };
    vec![
        (Op::Init, CallData::Plain),
        (
            Op::Isend,
            CallData::Post {
                transfer: transfer(1, 0x7ffd_1234_5678),
                request: RequestId(1),
            },
        ),
        (
            Op::Recv,
            CallData::Blocking {
                transfer: transfer(-2, 0x1000),
            },
        ),
        (
            Op::Sendrecv,
            CallData::Sendrecv {
                send: transfer(1, 0x2000),
                recv: Transfer {
                    buf_len: 0,
                    ..transfer(3, 0x3000)
                },
            },
        ),
        (
            Op::Isendrecv,
            CallData::SendrecvPost {
                send: transfer(1, 0x2000),
                recv: transfer(3, 0x3000),
                request: RequestId(7),
            },
        ),
        (Op::Test, CallData::Complete { flag: Some(false) }),
        (Op::Waitall, CallData::Complete { flag: None }),
        (Op::Allreduce, CallData::Collective(collective)),
        (
            Op::Iallreduce,
            CallData::CollectivePost {
                collective: Collective {
                    root: None,
                    ..collective
                },
                request: RequestId(1 << 40 | 9),
            },
        ),
        (
            Op::Iprobe,
            CallData::Query {
                transfer: transfer(-1, 0),
                flag: true,
            },
        ),
        (
            Op::RequestFree,
            CallData::Free {
                request: RequestId(5),
            },
        ),
        (Op::Startall, CallData::Start),
        (
            Op::Rput,
            CallData::OneSided {
                access,
                request: Some(RequestId(6)),
            },
        ),
        (
            Op::Put,
            CallData::OneSided {
                access,
                request: None,
            },
        ),
        (
            Op::WinCreate,
            CallData::WindowCollective {
                win: 1,
                comm: CommId(4),
            },
        ),
        (
            Op::WinLock,
            CallData::WindowSync {
                win: 1,
                target: Some(0),
                exclusive: Some(true),
                flag: None,
            },
        ),
    ]
}

#[test]
fn every_record_round_trips() {
    let mut out = Vec::new();
    let mut enc = Deltas::default();
    let mut expected = Vec::new();
    let mut b = RecordBuf::default();
    let mut t = 1_000_000u64;
    for (i, (op, data)) in every_call().into_iter().enumerate() {
        b.clear();
        let site = if i % 2 == 0 {
            0x5555_0000_1000 + i as u64
        } else {
            1 << 63 | 77
        };
        encode_call(&mut b, &mut enc, op, t, t + 50 * i as u64, site, &data, 1);
        out.extend_from_slice(b.as_bytes());
        expected.push(Record::Call {
            op,
            start: t,
            end: t + 50 * i as u64,
            site,
            data,
            follow: 1,
        });
        let c = Completion {
            request: (i % 3 != 0).then_some(i as u64),
            source: (i % 2 == 0).then_some(i as i32 - 3),
            tag: Some(-5),
            bytes: (i % 4 == 0).then_some(1 << 33),
        };
        b.clear();
        encode_completion(&mut b, &mut enc, &c);
        out.extend_from_slice(b.as_bytes());
        expected.push(Record::Completed(c));
        t += 12_345;
    }
    let started = Started {
        request: 40,
        persistent: 2,
    };
    let sync = ClockSync {
        phase: SyncPhase::Final,
        local_ns: 99,
        offset_ns: -1234,
        error_ns: 5,
        rtt_ns: 10,
        rounds: 20,
    };
    b.clear();
    encode_started(&mut b, &mut enc, &started);
    encode_members(&mut b, &[0, 5, -1, 3]);
    encode_string_head(&mut b, 1, 4);
    out.extend_from_slice(b.as_bytes());
    out.extend_from_slice(b"halo");
    b.clear();
    encode_compute(&mut b, &mut enc, 1, t - 10, t + 90);
    encode_sync(&mut b, &sync);
    encode_site(&mut b, 1 << 63 | 77, 1, 42, 9);
    encode_function_site(&mut b, 3 << 62 | 88, 1, 12, 0, 2);
    let gpu = [
        GpuRecord {
            op: GpuOp::CopyD2H,
            device: 1,
            stream: 3,
            issued: t,
            // A device start a clock error before the enqueue reads as earlier.
            start: t - 400,
            end: t + 9_000,
            bytes: 1 << 24,
            src: 0x7f00_0000_0000,
            dst: 0x5555_1000,
            packet: 6,
            name: 0,
            clock_error: 500,
        },
        GpuRecord {
            op: GpuOp::HostWait,
            device: 0,
            stream: crate::schema::ALL_STREAMS,
            issued: t + 10,
            start: t + 20,
            end: t + 20,
            bytes: 0,
            src: 0,
            dst: 0,
            packet: 0,
            name: 1,
            clock_error: 0,
        },
    ];
    for g in &gpu {
        encode_gpu(&mut b, g);
    }
    out.extend_from_slice(b.as_bytes());
    expected.extend([
        Record::Started(started),
        Record::Members(vec![0, 5, -1, 3]),
        Record::StringDef {
            id: 1,
            text: b"halo",
        },
        Record::Compute {
            name: 1,
            start: t - 10,
            end: t + 90,
        },
        Record::Sync(sync),
        Record::SiteDef {
            word: 1 << 63 | 77,
            file: 1,
            line: 42,
            column: 9,
            function: None,
        },
        Record::SiteDef {
            word: 3 << 62 | 88,
            file: 1,
            line: 12,
            column: 0,
            function: Some(2),
        },
        Record::Gpu(gpu[0]),
        Record::Gpu(gpu[1]),
    ]);

    let mut r = Reader::new(&out);
    let mut dec = Deltas::default();
    let mut got = Vec::new();
    while !r.is_empty() {
        got.push(decode(&mut r, &mut dec).expect("decodes"));
    }
    assert_eq!(got, expected);
    assert_eq!(dec, enc, "both sides end with the same deltas");
}

/// A loop's Isend and its Wait, after the first iteration: a few bytes each.
#[test]
fn a_loop_of_isend_and_wait_is_small() {
    let mut d = Deltas::default();
    let mut b = RecordBuf::default();
    let mut sizes = Vec::new();
    for i in 0..3u64 {
        let t = (1u64 << 50) | (i * 3_000);
        b.clear();
        let data = CallData::Post {
            transfer: transfer(1, 0x7ffd_0000_1000),
            request: RequestId(i + 1),
        };
        encode_call(
            &mut b,
            &mut d,
            Op::Isend,
            t,
            t + 300,
            0x5555_5555_1234,
            &data,
            0,
        );
        let isend = b.as_bytes().len();
        b.clear();
        let wait = CallData::Complete { flag: None };
        encode_call(
            &mut b,
            &mut d,
            Op::Wait,
            t + 1_000,
            t + 2_500,
            0x5555_5555_1300,
            &wait,
            1,
        );
        encode_completion(
            &mut b,
            &mut d,
            &Completion {
                request: Some(i + 1),
                source: None,
                tag: None,
                bytes: None,
            },
        );
        sizes.push((isend, b.as_bytes().len()));
    }
    // Isend: tag, op, start +2000 (2), duration 300 (2), site -0xcc (2), follow, peer,
    // tag, bytes, comm, buf +0, buf_len = bytes, request +1: 16 bytes. Wait: tag, op,
    // start +1000 (2), duration 1500 (2), site +0xcc (2), follow, flag: 10 bytes, and
    // its completion (tag, presence, request +0) 3.
    assert_eq!(sizes[2], (16, 13), "{sizes:?}");
}

#[test]
fn garbage_is_refused_without_panicking() {
    assert_eq!(
        decode(&mut Reader::new(&[0]), &mut Deltas::default()),
        Err(RecordError::UnknownTag(0))
    );
    assert_eq!(
        decode(
            &mut Reader::new(&[Tag::CallPlain as u8, 0xff, 0x7f]),
            &mut Deltas::default()
        ),
        Err(RecordError::UnknownOp(16_383))
    );
    assert_eq!(
        decode(
            &mut Reader::new(&[Tag::CallPost as u8, 13, 0]),
            &mut Deltas::default()
        ),
        Err(RecordError::Truncated)
    );
    // Every prefix of every valid record fails cleanly, and random bytes never panic.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (op, data) in every_call() {
        let mut b = RecordBuf::default();
        encode_call(&mut b, &mut Deltas::default(), op, 5, 9, 0x1000, &data, 0);
        let bytes = b.as_bytes();
        for cut in 0..bytes.len() {
            assert!(decode(&mut Reader::new(&bytes[..cut]), &mut Deltas::default()).is_err());
        }
    }
    for _ in 0..20_000 {
        let n = (next() % 40) as usize;
        let bytes: Vec<u8> = (0..n).map(|_| next() as u8).collect();
        let mut r = Reader::new(&bytes);
        let mut d = Deltas::default();
        while !r.is_empty() && decode(&mut r, &mut d).is_ok() {}
    }
}
