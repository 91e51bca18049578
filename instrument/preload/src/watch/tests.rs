//! What a watch's end says in its record.

use super::*;

fn ended(how: Ending, edge: u64) -> Ended {
    Ended {
        at: 50,
        how,
        edge,
        checked: 30,
    }
}

#[test]
fn a_watch_ends_used_at_an_instant_or_an_interval_or_untouched() {
    let touch = Ending::Touched {
        touch: Touch::Read,
        addr: 0x2000,
        ip: 0x1234,
    };
    // A fault or a system call: one instant.
    assert_eq!(
        outcome(ended(touch, 0)),
        Outcome::Used {
            earliest: Nanos(50),
            latest: Nanos(50),
            touch: Touch::Read,
            addr: 0x2000,
            ip: NonZeroU64::new(0x1234),
        }
    );
    // The same, with an edge byte changed since the last checkpoint: a write may have
    // come first, since then.
    assert_eq!(
        outcome(ended(touch, 0x1ff8)),
        Outcome::Used {
            earliest: Nanos(30),
            latest: Nanos(50),
            touch: Touch::Write,
            addr: 0x2000,
            ip: NonZeroU64::new(0x1234),
        }
    );
    // An edge found changed at a checkpoint, or when the buffer went back to MPI.
    for how in [Ending::Checked, Ending::Ended(WatchEnd::HandedToMpi)] {
        assert_eq!(
            outcome(ended(how, 0x1ff8)),
            Outcome::Used {
                earliest: Nanos(30),
                latest: Nanos(50),
                touch: Touch::Write,
                addr: 0x1ff8,
                ip: None,
            }
        );
    }
    assert_eq!(
        outcome(ended(Ending::Ended(WatchEnd::Released), 0)),
        Outcome::Untouched {
            until: Nanos(50),
            why: WatchEnd::Released,
        }
    );
}

#[test]
fn a_watch_records_the_bytes_it_watched() {
    let w = Watch {
        requests: std::iter::once(7).collect(),
        role: Role::Receive,
        from: 5,
        buf: (0x1010, 0x4010),
        pages: (0x2000, 0x4000),
    };
    let end = Outcome::Untouched {
        until: Nanos(9),
        why: WatchEnd::RunEnded,
    };
    let l = learned(&w, 7, end.clone());
    assert_eq!(
        (l.reads, l.writes),
        (
            Some(ByteRange {
                addr: 0x2000,
                len: 0x2000
            }),
            Some(ByteRange {
                addr: 0x1010,
                len: 0x3000
            })
        )
    );
    let send = Watch {
        role: Role::Send,
        ..w
    };
    assert_eq!(
        learned(&send, 7, end).reads,
        None,
        "a send's reads are not watched"
    );
}
