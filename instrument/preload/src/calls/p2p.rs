//! Point-to-point wrappers: blocking sends and receives, probes, posts, and persistent
//! requests (Send_init / Recv_init create one, Start / Startall give each start a fresh
//! request id, recorded with the persistent request it started).

use std::ffi::{c_int, c_void};

use mpi_sys::*;
use overlap_instrument::recorder::CallData;
use overlap_instrument::schema::{Op, RequestKind, Started};

use super::{nothing, received, status_slot, transfer};
use crate::entry::site;
use crate::pmpi::{blank_status, key};
use crate::tracer::{guarded, tracer};

macro_rules! blocking_send {
    ($($wrapper:ident => $pmpi:ident, $op:expr;)+) => {$(
        pub(crate) unsafe extern "C" fn $wrapper(
            buf: *const c_void,
            count: c_int,
            datatype: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
        ) -> c_int {
            // SAFETY: the program's arguments, passed on unchanged.
            let forward = || unsafe { $pmpi(buf, count, datatype, dest, tag, comm) };
            let Some(t) = tracer() else { return forward() };
            let site = site();
            let start = t.stamp();
            let rc = forward();
            let end = t.stamp();
            guarded(|| {
                let c = t.comms.info(comm);
                let transfer = transfer(&c, dest, tag, buf, count, datatype);
                let data = CallData::Blocking { transfer };
                t.recorder.record_call_from($op, start, end, site, data, 0, nothing);
            });
            rc
        }
    )+};
}

blocking_send! {
    send => PMPI_Send, Op::Send;
    ssend => PMPI_Ssend, Op::Ssend;
    bsend => PMPI_Bsend, Op::Bsend;
    rsend => PMPI_Rsend, Op::Rsend;
}

/// Posts (and persistent inits) of one direction: `$buf` is the buffer pointer type,
/// `$kind` the request kind, `$persistent` whether the request is a persistent one.
macro_rules! post {
    ($($wrapper:ident => $pmpi:ident, $op:expr, $buf:ty, $kind:expr, $persistent:expr;)+) => {$(
        pub(crate) unsafe extern "C" fn $wrapper(
            buf: $buf,
            count: c_int,
            datatype: MPI_Datatype,
            peer: c_int,
            tag: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            // SAFETY: the program's arguments, passed on unchanged.
            let forward = || unsafe { $pmpi(buf, count, datatype, peer, tag, comm, request) };
            let Some(t) = tracer() else { return forward() };
            let site = site();
            let start = t.stamp();
            let rc = forward();
            let end = t.stamp();
            if rc == 0 {
                guarded(|| {
                    let c = t.comms.info(comm);
                    let transfer = transfer(&c, peer, tag, buf, count, datatype);
                    let id = t.recorder.next_request_id();
                    // SAFETY: MPI just wrote the new handle there.
                    let handle = key(unsafe { *request });
                    if $persistent {
                        t.requests.persistent(handle, id.0, $kind, c);
                    } else {
                        t.requests.posted(handle, id.0, $kind, c);
                    }
                    let data = CallData::Post { transfer, request: id };
                    t.recorder.record_call_from($op, start, end, site, data, 0, nothing);
                });
            }
            rc
        }
    )+};
}

post! {
    isend => PMPI_Isend, Op::Isend, *const c_void, RequestKind::Send, false;
    issend => PMPI_Issend, Op::Issend, *const c_void, RequestKind::Send, false;
    ibsend => PMPI_Ibsend, Op::Ibsend, *const c_void, RequestKind::Send, false;
    irsend => PMPI_Irsend, Op::Irsend, *const c_void, RequestKind::Send, false;
    send_init => PMPI_Send_init, Op::SendInit, *const c_void, RequestKind::Send, true;
    irecv => PMPI_Irecv, Op::Irecv, *mut c_void, RequestKind::Recv, false;
    recv_init => PMPI_Recv_init, Op::RecvInit, *mut c_void, RequestKind::Recv, true;
}

pub(crate) unsafe extern "C" fn recv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { PMPI_Recv(buf, count, datatype, source, tag, comm, status) };
    };
    let site = site();
    let mut local = blank_status();
    let slot = status_slot(status, t.k.status_ignore, &mut local);
    let start = t.stamp();
    // SAFETY: as above, with a status MPI may write.
    let rc = unsafe { PMPI_Recv(buf, count, datatype, source, tag, comm, slot) };
    let end = t.stamp();
    guarded(|| {
        let c = t.comms.info(comm);
        let transfer = transfer(&c, source, tag, buf, count, datatype);
        // SAFETY: MPI filled the status in.
        let done = received(None, unsafe { &*slot }, &c, t.k.byte);
        let data = CallData::Blocking { transfer };
        t.recorder
            .record_call_from(Op::Recv, start, end, site, data, 1, |_| done);
    });
    rc
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let forward = |status| {
        // SAFETY: the program's arguments, passed on unchanged.
        unsafe {
            PMPI_Sendrecv(
                sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                recvtag, comm, status,
            )
        }
    };
    let Some(t) = tracer() else {
        return forward(status);
    };
    let site = site();
    let mut local = blank_status();
    let slot = status_slot(status, t.k.status_ignore, &mut local);
    let start = t.stamp();
    let rc = forward(slot);
    let end = t.stamp();
    guarded(|| {
        let c = t.comms.info(comm);
        let send = transfer(&c, dest, sendtag, sendbuf, sendcount, sendtype);
        let recv = transfer(&c, source, recvtag, recvbuf, recvcount, recvtype);
        // SAFETY: MPI filled the status in.
        let done = received(None, unsafe { &*slot }, &c, t.k.byte);
        let data = CallData::Sendrecv { send, recv };
        t.recorder
            .record_call_from(Op::Sendrecv, start, end, site, data, 1, |_| done);
    });
    rc
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let forward = |status| {
        // SAFETY: the program's arguments, passed on unchanged.
        unsafe {
            PMPI_Sendrecv_replace(
                buf, count, datatype, dest, sendtag, source, recvtag, comm, status,
            )
        }
    };
    let Some(t) = tracer() else {
        return forward(status);
    };
    let site = site();
    let mut local = blank_status();
    let slot = status_slot(status, t.k.status_ignore, &mut local);
    let start = t.stamp();
    let rc = forward(slot);
    let end = t.stamp();
    guarded(|| {
        let c = t.comms.info(comm);
        let send = transfer(&c, dest, sendtag, buf, count, datatype);
        let recv = transfer(&c, source, recvtag, buf, count, datatype);
        // SAFETY: MPI filled the status in.
        let done = received(None, unsafe { &*slot }, &c, t.k.byte);
        let data = CallData::Sendrecv { send, recv };
        t.recorder
            .record_call_from(Op::SendrecvReplace, start, end, site, data, 1, |_| done);
    });
    rc
}

pub(crate) unsafe extern "C" fn probe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { PMPI_Probe(source, tag, comm, status) };
    };
    let site = site();
    let mut local = blank_status();
    let slot = status_slot(status, t.k.status_ignore, &mut local);
    let start = t.stamp();
    // SAFETY: as above, with a status MPI may write.
    let rc = unsafe { PMPI_Probe(source, tag, comm, slot) };
    let end = t.stamp();
    guarded(|| {
        let c = t.comms.info(comm);
        let transfer = transfer(&c, source, tag, std::ptr::null(), 0, t.k.byte);
        // SAFETY: MPI filled the status in.
        let done = received(None, unsafe { &*slot }, &c, t.k.byte);
        let data = CallData::Blocking { transfer };
        t.recorder
            .record_call_from(Op::Probe, start, end, site, data, 1, |_| done);
    });
    rc
}

pub(crate) unsafe extern "C" fn iprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { PMPI_Iprobe(source, tag, comm, flag, status) };
    };
    let site = site();
    let mut local = blank_status();
    let slot = status_slot(status, t.k.status_ignore, &mut local);
    let start = t.stamp();
    // SAFETY: as above, with a status MPI may write.
    let rc = unsafe { PMPI_Iprobe(source, tag, comm, flag, slot) };
    let end = t.stamp();
    guarded(|| {
        // SAFETY: MPI wrote the flag.
        let found = rc == 0 && unsafe { *flag } != 0;
        let c = t.comms.info(comm);
        let transfer = transfer(&c, source, tag, std::ptr::null(), 0, t.k.byte);
        let data = CallData::Query {
            transfer,
            flag: found,
        };
        // SAFETY: MPI filled the status in when it found a message.
        let done = found.then(|| received(None, unsafe { &*slot }, &c, t.k.byte));
        let done = done.as_slice();
        t.recorder
            .record_call_from(Op::Iprobe, start, end, site, data, done.len(), |i| done[i]);
    });
    rc
}

pub(crate) unsafe extern "C" fn start(request: *mut MPI_Request) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's argument, passed on unchanged.
        return unsafe { PMPI_Start(request) };
    };
    let site = site();
    let start = t.stamp();
    // SAFETY: as above.
    let rc = unsafe { PMPI_Start(request) };
    let end = t.stamp();
    if rc == 0 {
        guarded(|| {
            // SAFETY: the program's handle, still valid after a Start.
            let handle = key(unsafe { *request });
            let id = t.recorder.next_request_id().0;
            let started = t.requests.started(handle, id).map(|persistent| Started {
                request: id,
                persistent,
            });
            let started = started.as_slice();
            t.recorder
                .record_start(Op::Start, start, end, site, started.len(), |i| started[i]);
        });
    }
    rc
}

pub(crate) unsafe extern "C" fn startall(count: c_int, requests: *mut MPI_Request) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { PMPI_Startall(count, requests) };
    };
    let site = site();
    let start = t.stamp();
    // SAFETY: as above.
    let rc = unsafe { PMPI_Startall(count, requests) };
    let end = t.stamp();
    if rc == 0 {
        guarded(|| {
            let n = usize::try_from(count).unwrap_or(0);
            let started: Vec<Started> = (0..n)
                .filter_map(|i| {
                    // SAFETY: `count` handles, still valid after a Start.
                    let handle = key(unsafe { *requests.add(i) });
                    let id = t.recorder.next_request_id().0;
                    let persistent = t.requests.started(handle, id)?;
                    Some(Started {
                        request: id,
                        persistent,
                    })
                })
                .collect();
            t.recorder
                .record_start(Op::Startall, start, end, site, started.len(), |i| {
                    started[i]
                });
        });
    }
    rc
}

pub(crate) unsafe extern "C" fn request_free(request: *mut MPI_Request) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's argument, passed on unchanged.
        return unsafe { PMPI_Request_free(request) };
    };
    let site = site();
    // SAFETY: read before MPI nulls it.
    let handle = key(unsafe { *request });
    let start = t.stamp();
    // SAFETY: as above.
    let rc = unsafe { PMPI_Request_free(request) };
    let end = t.stamp();
    if rc == 0 {
        guarded(|| {
            if let Some(id) = t.requests.freed(handle) {
                let data = CallData::Free {
                    request: overlap_instrument::schema::RequestId(id),
                };
                t.recorder
                    .record_call_from(Op::RequestFree, start, end, site, data, 0, nothing);
            }
        });
    }
    rc
}
