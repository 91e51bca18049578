//! Collective wrappers. Each records this rank's part: the communicator, the bytes it
//! contributes and receives, and the root (as a world rank) of rooted collectives.
//! Arrays that MPI reads only at the root (Gatherv's receive counts, Scatterv's send
//! counts) are read only there.

use std::ffi::{c_int, c_void};

use mpi_sys::*;
use overlap_instrument::recorder::{CallData, Collective};
use overlap_instrument::schema::{CommId, Op, RequestKind};

use super::traced;
use crate::handles::CommInfo;
use crate::pmpi::{self, bytes, key};

/// The bytes this rank sends and receives, and the root (a rank of the communicator).
#[derive(Clone, Copy)]
struct Part {
    send: u64,
    recv: u64,
    root: Option<c_int>,
}

impl Part {
    fn of(send: u64, recv: u64) -> Part {
        Part {
            send,
            recv,
            root: None,
        }
    }

    fn rooted(self, root: c_int) -> Part {
        Part {
            root: Some(root),
            ..self
        }
    }

    fn record(self, comm: &CommInfo) -> Collective {
        Collective {
            comm: CommId(comm.id),
            send_bytes: self.send,
            recv_bytes: self.recv,
            root: self.root.map(|r| comm.world(r)),
        }
    }
}

/// Sum of `n` counts times the size of `datatype`.
///
/// # Safety
/// `counts` is null or points to `n` ints.
unsafe fn total(counts: *const c_int, n: c_int, datatype: MPI_Datatype) -> u64 {
    if counts.is_null() {
        return 0;
    }
    let n = usize::try_from(n).unwrap_or(0);
    // SAFETY: per the function's contract.
    let elements: i64 = (0..n).map(|i| i64::from(unsafe { *counts.add(i) })).sum();
    let elements = c_int::try_from(elements).unwrap_or(c_int::MAX);
    bytes(elements, datatype)
}

fn am_root(comm: MPI_Comm, root: c_int) -> bool {
    pmpi::rank_in(comm) == root
}

/// Forwards a blocking collective on `comm` and records it with the part `part()`
/// computes afterwards.
#[inline(always)]
fn blocking(
    op: Op,
    comm: MPI_Comm,
    forward: impl FnOnce() -> c_int,
    part: impl FnOnce() -> Part,
) -> c_int {
    traced(forward, |t, at, _| {
        let c = t.comms.info(comm);
        t.record(op, at, CallData::Collective(part().record(&c)), &[]);
    })
}

pub(crate) unsafe extern "C" fn barrier(comm: MPI_Comm) -> c_int {
    // SAFETY (all forwards below): the program's arguments, passed on unchanged.
    blocking(
        Op::Barrier,
        comm,
        || unsafe { PMPI_Barrier(comm) },
        || Part::of(0, 0),
    )
}

pub(crate) unsafe extern "C" fn bcast(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    blocking(
        Op::Bcast,
        comm,
        || unsafe { PMPI_Bcast(buf, count, datatype, root, comm) },
        || {
            let b = bytes(count, datatype);
            if am_root(comm, root) {
                Part::of(b, 0).rooted(root)
            } else {
                Part::of(0, b).rooted(root)
            }
        },
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    blocking(
        Op::Reduce,
        comm,
        || unsafe { PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm) },
        || {
            let b = bytes(count, datatype);
            let recv = if am_root(comm, root) { b } else { 0 };
            Part::of(b, recv).rooted(root)
        },
    )
}

pub(crate) unsafe extern "C" fn allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    blocking(
        Op::Allreduce,
        comm,
        || unsafe { PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm) },
        || {
            let b = bytes(count, datatype);
            Part::of(b, b)
        },
    )
}

macro_rules! all_to_all {
    ($($wrapper:ident => $pmpi:ident, $op:expr, $send_per_peer:expr;)+) => {$(
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn $wrapper(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: MPI_Datatype,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: MPI_Datatype,
            comm: MPI_Comm,
        ) -> c_int {
            blocking(
                $op,
                comm,
                || unsafe { $pmpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) },
                || {
                    let n = u64::try_from(pmpi::size_of_comm(comm)).unwrap_or(0);
                    let send = bytes(sendcount, sendtype) * if $send_per_peer { n } else { 1 };
                    Part::of(send, bytes(recvcount, recvtype) * n)
                },
            )
        }
    )+};
}

all_to_all! {
    allgather => PMPI_Allgather, Op::Allgather, false;
    alltoall => PMPI_Alltoall, Op::Alltoall, true;
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    blocking(
        Op::Allgatherv,
        comm,
        || unsafe {
            PMPI_Allgatherv(
                sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
            )
        },
        || {
            let n = pmpi::size_of_comm(comm);
            // SAFETY: every rank passes the communicator's size of receive counts.
            let recv = unsafe { total(recvcounts, n, recvtype) };
            Part::of(bytes(sendcount, sendtype), recv)
        },
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    blocking(
        Op::Alltoallv,
        comm,
        || unsafe {
            PMPI_Alltoallv(
                sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                comm,
            )
        },
        || {
            let n = pmpi::size_of_comm(comm);
            // SAFETY: every rank passes the communicator's size of counts, both ways.
            unsafe {
                Part::of(
                    total(sendcounts, n, sendtype),
                    total(recvcounts, n, recvtype),
                )
            }
        },
    )
}

macro_rules! rooted {
    ($($wrapper:ident => $pmpi:ident, $op:expr, $gather:expr;)+) => {$(
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn $wrapper(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: MPI_Datatype,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: MPI_Datatype,
            root: c_int,
            comm: MPI_Comm,
        ) -> c_int {
            blocking(
                $op,
                comm,
                || unsafe {
                    $pmpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm)
                },
                || {
                    let n = u64::try_from(pmpi::size_of_comm(comm)).unwrap_or(0);
                    let root_part = am_root(comm, root);
                    let (send, recv) = if $gather {
                        let recv = if root_part { bytes(recvcount, recvtype) * n } else { 0 };
                        (bytes(sendcount, sendtype), recv)
                    } else {
                        let send = if root_part { bytes(sendcount, sendtype) * n } else { 0 };
                        (send, bytes(recvcount, recvtype))
                    };
                    Part::of(send, recv).rooted(root)
                },
            )
        }
    )+};
}

rooted! {
    gather => PMPI_Gather, Op::Gather, true;
    scatter => PMPI_Scatter, Op::Scatter, false;
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    blocking(
        Op::Gatherv,
        comm,
        || unsafe {
            PMPI_Gatherv(
                sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm,
            )
        },
        || {
            let recv = if am_root(comm, root) {
                // SAFETY: the root passes the communicator's size of receive counts.
                unsafe { total(recvcounts, pmpi::size_of_comm(comm), recvtype) }
            } else {
                0
            };
            Part::of(bytes(sendcount, sendtype), recv).rooted(root)
        },
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    blocking(
        Op::Scatterv,
        comm,
        || unsafe {
            PMPI_Scatterv(
                sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
            )
        },
        || {
            let send = if am_root(comm, root) {
                // SAFETY: the root passes the communicator's size of send counts.
                unsafe { total(sendcounts, pmpi::size_of_comm(comm), sendtype) }
            } else {
                0
            };
            Part::of(send, bytes(recvcount, recvtype)).rooted(root)
        },
    )
}

/// Forwards a non-blocking collective and records the request it created.
#[inline(always)]
fn posted(
    op: Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    forward: impl FnOnce() -> c_int,
    part: impl FnOnce() -> Part,
) -> c_int {
    traced(forward, |t, at, rc| {
        if rc != 0 {
            return;
        }
        let c = t.comms.info(comm);
        let collective = part().record(&c);
        let id = t.recorder.next_request_id();
        // SAFETY: MPI just wrote the new handle there.
        let handle = key(unsafe { *request });
        t.requests.posted(handle, id.0, RequestKind::Collective, c);
        let data = CallData::CollectivePost {
            collective,
            request: id,
        };
        t.record(op, at, data, &[]);
    })
}

pub(crate) unsafe extern "C" fn ibarrier(comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    posted(
        Op::Ibarrier,
        comm,
        request,
        || unsafe { PMPI_Ibarrier(comm, request) },
        || Part::of(0, 0),
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn iallreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    posted(
        Op::Iallreduce,
        comm,
        request,
        || unsafe { PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request) },
        || {
            let b = bytes(count, datatype);
            Part::of(b, b)
        },
    )
}
