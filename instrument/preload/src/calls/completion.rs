//! The Wait and Test families. Each reads the program's request handles before
//! forwarding (MPI nulls them as it completes them), lets MPI write statuses somewhere
//! even when the program ignores them (a receive's source and size are recorded), and
//! records which requests the call completed, by the ids their posts were recorded under.

use std::ffi::c_int;

use mpi_sys::*;
use overlap_instrument::recorder::CallData;
use overlap_instrument::schema::{Completion, Op, RequestKind};

use super::{finished, received, traced_in, StatusSlot, Timed};
use crate::pmpi::key;
use crate::tables;
use crate::thread::{self, ThreadState};
use crate::tracer::Tracer;
use overlap_instrument::recorder::WaitsOn;

/// The program's handles, copied into the thread's buffer (given back when dropped).
struct Keys {
    state: &'static ThreadState,
    keys: Vec<u64>,
}

impl Keys {
    /// # Safety
    /// `requests` points to `count` handles.
    unsafe fn copy(count: c_int, requests: *const MPI_Request) -> Keys {
        let state = thread::current();
        let mut keys = state.take_keys();
        let n = usize::try_from(count).unwrap_or(0);
        // SAFETY: per the function's contract.
        keys.extend((0..n).map(|i| key(unsafe { *requests.add(i) })));
        Keys { state, keys }
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        self.state.give_keys(std::mem::take(&mut self.keys));
    }
}

/// The handle of a Wait or Test, and its status.
struct One {
    key: u64,
    status: StatusSlot,
}

impl One {
    /// # Safety
    /// `request` points to a handle.
    #[inline]
    unsafe fn new(t: &Tracer, request: *const MPI_Request, status: *mut MPI_Status) -> One {
        One {
            // SAFETY: per the function's contract.
            key: key(unsafe { *request }),
            status: StatusSlot::maybe(status, t, tables::may_complete_receive()),
        }
    }
}

/// The handles of a Waitany or Testany, and its status.
struct Any {
    keys: Keys,
    status: StatusSlot,
}

impl Any {
    /// # Safety
    /// `requests` points to `count` handles.
    unsafe fn new(
        t: &Tracer,
        count: c_int,
        requests: *const MPI_Request,
        status: *mut MPI_Status,
    ) -> Any {
        Any {
            // SAFETY: per the function's contract.
            keys: unsafe { Keys::copy(count, requests) },
            status: StatusSlot::maybe(status, t, tables::may_complete_receive()),
        }
    }
}

/// The handles of a list call and the statuses MPI writes: the program's array, or the
/// thread's own when it passed `MPI_STATUSES_IGNORE` and a receive may complete.
struct Many {
    keys: Keys,
    /// The program's statuses; null when it ignores them.
    program: *mut MPI_Status,
    /// The thread's status buffer, when redirected (empty otherwise).
    local: Vec<MPI_Status>,
    redirect: bool,
}

impl Many {
    /// # Safety
    /// `requests` points to `count` handles.
    unsafe fn new(
        t: &Tracer,
        count: c_int,
        requests: *const MPI_Request,
        statuses: *mut MPI_Status,
    ) -> Many {
        // SAFETY: per the function's contract.
        let keys = unsafe { Keys::copy(count, requests) };
        let ignored = statuses.is_null() || statuses == t.k.statuses_ignore;
        let redirect = ignored && tables::may_complete_receive();
        let local = if redirect {
            keys.state.take_statuses(keys.keys.len().max(1))
        } else {
            Vec::new()
        };
        Many {
            keys,
            program: if ignored {
                std::ptr::null_mut()
            } else {
                statuses
            },
            local,
            redirect,
        }
    }

    /// The statuses argument to forward: `program` when not tracing.
    fn arg(many: Option<&mut Many>, program: *mut MPI_Status) -> *mut MPI_Status {
        match many {
            Some(m) if m.redirect => m.local.as_mut_ptr(),
            _ => program,
        }
    }

    /// The `k`-th status MPI wrote, if the program or the preload kept it.
    fn status(&self, k: usize) -> Option<&MPI_Status> {
        if self.redirect {
            self.local.get(k)
        } else {
            // SAFETY: null, or the program's array, of which k is below the count.
            unsafe { self.program.add(k).as_ref() }
        }
    }
}

impl Drop for Many {
    fn drop(&mut self) {
        if self.redirect {
            let local = std::mem::take(&mut self.local);
            self.keys.state.give_statuses(local);
        }
    }
}

/// What a Wait or Test on `count` handles waits on.
#[inline(always)]
fn handles(count: c_int) -> WaitsOn {
    WaitsOn {
        requests: Some(u32::try_from(count).unwrap_or(0)),
        ..WaitsOn::default()
    }
}

/// Records `op` with the requests at `completed` positions done: `(position in the
/// handle list, that request's status)`.
fn record<'s>(
    t: &Tracer,
    op: Op,
    at: Timed,
    flag: Option<bool>,
    keys: &[u64],
    completed: impl Iterator<Item = (usize, Option<&'s MPI_Status>)>,
) {
    let state = thread::current();
    let mut list = state.take_completions();
    list.extend(
        completed.filter_map(|(position, status)| completion(t, *keys.get(position)?, status)),
    );
    record_completed(t, op, at, flag, &list);
    state.give_completions(list);
}

/// [`record`] for a call that completes at most one request (Wait, Test, Waitany,
/// Testany): `done` is its handle and status, `None` when it completed none. No list to
/// borrow: the completion stays on the stack.
#[inline]
fn record_one(
    t: &Tracer,
    op: Op,
    at: Timed,
    flag: Option<bool>,
    done: Option<(u64, Option<&MPI_Status>)>,
) {
    let completed = done.and_then(|(handle, status)| completion(t, handle, status));
    record_completed(t, op, at, flag, completed.as_slice());
}

/// Records `op` with the requests it completed.
#[inline]
fn record_completed(t: &Tracer, op: Op, at: Timed, flag: Option<bool>, list: &[Completion]) {
    // Before the call returns: the completed requests' buffers are the program's again;
    // the call ends once their watches are armed.
    let armed = crate::watch::completed(list.iter().filter_map(|c| c.request), at.end.raw());
    let at = match armed {
        Some(end) => Timed { end, ..at },
        None => at,
    };
    t.record(op, at, CallData::Complete { flag }, list);
}

/// What completing the request under `handle` records, if it is one of ours.
#[inline]
fn completion(t: &Tracer, handle: u64, status: Option<&MPI_Status>) -> Option<Completion> {
    if handle == key(t.k.request_null) {
        return None;
    }
    let Some(done) = tables::completed(handle) else {
        if tables::unseen(handle) {
            crate::counting::unseen_completion();
        }
        return None;
    };
    Some(match done.kind {
        // What the standard says the status of a receive from MPI_PROC_NULL holds,
        // whether or not MPI wrote it.
        RequestKind::Recv if done.proc_null => Completion {
            request: Some(done.id),
            source: Some(t.k.proc_null),
            tag: Some(t.k.any_tag),
            bytes: Some(0),
        },
        RequestKind::Recv => received(Some(done.id), status, &done.comm),
        RequestKind::Send | RequestKind::Collective | RequestKind::OneSided => finished(done.id),
    })
}

pub(crate) unsafe extern "C" fn wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    traced_in(
        Op::Wait,
        // SAFETY: one handle.
        |t| (unsafe { One::new(t, request, status) }, handles(1)),
        // SAFETY: the program's arguments, passed on unchanged but for an ignored status.
        |s| unsafe { PMPI_Wait(request, StatusSlot::arg(s.map(|s| &mut s.status), status)) },
        |t, at, rc, s| {
            if rc == 0 {
                record_one(t, Op::Wait, at, None, Some((s.key, s.status.get())));
            }
        },
    )
}

pub(crate) unsafe extern "C" fn test(
    request: *mut MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    traced_in(
        Op::Test,
        // SAFETY: one handle.
        |t| (unsafe { One::new(t, request, status) }, handles(1)),
        // SAFETY: the program's arguments, passed on unchanged but for an ignored status.
        |s| unsafe {
            PMPI_Test(
                request,
                flag,
                StatusSlot::arg(s.map(|s| &mut s.status), status),
            )
        },
        |t, at, rc, s| {
            if rc == 0 {
                // SAFETY: MPI wrote the flag.
                let done = unsafe { *flag } != 0;
                let completed = done.then(|| (s.key, s.status.get()));
                record_one(t, Op::Test, at, Some(done), completed);
            }
        },
    )
}

pub(crate) unsafe extern "C" fn waitany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    traced_in(
        Op::Waitany,
        // SAFETY: `count` handles.
        |t| {
            (
                unsafe { Any::new(t, count, requests, status) },
                handles(count),
            )
        },
        // SAFETY: the program's arguments, passed on unchanged but for an ignored status.
        |s| unsafe {
            PMPI_Waitany(
                count,
                requests,
                index,
                StatusSlot::arg(s.map(|s| &mut s.status), status),
            )
        },
        |t, at, rc, s| {
            if rc == 0 {
                // SAFETY: MPI wrote the index (MPI_UNDEFINED when nothing was active).
                let which = usize::try_from(unsafe { *index }).ok();
                let completed = which.and_then(|i| Some((*s.keys.keys.get(i)?, s.status.get())));
                record_one(t, Op::Waitany, at, None, completed);
            }
        },
    )
}

pub(crate) unsafe extern "C" fn testany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    traced_in(
        Op::Testany,
        // SAFETY: `count` handles.
        |t| {
            (
                unsafe { Any::new(t, count, requests, status) },
                handles(count),
            )
        },
        // SAFETY: the program's arguments, passed on unchanged but for an ignored status.
        |s| unsafe {
            let status = StatusSlot::arg(s.map(|s| &mut s.status), status);
            PMPI_Testany(count, requests, index, flag, status)
        },
        |t, at, rc, s| {
            if rc == 0 {
                // SAFETY: MPI wrote the flag and the index.
                let (done, which) = unsafe { (*flag != 0, usize::try_from(*index).ok()) };
                let completed = which
                    .filter(|_| done)
                    .and_then(|i| Some((*s.keys.keys.get(i)?, s.status.get())));
                record_one(t, Op::Testany, at, Some(done), completed);
            }
        },
    )
}

pub(crate) unsafe extern "C" fn waitall(
    count: c_int,
    requests: *mut MPI_Request,
    statuses: *mut MPI_Status,
) -> c_int {
    traced_in(
        Op::Waitall,
        // SAFETY: `count` handles.
        |t| {
            (
                unsafe { Many::new(t, count, requests, statuses) },
                handles(count),
            )
        },
        // SAFETY: the program's arguments, passed on unchanged but for ignored statuses.
        |m| unsafe { PMPI_Waitall(count, requests, Many::arg(m, statuses)) },
        |t, at, rc, m| {
            if rc == 0 {
                let all = (0..m.keys.keys.len()).map(|i| (i, m.status(i)));
                record(t, Op::Waitall, at, None, &m.keys.keys, all);
            }
        },
    )
}

pub(crate) unsafe extern "C" fn testall(
    count: c_int,
    requests: *mut MPI_Request,
    flag: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    traced_in(
        Op::Testall,
        // SAFETY: `count` handles.
        |t| {
            (
                unsafe { Many::new(t, count, requests, statuses) },
                handles(count),
            )
        },
        // SAFETY: the program's arguments, passed on unchanged but for ignored statuses.
        |m| unsafe { PMPI_Testall(count, requests, flag, Many::arg(m, statuses)) },
        |t, at, rc, m| {
            if rc == 0 {
                // SAFETY: MPI wrote the flag.
                let done = unsafe { *flag } != 0;
                let n = if done { m.keys.keys.len() } else { 0 };
                let all = (0..n).map(|i| (i, m.status(i)));
                record(t, Op::Testall, at, Some(done), &m.keys.keys, all);
            }
        },
    )
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
            traced_in(
                $op,
                // SAFETY: `incount` handles.
                |t| (unsafe { Many::new(t, incount, requests, statuses) }, handles(incount)),
                // SAFETY: the program's arguments, passed on unchanged but for ignored
                // statuses.
                |m| unsafe { $pmpi(incount, requests, outcount, indices, Many::arg(m, statuses)) },
                |t, at, rc, m| {
                    if rc != 0 {
                        return;
                    }
                    // SAFETY: MPI wrote `outcount` (MPI_UNDEFINED when nothing was
                    // active) indices and statuses, the k-th status for the k-th index.
                    let n = usize::try_from(unsafe { *outcount }).unwrap_or(0);
                    let completed = (0..n).filter_map(|k| {
                        // SAFETY: as above.
                        let i = usize::try_from(unsafe { *indices.add(k) }).ok()?;
                        Some((i, m.status(k)))
                    });
                    let flag = $flag.then_some(n > 0);
                    record(t, $op, at, flag, &m.keys.keys, completed);
                },
            )
        }
    )+};
}

some! {
    waitsome => PMPI_Waitsome, Op::Waitsome, false;
    testsome => PMPI_Testsome, Op::Testsome, true;
}
