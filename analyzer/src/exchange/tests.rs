//! The exchanges on workers on threads: every part where it belongs, every failure
//! said, none waiting.

use super::scatter::scatter_in;
use super::values::{gather_each_in, gather_values_in, PIECE_BYTES};
use super::*;

#[test]
fn shares_are_contiguous_blocks_of_about_equal_bytes() {
    // 8 files of 10 bytes on 4 workers: two each.
    assert_eq!(share(&[10; 8], 4), vec![0..2, 2..4, 4..6, 6..8]);
    // One large file and four small ones: the large one alone.
    //   bytes: 80 | 5 5 5 5   (total 100; halves at 50)
    assert_eq!(share(&[80, 5, 5, 5, 5], 2), vec![0..1, 1..5]);
    // Fewer files than workers: some workers own none.
    assert_eq!(share(&[7, 7], 4), vec![0..0, 0..1, 1..1, 1..2]);
    assert_eq!(share(&[], 3), vec![0..0, 0..0, 0..0]);
    // Empty files still count: they are owned by someone.
    let blocks = share(&[0, 0, 0], 2);
    assert_eq!(blocks.iter().map(|b| b.len()).sum::<usize>(), 3);
}

#[test]
fn every_worker_gets_every_part_in_worker_order() {
    let got = Threads::run(3, |ex| {
        let mine: Result<u32> = Ok(10 * ex.worker() as u32);
        let all = all_gather(ex, mine).expect("parts");
        // Worker 0's values kept, worker 1's written as made, worker 2's kept and
        // written by the gather.
        let w = ex.worker() as u32;
        let mine = match w {
            1 => {
                let pieces: Result<Vec<Vec<u8>>> = [w, 100 + w].iter().map(Values::write).collect();
                Values::Written(pieces.expect("written"))
            }
            _ => Values::Kept(vec![w, 100 + w]),
        };
        // In pieces of one value each, as in one piece: the same values.
        let at_first = gather_values_in(ex, Ok(mine), 1).expect("parts");
        let mine = Values::Kept(vec![w, 100 + w]);
        let whole = gather_values(ex, Ok(mine)).expect("parts");
        assert_eq!(at_first, whole);
        (all, at_first)
    });
    for (worker, (all, at_first)) in got.into_iter().enumerate() {
        assert_eq!(all, vec![0, 10, 20]);
        let expected = (worker == 0).then(|| vec![0, 100, 1, 101, 2, 102]);
        assert_eq!(at_first, expected);
    }
}

/// Worker 0 hears of the first worker that failed, itself included; a worker that
/// failed returns its own error, the others nothing.
#[test]
fn the_gather_reports_the_first_worker_that_failed() {
    let failing = |fails: &'static [usize]| {
        Threads::run(4, move |ex| {
            let w = ex.worker();
            let mine: Result<Values<u32>> = match fails.contains(&w) {
                true => Err(Error::Exchange {
                    reason: format!("worker {w} broke"),
                }),
                false => Ok(Values::Kept(vec![w as u32])),
            };
            gather_values(ex, mine).map_err(|e| e.to_string())
        })
    };
    let got = failing(&[2, 3]);
    let said = |r: &std::result::Result<Option<Vec<u32>>, String>| {
        r.clone().expect_err("the worker failed")
    };
    assert!(said(&got[0]).contains("worker 2 broke"), "{:?}", got[0]);
    assert_eq!(got[1], Ok(None));
    assert!(said(&got[3]).contains("worker 3 broke"));
    let got = failing(&[0, 1]);
    assert!(said(&got[0]).contains("worker 0 broke"), "{:?}", got[0]);
    assert_eq!(got[2], Ok(None));
    let got = failing(&[]);
    assert_eq!(got[0], Ok(Some(vec![0, 1, 2, 3])));
}

#[test]
fn a_failing_worker_is_reported_with_its_own_error_and_none_waits() {
    let got = Threads::run(3, |ex| {
        let mine: Result<u32> = match ex.worker() {
            1 => Err(Error::Exchange {
                reason: "rank-1.ovlp: broken".into(),
            }),
            w => Ok(w as u32),
        };
        let all = all_gather(ex, mine).map_err(|e| e.to_string());
        // The workers go on to the next exchange all the same: none is left waiting.
        let kept = Values::Kept(vec![0u8]);
        let at_first = gather_values(ex, Ok(kept)).map_err(|e| e.to_string());
        (all, at_first)
    });
    for (all, at_first) in &got {
        let all = all.as_ref().expect_err("worker 1 failed");
        assert!(all.contains("rank-1.ovlp: broken"), "{all}");
        assert!(at_first.is_ok());
    }
}

#[test]
fn every_worker_hears_whether_all_could_go_on() {
    let got = Threads::run(3, |ex| agree(ex, Ok(())).is_ok());
    assert_eq!(got, vec![true; 3]);
    // Worker 0 could not make what it was to write into: every worker hears why.
    let got = Threads::run(3, |ex| {
        let mine = match ex.worker() {
            0 => Err("no room".to_string()),
            _ => Ok(()),
        };
        agree(ex, mine).map_err(|e| e.to_string())
    });
    for (w, heard) in got.into_iter().enumerate() {
        assert_eq!(heard, Err("no room".to_string()), "worker {w}");
    }
}

/// Worker 0's parts reach each worker whole, however many rounds they take: a round a
/// byte (parts cut across rounds), as in rounds of 64 MiB; a part worker 0 could not
/// make is that worker's error, and so is one that could not be written whole (what
/// was sent of it forgotten); the others still get theirs.
#[test]
fn each_worker_gets_its_own_part_in_any_number_of_rounds() {
    /// Values, written as a sequence that fails at its end when `breaks`.
    struct Part {
        values: Vec<u32>,
        breaks: bool,
    }
    impl serde::Serialize for Part {
        fn serialize<S: serde::Serializer>(&self, to: S) -> std::result::Result<S::Ok, S::Error> {
            use serde::ser::{Error as _, SerializeSeq};
            let mut seq = to.serialize_seq(Some(self.values.len()))?;
            for v in &self.values {
                seq.serialize_element(v)?;
            }
            match self.breaks {
                true => Err(S::Error::custom("the part broke")),
                false => seq.end(),
            }
        }
    }
    let got = Threads::run(5, |ex| {
        let part_for = |k: usize| match k {
            2 => Err(Error::Exchange {
                reason: "no part for worker 2".into(),
            }),
            _ => Ok(Part {
                values: vec![k as u32; 300 * k],
                breaks: k == 3,
            }),
        };
        let maker = (ex.worker() == 0).then_some(&part_for as &dyn Fn(usize) -> Result<_>);
        let by_bytes = scatter_in::<Part, Vec<u32>>(ex, maker, 1).map_err(|e| e.to_string());
        let at_once = scatter::<Part, Vec<u32>>(ex, maker).map_err(|e| e.to_string());
        assert_eq!(by_bytes, at_once);
        at_once
    });
    assert_eq!(got[0], Ok(vec![]));
    assert_eq!(got[1], Ok(vec![1; 300]));
    let two = got[2].as_ref().expect_err("worker 2 has no part");
    assert!(two.contains("no part for worker 2"), "{two}");
    let three = got[3].as_ref().expect_err("worker 3's part broke");
    assert!(three.contains("the part broke"), "{three}");
    assert_eq!(got[4], Ok(vec![4; 1200]));
}

/// A worker that leaves (returns, or panics) while the others wait for it in an
/// exchange makes that exchange fail at each of them, naming it: a worker's path that
/// misses an exchange fails its test, where MPI would hang.
#[test]
fn an_exchange_a_worker_left_fails_naming_it() {
    let got = Threads::run(3, |ex| match ex.worker() {
        1 => Ok(Parts::one(3, 0, Vec::new())),
        _ => ex.all_to_all(Parts::one(3, 0, vec![1])),
    });
    assert!(got[1].is_ok());
    for w in [0, 2] {
        let said = got[w].as_ref().err().cloned().unwrap_or_default();
        assert!(said.contains("worker 1 left"), "worker {w}: {said}");
    }
    // Every worker came: each exchange completes, over and over.
    let got = Threads::run(3, |ex| {
        (0..50).all(|k| {
            let to = Parts::of_parts(vec![vec![k as u8]; 3]);
            ex.all_to_all(to)
                .is_ok_and(|got| got.parts().all(|p| p == [k as u8]))
        })
    });
    assert_eq!(got, vec![true; 3]);
}

/// Byte strings read only as their pieces are sent ([`Values::read`]) reach worker 0 as
/// those held would, in pieces of one value a round as in one piece; one that cannot be
/// read fails its worker (worker 1 of 3) with its error, told to worker 0 as the
/// worker's, and every worker goes on to the next exchange.
#[test]
fn values_read_as_they_are_sent_arrive_whole_or_say_why_not() {
    use super::wire::Bytes;
    let strings = |w: usize| vec![vec![w as u8; 3], vec![], vec![w as u8 + 50; 70_000]];
    let read = |w: usize, broken: bool| {
        let values = strings(w);
        let lengths = values.iter().map(Vec::len).collect();
        let pieces = values
            .into_iter()
            .enumerate()
            .map(move |(k, v)| match broken && k == 1 {
                true => Err(Error::Exchange {
                    reason: "the file of pieces ended early".into(),
                }),
                false => Ok(v),
            });
        Values::read(lengths, Box::new(pieces))
    };
    for most in [1, PIECE_BYTES] {
        let got = Threads::run(3, |ex| {
            let w = ex.worker();
            let mut all = Vec::new();
            let each = gather_each_in(ex, Ok(read(w, false)), most, &mut |b: Bytes| all.push(b.0));
            each.expect("gathered");
            let broken = gather_each_in(ex, Ok(read(w, w == 1)), most, &mut |_: Bytes| {});
            let after = gather_values(ex, Ok(Values::Kept(vec![w as u32])));
            let broken = broken.map_err(|e| match e {
                Error::Worker { worker, .. } => (e.to_string(), Some(worker)),
                e => (e.to_string(), None),
            });
            (all, broken, after.expect("went on"))
        });
        let want: Vec<Vec<u8>> = (0..3).flat_map(strings).collect();
        assert_eq!(got[0].0, want, "in pieces of at most {most} bytes");
        for (w, (_, broken, _)) in got.iter().enumerate() {
            match w {
                1 | 0 => {
                    let (e, of) = broken.as_ref().expect_err("worker 1's value unread");
                    assert!(e.contains("the file of pieces ended early"), "{w}: {e}");
                    // Worker 0 tells it as worker 1's; worker 1 as its own.
                    assert_eq!(*of, (w == 0).then_some(1));
                }
                _ => assert!(broken.is_ok(), "{broken:?}"),
            }
        }
        assert_eq!(got[0].2, Some(vec![0, 1, 2]));
    }
}
