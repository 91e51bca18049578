//! One-sided synchronisation other than the fence: the general active-target epochs
//! (Win_post / Win_start / Win_complete / Win_wait / Win_test), the passive-target
//! locks, flushes and Win_sync. Each records its window's id; the calls that name one
//! target record it as a world rank, Win_lock whether the lock is exclusive, and
//! Win_start and Win_post the world ranks of their group.

use std::ffi::c_int;

use mpi_sys::*;
use overlap_instrument::recorder::CallData;
use overlap_instrument::schema::Op;

use super::{traced, Timed};
use crate::tracer::Tracer;

/// Records a synchronisation call on `win`.
fn record(
    t: &Tracer,
    op: Op,
    at: Timed,
    win: MPI_Win,
    target: Option<c_int>,
    exclusive: Option<bool>,
    flag: Option<bool>,
) {
    let w = t.wins.info(win);
    let data = CallData::WindowSync {
        win: w.id,
        target: target.map(|r| w.comm.world(r)),
        exclusive,
        flag,
    };
    t.record(op, at, data, &[]);
}

/// Win_start and Win_post: an epoch opened to `group`.
macro_rules! epoch {
    ($($wrapper:ident => $pmpi:ident, $op:expr;)+) => {$(
        pub(crate) unsafe extern "C" fn $wrapper(
            group: MPI_Group,
            assert: c_int,
            win: MPI_Win,
        ) -> c_int {
            traced(
                $op,
                // SAFETY: the program's arguments, passed on unchanged.
                || unsafe { $pmpi(group, assert, win) },
                |t, at, rc| {
                    if rc != 0 {
                        return;
                    }
                    let w = t.wins.info(win);
                    let members = t.wins.world_ranks(group).unwrap_or_default();
                    let data = CallData::WindowSync {
                        win: w.id,
                        target: None,
                        exclusive: None,
                        flag: None,
                    };
                    t.record_group($op, at, data, &members);
                },
            )
        }
    )+};
}

epoch! {
    win_start => PMPI_Win_start, Op::WinStart;
    win_post => PMPI_Win_post, Op::WinPost;
}

/// Calls with the window as their only argument.
macro_rules! on_window {
    ($($wrapper:ident => $pmpi:ident, $op:expr;)+) => {$(
        pub(crate) unsafe extern "C" fn $wrapper(win: MPI_Win) -> c_int {
            traced(
                $op,
                // SAFETY: the program's argument, passed on unchanged.
                || unsafe { $pmpi(win) },
                |t, at, rc| {
                    if rc == 0 {
                        record(t, $op, at, win, None, None, None);
                    }
                },
            )
        }
    )+};
}

on_window! {
    win_complete => PMPI_Win_complete, Op::WinComplete;
    win_wait => PMPI_Win_wait, Op::WinWait;
    win_unlock_all => PMPI_Win_unlock_all, Op::WinUnlockAll;
    win_flush_all => PMPI_Win_flush_all, Op::WinFlushAll;
    win_flush_local_all => PMPI_Win_flush_local_all, Op::WinFlushLocalAll;
    win_sync => PMPI_Win_sync, Op::WinSync;
}

/// Calls on one target of the window.
macro_rules! on_target {
    ($($wrapper:ident => $pmpi:ident, $op:expr;)+) => {$(
        pub(crate) unsafe extern "C" fn $wrapper(rank: c_int, win: MPI_Win) -> c_int {
            traced(
                $op,
                // SAFETY: the program's arguments, passed on unchanged.
                || unsafe { $pmpi(rank, win) },
                |t, at, rc| {
                    if rc == 0 {
                        record(t, $op, at, win, Some(rank), None, None);
                    }
                },
            )
        }
    )+};
}

on_target! {
    win_unlock => PMPI_Win_unlock, Op::WinUnlock;
    win_flush => PMPI_Win_flush, Op::WinFlush;
    win_flush_local => PMPI_Win_flush_local, Op::WinFlushLocal;
}

pub(crate) unsafe extern "C" fn win_test(win: MPI_Win, flag: *mut c_int) -> c_int {
    traced(
        Op::WinTest,
        // SAFETY: the program's arguments, passed on unchanged.
        || unsafe { PMPI_Win_test(win, flag) },
        |t, at, rc| {
            if rc == 0 {
                // SAFETY: MPI wrote the flag.
                let done = unsafe { *flag } != 0;
                record(t, Op::WinTest, at, win, None, None, Some(done));
            }
        },
    )
}

pub(crate) unsafe extern "C" fn win_lock(
    lock_type: c_int,
    rank: c_int,
    assert: c_int,
    win: MPI_Win,
) -> c_int {
    traced(
        Op::WinLock,
        // SAFETY: the program's arguments, passed on unchanged.
        || unsafe { PMPI_Win_lock(lock_type, rank, assert, win) },
        |t, at, rc| {
            if rc == 0 {
                let exclusive = i64::from(lock_type) == i64::from(MPI_LOCK_EXCLUSIVE);
                record(t, Op::WinLock, at, win, Some(rank), Some(exclusive), None);
            }
        },
    )
}

pub(crate) unsafe extern "C" fn win_lock_all(assert: c_int, win: MPI_Win) -> c_int {
    traced(
        Op::WinLockAll,
        // SAFETY: the program's arguments, passed on unchanged.
        || unsafe { PMPI_Win_lock_all(assert, win) },
        |t, at, rc| {
            if rc == 0 {
                record(t, Op::WinLockAll, at, win, None, None, None);
            }
        },
    )
}
