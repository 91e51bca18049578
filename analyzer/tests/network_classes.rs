//! A network of size classes: a run whose sizes are not on a line but were each
//! measured replays on each class's own time; a class the replay transfers but the run
//! did not measure leaves the network unknown, with the line's reason. Hand-built traces
//! (µs, all ranks on one clock).

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::metrics::transfer::{TransferModel, Unfit};
use overlap_analyzer::ops::Program;
use overlap_analyzer::replay::{
    measured_orders, replay, NetworkFit, NetworkSource, ProgressMode, ReplayConfig,
};
use overlap_analyzer::report::network_line;
use overlap_instrument::schema::{Event, Op};

/// µs, as the traces' ns.
const fn us(t: u64) -> u64 {
    t * 1000
}

const KIB: u64 = 1024;

/// One clean transfer per phase, 200 µs apart, from rank 0 to rank 1: rank 1 waits in
/// its Recv from the phase's start, rank 0 computes 10 µs and sends (its Send takes
/// 0.5 µs), and the data reaches rank 1 `ns` µs after the send:
///
/// ```text
///  r0 |c at .. at+10|Send at+10 .. at+10.5|
///  r1 |Recv at --------------------------- at+10+ns|
/// ```
fn phases(transfers: &[(u64, u64)]) -> (Vec<Event>, Vec<Event>) {
    let (mut r0, mut r1) = (Vec::new(), Vec::new());
    for (k, &(bytes, ns)) in transfers.iter().enumerate() {
        let at = us(200 * k as u64);
        r0.extend([
            compute(at, at + us(10), "c"),
            send(at + us(10), at + us(10) + 500, 1, 0, bytes),
        ]);
        r1.push(recv(at, at + us(10) + us(ns), 0, 0, bytes));
    }
    (r0, r1)
}

/// 8 KiB: 50, 80, 60, 70 µs (fastest 50, estimate the 2nd: 60, median the 3rd: 70);
/// 64 KiB: 30, 40, 45 (fastest 30, estimate and median 40), the last phase's 45. Both
/// eager (no send was seen eager: the default limit, 64 KiB). 64 KiB took less than
/// 8 KiB: no line ("the transfer times do not grow with the size (8192 B to 65536 B)"),
/// but each class was measured: the replay gives a 8 KiB message its median, 70 µs, and
/// a 64 KiB one 40 µs (fast end: the fastest, 50 and 30).
const TWO_CLASSES: [(u64, u64); 7] = [
    (8 * KIB, 50),
    (8 * KIB, 80),
    (8 * KIB, 60),
    (8 * KIB, 70),
    (64 * KIB, 30),
    (64 * KIB, 40),
    (64 * KIB, 45),
];

/// The measured order of `trace` replayed on `fit`'s estimate and fast end.
fn replayed(trace: &overlap_analyzer::model::Trace, fit: &NetworkFit) -> (u64, u64, u64) {
    let program: Program = overlap_analyzer::ops::extract(trace).unwrap();
    let orders = measured_orders(&program);
    let on = |n| {
        replay(&program, &orders, &ReplayConfig::on(n, ProgressMode::InMpi))
            .unwrap()
            .makespan_ns
    };
    (program.measured_ns, on(fit.mid), on(fit.low))
}

/// The run of [`TWO_CLASSES`] replays on the classes. Rank 0 never waits (its sends
/// are eager): it replays as measured, each send at its phase's 10 µs. Rank 1's Recv of
/// each phase ends when the data arrives, its class's time after the send: the run ends
/// with the last phase's Recv, at 1200 + 10 + 45 = 1255 µs measured, 1200 + 10 + 40 =
/// 1250 µs replayed (5 µs early: the class's median is 40, that transfer took 45), and
/// 1200 + 10 + 30 = 1240 µs at the fast end. `analyze`'s self check is that replay:
/// -5 / 1255.
///
/// ```text
///  phase 6   r0 |c 1200-1210|Send 1210-1210.5|
///            r1 |Recv 1200 ------------------- 1255|   measured
///            r1 |Recv 1200 -------------- 1250|        replayed (64 KiB: 40)
/// ```
#[test]
fn a_run_whose_sizes_are_not_on_a_line_replays_on_its_classes() {
    let (r0, r1) = phases(&TWO_CLASSES);
    let trace = run(vec![r0, r1]);
    let model = TransferModel::fit(&trace);
    let no_line = Unfit::NoGrowth {
        from: 8 * KIB,
        to: 64 * KIB,
    };
    assert_eq!(model.unknown, Some(no_line.clone()));
    let fit = NetworkFit::from_transfers(&model, None).unwrap();
    assert!(
        matches!(&fit.source, NetworkSource::Classes { classes, line } if classes.len() == 2 && *line == no_line),
        "{:?}",
        fit.source
    );
    // Each message its class's time, all of it the data's.
    assert_eq!(fit.mid.latency(), 0);
    assert_eq!(
        (fit.mid.transfer_ns(8 * KIB), fit.mid.transfer_ns(64 * KIB)),
        (us(70), us(40))
    );
    assert_eq!(fit.transfer_range(8 * KIB), (us(50), us(70)));
    assert_eq!(fit.transfer_range(64 * KIB), (us(30), us(40)));
    assert_eq!(replayed(&trace, &fit), (us(1255), us(1250), us(1240)));
    // analyze's self check: that replay, a figure.
    let r = report(&trace);
    let check = r.replay.unwrap();
    assert_eq!((check.measured_ns, check.replayed_ns), (us(1255), us(1250)));
    assert!(close(check.self_error.unwrap(), -5.0 / 1255.0));
    assert_eq!(r.replay_unknown, None);
    // The line stays unknown in the report; the replay's network says what it is.
    assert_eq!(r.requests.transfer_model.unknown, Some(no_line));
    assert_eq!(
        network_line(&fit),
        "per size class as measured: 8.0 KiB (eager) 70.0 us, 64.0 KiB (eager) 40.0 us; \
         no line: the transfer times do not grow with the size (8192 B to 65536 B): no \
         bandwidth"
    );
    let json = serde_json::to_value(&fit).unwrap();
    assert_eq!(json["source"]["from"], "classes");
    assert_eq!(json["source"]["line"]["reason"], "no_growth");
    assert_eq!(
        json["mid"]["classes"],
        serde_json::json!([
            {"from_bytes": 8192, "to_bytes": 16383, "protocol": "eager", "ns": 70000},
            {"from_bytes": 65536, "to_bytes": 65536, "protocol": "eager", "ns": 40000},
        ])
    );
}

/// Given a latency or a bandwidth, the classes are the unknown network completed by it
/// (B's rule: the other term fitted through the class estimates): a latency of 100 µs
/// leaves the 60 and 40 µs estimates nothing for their bytes, and it stays unknown with
/// the line's reason; both given, the network is exactly that.
#[test]
fn a_given_term_completes_the_line_the_classes_stand_in_for() {
    let (r0, r1) = phases(&TWO_CLASSES);
    let fit = NetworkFit::from_trace(&run(vec![r0, r1]), None).unwrap();
    let same = fit.clone().with_given(None, None).unwrap();
    assert_eq!(same, fit);
    let e = fit
        .clone()
        .with_given(Some(us(100) as f64), None)
        .unwrap_err();
    assert!(matches!(e.reason, Unfit::NoGrowth { .. }), "{e}");
    let given = fit.with_given(Some(1000.0), Some(1e9)).unwrap();
    assert_eq!(given.source, NetworkSource::Given);
    assert_eq!(given.mid.transfer_ns(8 * KIB), 1000 + 8 * KIB);
}

/// A class the replay transfers but the run did not measure leaves the network unknown,
/// as before, with the line's reason:
///
/// - 512 B sent twice, each clean (2 clean transfers, 3 needed for an estimate);
/// - or 1 MiB sent by rank 0 to itself (a message the fit leaves out: its class has no
///   clean transfer), while a 8 KiB one to itself is of a measured class and changes
///   nothing.
///
/// ```text
///  r0 |Isend 1 MiB to 0|Irecv 1 MiB from 0|Waitall|   (after the phases)
/// ```
#[test]
fn a_class_not_measured_leaves_the_network_unknown() {
    let mut transfers = TWO_CLASSES.to_vec();
    transfers.extend([(512, 20), (512, 20)]);
    let (r0, r1) = phases(&transfers);
    let trace = run(vec![r0, r1]);
    let unknown = NetworkFit::from_trace(&trace, None).unwrap_err();
    assert!(
        matches!(unknown.reason, Unfit::NoGrowth { .. }),
        "{unknown}"
    );
    assert_eq!(report(&trace).replay, None);
    let to_itself = |bytes: u64| {
        let (mut r0, r1) = phases(&TWO_CLASSES);
        let at = us(1400);
        r0.extend([
            isend(at, at + 1000, 0, 7, bytes, 1),
            irecv(at + us(1), at + us(2), 0, 7, bytes, 2),
            complete(
                Op::Waitall,
                at + us(2),
                at + us(3),
                &[(1, None), (2, Some((0, 7)))],
            ),
        ]);
        run(vec![r0, r1])
    };
    let covered = NetworkFit::from_trace(&to_itself(8 * KIB), None).unwrap();
    assert!(matches!(covered.source, NetworkSource::Classes { .. }));
    let unknown = NetworkFit::from_trace(&to_itself(1 << 20), None).unwrap_err();
    assert!(
        matches!(unknown.reason, Unfit::NoGrowth { .. }),
        "{unknown}"
    );
}
