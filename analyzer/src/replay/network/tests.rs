//! The network's fit, range and completion by the user's terms, on size classes built
//! by hand.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::metrics::eager::Protocol;

/// Two pairs of figures equal up to rounding.
fn near(got: (f64, f64), want: (f64, f64)) {
    let ok = (got.0 - want.0).abs() < 1e-6 && (got.1 - want.1).abs() < 1e-6;
    assert!(ok, "{got:?} for {want:?}");
}

fn class(bytes: u64, clean: &[u64]) -> SizeClass {
    SizeClass::of(bytes, Protocol::Eager, clean.len() as u64, clean.to_vec())
}

/// Every message of 1000 B, clean transfers 1900, 2000, 2400 ns (estimate 2000,
/// fastest 1900, median 2000): a network of that one class, its time all bytes'
/// (2 ns/B, range 1.9 to 2.0). Given a latency of 1000 ns, the bandwidth is what the
/// rest takes: (2000 - 1000) / 1000 = 1 ns/B, range 0.9 to 1.0; given 1 ns/B (1
/// GB/s), the latency is 2000 - 1000 = 1000 ns, range 900 to 1000. Both given: exact.
#[test]
fn one_class_holds_for_its_size_and_takes_a_given_term() {
    let t = TransferModel::of_classes(EagerFit::default(), vec![class(1000, &[2400, 1900, 2000])]);
    assert!(matches!(
        t.unknown,
        Some(Unfit::OneSizeClass {
            bytes: 1000,
            estimate_ns: 2000
        })
    ));
    let fit = NetworkFit::from_transfers(&t, None).unwrap();
    assert!(matches!(fit.source, NetworkSource::OneClass { .. }));
    near((fit.mid.latency_ns, fit.mid.ns_per_byte), (0.0, 2.0));
    near((fit.low.ns_per_byte, fit.high.ns_per_byte), (1.9, 2.0));
    assert_eq!(fit.mid.transfer_ns(1000), 2000);
    let given = fit.clone().with_given(Some(1000.0), None).unwrap();
    near((given.mid.latency_ns, given.mid.ns_per_byte), (1000.0, 1.0));
    near((given.low.ns_per_byte, given.high.ns_per_byte), (0.9, 1.0));
    assert!(given.latency_given && !given.bandwidth_given);
    let given = fit.clone().with_given(None, Some(1e9)).unwrap();
    near((given.mid.latency_ns, given.mid.ns_per_byte), (1000.0, 1.0));
    near(
        (given.low.latency_ns, given.high.latency_ns),
        (900.0, 1000.0),
    );
    let given = fit.with_given(Some(5.0e3), Some(2e9)).unwrap();
    near(
        (given.mid.latency_ns, given.high.ns_per_byte),
        (5000.0, 0.5),
    );
}

/// Messages of 1000 B measured (as above) and of 64 B never clean: the network is
/// unknown (the 64 B messages have no time), until the user gives a term, and the
/// other is fitted to the 1000 B class as above; a latency longer than the class's
/// time leaves nothing for the bytes and stays unknown.
#[test]
fn an_unknown_network_is_completed_by_what_the_user_gives() {
    let unmeasured = SizeClass::of(64, Protocol::Eager, 5, vec![]);
    let t = TransferModel::of_classes(
        EagerFit::default(),
        vec![unmeasured, class(1000, &[2400, 1900, 2000])],
    );
    let u = NetworkFit::from_transfers(&t, None).unwrap_err();
    assert!(
        matches!(u.reason, Unfit::OneSizeClass { bytes: 1000, .. }),
        "{u}"
    );
    assert!(u.clone().with_given(None, None).is_err());
    let fit = u.clone().with_given(Some(1000.0), None).unwrap();
    near((fit.mid.latency_ns, fit.mid.ns_per_byte), (1000.0, 1.0));
    near((fit.low.ns_per_byte, fit.high.ns_per_byte), (0.9, 1.0));
    let fit = u.clone().with_given(None, Some(1e9)).unwrap();
    near((fit.low.latency_ns, fit.mid.latency_ns), (900.0, 1000.0));
    let fit = u.clone().with_given(Some(5.0e3), Some(2e9)).unwrap();
    assert_eq!(fit.source, NetworkSource::Given);
    let e = u.with_given(Some(3000.0), None).unwrap_err();
    assert!(matches!(e.reason, Unfit::NoGrowth { .. }), "{e}");
}

/// Two classes on the line 1000 + 1 ns/B (0 B: clean 900, 1000, 1200, 1200, the
/// second taken; 1 MiB: 1 MiB + 1000 three times): the model's line is known, the
/// range is its line scaled by the classes' fastest and median clean transfers against
/// it (0.9 and 1.2), and the estimate is the line through the medians: (0, 1200) and
/// (1 MiB, 1 MiB + 1000), latency 1200 ns, (1 MiB - 200) / 1 MiB ns per byte.
#[test]
fn a_known_fit_has_the_model_line_and_its_range() {
    let t = TransferModel::of_classes(
        EagerFit::default(),
        vec![
            class(0, &[900, 1000, 1200, 1200]),
            class(
                1 << 20,
                &[(1 << 20) + 1000, (1 << 20) + 1000, (1 << 20) + 1000],
            ),
        ],
    );
    let fit = NetworkFit::from_transfers(&t, None).unwrap();
    let line = t.line().unwrap();
    assert!((line.latency_ns - 1000.0).abs() < 1e-6, "{line:?}");
    assert!((line.ns_per_byte - 1.0).abs() < 1e-9);
    let mib = (1u64 << 20) as f64;
    assert!((fit.mid.latency_ns - 1200.0).abs() < 1e-6, "{fit:?}");
    assert!(
        (fit.mid.ns_per_byte - (mib - 200.0) / mib).abs() < 1e-9,
        "{fit:?}"
    );
    assert!((fit.low.latency_ns - 900.0).abs() < 1e-6, "{fit:?}");
    assert!((fit.high.latency_ns - 1200.0).abs() < 1e-6, "{fit:?}");
    assert_eq!(fit.eager, EagerSource::Default);
    assert_eq!(fit.transfer_range(8), (907, 1210));
}
