//! The estimate of a size class and the plausibility of the line, on classes built by
//! hand (the clean transfers themselves are tested on hand-built traces in
//! `tests/network.rs`).

use super::*;

fn class(bytes: u64, clean: &[u64]) -> SizeClass {
    SizeClass::of(
        bytes,
        Protocol::Eager,
        clean.len() as u64 + 1,
        clean.to_vec(),
    )
}

fn unfit(classes: Vec<SizeClass>) -> Option<Unfit> {
    TransferModel::of_classes(EagerFit::default(), classes).unknown
}

/// Five clean transfers, one far off (9000): sorted 1100 1200 1200 1300 9000, the
/// estimate is the 2nd (ceil(0.25 × 5) = 2), the fastest 1100, the median 1200. Twelve:
/// the 3rd. Two are too few: no estimate, no fastest, no median.
#[test]
fn the_estimate_is_a_low_order_statistic_never_the_fastest() {
    let c = class(64, &[9000, 1200, 1100, 1300, 1200]);
    assert_eq!(
        (c.fastest_ns, c.estimate_ns, c.typical_ns, c.clean),
        (Some(1100), Some(1200), Some(1200), 5)
    );
    let twelve: Vec<u64> = (1..=12).map(|i| i * 100).collect();
    assert_eq!(class(64, &twelve).estimate_ns, Some(300));
    let three = class(64, &[500, 100, 300]);
    assert_eq!(
        (three.estimate_ns, three.typical_ns),
        (Some(300), Some(300))
    );
    let two = class(64, &[100, 200]);
    assert_eq!(
        (two.fastest_ns, two.estimate_ns, two.typical_ns),
        (None, None, None)
    );
}

/// Classes on the line 1000 ns + 1 ns/B (8 B, 1 KiB, 1 MiB): latency 1000 ns, 1 GB/s;
/// `t_pure` of a measured class is its estimate, of another size the line's.
#[test]
fn classes_on_a_line_give_it() {
    let on = |b: u64| 1000 + b;
    let t = TransferModel::of_classes(
        EagerFit::default(),
        [8u64, 1024, 1 << 20]
            .iter()
            .map(|&b| class(b, &[on(b), on(b), on(b)]))
            .collect(),
    );
    assert_eq!(t.unknown, None);
    let line = t.line().expect("a line");
    assert!((line.latency_ns - 1000.0).abs() < 1e-6, "{line:?}");
    assert!((line.ns_per_byte - 1.0).abs() < 1e-9, "{line:?}");
    assert_eq!(t.pure(8), Some(Nanos(1008)));
    assert_eq!(t.pure(100_000), Some(Nanos(101_000)));
    let range = t.range.expect("a range");
    assert!((range.low - 1.0).abs() < 1e-9 && (range.high - 1.0).abs() < 1e-9);
}

/// Every reason a line is unknown, each with the smallest classes that show it.
#[test]
fn a_line_that_cannot_be_had_is_unknown_with_the_reason() {
    let three = |t: u64| [t, t, t];
    assert_eq!(unfit(vec![]), Some(Unfit::NoMessages));
    let dirty = SizeClass::of(8, Protocol::Eager, 4, vec![]);
    assert_eq!(
        unfit(vec![dirty]),
        Some(Unfit::NoCleanTransfer { messages: 4 })
    );
    assert_eq!(
        unfit(vec![class(8, &[100, 120]), class(64, &[300])]),
        Some(Unfit::TooFewClean { most: 2, needed: 3 })
    );
    assert_eq!(
        unfit(vec![class(1024, &three(2000)), class(8, &[100])]),
        Some(Unfit::OneSizeClass {
            bytes: 1024,
            estimate_ns: 2000
        })
    );
    // The larger messages faster: no bandwidth.
    assert_eq!(
        unfit(vec![class(8, &three(2000)), class(1024, &three(1500))]),
        Some(Unfit::NoGrowth { from: 8, to: 1024 })
    );
    // Through (1000, 100) and (2000, 1100): 1 ns/B, and -900 ns at 0 bytes.
    assert!(matches!(
        unfit(vec![class(1000, &three(100)), class(2000, &three(1100))]),
        Some(Unfit::NoLatency { from: 1000, .. })
    ));
    // Through (1000, 1002) and (2000, 2002): 1 ns/B and a latency of 2 ns (< 10 ns).
    assert!(matches!(
        unfit(vec![class(1000, &three(1002)), class(2000, &three(2002))]),
        Some(Unfit::Latency { .. })
    ));
    // 1 ns more for 1 GiB more: 1 EB/s, beyond any bus.
    assert!(matches!(
        unfit(vec![class(0, &three(1000)), class(1 << 30, &three(1001))]),
        Some(Unfit::Bandwidth { .. })
    ));
    // Three classes far off any line: 1000, 100 000, 2000 ns.
    assert!(matches!(
        unfit(vec![
            class(8, &three(1000)),
            class(1 << 10, &three(100_000)),
            class(1 << 20, &three(2000)),
        ]),
        Some(Unfit::NoGrowth { .. } | Unfit::Residuals { .. })
    ));
}

/// A class slower than any network (1 ms of latency and 1 µs a byte at most): 8 B in
/// 3.9 ms is a rank descheduled, not a transfer: no estimate, and with no other class
/// the line is unknown for that reason. 1 MiB in 4.2 ms is slow but could be a
/// network (up to 1 ms + 1.05 s).
#[test]
fn a_class_slower_than_any_network_has_no_estimate() {
    let slow = class(8, &[3_900_000, 3_950_000, 4_000_000]);
    assert_eq!(
        (slow.estimate_ns, slow.too_slow_ns),
        (None, Some(3_950_000))
    );
    assert_eq!(slow.fastest_ns, Some(3_900_000));
    assert_eq!(
        unfit(vec![slow]),
        Some(Unfit::TooSlow {
            bytes: 8,
            estimate_ns: 3_950_000
        })
    );
    let large = class(1 << 20, &[4_200_000, 4_200_000, 4_300_000]);
    assert_eq!(
        (large.estimate_ns, large.too_slow_ns),
        (Some(4_200_000), None)
    );
}
