//! The Wait and Test families. Each reads the program's request handles before
//! forwarding (MPI nulls them as it completes them), lets MPI write statuses somewhere
//! even when the program ignores them (a receive's source and size are recorded), and
//! records which requests the call completed, by the ids their posts were recorded under.

use std::ffi::c_int;

use mpi_sys::*;
use overlap_instrument::clock::Stamp;
use overlap_instrument::recorder::CallData;
use overlap_instrument::schema::{Completion, Op, RequestKind};
use smallvec::SmallVec;

use super::{finished, received, status_slot};
use crate::entry::site;
use crate::pmpi::{blank_status, key};
use crate::tracer::{guarded, tracer, Tracer};

/// Lists this long or shorter are copied on the stack.
const ON_STACK: usize = 16;

type Keys = SmallVec<[u64; ON_STACK]>;
type Statuses = SmallVec<[MPI_Status; ON_STACK]>;

/// The program's handles, copied.
///
/// # Safety
/// `requests` points to `count` handles.
unsafe fn copy_keys(count: c_int, requests: *const MPI_Request) -> Keys {
    let n = usize::try_from(count).unwrap_or(0);
    // SAFETY: per the function's contract.
    (0..n).map(|i| key(unsafe { *requests.add(i) })).collect()
}

/// Where MPI writes `count` statuses: the program's array, or a local one when it
/// passed `MPI_STATUSES_IGNORE`.
fn status_array(
    t: &Tracer,
    program: *mut MPI_Status,
    count: c_int,
    local: &mut Statuses,
) -> *mut MPI_Status {
    if program.is_null() || program == t.k.statuses_ignore {
        local.resize(usize::try_from(count).unwrap_or(0).max(1), blank_status());
        local.as_mut_ptr()
    } else {
        program
    }
}

/// Records `op` with the requests at `completed` positions done: `(position in the
/// handle list, that request's status)`.
#[allow(clippy::too_many_arguments)]
fn record(
    t: &Tracer,
    op: Op,
    start: Stamp,
    end: Stamp,
    site: u64,
    flag: Option<bool>,
    keys: &Keys,
    completed: impl Iterator<Item = (usize, *const MPI_Status)>,
) {
    let mut list: SmallVec<[Completion; ON_STACK]> = SmallVec::new();
    for (position, status) in completed {
        let Some(&handle) = keys.get(position) else {
            continue;
        };
        let Some(done) = t.requests.completed(handle) else {
            continue;
        };
        list.push(match done.kind {
            // SAFETY: MPI filled in the status of the receive it completed.
            RequestKind::Recv => received(Some(done.id), unsafe { &*status }, &done.comm, t.k.byte),
            RequestKind::Send | RequestKind::Collective => finished(done.id),
        });
    }
    let data = CallData::Complete { flag };
    t.recorder
        .record_call_from(op, start, end, site, data, list.len(), |i| list[i]);
}

pub(crate) unsafe extern "C" fn wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { PMPI_Wait(request, status) };
    };
    let site = site();
    // SAFETY: one handle.
    let keys = unsafe { copy_keys(1, request) };
    let mut local = blank_status();
    let slot = status_slot(status, t.k.status_ignore, &mut local);
    let start = t.stamp();
    // SAFETY: as above, with a status MPI may write.
    let rc = unsafe { PMPI_Wait(request, slot) };
    let end = t.stamp();
    if rc == 0 {
        guarded(|| {
            record(
                t,
                Op::Wait,
                start,
                end,
                site,
                None,
                &keys,
                [(0, slot.cast_const())].into_iter(),
            )
        });
    }
    rc
}

pub(crate) unsafe extern "C" fn test(
    request: *mut MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { PMPI_Test(request, flag, status) };
    };
    let site = site();
    // SAFETY: one handle.
    let keys = unsafe { copy_keys(1, request) };
    let mut local = blank_status();
    let slot = status_slot(status, t.k.status_ignore, &mut local);
    let start = t.stamp();
    // SAFETY: as above, with a status MPI may write.
    let rc = unsafe { PMPI_Test(request, flag, slot) };
    let end = t.stamp();
    if rc == 0 {
        guarded(|| {
            // SAFETY: MPI wrote the flag.
            let done = unsafe { *flag } != 0;
            let completed = done.then_some((0, slot.cast_const()));
            record(
                t,
                Op::Test,
                start,
                end,
                site,
                Some(done),
                &keys,
                completed.into_iter(),
            );
        });
    }
    rc
}

pub(crate) unsafe extern "C" fn waitall(
    count: c_int,
    requests: *mut MPI_Request,
    statuses: *mut MPI_Status,
) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { PMPI_Waitall(count, requests, statuses) };
    };
    let site = site();
    // SAFETY: `count` handles.
    let keys = unsafe { copy_keys(count, requests) };
    let mut local = Statuses::new();
    let slots = status_array(t, statuses, count, &mut local);
    let start = t.stamp();
    // SAFETY: as above, with `count` statuses MPI may write.
    let rc = unsafe { PMPI_Waitall(count, requests, slots) };
    let end = t.stamp();
    if rc == 0 {
        guarded(|| {
            // SAFETY: `count` statuses.
            let all = (0..keys.len()).map(|i| (i, unsafe { slots.add(i) }.cast_const()));
            record(t, Op::Waitall, start, end, site, None, &keys, all);
        });
    }
    rc
}

pub(crate) unsafe extern "C" fn testall(
    count: c_int,
    requests: *mut MPI_Request,
    flag: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { PMPI_Testall(count, requests, flag, statuses) };
    };
    let site = site();
    // SAFETY: `count` handles.
    let keys = unsafe { copy_keys(count, requests) };
    let mut local = Statuses::new();
    let slots = status_array(t, statuses, count, &mut local);
    let start = t.stamp();
    // SAFETY: as above, with `count` statuses MPI may write.
    let rc = unsafe { PMPI_Testall(count, requests, flag, slots) };
    let end = t.stamp();
    if rc == 0 {
        guarded(|| {
            // SAFETY: MPI wrote the flag.
            let done = unsafe { *flag } != 0;
            let n = if done { keys.len() } else { 0 };
            // SAFETY: `count` statuses.
            let all = (0..n).map(|i| (i, unsafe { slots.add(i) }.cast_const()));
            record(t, Op::Testall, start, end, site, Some(done), &keys, all);
        });
    }
    rc
}

pub(crate) unsafe extern "C" fn waitany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { PMPI_Waitany(count, requests, index, status) };
    };
    let site = site();
    // SAFETY: `count` handles.
    let keys = unsafe { copy_keys(count, requests) };
    let mut local = blank_status();
    let slot = status_slot(status, t.k.status_ignore, &mut local);
    let start = t.stamp();
    // SAFETY: as above, with a status MPI may write.
    let rc = unsafe { PMPI_Waitany(count, requests, index, slot) };
    let end = t.stamp();
    if rc == 0 {
        guarded(|| {
            // SAFETY: MPI wrote the index (MPI_UNDEFINED when nothing was active).
            let which = usize::try_from(unsafe { *index }).ok();
            let completed = which.map(|i| (i, slot.cast_const()));
            record(
                t,
                Op::Waitany,
                start,
                end,
                site,
                None,
                &keys,
                completed.into_iter(),
            );
        });
    }
    rc
}

pub(crate) unsafe extern "C" fn testany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { PMPI_Testany(count, requests, index, flag, status) };
    };
    let site = site();
    // SAFETY: `count` handles.
    let keys = unsafe { copy_keys(count, requests) };
    let mut local = blank_status();
    let slot = status_slot(status, t.k.status_ignore, &mut local);
    let start = t.stamp();
    // SAFETY: as above, with a status MPI may write.
    let rc = unsafe { PMPI_Testany(count, requests, index, flag, slot) };
    let end = t.stamp();
    if rc == 0 {
        guarded(|| {
            // SAFETY: MPI wrote the flag and the index.
            let (done, which) = unsafe { (*flag != 0, usize::try_from(*index).ok()) };
            let completed = which.filter(|_| done).map(|i| (i, slot.cast_const()));
            record(
                t,
                Op::Testany,
                start,
                end,
                site,
                Some(done),
                &keys,
                completed.into_iter(),
            );
        });
    }
    rc
}

macro_rules! some {
    ($($wrapper:ident => $pmpi:ident, $op:expr, $flag:expr;)+) => {$(
        pub(crate) unsafe extern "C" fn $wrapper(
            incount: c_int,
            requests: *mut MPI_Request,
            outcount: *mut c_int,
            indices: *mut c_int,
            statuses: *mut MPI_Status,
        ) -> c_int {
            let Some(t) = tracer() else {
                // SAFETY: the program's arguments, passed on unchanged.
                return unsafe { $pmpi(incount, requests, outcount, indices, statuses) };
            };
            let site = site();
            // SAFETY: `incount` handles.
            let keys = unsafe { copy_keys(incount, requests) };
            let mut local = Statuses::new();
            let slots = status_array(t, statuses, incount, &mut local);
            let start = t.stamp();
            // SAFETY: as above, with `incount` statuses MPI may write.
            let rc = unsafe { $pmpi(incount, requests, outcount, indices, slots) };
            let end = t.stamp();
            if rc == 0 {
                guarded(|| {
                    // SAFETY: MPI wrote `outcount` (MPI_UNDEFINED when nothing was
                    // active) indices and statuses, the k-th status for the k-th index.
                    let n = usize::try_from(unsafe { *outcount }).unwrap_or(0);
                    let completed = (0..n).filter_map(|k| unsafe {
                        let i = usize::try_from(*indices.add(k)).ok()?;
                        Some((i, slots.add(k).cast_const()))
                    });
                    let flag = $flag.then_some(n > 0);
                    record(t, $op, start, end, site, flag, &keys, completed);
                });
            }
            rc
        }
    )+};
}

some! {
    waitsome => PMPI_Waitsome, Op::Waitsome, false;
    testsome => PMPI_Testsome, Op::Testsome, true;
}
