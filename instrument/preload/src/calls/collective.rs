//! Collective wrappers. Each records this rank's part: the communicator, the bytes it
//! contributes and receives, and the root (as a world rank) of rooted collectives.
//! Arrays that MPI reads only at the root (Gatherv's receive counts, Scatterv's send
//! counts) are read only there.
//!
//! A collective comes in up to three forms with the same arguments: blocking
//! (`MPI_Bcast`), non-blocking (`MPI_Ibcast`, plus a request) and persistent (MPI-4
//! `MPI_Bcast_init`, plus an info and a request). [`family!`] declares all the forms of
//! one collective from one description of its part, so the three never differ. A
//! non-blocking form records the request it created; a persistent init records the
//! persistent request (as `MPI_Send_init` does), which `MPI_Start` / `MPI_Startall`
//! start and a Wait or Test completes like any other.
//!
//! This file holds the helpers and the classic collectives; [`super::reduction`] the
//! reductions and scans, [`super::neighbor`] the neighbourhood collectives.

use std::ffi::{c_int, c_void};

use mpi_sys::*;
use overlap_instrument::recorder::{CallData, Collective, WaitsOn};
use overlap_instrument::schema::{CommId, Op, RequestKind};

use super::{traced_in, traced_with};
use crate::handles::CommInfo;
use crate::pmpi::{self, key};
use crate::types::bytes;
use crate::watch::{self, Buffers, Flight, Role};

/// The bytes this rank sends and receives, and the root (a rank of the communicator).
#[derive(Clone, Copy)]
pub(crate) struct Part {
    send: u64,
    recv: u64,
    root: Option<c_int>,
}

impl Part {
    pub(crate) fn of(send: u64, recv: u64) -> Part {
        Part {
            send,
            recv,
            root: None,
        }
    }

    pub(crate) fn rooted(self, root: c_int) -> Part {
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

/// Sum of `n` counts (`int`s, or `MPI_Count`s in the large-count calls) times the size
/// of `datatype`.
///
/// # Safety
/// `counts` is null or points to `n` counts.
pub(crate) unsafe fn total<C: Copy + Into<i64>>(
    counts: *const C,
    n: c_int,
    datatype: MPI_Datatype,
) -> u64 {
    if counts.is_null() {
        return 0;
    }
    let n = usize::try_from(n).unwrap_or(0);
    // SAFETY: per the function's contract.
    let elements: i64 = (0..n)
        .map(|i| unsafe { *counts.add(i) }.into())
        .fold(0i64, i64::saturating_add);
    bytes(elements, datatype)
}

/// Sum over `i < n` of `counts[i]` elements of `types[i]`.
///
/// # Safety
/// `counts` and `types` are null or point to `n` values.
pub(crate) unsafe fn total_w<C: Copy + Into<i64>>(
    counts: *const C,
    types: *const MPI_Datatype,
    n: c_int,
) -> u64 {
    if counts.is_null() || types.is_null() {
        return 0;
    }
    let n = usize::try_from(n).unwrap_or(0);
    // SAFETY: per the function's contract.
    (0..n)
        .map(|i| unsafe { bytes(*counts.add(i), *types.add(i)) })
        .sum()
}

/// A buffer MPI reads (a collective's send buffer, a one-sided origin), as the buffer
/// watch holds it: `n` times `count` elements of `datatype` from `buf`.
pub(crate) fn to_send(
    buf: *const c_void,
    count: impl Into<i64>,
    datatype: MPI_Datatype,
    n: u64,
) -> Option<Flight> {
    let (_, span) = crate::types::sizes(count, datatype);
    Some(Flight {
        addr: pmpi::addr(buf),
        len: span.saturating_mul(n),
        role: Role::Send,
    })
}

/// A buffer MPI writes (a collective's receive buffer, a one-sided result), as
/// [`to_send`].
pub(crate) fn to_receive(
    buf: *const c_void,
    count: impl Into<i64>,
    datatype: MPI_Datatype,
    n: u64,
) -> Option<Flight> {
    to_send(buf, count, datatype, n).map(|f| Flight {
        role: Role::Receive,
        ..f
    })
}

/// A buffer whose extent each rank's counts and displacements say (the `v` and `w`
/// forms): held from `buf` to the end of memory.
pub(crate) fn held_from(buf: *const c_void) -> Option<Flight> {
    let addr = pmpi::addr(buf);
    Some(Flight {
        addr,
        len: u64::MAX - addr,
        role: Role::Held,
    })
}

/// A buffer only the root's call names (`held` elsewhere is garbage).
pub(crate) fn at_root(comm: MPI_Comm, root: c_int, buf: Option<Flight>) -> Option<Flight> {
    buf.filter(|_| am_root(comm, root))
}

/// The size of `comm` as a multiplier.
pub(crate) fn members(comm: MPI_Comm) -> u64 {
    u64::try_from(pmpi::size_of_comm(comm)).unwrap_or(0)
}

pub(crate) fn am_root(comm: MPI_Comm, root: c_int) -> bool {
    pmpi::rank_in(comm) == root
}

/// Forwards a blocking collective on `comm` (rooted at `root`, a rank of `comm`) and
/// records it with the part `part()` computes afterwards.
#[inline(always)]
pub(crate) fn blocking(
    op: Op,
    comm: MPI_Comm,
    root: Option<c_int>,
    forward: impl FnOnce() -> c_int,
    part: impl FnOnce() -> Part,
    held: impl FnOnce() -> Buffers,
) -> c_int {
    traced_in(
        op,
        |t| {
            let c = t.comms.info(comm);
            let waits = WaitsOn {
                comm: Some(c.id),
                root: root.map(|r| c.world(r)),
                ..WaitsOn::default()
            };
            let held = watch::asked().then(held).and_then(watch::hold);
            ((c, held), waits)
        },
        |_| forward(),
        |t, at, _, (c, held)| {
            watch::release(held.as_ref());
            t.record(op, at, CallData::Collective(part().record(c)), &[]);
        },
    )
}

/// Forwards a non-blocking collective (or, `persistent`, a persistent collective init)
/// and records the request it created.
#[inline(always)]
pub(crate) fn posted(
    op: Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    persistent: bool,
    forward: impl FnOnce() -> c_int,
    part: impl FnOnce() -> Part,
    held: impl FnOnce() -> Buffers,
) -> c_int {
    let before = |_: &crate::tracer::Tracer| {
        let buffers = watch::asked().then(held).unwrap_or_default();
        // A persistent init hands nothing to MPI yet: each start does.
        let hold = if persistent {
            None
        } else {
            watch::hold(buffers)
        };
        (buffers, hold)
    };
    traced_with(
        op,
        before,
        |_| forward(),
        |t, at, rc, (buffers, hold)| {
            if rc != 0 {
                watch::release(hold.as_ref());
                return;
            }
            let c = t.comms.info(comm);
            let collective = part().record(&c);
            let id = at.here.next_request_id();
            // SAFETY: MPI just wrote the new handle there.
            let handle = key(unsafe { *request });
            if persistent {
                crate::tables::persistent(handle, id.0, RequestKind::Collective, c, false);
                watch::persistent(id.0, *buffers);
            } else {
                crate::tables::posted(handle, id.0, RequestKind::Collective, c, false);
                watch::keep(hold.as_ref(), id.0);
            }
            let data = CallData::CollectivePost {
                collective,
                request: id,
            };
            t.record(op, at, data, &[]);
        },
    )
}

/// Declares the forms of one collective: `(args) on comm => part; held buffers;` (`on
/// comm rooted at root` for a rooted one) then one line per form, `blocking wrapper =
/// PMPI_function, Op;` (likewise `nonblocking`, `persistent`). `part` is evaluated after
/// the call, with the arguments in scope; the root, known before, is what a blocking
/// form waits on. `buffers` (the send and receive buffers, [`to_send`], [`to_receive`] or
/// [`held_from`])
/// is evaluated before, only for the buffer watch, which holds them while MPI has them.
macro_rules! family {
    ($args:tt on $comm:ident rooted at $root:ident => $part:expr; held $held:expr; $($form:ident $wrapper:ident = $pmpi:ident, $op:expr;)+) => {
        $( $crate::calls::collective::family!(@$form $wrapper $pmpi $op, $args $comm [$root] $part, $held); )+
    };
    ($args:tt on $comm:ident => $part:expr; held $held:expr; $($form:ident $wrapper:ident = $pmpi:ident, $op:expr;)+) => {
        $( $crate::calls::collective::family!(@$form $wrapper $pmpi $op, $args $comm [] $part, $held); )+
    };
    (@root []) => { None };
    (@root [$root:ident]) => { Some($root) };
    (@blocking $wrapper:ident $pmpi:ident $op:expr, ($($arg:ident: $ty:ty),*) $comm:ident [$($root:ident)?] $part:expr, $held:expr) => {
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn $wrapper($($arg: $ty),*) -> std::ffi::c_int {
            $crate::calls::collective::blocking(
                $op,
                $comm,
                $crate::calls::collective::family!(@root [$($root)?]),
                // SAFETY: the program's arguments, passed on unchanged.
                || unsafe { $pmpi($($arg),*) },
                || $part,
                || $held,
            )
        }
    };
    (@nonblocking $wrapper:ident $pmpi:ident $op:expr, ($($arg:ident: $ty:ty),*) $comm:ident [$($root:ident)?] $part:expr, $held:expr) => {
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn $wrapper(
            $($arg: $ty,)*
            request: *mut MPI_Request,
        ) -> std::ffi::c_int {
            $crate::calls::collective::posted(
                $op,
                $comm,
                request,
                false,
                // SAFETY: the program's arguments, passed on unchanged.
                || unsafe { $pmpi($($arg,)* request) },
                || $part,
                || $held,
            )
        }
    };
    (@persistent $wrapper:ident $pmpi:ident $op:expr, ($($arg:ident: $ty:ty),*) $comm:ident [$($root:ident)?] $part:expr, $held:expr) => {
        // Persistent collectives are MPI 4 (build.rs).
        #[cfg(mpi4)]
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn $wrapper(
            $($arg: $ty,)*
            info: MPI_Info,
            request: *mut MPI_Request,
        ) -> std::ffi::c_int {
            $crate::calls::collective::posted(
                $op,
                $comm,
                request,
                true,
                // SAFETY: the program's arguments, passed on unchanged.
                || unsafe { $pmpi($($arg,)* info, request) },
                || $part,
                || $held,
            )
        }
    };
}

pub(crate) use family;

family! {
    (comm: MPI_Comm) on comm => Part::of(0, 0);
    held [None, None];
    blocking barrier = PMPI_Barrier, Op::Barrier;
    nonblocking ibarrier = PMPI_Ibarrier, Op::Ibarrier;
    persistent barrier_init = PMPI_Barrier_init, Op::BarrierInit;
}

/// The collectives with counts, declared once for both count types: `Count` is an
/// `int` and `Displ` an `int` in the classic calls, `MPI_Count` and `MPI_Aint` in the
/// MPI-4 large-count ones ([`large`], whose `PMPI_*_c` functions are imported under the
/// classic names).
macro_rules! counted {
    () => {
    family! {
        (buf: *mut c_void, count: Count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm)
        on comm rooted at root => {
            let b = bytes(count, datatype);
            if am_root(comm, root) {
                Part::of(b, 0).rooted(root)
            } else {
                Part::of(0, b).rooted(root)
            }
        };
        held [
            if am_root(comm, root) {
                to_send(buf, count, datatype, 1)
            } else {
                to_receive(buf, count, datatype, 1)
            },
            None,
        ];
        blocking bcast = PMPI_Bcast, Op::Bcast;
        nonblocking ibcast = PMPI_Ibcast, Op::Ibcast;
        persistent bcast_init = PMPI_Bcast_init, Op::BcastInit;
    }

    family! {
        (sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void,
         recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm)
        on comm => Part::of(bytes(sendcount, sendtype), bytes(recvcount, recvtype) * members(comm));
        held [to_send(sendbuf, sendcount, sendtype, 1), to_receive(recvbuf, recvcount, recvtype, members(comm))];
        blocking allgather = PMPI_Allgather, Op::Allgather;
        nonblocking iallgather = PMPI_Iallgather, Op::Iallgather;
        persistent allgather_init = PMPI_Allgather_init, Op::AllgatherInit;
    }

    family! {
        (sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void,
         recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm)
        on comm => {
            let n = members(comm);
            Part::of(bytes(sendcount, sendtype) * n, bytes(recvcount, recvtype) * n)
        };
        held [to_send(sendbuf, sendcount, sendtype, members(comm)), to_receive(recvbuf, recvcount, recvtype, members(comm))];
        blocking alltoall = PMPI_Alltoall, Op::Alltoall;
        nonblocking ialltoall = PMPI_Ialltoall, Op::Ialltoall;
        persistent alltoall_init = PMPI_Alltoall_init, Op::AlltoallInit;
    }

    family! {
        (sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void,
         recvcounts: *const Count, displs: *const Displ, recvtype: MPI_Datatype, comm: MPI_Comm)
        on comm => {
            // SAFETY: every rank passes the communicator's size of receive counts.
            let recv = unsafe { total(recvcounts, pmpi::size_of_comm(comm), recvtype) };
            Part::of(bytes(sendcount, sendtype), recv)
        };
        held [to_send(sendbuf, sendcount, sendtype, 1), held_from(recvbuf)];
        blocking allgatherv = PMPI_Allgatherv, Op::Allgatherv;
        nonblocking iallgatherv = PMPI_Iallgatherv, Op::Iallgatherv;
        persistent allgatherv_init = PMPI_Allgatherv_init, Op::AllgathervInit;
    }

    family! {
        (sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Displ,
         sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count,
         rdispls: *const Displ, recvtype: MPI_Datatype, comm: MPI_Comm)
        on comm => {
            let n = pmpi::size_of_comm(comm);
            // SAFETY: every rank passes the communicator's size of counts, both ways.
            unsafe { Part::of(total(sendcounts, n, sendtype), total(recvcounts, n, recvtype)) }
        };
        held [held_from(sendbuf), held_from(recvbuf)];
        blocking alltoallv = PMPI_Alltoallv, Op::Alltoallv;
        nonblocking ialltoallv = PMPI_Ialltoallv, Op::Ialltoallv;
        persistent alltoallv_init = PMPI_Alltoallv_init, Op::AlltoallvInit;
    }

    family! {
        (sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Displ,
         sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count,
         rdispls: *const Displ, recvtypes: *const MPI_Datatype, comm: MPI_Comm)
        on comm => {
            let n = pmpi::size_of_comm(comm);
            // SAFETY: every rank passes the communicator's size of counts and types.
            unsafe { Part::of(total_w(sendcounts, sendtypes, n), total_w(recvcounts, recvtypes, n)) }
        };
        held [held_from(sendbuf), held_from(recvbuf)];
        blocking alltoallw = PMPI_Alltoallw, Op::Alltoallw;
        nonblocking ialltoallw = PMPI_Ialltoallw, Op::Ialltoallw;
        persistent alltoallw_init = PMPI_Alltoallw_init, Op::AlltoallwInit;
    }

    family! {
        (sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void,
         recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm)
        on comm rooted at root => {
            let recv = if am_root(comm, root) { bytes(recvcount, recvtype) * members(comm) } else { 0 };
            Part::of(bytes(sendcount, sendtype), recv).rooted(root)
        };
        held [
            to_send(sendbuf, sendcount, sendtype, 1),
            at_root(comm, root, to_receive(recvbuf, recvcount, recvtype, members(comm))),
        ];
        blocking gather = PMPI_Gather, Op::Gather;
        nonblocking igather = PMPI_Igather, Op::Igather;
        persistent gather_init = PMPI_Gather_init, Op::GatherInit;
    }

    family! {
        (sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void,
         recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm)
        on comm rooted at root => {
            let send = if am_root(comm, root) { bytes(sendcount, sendtype) * members(comm) } else { 0 };
            Part::of(send, bytes(recvcount, recvtype)).rooted(root)
        };
        held [
            at_root(comm, root, to_send(sendbuf, sendcount, sendtype, members(comm))),
            to_receive(recvbuf, recvcount, recvtype, 1),
        ];
        blocking scatter = PMPI_Scatter, Op::Scatter;
        nonblocking iscatter = PMPI_Iscatter, Op::Iscatter;
        persistent scatter_init = PMPI_Scatter_init, Op::ScatterInit;
    }

    family! {
        (sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void,
         recvcounts: *const Count, displs: *const Displ, recvtype: MPI_Datatype, root: c_int,
         comm: MPI_Comm)
        on comm rooted at root => {
            let recv = if am_root(comm, root) {
                // SAFETY: the root passes the communicator's size of receive counts.
                unsafe { total(recvcounts, pmpi::size_of_comm(comm), recvtype) }
            } else {
                0
            };
            Part::of(bytes(sendcount, sendtype), recv).rooted(root)
        };
        held [to_send(sendbuf, sendcount, sendtype, 1), at_root(comm, root, held_from(recvbuf))];
        blocking gatherv = PMPI_Gatherv, Op::Gatherv;
        nonblocking igatherv = PMPI_Igatherv, Op::Igatherv;
        persistent gatherv_init = PMPI_Gatherv_init, Op::GathervInit;
    }

    family! {
        (sendbuf: *const c_void, sendcounts: *const Count, displs: *const Displ,
         sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype,
         root: c_int, comm: MPI_Comm)
        on comm rooted at root => {
            let send = if am_root(comm, root) {
                // SAFETY: the root passes the communicator's size of send counts.
                unsafe { total(sendcounts, pmpi::size_of_comm(comm), sendtype) }
            } else {
                0
            };
            Part::of(send, bytes(recvcount, recvtype)).rooted(root)
        };
        held [at_root(comm, root, held_from(sendbuf)), to_receive(recvbuf, recvcount, recvtype, 1)];
        blocking scatterv = PMPI_Scatterv, Op::Scatterv;
        nonblocking iscatterv = PMPI_Iscatterv, Op::Iscatterv;
        persistent scatterv_init = PMPI_Scatterv_init, Op::ScattervInit;
    }
    };
}

type Count = c_int;
type Displ = c_int;
counted!();

/// The MPI-4 large-count forms (`MPI_Bcast_c`...): the same wrappers over `MPI_Count`
/// counts and `MPI_Aint` displacements.
#[cfg(mpi4)]
pub(crate) mod large {
    use std::ffi::{c_int, c_void};

    use mpi_sys::PMPI_Allgather_c as PMPI_Allgather;
    use mpi_sys::PMPI_Allgather_init_c as PMPI_Allgather_init;
    use mpi_sys::PMPI_Allgatherv_c as PMPI_Allgatherv;
    use mpi_sys::PMPI_Allgatherv_init_c as PMPI_Allgatherv_init;
    use mpi_sys::PMPI_Alltoall_c as PMPI_Alltoall;
    use mpi_sys::PMPI_Alltoall_init_c as PMPI_Alltoall_init;
    use mpi_sys::PMPI_Alltoallv_c as PMPI_Alltoallv;
    use mpi_sys::PMPI_Alltoallv_init_c as PMPI_Alltoallv_init;
    use mpi_sys::PMPI_Alltoallw_c as PMPI_Alltoallw;
    use mpi_sys::PMPI_Alltoallw_init_c as PMPI_Alltoallw_init;
    use mpi_sys::PMPI_Bcast_c as PMPI_Bcast;
    use mpi_sys::PMPI_Bcast_init_c as PMPI_Bcast_init;
    use mpi_sys::PMPI_Gather_c as PMPI_Gather;
    use mpi_sys::PMPI_Gather_init_c as PMPI_Gather_init;
    use mpi_sys::PMPI_Gatherv_c as PMPI_Gatherv;
    use mpi_sys::PMPI_Gatherv_init_c as PMPI_Gatherv_init;
    use mpi_sys::PMPI_Iallgather_c as PMPI_Iallgather;
    use mpi_sys::PMPI_Iallgatherv_c as PMPI_Iallgatherv;
    use mpi_sys::PMPI_Ialltoall_c as PMPI_Ialltoall;
    use mpi_sys::PMPI_Ialltoallv_c as PMPI_Ialltoallv;
    use mpi_sys::PMPI_Ialltoallw_c as PMPI_Ialltoallw;
    use mpi_sys::PMPI_Ibcast_c as PMPI_Ibcast;
    use mpi_sys::PMPI_Igather_c as PMPI_Igather;
    use mpi_sys::PMPI_Igatherv_c as PMPI_Igatherv;
    use mpi_sys::PMPI_Iscatter_c as PMPI_Iscatter;
    use mpi_sys::PMPI_Iscatterv_c as PMPI_Iscatterv;
    use mpi_sys::PMPI_Scatter_c as PMPI_Scatter;
    use mpi_sys::PMPI_Scatter_init_c as PMPI_Scatter_init;
    use mpi_sys::PMPI_Scatterv_c as PMPI_Scatterv;
    use mpi_sys::PMPI_Scatterv_init_c as PMPI_Scatterv_init;
    use mpi_sys::{MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Info, MPI_Request};
    use overlap_instrument::schema::Op;

    use super::{am_root, at_root, held_from, members, to_receive, to_send, total, total_w, Part};
    use crate::pmpi;
    use crate::types::bytes;

    type Count = MPI_Count;
    type Displ = MPI_Aint;
    counted!();
}
