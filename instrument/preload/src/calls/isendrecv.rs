//! MPI-4's non-blocking Sendrecv: `MPI_Isendrecv` and `MPI_Isendrecv_replace` post a
//! send and a receive that one request completes. Each is recorded with both halves and
//! its request. The standard gives the completion the receive's status, but MPICH 4.0
//! leaves it unset (source 0, tag 0, count 0, whatever was received), so the status is
//! never read: the request table tracks the request as one whose completion carries no
//! status, and the analysis takes the receive half's source and tag as posted (a
//! wildcard source then stays unknown).

use std::ffi::{c_int, c_void};

use mpi_sys::*;
use overlap_instrument::recorder::CallData;
use overlap_instrument::schema::{Op, RequestKind};

use super::p2p::flight;
use super::{traced_with, transfer};
use crate::pmpi::key;
use crate::tables;
use crate::watch::{self, Role};

/// The calls with counts, declared once for both count types: `Count` is an `int` in
/// the classic calls, an `MPI_Count` in the large-count ones ([`large`]).
macro_rules! counted {
    () => {
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn isendrecv(
            sendbuf: *const c_void,
            sendcount: Count,
            sendtype: MPI_Datatype,
            dest: c_int,
            sendtag: c_int,
            recvbuf: *mut c_void,
            recvcount: Count,
            recvtype: MPI_Datatype,
            source: c_int,
            recvtag: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            traced_with(
                Op::Isendrecv,
                |t| {
                    let c = t.comms.info(comm);
                    let send = transfer(&c, dest, sendtag, sendbuf, sendcount, sendtype);
                    let recv = transfer(&c, source, recvtag, recvbuf, recvcount, recvtype);
                    let held =
                        watch::hold([flight(&send, Role::Send), flight(&recv, Role::Receive)]);
                    (c, send, recv, held)
                },
                // SAFETY: the program's arguments, passed on unchanged.
                |_| unsafe {
                    PMPI_Isendrecv(
                        sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                        source, recvtag, comm, request,
                    )
                },
                |t, at, rc, (c, send, recv, held)| {
                    // SAFETY: MPI wrote the handle when it returned success.
                    let handle = (rc == 0).then(|| key(unsafe { *request }));
                    crate::calls::isendrecv::record(
                        t,
                        Op::Isendrecv,
                        at,
                        handle,
                        *c,
                        *send,
                        *recv,
                        held,
                    );
                },
            )
        }

        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn isendrecv_replace(
            buf: *mut c_void,
            count: Count,
            datatype: MPI_Datatype,
            dest: c_int,
            sendtag: c_int,
            source: c_int,
            recvtag: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            traced_with(
                Op::IsendrecvReplace,
                |t| {
                    let c = t.comms.info(comm);
                    let send = transfer(&c, dest, sendtag, buf, count, datatype);
                    let recv = transfer(&c, source, recvtag, buf, count, datatype);
                    // One buffer, read then written: held as the receive's.
                    let held = watch::hold([flight(&recv, Role::Receive), None]);
                    (c, send, recv, held)
                },
                // SAFETY: the program's arguments, passed on unchanged.
                |_| unsafe {
                    PMPI_Isendrecv_replace(
                        buf, count, datatype, dest, sendtag, source, recvtag, comm, request,
                    )
                },
                |t, at, rc, (c, send, recv, held)| {
                    // SAFETY: MPI wrote the handle when it returned success.
                    let handle = (rc == 0).then(|| key(unsafe { *request }));
                    let op = Op::IsendrecvReplace;
                    crate::calls::isendrecv::record(t, op, at, handle, *c, *send, *recv, held);
                },
            )
        }
    };
}

type Count = c_int;
counted!();

/// Records an Isendrecv whose request got `handle` (`None`: the call failed, nothing
/// was posted).
#[allow(clippy::too_many_arguments)]
pub(crate) fn record(
    t: &crate::tracer::Tracer,
    op: Op,
    at: super::Timed,
    handle: Option<u64>,
    c: crate::handles::CommInfo,
    send: overlap_instrument::recorder::Transfer,
    recv: overlap_instrument::recorder::Transfer,
    held: &Option<watch::Held>,
) {
    let Some(handle) = handle else {
        watch::release(held.as_ref());
        return;
    };
    let id = at.here.next_request_id();
    // Tracked as a send: its completion records no status (see the module's note).
    tables::posted(handle, id.0, RequestKind::Send, c, false);
    watch::keep(held.as_ref(), id.0);
    let data = CallData::SendrecvPost {
        send,
        recv,
        request: id,
    };
    t.record(op, at, data, &[]);
}

/// The MPI-4 large-count forms (`MPI_Isendrecv_c`, `MPI_Isendrecv_replace_c`).
pub(crate) mod large {
    use std::ffi::{c_int, c_void};

    use mpi_sys::PMPI_Isendrecv_c as PMPI_Isendrecv;
    use mpi_sys::PMPI_Isendrecv_replace_c as PMPI_Isendrecv_replace;
    use mpi_sys::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Request};
    use overlap_instrument::schema::Op;

    use super::super::p2p::flight;
    use super::super::{traced_with, transfer};
    use crate::pmpi::key;
    use crate::watch::{self, Role};

    type Count = MPI_Count;
    counted!();
}
