//! One-sided communication: window creation and freeing, the fence, Put, Get and the
//! accumulates (with or without a request), and the synchronisation calls of the other
//! epochs (Post/Start/Complete/Wait, locks, flushes).
//!
//! Every call records its window's id (agreed across the window's group, see
//! [`crate::windows`]); targets are recorded as world ranks; the bytes of an access are
//! the origin buffer's. Win_start and Win_post record their group as world ranks.

use std::ffi::{c_int, c_void};

use mpi_sys::*;
use overlap_instrument::recorder::{Access, CallData};
use overlap_instrument::schema::{CommId, Op, RequestKind};

use super::collective::{to_receive, to_send};
use super::{traced, traced_with};
use crate::pmpi::{self, key};
use crate::tracer::{guarded, Tracer};
use crate::windows::WinInfo;

/// Forwards a constructor of `*win` over `comm`, agrees on the window's id and records
/// the call. The agreement (collective over `comm`) runs inside the call's span: the
/// program spends that time in its `MPI_Win_create`, not in its own code.
fn create(op: Op, comm: MPI_Comm, win: *mut MPI_Win, forward: impl FnOnce() -> c_int) -> c_int {
    traced_with(
        op,
        |_| None,
        |agreed: Option<&mut Option<WinInfo>>| {
            let rc = forward();
            if let (Some(agreed), Some(t)) = (agreed, crate::tracer::tracer()) {
                if rc == 0 {
                    // SAFETY: MPI wrote the new window there.
                    let new = unsafe { *win };
                    guarded(|| *agreed = Some(t.wins.created(comm, t.comms.info(comm), new)));
                }
            }
            rc
        },
        |t, at, _, agreed| {
            let Some(w) = agreed else { return };
            let data = CallData::WindowCollective {
                win: w.id,
                comm: CommId(w.comm.id),
            };
            t.record(op, at, data, &[]);
        },
    )
}

/// After a window constructor succeeded: the buffer watch never watches its memory.
///
/// # Safety
/// `win` points to the new window, and `base` (when given) to its base address.
unsafe fn exposed(
    rc: c_int,
    win: *const MPI_Win,
    base: Option<*const *mut c_void>,
    size: MPI_Aint,
) {
    if rc != 0 || !crate::watch::asked() {
        return;
    }
    // SAFETY: per the function's contract: MPI wrote both.
    let (win, base) = unsafe { (key(*win), base.map_or(std::ptr::null_mut(), |b| *b)) };
    crate::watch::window(win, base as u64, u64::try_from(size).unwrap_or(0));
}

pub(crate) unsafe extern "C" fn win_create_dynamic(
    info: MPI_Info,
    comm: MPI_Comm,
    win: *mut MPI_Win,
) -> c_int {
    create(Op::WinCreateDynamic, comm, win, || unsafe {
        PMPI_Win_create_dynamic(info, comm, win)
    })
}

pub(crate) unsafe extern "C" fn win_free(win: *mut MPI_Win) -> c_int {
    traced_with(
        Op::WinFree,
        // SAFETY: read before MPI nulls it.
        |t| {
            let handle = unsafe { *win };
            (handle, t.wins.info(handle))
        },
        // SAFETY: the program's argument, passed on unchanged.
        |_| unsafe { PMPI_Win_free(win) },
        |t, at, rc, (handle, w)| {
            if rc != 0 {
                return;
            }
            t.wins.freed(*handle);
            crate::watch::window_freed(key(*handle));
            let data = CallData::WindowCollective {
                win: w.id,
                comm: CommId(w.comm.id),
            };
            t.record(Op::WinFree, at, data, &[]);
        },
    )
}

/// `MPI_Win_attach` (not recorded: its time is negligible): the buffer watch never
/// watches the memory attached.
pub(crate) unsafe extern "C" fn win_attach(
    win: MPI_Win,
    base: *mut c_void,
    size: MPI_Aint,
) -> c_int {
    // SAFETY: the program's arguments, passed on unchanged.
    let rc = unsafe { PMPI_Win_attach(win, base, size) };
    if rc == 0 {
        crate::watch::window(key(win), base as u64, u64::try_from(size).unwrap_or(0));
    }
    rc
}

/// `MPI_Win_detach` (not recorded).
pub(crate) unsafe extern "C" fn win_detach(win: MPI_Win, base: *const c_void) -> c_int {
    // SAFETY: the program's arguments, passed on unchanged.
    let rc = unsafe { PMPI_Win_detach(win, base) };
    if rc == 0 {
        crate::watch::window_detached(key(win), base as u64);
    }
    rc
}

pub(crate) unsafe extern "C" fn win_fence(assert: c_int, win: MPI_Win) -> c_int {
    traced(
        Op::WinFence,
        // SAFETY: the program's arguments, passed on unchanged.
        || unsafe { PMPI_Win_fence(assert, win) },
        |t, at, _| {
            let w = t.wins.info(win);
            let data = CallData::WindowCollective {
                win: w.id,
                comm: CommId(w.comm.id),
            };
            t.record(Op::WinFence, at, data, &[]);
        },
    )
}

/// Forwards a one-sided access whose origin (and result) `buffers` MPI reads or writes:
/// the buffer watch ends its watches over them first (they are not held past the call:
/// the epoch that completes them is not the call's).
fn handed(buffers: crate::watch::Buffers, forward: impl FnOnce() -> c_int) -> c_int {
    let held = crate::watch::hold(buffers);
    let rc = forward();
    crate::watch::release(held.as_ref());
    rc
}

/// What an access to `target` of `w` from `count` elements of `datatype` at `buf` is.
fn access(
    w: &WinInfo,
    target: c_int,
    buf: *const c_void,
    count: impl Into<i64>,
    datatype: MPI_Datatype,
) -> Access {
    let (bytes, span) = crate::types::sizes(count, datatype);
    Access {
        target: w.comm.world(target),
        bytes,
        win: w.id,
        buf: pmpi::addr(buf),
        buf_len: span,
    }
}

/// Records a one-sided access; `request` is the handle a request-based one wrote.
fn record_access(
    t: &Tracer,
    op: Op,
    at: super::Timed,
    win: MPI_Win,
    access_of: impl FnOnce(&WinInfo) -> Access,
    request: Option<*mut MPI_Request>,
) {
    let w = t.wins.info(win);
    let access = access_of(&w);
    let request = request.map(|handle| {
        let id = at.here.next_request_id();
        // SAFETY: MPI just wrote the new handle there.
        let handle = key(unsafe { *handle });
        crate::tables::posted(handle, id.0, RequestKind::OneSided, w.comm, false);
        id
    });
    t.record(op, at, CallData::OneSided { access, request }, &[]);
}

/// Put and Get, and their request-based twins.
macro_rules! put_get {
    ($($wrapper:ident => $pmpi:ident, $op:expr, $buf:ty $(, $request:ident)?;)+) => {$(
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn $wrapper(
            origin_addr: $buf,
            origin_count: Count,
            origin_datatype: MPI_Datatype,
            target_rank: c_int,
            target_disp: MPI_Aint,
            target_count: Count,
            target_datatype: MPI_Datatype,
            win: MPI_Win,
            $($request: *mut MPI_Request,)?
        ) -> c_int {
            traced(
                $op,
                // SAFETY: the program's arguments, passed on unchanged.
                || handed([to_send(origin_addr as *const c_void, origin_count, origin_datatype, 1), None], || unsafe {
                    $pmpi(
                        origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                        target_count, target_datatype, win, $($request)?
                    )
                }),
                |t, at, rc| {
                    if rc != 0 {
                        return;
                    }
                    let of = |w: &WinInfo| {
                        access(w, target_rank, origin_addr as *const c_void, origin_count, origin_datatype)
                    };
                    record_access(t, $op, at, win, of, None $(.or(Some($request)))?);
                },
            )
        }
    )+};
}

/// Accumulate and Raccumulate.
macro_rules! accumulate {
    ($($wrapper:ident => $pmpi:ident, $op:expr $(, $request:ident)?;)+) => {$(
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn $wrapper(
            origin_addr: *const c_void,
            origin_count: Count,
            origin_datatype: MPI_Datatype,
            target_rank: c_int,
            target_disp: MPI_Aint,
            target_count: Count,
            target_datatype: MPI_Datatype,
            op: MPI_Op,
            win: MPI_Win,
            $($request: *mut MPI_Request,)?
        ) -> c_int {
            traced(
                $op,
                // SAFETY: the program's arguments, passed on unchanged.
                || handed([to_send(origin_addr, origin_count, origin_datatype, 1), None], || unsafe {
                    $pmpi(
                        origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                        target_count, target_datatype, op, win, $($request)?
                    )
                }),
                |t, at, rc| {
                    if rc != 0 {
                        return;
                    }
                    let of = |w: &WinInfo| {
                        access(w, target_rank, origin_addr, origin_count, origin_datatype)
                    };
                    record_access(t, $op, at, win, of, None $(.or(Some($request)))?);
                },
            )
        }
    )+};
}

/// Get_accumulate and Rget_accumulate.
macro_rules! get_accumulate {
    ($($wrapper:ident => $pmpi:ident, $op:expr $(, $request:ident)?;)+) => {$(
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn $wrapper(
            origin_addr: *const c_void,
            origin_count: Count,
            origin_datatype: MPI_Datatype,
            result_addr: *mut c_void,
            result_count: Count,
            result_datatype: MPI_Datatype,
            target_rank: c_int,
            target_disp: MPI_Aint,
            target_count: Count,
            target_datatype: MPI_Datatype,
            op: MPI_Op,
            win: MPI_Win,
            $($request: *mut MPI_Request,)?
        ) -> c_int {
            let buffers = || [
                to_send(origin_addr, origin_count, origin_datatype, 1),
                to_receive(result_addr as *const c_void, result_count, result_datatype, 1),
            ];
            traced(
                $op,
                // SAFETY: the program's arguments, passed on unchanged.
                || handed(buffers(), || unsafe {
                    $pmpi(
                        origin_addr, origin_count, origin_datatype, result_addr, result_count,
                        result_datatype, target_rank, target_disp, target_count,
                        target_datatype, op, win, $($request)?
                    )
                }),
                |t, at, rc| {
                    if rc != 0 {
                        return;
                    }
                    let of = |w: &WinInfo| {
                        access(w, target_rank, origin_addr, origin_count, origin_datatype)
                    };
                    record_access(t, $op, at, win, of, None $(.or(Some($request)))?);
                },
            )
        }
    )+};
}

pub(crate) unsafe extern "C" fn fetch_and_op(
    origin_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    traced(
        Op::FetchAndOp,
        // SAFETY: the program's arguments, passed on unchanged.
        || {
            let buffers = [
                to_send(origin_addr, 1, datatype, 1),
                to_receive(result_addr as *const c_void, 1, datatype, 1),
            ];
            handed(buffers, || unsafe {
                PMPI_Fetch_and_op(
                    origin_addr,
                    result_addr,
                    datatype,
                    target_rank,
                    target_disp,
                    op,
                    win,
                )
            })
        },
        |t, at, rc| {
            if rc == 0 {
                let of = |w: &WinInfo| access(w, target_rank, origin_addr, 1, datatype);
                record_access(t, Op::FetchAndOp, at, win, of, None);
            }
        },
    )
}

pub(crate) unsafe extern "C" fn compare_and_swap(
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    win: MPI_Win,
) -> c_int {
    traced(
        Op::CompareAndSwap,
        // SAFETY: the program's arguments, passed on unchanged.
        || {
            handed(
                [
                    to_receive(result_addr as *const c_void, 1, datatype, 1),
                    None,
                ],
                || unsafe {
                    PMPI_Compare_and_swap(
                        origin_addr,
                        compare_addr,
                        result_addr,
                        datatype,
                        target_rank,
                        target_disp,
                        win,
                    )
                },
            )
        },
        |t, at, rc| {
            if rc == 0 {
                let of = |w: &WinInfo| access(w, target_rank, origin_addr, 1, datatype);
                record_access(t, Op::CompareAndSwap, at, win, of, None);
            }
        },
    )
}

/// The calls with counts, declared once for both count types: `Count` and `DispUnit`
/// are `int`s in the classic calls, `MPI_Count` and `MPI_Aint` in the MPI-4
/// large-count ones ([`large`], whose `PMPI_*_c` functions are imported under the
/// classic names).
macro_rules! counted {
    () => {
        pub(crate) unsafe extern "C" fn win_create(
            base: *mut c_void,
            size: MPI_Aint,
            disp_unit: DispUnit,
            info: MPI_Info,
            comm: MPI_Comm,
            win: *mut MPI_Win,
        ) -> c_int {
            // SAFETY (all forwards below): the program's arguments, passed on unchanged.
            create(Op::WinCreate, comm, win, || unsafe {
                let rc = PMPI_Win_create(base, size, disp_unit, info, comm, win);
                exposed(rc, win, Some(&raw const base), size);
                rc
            })
        }

        pub(crate) unsafe extern "C" fn win_allocate(
            size: MPI_Aint,
            disp_unit: DispUnit,
            info: MPI_Info,
            comm: MPI_Comm,
            baseptr: *mut c_void,
            win: *mut MPI_Win,
        ) -> c_int {
            create(Op::WinAllocate, comm, win, || unsafe {
                let rc = PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win);
                exposed(rc, win, Some(baseptr.cast()), size);
                rc
            })
        }

        pub(crate) unsafe extern "C" fn win_allocate_shared(
            size: MPI_Aint,
            disp_unit: DispUnit,
            info: MPI_Info,
            comm: MPI_Comm,
            baseptr: *mut c_void,
            win: *mut MPI_Win,
        ) -> c_int {
            create(Op::WinAllocateShared, comm, win, || unsafe {
                let rc = PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win);
                exposed(rc, win, Some(baseptr.cast()), size);
                rc
            })
        }

        put_get! {
            put => PMPI_Put, Op::Put, *const c_void;
            get => PMPI_Get, Op::Get, *mut c_void;
            rput => PMPI_Rput, Op::Rput, *const c_void, request;
            rget => PMPI_Rget, Op::Rget, *mut c_void, request;
        }

        accumulate! {
            accumulate => PMPI_Accumulate, Op::Accumulate;
            raccumulate => PMPI_Raccumulate, Op::Raccumulate, request;
        }

        get_accumulate! {
            get_accumulate => PMPI_Get_accumulate, Op::GetAccumulate;
            rget_accumulate => PMPI_Rget_accumulate, Op::RgetAccumulate, request;
        }
    };
}

type Count = c_int;
type DispUnit = c_int;
counted!();

/// The MPI-4 large-count forms (`MPI_Put_c`, `MPI_Win_create_c`...): the same wrappers
/// over `MPI_Count` counts and `MPI_Aint` displacement units.
#[cfg(mpi4)]
pub(crate) mod large {
    use std::ffi::{c_int, c_void};

    use mpi_sys::PMPI_Accumulate_c as PMPI_Accumulate;
    use mpi_sys::PMPI_Get_accumulate_c as PMPI_Get_accumulate;
    use mpi_sys::PMPI_Get_c as PMPI_Get;
    use mpi_sys::PMPI_Put_c as PMPI_Put;
    use mpi_sys::PMPI_Raccumulate_c as PMPI_Raccumulate;
    use mpi_sys::PMPI_Rget_accumulate_c as PMPI_Rget_accumulate;
    use mpi_sys::PMPI_Rget_c as PMPI_Rget;
    use mpi_sys::PMPI_Rput_c as PMPI_Rput;
    use mpi_sys::PMPI_Win_allocate_c as PMPI_Win_allocate;
    use mpi_sys::PMPI_Win_allocate_shared_c as PMPI_Win_allocate_shared;
    use mpi_sys::PMPI_Win_create_c as PMPI_Win_create;
    use mpi_sys::{
        MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Info, MPI_Op, MPI_Request, MPI_Win,
    };
    use overlap_instrument::schema::Op;

    use super::super::collective::{to_receive, to_send};
    use super::super::traced;
    use super::{access, create, exposed, handed, record_access};
    use crate::windows::WinInfo;

    type Count = MPI_Count;
    type DispUnit = MPI_Aint;
    counted!();
}
