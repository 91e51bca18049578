//! Matched probes and receives: `MPI_Mprobe` / `MPI_Improbe` take a message out of
//! matching and hand back a message handle, which `MPI_Mrecv` / `MPI_Imrecv` receive
//! (mpi4py's `comm.recv()` of a pickled object goes this way). The receive names neither
//! communicator nor source, so the probe's answer is kept by message handle until its
//! receive: the receive is then recorded from that source, with that tag, on that
//! communicator, as an `MPI_Recv` or `MPI_Irecv` of the message would be.

use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use mpi_sys::*;
use overlap_instrument::recorder::CallData;
use overlap_instrument::schema::{Op, RequestKind};

use super::p2p::flight;
use super::{received, traced_in, traced_with, transfer, waits_p2p, StatusSlot};
use crate::handles::CommInfo;
use crate::pmpi::{self, key};
use crate::tables;
use crate::watch::{self, Role};

/// What a probe matched: the message's communicator, its source (a rank of that
/// communicator) and its tag.
#[derive(Clone, Copy)]
pub(crate) struct Matched {
    comm: CommInfo,
    source: c_int,
    tag: c_int,
}

/// The messages probed and not yet received, by message handle. A program holds few at
/// once (a probe is followed by its receive), so a list does.
static PROBED: Mutex<Vec<(u64, Matched)>> = Mutex::new(Vec::new());

fn probed(message: u64, m: Matched) {
    let mut list = PROBED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    list.retain(|(k, _)| *k != message);
    list.push((message, m));
}

/// The probe's answer for `message`, forgotten: a handle names one message until it is
/// received.
fn take(message: u64) -> Option<Matched> {
    let mut list = PROBED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let i = list.iter().position(|(k, _)| *k == message)?;
    Some(list.swap_remove(i).1)
}

/// After a probe that matched a message into `*message`: keeps what the status says.
fn keep_match(c: CommInfo, message: *mut MPI_Message, s: &StatusSlot) {
    let Some(status) = s.get() else { return };
    let (source, tag, _) = pmpi::status_fields(status);
    // SAFETY: MPI wrote the handle before returning.
    let handle = key(unsafe { *message });
    probed(
        handle,
        Matched {
            comm: c,
            source,
            tag,
        },
    );
}

pub(crate) unsafe extern "C" fn mprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    traced_in(
        Op::Mprobe,
        |t| {
            let c = t.comms.info(comm);
            ((StatusSlot::new(status, t), c), waits_p2p(&c, source, tag))
        },
        // SAFETY: the program's arguments, passed on unchanged but for an ignored status.
        |s| unsafe {
            PMPI_Mprobe(
                source,
                tag,
                comm,
                message,
                StatusSlot::arg(s.map(|s| &mut s.0), status),
            )
        },
        |t, at, rc, (s, c)| {
            if rc != 0 {
                return;
            }
            keep_match(*c, message, s);
            let transfer = transfer(c, source, tag, std::ptr::null(), 0, t.k.byte);
            let done = received(None, s.get(), c);
            t.record(Op::Mprobe, at, CallData::Blocking { transfer }, &[done]);
        },
    )
}

pub(crate) unsafe extern "C" fn improbe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    traced_with(
        Op::Improbe,
        |t| StatusSlot::new(status, t),
        // SAFETY: the program's arguments, passed on unchanged but for an ignored status.
        |s| unsafe { PMPI_Improbe(source, tag, comm, flag, message, StatusSlot::arg(s, status)) },
        |t, at, rc, s| {
            // SAFETY: MPI wrote the flag.
            let found = rc == 0 && unsafe { *flag } != 0;
            let c = t.comms.info(comm);
            if found {
                keep_match(c, message, s);
            }
            let transfer = transfer(&c, source, tag, std::ptr::null(), 0, t.k.byte);
            let done = found.then(|| received(None, s.get(), &c));
            let data = CallData::Query {
                transfer,
                flag: found,
            };
            t.record(Op::Improbe, at, data, done.as_slice());
        },
    )
}

/// The calls with counts, declared once for both count types: `Count` is an `int` in
/// the classic calls, an `MPI_Count` in the MPI-4 large-count ones ([`large`]).
macro_rules! counted {
    () => {
        pub(crate) unsafe extern "C" fn mrecv(
            buf: *mut c_void,
            count: Count,
            datatype: MPI_Datatype,
            message: *mut MPI_Message,
            status: *mut MPI_Status,
        ) -> c_int {
            traced_in(
                Op::Mrecv,
                |t| {
                    // SAFETY: read before MPI sets it to MPI_MESSAGE_NULL.
                    let m = crate::calls::matched::probed_as(t, unsafe { *message });
                    let transfer = transfer(&m.comm, m.source, m.tag, buf, count, datatype);
                    let held = watch::hold([flight(&transfer, Role::Receive), None]);
                    let waits = waits_p2p(&m.comm, m.source, m.tag);
                    ((StatusSlot::new(status, t), m, held), waits)
                },
                // SAFETY: the program's arguments, passed on unchanged but for an ignored
                // status.
                |s| unsafe {
                    PMPI_Mrecv(
                        buf,
                        count,
                        datatype,
                        message,
                        StatusSlot::arg(s.map(|s| &mut s.0), status),
                    )
                },
                |t, at, _, (s, m, held)| {
                    watch::release(held.as_ref());
                    let transfer = transfer(&m.comm, m.source, m.tag, buf, count, datatype);
                    let done = received(None, s.get(), &m.comm);
                    t.record(Op::Mrecv, at, CallData::Blocking { transfer }, &[done]);
                },
            )
        }

        pub(crate) unsafe extern "C" fn imrecv(
            buf: *mut c_void,
            count: Count,
            datatype: MPI_Datatype,
            message: *mut MPI_Message,
            request: *mut MPI_Request,
        ) -> c_int {
            traced_with(
                Op::Imrecv,
                |t| {
                    // SAFETY: read before MPI sets it to MPI_MESSAGE_NULL.
                    let m = crate::calls::matched::probed_as(t, unsafe { *message });
                    let transfer = transfer(&m.comm, m.source, m.tag, buf, count, datatype);
                    let held = watch::hold([flight(&transfer, Role::Receive), None]);
                    (m, transfer, held)
                },
                // SAFETY: the program's arguments, passed on unchanged.
                |_| unsafe { PMPI_Imrecv(buf, count, datatype, message, request) },
                |t, at, rc, (m, transfer, held)| {
                    if rc != 0 {
                        watch::release(held.as_ref());
                        return;
                    }
                    let id = at.here.next_request_id();
                    // SAFETY: MPI just wrote the new handle there.
                    let handle = key(unsafe { *request });
                    let proc_null = m.source == t.k.proc_null;
                    tables::posted(handle, id.0, RequestKind::Recv, m.comm, proc_null);
                    watch::keep(held.as_ref(), id.0);
                    let data = CallData::Post {
                        transfer: *transfer,
                        request: id,
                    };
                    t.record(Op::Imrecv, at, data, &[]);
                },
            )
        }
    };
}

/// What the probe of `message` matched; a message no recorded probe matched (probed
/// before tracing began, or `MPI_MESSAGE_NO_PROC`, a probe of `MPI_PROC_NULL`) is
/// from `MPI_PROC_NULL` on `MPI_COMM_WORLD` as far as the record goes: its status,
/// recorded with it, names the real source.
pub(crate) fn probed_as(t: &crate::tracer::Tracer, message: MPI_Message) -> Matched {
    take(key(message)).unwrap_or(Matched {
        comm: CommInfo::WORLD,
        source: t.k.proc_null,
        tag: -1,
    })
}

type Count = c_int;
counted!();

/// The MPI-4 large-count forms (`MPI_Mrecv_c`, `MPI_Imrecv_c`).
#[cfg(mpi4)]
pub(crate) mod large {
    use std::ffi::{c_int, c_void};

    use mpi_sys::PMPI_Imrecv_c as PMPI_Imrecv;
    use mpi_sys::PMPI_Mrecv_c as PMPI_Mrecv;
    use mpi_sys::{MPI_Count, MPI_Datatype, MPI_Message, MPI_Request, MPI_Status};
    use overlap_instrument::recorder::CallData;
    use overlap_instrument::schema::{Op, RequestKind};

    use super::super::p2p::flight;
    use super::super::{received, traced_in, traced_with, transfer, waits_p2p, StatusSlot};
    use crate::pmpi::key;
    use crate::tables;
    use crate::watch::{self, Role};

    type Count = MPI_Count;
    counted!();
}
