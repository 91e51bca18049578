//! The window's unit tests: ranks as ranges.

use super::*;

#[test]
fn ranks_read_as_ranges() {
    assert_eq!(rank_ranges(&[3, 0, 1, 2, 8, 10, 11]), "0-3,8,10-11");
    assert_eq!(rank_ranges(&[5]), "5");
    assert_eq!(rank_ranges(&[]), "");
}

#[test]
fn a_choice_says_itself() {
    assert_eq!(Choice::default().describe(), "the whole run");
    let c = Choice {
        from_ns: Some(150_000_000),
        to_ns: None,
        region: None,
        ranks: Some(vec![0, 1, 2, 3]),
    };
    assert_eq!(c.describe(), "150.00 ms to the end, ranks 0-3");
}
