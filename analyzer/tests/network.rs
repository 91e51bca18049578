//! The network as the trace measured it, on hand-built traces whose answers were worked
//! out by hand (times in µs unless said, all ranks on one clock): which transfers are
//! clean, the model fitted to them, and the `t_pure` of non-blocking collectives by the
//! size their posts recorded.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::analysis::analyze;
use overlap_analyzer::metrics::clean::Cleaner;
use overlap_analyzer::metrics::eager::{EagerFit, Protocol};
use overlap_analyzer::metrics::request_metrics::RequestClass;
use overlap_analyzer::metrics::transfer::{TransferModel, Unfit};
use overlap_analyzer::replay::{NetworkFit, NetworkSource};
use overlap_instrument::schema::{CallArgs, Nanos, Op};

/// µs, as the traces' ns.
const fn us(t: u64) -> u64 {
    t * 1000
}

const MIB: u64 = 1 << 20;

/// Six messages from rank 0 to rank 1, one per phase (µs):
///
/// ```text
///  A  8 B, the receiver waited: clean, 14 - 10 = 4
///     r0 |c 0-10          |Send 10-11|
///     r1 |Recv 0 ------------------ 14|
///  B  8 B, the receiver came after the send completed (eager): not clean (2 = the copy out)
///     r0 |Isend 20-21|Wait 21-22|
///     r1 |c ..........................|Irecv 30-31|Wait 31-32|
///  C  1 MiB (rendezvous), the receiver waited but the sender computed 51-90: not clean
///     r0 |Isend 50-51|c 51-90 ..............|Wait 90-95|
///     r1 |Irecv 40-41|Wait 41 ------------------- 100|
///  D  1 MiB, the receiver waited and the sender went straight to its Wait: clean, 160 - 120 = 40
///     r0 |Isend 120-121|Wait 121-158|
///     r1 |Irecv 110-111|Wait 111 ------- 160|
///  E  1 MiB, the sender waited (its Wait, for this send alone, from 171 to after the
///     receive's post at 180): clean, 215 - 180 = 35
///     r0 |Isend 170-171|Wait 171 --------- 215|
///     r1 |c ..........|Recv 180 ---------- 215|
///  F  8 B twice into one Waitall: a (sent 225) came before b (sent 235): a not clean
///     (its observation would hold the wait for b), b clean, 240 - 235 = 5
///     r0 |Send a 225-226|c 226-235|Send b 235-236|
///     r1 |Irecv a 220-221|Irecv b 221-222|Waitall 222 ---------- 240|
///  G  1 MiB, the receive posted first and its Wait entered 0.5 after the send (within
///     1 µs): clean, 300 - 260 = 40
///     r0 |Isend 260-261|Wait 261 ------ 298|
///     r1 |Irecv 250-251|c 251-260.5|Wait 260.5 --- 300|
///  H  1 MiB, as G but the Wait entered 10 after the send (25 % of the 40): not clean
///     r0 |Isend 320-321|Wait 321 ------ 358|
///     r1 |Irecv 310-311|c 311-330|Wait 330 --- 360|
/// ```
///
/// The eager limit: B's send completed (22) before its receive was posted (30): 8 B is
/// eager; 1 MiB is above it, rendezvous.
fn six_phases() -> overlap_analyzer::model::Trace {
    // A
    let mut r0 = vec![compute(0, us(10), "c"), send(us(10), us(11), 1, 1, 8)];
    let mut r1 = vec![recv(0, us(14), 0, 1, 8)];
    // B
    r0.extend([
        isend(us(20), us(21), 1, 2, 8, 1),
        complete(Op::Wait, us(21), us(22), &[(1, None)]),
    ]);
    r1.extend([
        irecv(us(30), us(31), 0, 2, 8, 1),
        complete(Op::Wait, us(31), us(32), &[(1, Some((0, 2)))]),
    ]);
    // C
    r0.extend([
        isend(us(50), us(51), 1, 3, MIB, 2),
        compute(us(51), us(90), "c"),
        complete(Op::Wait, us(90), us(95), &[(2, None)]),
    ]);
    r1.extend([
        irecv(us(40), us(41), 0, 3, MIB, 2),
        complete(Op::Wait, us(41), us(100), &[(2, Some((0, 3)))]),
    ]);
    // D
    r0.extend([
        isend(us(120), us(121), 1, 4, MIB, 3),
        complete(Op::Wait, us(121), us(158), &[(3, None)]),
    ]);
    r1.extend([
        irecv(us(110), us(111), 0, 4, MIB, 3),
        complete(Op::Wait, us(111), us(160), &[(3, Some((0, 4)))]),
    ]);
    // E
    r0.extend([
        isend(us(170), us(171), 1, 5, MIB, 4),
        complete(Op::Wait, us(171), us(215), &[(4, None)]),
    ]);
    r1.extend([recv(us(180), us(215), 0, 5, MIB)]);
    // F
    r0.extend([
        send(us(225), us(226), 1, 6, 8),
        compute(us(226), us(235), "c"),
        send(us(235), us(236), 1, 7, 8),
    ]);
    r1.extend([
        irecv(us(220), us(221), 0, 6, 8, 5),
        irecv(us(221), us(222), 0, 7, 8, 6),
        complete(
            Op::Waitall,
            us(222),
            us(240),
            &[(5, Some((0, 6))), (6, Some((0, 7)))],
        ),
    ]);
    // G
    r0.extend([
        isend(us(260), us(261), 1, 8, MIB, 7),
        complete(Op::Wait, us(261), us(298), &[(7, None)]),
    ]);
    r1.extend([
        irecv(us(250), us(251), 0, 8, MIB, 7),
        compute(us(251), us(260) + 500, "c"),
        complete(Op::Wait, us(260) + 500, us(300), &[(7, Some((0, 8)))]),
    ]);
    // H
    r0.extend([
        isend(us(320), us(321), 1, 9, MIB, 8),
        complete(Op::Wait, us(321), us(358), &[(8, None)]),
    ]);
    r1.extend([
        irecv(us(310), us(311), 0, 9, MIB, 8),
        compute(us(311), us(330), "c"),
        complete(Op::Wait, us(330), us(360), &[(8, Some((0, 9)))]),
    ]);
    run(vec![r0, r1])
}

#[test]
fn clean_transfers_are_those_whose_two_ends_were_ready() {
    let t = six_phases();
    let eager = EagerFit::of(&t);
    assert_eq!(eager.largest_eager, Some(8));
    assert_eq!(eager.protocol(MIB), Protocol::Rendezvous);
    let cleaner = Cleaner::new(&t, eager);
    let by_tag: Vec<(i32, Option<u64>)> = t
        .messages
        .iter()
        .enumerate()
        .map(|(mi, m)| (m.tag, cleaner.clean(mi).map(|c| c.ns)))
        .collect();
    assert_eq!(
        by_tag,
        vec![
            (1, Some(us(4))),
            (2, None),
            (3, None),
            (4, Some(us(40))),
            (5, Some(us(35))),
            (6, None),
            (7, Some(us(5))),
            (8, Some(us(40))),
            (9, None),
        ]
    );
    // 8 B: two clean transfers, too few for an estimate (three are needed); 1 MiB:
    // 35, 40, 40 -> the second, 40. One size class with an estimate, and messages of
    // another: no line, no network (the 8 B messages have no time).
    let m = TransferModel::fit(&t);
    assert_eq!((m.messages, m.clean), (9, 5));
    assert_eq!(
        m.unknown,
        Some(Unfit::OneSizeClass {
            bytes: MIB,
            estimate_ns: us(40)
        })
    );
    assert_eq!((m.pure(8), m.pure(MIB)), (None, Some(Nanos(us(40)))));
    let unknown = NetworkFit::from_transfers(&m, None).unwrap_err();
    assert!(
        unknown.to_string().contains("one size class only"),
        "{unknown}"
    );
}

/// Clean transfers of two sizes, each the receiver waiting in its Recv from `at` and
/// the sender sending `wait` µs later, taking `ns` ns from the send:
///
/// ```text
///  r0 |c at .. at+10|Send at+10|
///  r1 |Recv at ----------- at+10+ns|
/// ```
///
/// 0 B: 2000, 3000, 4500, 9000 ns -> the 2nd of 4: 3000 (fastest 2000, median 4500);
/// 32 000 B: 34 000, 35 000, 35 000 ns -> 35 000. The line through (0, 3000) and
/// (32 000, 35 000): latency 3000 ns, 1 ns/B (1 GB/s); its range the fastest against
/// the line (2000 / 3000 = 0.67) to the median (4500 / 3000 = 1.5). t_pure of 1000 B,
/// a size never sent: 3000 + 1000 = 4000 ns. Typically (the line through the medians,
/// (0, 4500) and (32 000, 35 000)): latency 4500 ns, 30 500 / 32 000 ns/B (1.05 GB/s),
/// what the replay takes for a transfer.
#[test]
fn the_model_is_a_low_order_statistic_per_class_and_a_line_through_them() {
    let transfers = [
        (0, 2000),
        (0, 9000),
        (0, 3000),
        (0, 4500),
        (32_000, 35_000),
        (32_000, 34_000),
        (32_000, 35_000),
    ];
    let (mut r0, mut r1) = (Vec::new(), Vec::new());
    for (k, &(bytes, ns)) in transfers.iter().enumerate() {
        let at = us(100 * k as u64);
        r0.extend([
            compute(at, at + us(10), "c"),
            send(at + us(10), at + us(10) + 500, 1, 0, bytes),
        ]);
        r1.push(recv(at, at + us(10) + ns, 0, 0, bytes));
    }
    let t = run(vec![r0, r1]);
    let m = TransferModel::fit(&t);
    assert_eq!(m.unknown, None, "{m:?}");
    let estimates: Vec<_> = m
        .classes
        .iter()
        .map(|c| (c.bytes, c.clean, c.fastest_ns, c.estimate_ns, c.typical_ns))
        .collect();
    assert_eq!(
        estimates,
        vec![
            (0, 4, Some(2000), Some(3000), Some(4500)),
            (32_000, 3, Some(34_000), Some(35_000), Some(35_000)),
        ]
    );
    let line = m.line().unwrap();
    assert!((line.latency_ns - 3000.0).abs() < 1e-6, "{line:?}");
    assert!((line.ns_per_byte - 1.0).abs() < 1e-9, "{line:?}");
    let range = m.range.unwrap();
    assert!((range.low - 2.0 / 3.0).abs() < 1e-9 && (range.high - 1.5).abs() < 1e-9);
    assert_eq!(m.pure(1000), Some(Nanos(4000)));
    assert_eq!(m.pure(0), Some(Nanos(3000)));
    let fit = NetworkFit::from_transfers(&m, None).unwrap();
    assert!(matches!(
        fit.source,
        NetworkSource::Fitted {
            messages: 7,
            clean: 7,
            classes: 2
        }
    ));
    assert_eq!(fit.transfer_range(1000), (2667, 6000));
    assert!((fit.mid.latency_ns - 4500.0).abs() < 1e-6, "{fit:?}");
    assert!(
        (fit.mid.ns_per_byte - 30_500.0 / 32_000.0).abs() < 1e-9,
        "{fit:?}"
    );
    // The report's line says it in words, and never a latency of 0.
    let r = analyze(&t, &opts()).0;
    let text = overlap_analyzer::report::render(&r, Default::default());
    assert!(
        text.contains(
            "network fitted to 7 clean transfer(s) of 7 message(s): latency 3.0 us, bandwidth \
             1.00 GB/s (range x0.67 to x1.50; typically latency 4.5 us, bandwidth 1.05 GB/s)"
        ),
        "{text}"
    );
}

/// A non-blocking collective's size on a rank is what its post recorded (the preload
/// and the Rust layer write the bytes it contributes and receives, not `bytes`): each
/// size has its own class in the collective model. Three instances of `MPI_Iallreduce`
/// on two ranks (ns):
///
/// ```text
///  r0, r1 |Iar 8 B 0-1|Wait 1-5|..|Iar 1 MiB 10-11|Wait 11-51|..|Iar 1 MiB 60-61|c 61-101|Wait 101-103|
/// ```
///
/// t_pure(8 B) = 5 - 0 = 5; t_pure(1 MiB) = the shortest of 51 - 10 = 41 and 103 - 60 =
/// 43: 41. The third instance's requests: t_cpu 40, t_ovrl 43: IMB (41 + 40 - 43) /
/// min(41, 40) = 0.95. Sizes taken as 0 (before) put all three in one class, t_pure 5,
/// and made it (5 + 40 - 43) / 5 = 0.4.
#[test]
fn non_blocking_collectives_are_classed_by_the_size_their_posts_recorded() {
    let iallreduce = |start: u64, bytes: u64, request: u64| {
        call(
            Op::Iallreduce,
            start,
            start + 1,
            CallArgs {
                comm: Some(0),
                send_bytes: Some(bytes),
                recv_bytes: Some(bytes),
                request: Some(request),
                ..CallArgs::default()
            },
        )
    };
    let rank = || {
        vec![
            iallreduce(0, 8, 1),
            complete(Op::Wait, 1, 5, &[(1, None)]),
            iallreduce(10, MIB, 2),
            complete(Op::Wait, 11, 51, &[(2, None)]),
            iallreduce(60, MIB, 3),
            compute(61, 101, "c"),
            complete(Op::Wait, 101, 103, &[(3, None)]),
        ]
    };
    let t = run(vec![rank(), rank()]);
    let (r, d) = analyze(&t, &opts());
    let classes: Vec<_> = r
        .requests
        .collective_model
        .classes
        .iter()
        .map(|c| (c.call, c.bytes, c.min_ns))
        .collect();
    assert_eq!(
        classes,
        vec![("MPI_Iallreduce", 8, 5), ("MPI_Iallreduce", MIB, 41)]
    );
    for q in d.requests.iter().filter(|q| q.request == 3) {
        assert_eq!(q.kind, RequestClass::Collective);
        assert_eq!(
            (q.bytes, q.t_pure_ns(), q.cpu_ns, q.t_ovrl_ns),
            (MIB, Some(41), 40, 43)
        );
        assert!((q.overlap().unwrap() - 0.95).abs() < 1e-9, "{q:?}");
    }
}

/// The trace with ranks 0 and 1 put on one host whose CPUs their affinities say.
fn on_host(
    mut t: overlap_analyzer::model::Trace,
    cpus: [&str; 2],
) -> overlap_analyzer::model::Trace {
    for (r, c) in t.info.ranks.iter_mut().zip(cpus) {
        r.host = "vm".into();
        r.cpu_affinity = Some(c.into());
        r.online_cpus = Some(1);
    }
    t
}

/// Waits the scheduler made, on a host with more ranks than CPUs (ns). Three clean
/// warm-ups of 8 B (rank 1 in its Recv from k·30, rank 0 sending at k·30 + 5, done at
/// k·30 + 15: 10 each) give t_pure(8 B) = 10, slow end 10: a call may wait 4 × 10 = 40
/// past its last partner before the scheduler is the explanation.
///
/// ```text
///  rank 0 |Recv←1 100 ----------------------------- 300|Send→1 300-301|
///  rank 1 |Send→0 110-111|Recv←0 120 --------------------------------- 320|
/// ```
///
/// - rank 0's Recv: its sender came at 110, so from 150 on nothing but the scheduler
///   kept it: descheduled time [150, 300) = 150. Its Late Sender [100, 110) = 10 stays.
/// - rank 1's Late Sender [120, 300) = 180: its peer, rank 0, was descheduled for 150
///   of it (more than half): descheduled, counted apart.
///
/// The same ranks each on a CPU of their own: nothing is the scheduler's, the Late
/// Senders are 3 × 5 (the warm-ups) + 10 + 180.
#[test]
fn waits_the_scheduler_made_are_counted_apart() {
    let (mut r0, mut r1) = (Vec::new(), Vec::new());
    for k in 0..3 {
        r0.push(send(30 * k + 5, 30 * k + 6, 1, 0, 8));
        r1.push(recv(30 * k, 30 * k + 15, 0, 0, 8));
    }
    r0.extend([recv(100, 300, 1, 5, 8), send(300, 301, 1, 6, 8)]);
    r1.extend([send(110, 111, 0, 5, 8), recv(120, 320, 0, 6, 8)]);
    let t = run(vec![r0, r1]);
    let late = |r: &overlap_analyzer::analysis::Report| {
        let k = &r.wait_states.kinds[0];
        (k.total_ns, k.count, k.descheduled_count, k.descheduled_ns)
    };

    let crowded = analyze(&on_host(t.clone(), ["0", "0"]), &opts()).0;
    assert_eq!(crowded.run.oversubscription.oversubscribed, Some(true));
    assert_eq!(late(&crowded), (25, 4, 1, 180));
    let d = &crowded.wait_states.descheduled;
    assert_eq!(
        (d.calls, d.total_ns, d.instances, d.instances_ns),
        (1, 150, 1, 180)
    );
    let text = overlap_analyzer::report::render(&crowded, Default::default());
    assert!(
        text.contains(
            "oversubscribed: 2 ranks ran on 1 CPU(s) of host vm (2×): waits include time-sharing"
        ),
        "{text}"
    );
    assert!(
        text.contains("descheduled (ranks shared CPUs; counted apart): 1 call(s) held 150 ns"),
        "{text}"
    );

    let apart = analyze(&on_host(t, ["0", "1"]), &opts()).0;
    assert_eq!(apart.run.oversubscription.oversubscribed, Some(false));
    assert_eq!(late(&apart), (205, 5, 0, 0));
    assert_eq!(apart.wait_states.descheduled.calls, 0);
}

/// A non-blocking exchange whose Waits ran far past the ceiling (ns): three blocking
/// warm-ups of 1 MiB give t_pure 10; then each rank computes 40 in the window and
/// waits 100 (ceiling 4 × 10 + 1): on a host with more ranks than CPUs the scheduler's,
/// counted apart; on CPUs of their own, only not written-not-achieved (as before).
///
/// ```text
///  rank 0 |Send 0-10|Send 10-20|Send 20-30|Isend 30-31|..compute 31-71..|Wait 71 --- 171|
///  rank 1 |Recv 0-10|Recv 10-20|Recv 20-30|Irecv 30-31|..compute 31-71..|Wait 71 --- 171|
/// ```
#[test]
fn a_wait_the_scheduler_made_is_not_written_not_achieved() {
    let rank = |me: u32| {
        let mut e: Vec<_> = (0..3)
            .map(|k| match me {
                0 => send(10 * k, 10 * k + 10, 1, 1, MIB),
                _ => recv(10 * k, 10 * k + 10, 0, 1, MIB),
            })
            .collect();
        let (post, done) = match me {
            0 => (isend(30, 31, 1, 2, MIB, 1), None),
            _ => (irecv(30, 31, 0, 2, MIB, 1), Some((0, 2))),
        };
        e.extend([
            post,
            compute(31, 71, "c"),
            complete(Op::Wait, 71, 171, &[(1, done)]),
        ]);
        e
    };
    let t = run(vec![rank(0), rank(1)]);
    let crowded = analyze(&on_host(t.clone(), ["0", "0"]), &opts()).0;
    let na = &crowded.requests.written_not_achieved;
    assert_eq!((na.count, na.descheduled, na.unknown), (0, 2, 0));
    let apart = analyze(&on_host(t, ["0", "1"]), &opts()).0;
    let na = &apart.requests.written_not_achieved;
    assert_eq!((na.count, na.descheduled, na.unknown), (0, 0, 0));
}
