//! The slots on real memory of the test process, without a signal: what the handler,
//! a system call wrapper and an MPI call would do, called directly. One test, since the
//! table is the process's.

use super::*;
use overlap_instrument::schema::WatchEnd;

const RW: i32 = libc::PROT_READ | libc::PROT_WRITE;

/// Four fresh pages; the buffer is 100 bytes into the first to 100 bytes into the
/// fourth: its whole pages are the second and third, its edges 100 bytes apart.
///
/// ```text
///  page     0          1          2          3
///          [   |head  ][  whole   ][  whole  ][tail|    ]
///              ^ buf                              ^ buf end
/// ```
fn memory(page: u64) -> (u64, Arm) {
    // SAFETY: a fresh private mapping of the test's own.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            (4 * page) as usize,
            RW,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    } as u64;
    let arm = Arm {
        buf: (base + 100, base + 3 * page + 100),
        pages: (base + page, base + 3 * page),
        prot: RW,
        watch_prot: libc::PROT_READ,
        at: 10,
    };
    (base, arm)
}

#[test]
fn watches_end_once_by_whoever_comes_first_and_give_their_pages_back() {
    let page = 4096;
    assert!(prepare(page));
    let (base, a) = memory(page);
    let ok = || Ok(());

    // A fault on a whole page ends it: once; a second fault there is not a watch's.
    let i = arm(&a, ok).expect("armed");
    assert!(maybe_watched(base + 100, base + 101) && busy() == 1);
    assert!(!maybe_watched(base, base + 100));
    assert_eq!(
        fault(base + page + 8, Touch::Write, 0x1234, || 20),
        Fault::Ours
    );
    assert_eq!(ended(), 1);
    assert_eq!(
        fault(base + page + 8, Touch::Write, 0x1234, || 21),
        Fault::NotOurs
    );
    let e = collect(i).expect("ended");
    assert_eq!(
        (e.at, e.how, e.edge, e.checked),
        (
            20,
            Ending::Touched {
                touch: Touch::Write,
                addr: base + page + 8,
                ip: 0x1234
            },
            0,
            10
        )
    );
    assert_eq!(busy(), 0);
    // SAFETY: the page was given back its protection (a fault here fails the test).
    unsafe { *((base + page + 8) as *mut u8) = 7 };

    // A write to an edge, found at a checkpoint; a checkpoint with the edges unchanged
    // moves `checked`.
    let i = arm(&a, ok).expect("armed again");
    checkpoint(15);
    assert_eq!(ended(), 0);
    // SAFETY: an edge byte: never protected.
    unsafe { *((base + 3 * page + 50) as *mut u8) = 9 };
    checkpoint(30);
    let e = collect(i).expect("ended by the checkpoint");
    assert_eq!(
        (e.at, e.how, e.edge, e.checked),
        (30, Ending::Checked, base + 3 * page + 50, 15)
    );

    // Released over part of the buffer (its edge): ended untouched; a fault elsewhere is
    // not a watch's.
    let i = arm(&a, ok).expect("armed a third time");
    assert_eq!(
        fault(base + 5 * page, Touch::Read, 0, || 40),
        Fault::NotOurs
    );
    assert!(!end_overlapping(
        base,
        base + 100,
        41,
        |_, _| Ending::Ended(WatchEnd::Released)
    ));
    assert!(end_overlapping(base + 50, base + 101, 42, |_, _| {
        Ending::Ended(WatchEnd::Released)
    }));
    let e = collect(i).expect("released");
    assert_eq!((e.how, e.edge), (Ending::Ended(WatchEnd::Released), 0));
    // SAFETY: given back.
    unsafe { *((base + 2 * page) as *mut u8) = 1 };

    // A watch refused while it arms (a system call started on its range) leaves its
    // pages as they were and its slot free.
    let refused = arm(&a, || Err(UnwatchedReason::SharedWithActive));
    assert_eq!(refused, Err(UnwatchedReason::SharedWithActive));
    assert_eq!((busy(), protected()), (0, vec![]));
    // SAFETY: never protected.
    unsafe { *((base + 2 * page) as *mut u8) = 2 };

    // A forked child gives every page back at once.
    let i = arm(&a, ok).expect("armed");
    assert_eq!(protected(), vec![(base + page, base + 3 * page, RW)]);
    abandon_all();
    assert_eq!((busy(), ended(), collect(i)), (0, 0, None));
    // SAFETY: given back.
    unsafe { *((base + page) as *mut u8) = 3 };
}
