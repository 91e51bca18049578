//! Point-to-point wrappers: blocking sends and receives, probes, posts, and persistent
//! requests (Send_init / Recv_init create one, Start / Startall give each start a fresh
//! request id, recorded with the persistent request it started).

use std::ffi::{c_int, c_void};

use mpi_sys::*;
use overlap_instrument::recorder::CallData;
use overlap_instrument::schema::{Op, RequestId, RequestKind, Started};

use super::{received, traced_in, traced_with, transfer, waits_p2p, StatusSlot};
use crate::pmpi::key;
use crate::tables;
use crate::watch::{self, Flight, Role};
use overlap_instrument::recorder::{Transfer, WaitsOn};

macro_rules! blocking_send {
    ($($wrapper:ident => $pmpi:ident, $op:expr;)+) => {$(
        pub(crate) unsafe extern "C" fn $wrapper(
            buf: *const c_void,
            count: Count,
            datatype: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
        ) -> c_int {
            traced_in(
                $op,
                |t| {
                    let transfer = transfer(&t.comms.info(comm), dest, tag, buf, count, datatype);
                    let held = watch::hold([flight(&transfer, Role::Send), None]);
                    ((transfer, held), sent(&transfer))
                },
                // SAFETY: the program's arguments, passed on unchanged.
                |_| unsafe { $pmpi(buf, count, datatype, dest, tag, comm) },
                |t, at, _, (transfer, held)| {
                    watch::release(held.as_ref());
                    t.record($op, at, CallData::Blocking { transfer: *transfer }, &[]);
                },
            )
        }
    )+};
}

/// Posts (and persistent inits) of one direction: `$buf` is the buffer pointer type,
/// `$kind` the request kind, `$persistent` whether the request is a persistent one.
/// What the record needs but the new handle is worked out before the call.
macro_rules! post {
    ($($wrapper:ident => $pmpi:ident, $op:expr, $buf:ty, $kind:expr, $persistent:expr;)+) => {$(
        pub(crate) unsafe extern "C" fn $wrapper(
            buf: $buf,
            count: Count,
            datatype: MPI_Datatype,
            peer: c_int,
            tag: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            traced_with(
                $op,
                |t| {
                    let c = t.comms.info(comm);
                    let transfer = transfer(&c, peer, tag, buf, count, datatype);
                    // A persistent init hands nothing to MPI yet: each start does.
                    let held = if $persistent {
                        None
                    } else {
                        watch::hold([flight(&transfer, role_of($kind)), None])
                    };
                    (c, transfer, held)
                },
                // SAFETY: the program's arguments, passed on unchanged.
                |_| unsafe { $pmpi(buf, count, datatype, peer, tag, comm, request) },
                |t, at, rc, (c, transfer, held)| {
                    if rc != 0 {
                        watch::release(held.as_ref());
                        return;
                    }
                    let id = at.here.next_request_id();
                    // SAFETY: MPI just wrote the new handle there.
                    let handle = key(unsafe { *request });
                    let proc_null = $kind == RequestKind::Recv && peer == t.k.proc_null;
                    if $persistent {
                        tables::persistent(handle, id.0, $kind, *c, proc_null);
                        watch::persistent(id.0, [flight(transfer, role_of($kind)), None]);
                    } else {
                        tables::posted(handle, id.0, $kind, *c, proc_null);
                        watch::keep(held.as_ref(), id.0);
                    }
                    let data = CallData::Post { transfer: *transfer, request: id };
                    t.record($op, at, data, &[]);
                },
            )
        }
    )+};
}

/// A transfer's buffer as the watch holds it.
pub(crate) fn flight(t: &Transfer, role: Role) -> Option<Flight> {
    Some(Flight {
        addr: t.buf,
        len: t.buf_len,
        role,
    })
}

/// The watch's role of a request kind's buffer.
pub(crate) fn role_of(kind: RequestKind) -> Role {
    match kind {
        RequestKind::Send => Role::Send,
        RequestKind::Recv => Role::Receive,
        RequestKind::Collective | RequestKind::OneSided => Role::Held,
    }
}

/// The calls with counts, declared once for both count types: `Count` is an `int` in
/// the classic calls, an `MPI_Count` in the MPI-4 large-count ones ([`large`], whose
/// `PMPI_*_c` functions are imported under the classic names).
macro_rules! counted {
    () => {
        blocking_send! {
            send => PMPI_Send, Op::Send;
            ssend => PMPI_Ssend, Op::Ssend;
            bsend => PMPI_Bsend, Op::Bsend;
            rsend => PMPI_Rsend, Op::Rsend;
        }

        post! {
            isend => PMPI_Isend, Op::Isend, *const c_void, RequestKind::Send, false;
            issend => PMPI_Issend, Op::Issend, *const c_void, RequestKind::Send, false;
            ibsend => PMPI_Ibsend, Op::Ibsend, *const c_void, RequestKind::Send, false;
            irsend => PMPI_Irsend, Op::Irsend, *const c_void, RequestKind::Send, false;
            send_init => PMPI_Send_init, Op::SendInit, *const c_void, RequestKind::Send, true;
            bsend_init => PMPI_Bsend_init, Op::BsendInit, *const c_void, RequestKind::Send, true;
            ssend_init => PMPI_Ssend_init, Op::SsendInit, *const c_void, RequestKind::Send, true;
            rsend_init => PMPI_Rsend_init, Op::RsendInit, *const c_void, RequestKind::Send, true;
            irecv => PMPI_Irecv, Op::Irecv, *mut c_void, RequestKind::Recv, false;
            recv_init => PMPI_Recv_init, Op::RecvInit, *mut c_void, RequestKind::Recv, true;
        }

        pub(crate) unsafe extern "C" fn recv(
            buf: *mut c_void,
            count: Count,
            datatype: MPI_Datatype,
            source: c_int,
            tag: c_int,
            comm: MPI_Comm,
            status: *mut MPI_Status,
        ) -> c_int {
            traced_in(
                Op::Recv,
                |t| {
                    let c = t.comms.info(comm);
                    let transfer = transfer(&c, source, tag, buf, count, datatype);
                    let held = watch::hold([flight(&transfer, Role::Receive), None]);
                    (
                        (StatusSlot::new(status, t), c, held),
                        waits_p2p(&c, source, tag),
                    )
                },
                // SAFETY: the program's arguments, passed on unchanged but for an ignored status.
                |s| unsafe {
                    PMPI_Recv(
                        buf,
                        count,
                        datatype,
                        source,
                        tag,
                        comm,
                        StatusSlot::arg(s.map(|s| &mut s.0), status),
                    )
                },
                |t, at, _, (s, c, held)| {
                    watch::release(held.as_ref());
                    let transfer = transfer(c, source, tag, buf, count, datatype);
                    let done = received(None, s.get(), c);
                    t.record(Op::Recv, at, CallData::Blocking { transfer }, &[done]);
                },
            )
        }

        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn sendrecv(
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
            status: *mut MPI_Status,
        ) -> c_int {
            traced_in(
                Op::Sendrecv,
                |t| {
                    let c = t.comms.info(comm);
                    let waits = WaitsOn {
                        recv: Some((c.world(source), recvtag)),
                        ..waits_p2p(&c, dest, sendtag)
                    };
                    let send = transfer(&c, dest, sendtag, sendbuf, sendcount, sendtype);
                    let recv = transfer(&c, source, recvtag, recvbuf, recvcount, recvtype);
                    let held =
                        watch::hold([flight(&send, Role::Send), flight(&recv, Role::Receive)]);
                    ((StatusSlot::new(status, t), c, held), waits)
                },
                // SAFETY: the program's arguments, passed on unchanged but for an ignored status.
                |s| unsafe {
                    PMPI_Sendrecv(
                        sendbuf,
                        sendcount,
                        sendtype,
                        dest,
                        sendtag,
                        recvbuf,
                        recvcount,
                        recvtype,
                        source,
                        recvtag,
                        comm,
                        StatusSlot::arg(s.map(|s| &mut s.0), status),
                    )
                },
                |t, at, _, (s, c, held)| {
                    watch::release(held.as_ref());
                    let c = *c;
                    let send = transfer(&c, dest, sendtag, sendbuf, sendcount, sendtype);
                    let recv = transfer(&c, source, recvtag, recvbuf, recvcount, recvtype);
                    let done = received(None, s.get(), &c);
                    t.record(Op::Sendrecv, at, CallData::Sendrecv { send, recv }, &[done]);
                },
            )
        }

        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn sendrecv_replace(
            buf: *mut c_void,
            count: Count,
            datatype: MPI_Datatype,
            dest: c_int,
            sendtag: c_int,
            source: c_int,
            recvtag: c_int,
            comm: MPI_Comm,
            status: *mut MPI_Status,
        ) -> c_int {
            traced_in(
                Op::SendrecvReplace,
                |t| {
                    let c = t.comms.info(comm);
                    let waits = WaitsOn {
                        recv: Some((c.world(source), recvtag)),
                        ..waits_p2p(&c, dest, sendtag)
                    };
                    let both = transfer(&c, source, recvtag, buf, count, datatype);
                    let held = watch::hold([flight(&both, Role::Receive), None]);
                    ((StatusSlot::new(status, t), c, held), waits)
                },
                // SAFETY: the program's arguments, passed on unchanged but for an ignored status.
                |s| unsafe {
                    PMPI_Sendrecv_replace(
                        buf,
                        count,
                        datatype,
                        dest,
                        sendtag,
                        source,
                        recvtag,
                        comm,
                        StatusSlot::arg(s.map(|s| &mut s.0), status),
                    )
                },
                |t, at, _, (s, c, held)| {
                    watch::release(held.as_ref());
                    let c = *c;
                    let send = transfer(&c, dest, sendtag, buf, count, datatype);
                    let recv = transfer(&c, source, recvtag, buf, count, datatype);
                    let done = received(None, s.get(), &c);
                    let data = CallData::Sendrecv { send, recv };
                    t.record(Op::SendrecvReplace, at, data, &[done]);
                },
            )
        }
    };
}

type Count = c_int;
counted!();

/// The MPI-4 large-count forms (`MPI_Isend_c`...): the same wrappers over `MPI_Count`
/// counts.
#[cfg(mpi4)]
pub(crate) mod large {
    use std::ffi::{c_int, c_void};

    use mpi_sys::PMPI_Bsend_c as PMPI_Bsend;
    use mpi_sys::PMPI_Bsend_init_c as PMPI_Bsend_init;
    use mpi_sys::PMPI_Ibsend_c as PMPI_Ibsend;
    use mpi_sys::PMPI_Irecv_c as PMPI_Irecv;
    use mpi_sys::PMPI_Irsend_c as PMPI_Irsend;
    use mpi_sys::PMPI_Isend_c as PMPI_Isend;
    use mpi_sys::PMPI_Issend_c as PMPI_Issend;
    use mpi_sys::PMPI_Recv_c as PMPI_Recv;
    use mpi_sys::PMPI_Recv_init_c as PMPI_Recv_init;
    use mpi_sys::PMPI_Rsend_c as PMPI_Rsend;
    use mpi_sys::PMPI_Rsend_init_c as PMPI_Rsend_init;
    use mpi_sys::PMPI_Send_c as PMPI_Send;
    use mpi_sys::PMPI_Send_init_c as PMPI_Send_init;
    use mpi_sys::PMPI_Sendrecv_c as PMPI_Sendrecv;
    use mpi_sys::PMPI_Sendrecv_replace_c as PMPI_Sendrecv_replace;
    use mpi_sys::PMPI_Ssend_c as PMPI_Ssend;
    use mpi_sys::PMPI_Ssend_init_c as PMPI_Ssend_init;
    use mpi_sys::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Request, MPI_Status};
    use overlap_instrument::recorder::{CallData, WaitsOn};
    use overlap_instrument::schema::{Op, RequestKind};

    use super::super::{received, traced_in, traced_with, transfer, waits_p2p, StatusSlot};
    use super::{flight, role_of, sent};
    use crate::pmpi::key;
    use crate::tables;
    use crate::watch::{self, Role};

    type Count = MPI_Count;
    counted!();
}

pub(crate) unsafe extern "C" fn probe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    traced_in(
        Op::Probe,
        |t| {
            let c = t.comms.info(comm);
            ((StatusSlot::new(status, t), c), waits_p2p(&c, source, tag))
        },
        // SAFETY: the program's arguments, passed on unchanged but for an ignored status.
        |s| unsafe {
            PMPI_Probe(
                source,
                tag,
                comm,
                StatusSlot::arg(s.map(|s| &mut s.0), status),
            )
        },
        |t, at, _, (s, c)| {
            let c = *c;
            let transfer = transfer(&c, source, tag, std::ptr::null(), 0, t.k.byte);
            let done = received(None, s.get(), &c);
            t.record(Op::Probe, at, CallData::Blocking { transfer }, &[done]);
        },
    )
}

pub(crate) unsafe extern "C" fn iprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    traced_with(
        Op::Iprobe,
        |t| StatusSlot::new(status, t),
        // SAFETY: the program's arguments, passed on unchanged but for an ignored status.
        |s| unsafe { PMPI_Iprobe(source, tag, comm, flag, StatusSlot::arg(s, status)) },
        |t, at, rc, s| {
            // SAFETY: MPI wrote the flag.
            let found = rc == 0 && unsafe { *flag } != 0;
            let c = t.comms.info(comm);
            let transfer = transfer(&c, source, tag, std::ptr::null(), 0, t.k.byte);
            // The status means something only when a message was found.
            let done = found.then(|| received(None, s.get(), &c));
            let data = CallData::Query {
                transfer,
                flag: found,
            };
            t.record(Op::Iprobe, at, data, done.as_slice());
        },
    )
}

/// Gives each persistent request of `handles` that the preload knows a fresh request id.
fn start_all(t: &crate::tracer::Tracer, handles: impl Iterator<Item = u64>) -> Vec<Started> {
    handles
        .filter_map(|handle| {
            let request = t.next_request_id().0;
            let persistent = tables::started(handle, request)?;
            Some(Started {
                request,
                persistent,
            })
        })
        .collect()
}

/// Before a Start of `handles`: the watch holds the buffers of the persistent requests
/// they would start, one hold each, in order.
fn hold_starts(handles: impl Iterator<Item = u64>) -> Vec<(u64, watch::Held)> {
    if !watch::asked() {
        return Vec::new();
    }
    let ids: Vec<u64> = handles.filter_map(tables::next_start).collect();
    watch::hold_persistent(&ids)
}

/// After a Start: each started request keeps its persistent request's hold; a hold no
/// request took is let go.
fn keep_starts(held: &[(u64, watch::Held)], started: &[Started]) {
    let mut kept = vec![false; held.len()];
    for s in started {
        let found = (0..held.len()).find(|&k| !kept[k] && held[k].0 == s.persistent);
        if let Some(k) = found {
            kept[k] = true;
            watch::keep(Some(&held[k].1), s.request);
        }
    }
    for (k, (_, h)) in held.iter().enumerate() {
        if !kept[k] {
            watch::release(Some(h));
        }
    }
}

pub(crate) unsafe extern "C" fn start(request: *mut MPI_Request) -> c_int {
    traced_with(
        Op::Start,
        // SAFETY: the program's handle.
        |_| hold_starts(std::iter::once(key(unsafe { *request }))),
        // SAFETY: the program's argument, passed on unchanged.
        |_| unsafe { PMPI_Start(request) },
        |t, at, rc, held| {
            if rc == 0 {
                // SAFETY: the program's handle, still valid after a Start.
                let started = start_all(t, std::iter::once(key(unsafe { *request })));
                keep_starts(held, &started);
                t.record_started(Op::Start, at, &started);
            } else {
                held.iter().for_each(|(_, h)| watch::release(Some(h)));
            }
        },
    )
}

pub(crate) unsafe extern "C" fn startall(count: c_int, requests: *mut MPI_Request) -> c_int {
    let n = usize::try_from(count).unwrap_or(0);
    // SAFETY: `count` handles, still valid after a Start.
    let handles = move || (0..n).map(move |i| key(unsafe { *requests.add(i) }));
    traced_with(
        Op::Startall,
        |_| hold_starts(handles()),
        // SAFETY: the program's arguments, passed on unchanged.
        |_| unsafe { PMPI_Startall(count, requests) },
        |t, at, rc, held| {
            if rc == 0 {
                let started = start_all(t, handles());
                keep_starts(held, &started);
                t.record_started(Op::Startall, at, &started);
            } else {
                held.iter().for_each(|(_, h)| watch::release(Some(h)));
            }
        },
    )
}

pub(crate) unsafe extern "C" fn request_free(request: *mut MPI_Request) -> c_int {
    traced_with(
        Op::RequestFree,
        // SAFETY: read before MPI nulls it.
        |_| key(unsafe { *request }),
        // SAFETY: the program's argument, passed on unchanged.
        |_| unsafe { PMPI_Request_free(request) },
        |t, at, rc, handle| {
            if rc != 0 {
                return;
            }
            if let Some(id) = tables::freed(*handle) {
                watch::freed(id);
                let data = CallData::Free {
                    request: RequestId(id),
                };
                t.record(Op::RequestFree, at, data, &[]);
            }
        },
    )
}

/// What a send waits on: its peer and tag on its communicator.
#[inline(always)]
pub(crate) fn sent(t: &Transfer) -> WaitsOn {
    WaitsOn {
        comm: Some(t.comm.0),
        peer: Some((t.peer, t.tag)),
        ..WaitsOn::default()
    }
}
