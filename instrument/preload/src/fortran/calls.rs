//! The Fortran wrappers of the preload built for Open MPI, and the names they are
//! exported under ([`super`] says why): `mpi_<call>_` for `mpif.h` and `use mpi`, and
//! Open MPI's `ompi_<call>_f`, which its `mpi_f08` bindings call. Calls with only scalar
//! arguments are declared in one line each ([`fortran!`]); those with arrays of
//! requests or statuses are written out.

use std::ffi::c_int;

use crate::calls::{collective, completion, neighbor, p2p, reduction, rma, rma_sync, setup};
use crate::fint::{set_ierr, Fint};

use super::convert::{
    fortran_index, Aint, Arg, Comm, Flag, FreedComm, FreedWin, Group, Info, Int, IntOut, Ints,
    NewComm, NewRequest, NewWin, Op, Ptr, RecvBuf, Request, Requests, SendBuf, Status, Statuses,
    Type, Win,
};

/// The C names of the calls wrapped here: what a Fortran program is recorded making
/// (the imports scan tells the others apart as unrecorded).
pub(crate) const RECORDED: &[&str] = &[
    "MPI_Init",
    "MPI_Init_thread",
    "MPI_Finalize",
    "MPI_Abort",
    "MPI_Comm_dup",
    "MPI_Comm_split",
    "MPI_Comm_create",
    "MPI_Comm_dup_with_info",
    "MPI_Comm_split_type",
    "MPI_Comm_free",
    "MPI_Send",
    "MPI_Ssend",
    "MPI_Bsend",
    "MPI_Rsend",
    "MPI_Recv",
    "MPI_Sendrecv",
    "MPI_Sendrecv_replace",
    "MPI_Probe",
    "MPI_Iprobe",
    "MPI_Isend",
    "MPI_Issend",
    "MPI_Ibsend",
    "MPI_Irsend",
    "MPI_Irecv",
    "MPI_Send_init",
    "MPI_Recv_init",
    "MPI_Start",
    "MPI_Request_free",
    "MPI_Wait",
    "MPI_Test",
    "MPI_Barrier",
    "MPI_Ibarrier",
    "MPI_Bcast",
    "MPI_Ibcast",
    "MPI_Allgather",
    "MPI_Iallgather",
    "MPI_Alltoall",
    "MPI_Ialltoall",
    "MPI_Gather",
    "MPI_Igather",
    "MPI_Scatter",
    "MPI_Iscatter",
    "MPI_Allgatherv",
    "MPI_Iallgatherv",
    "MPI_Gatherv",
    "MPI_Igatherv",
    "MPI_Scatterv",
    "MPI_Iscatterv",
    "MPI_Alltoallv",
    "MPI_Ialltoallv",
    "MPI_Reduce",
    "MPI_Ireduce",
    "MPI_Allreduce",
    "MPI_Iallreduce",
    "MPI_Scan",
    "MPI_Iscan",
    "MPI_Exscan",
    "MPI_Iexscan",
    "MPI_Reduce_scatter",
    "MPI_Ireduce_scatter",
    "MPI_Reduce_scatter_block",
    "MPI_Ireduce_scatter_block",
    "MPI_Startall",
    "MPI_Waitall",
    "MPI_Testall",
    "MPI_Waitany",
    "MPI_Testany",
    "MPI_Waitsome",
    "MPI_Testsome",
    "MPI_Cart_create",
    "MPI_Cart_sub",
    "MPI_Win_create",
    "MPI_Win_allocate",
    "MPI_Win_allocate_shared",
    "MPI_Win_create_dynamic",
    "MPI_Win_free",
    "MPI_Win_fence",
    "MPI_Put",
    "MPI_Get",
    "MPI_Rput",
    "MPI_Rget",
    "MPI_Accumulate",
    "MPI_Raccumulate",
    "MPI_Get_accumulate",
    "MPI_Rget_accumulate",
    "MPI_Fetch_and_op",
    "MPI_Compare_and_swap",
    "MPI_Win_start",
    "MPI_Win_post",
    "MPI_Win_complete",
    "MPI_Win_wait",
    "MPI_Win_test",
    "MPI_Win_lock",
    "MPI_Win_unlock",
    "MPI_Win_lock_all",
    "MPI_Win_unlock_all",
    "MPI_Win_flush",
    "MPI_Win_flush_all",
    "MPI_Win_flush_local",
    "MPI_Win_flush_local_all",
    "MPI_Win_sync",
    "MPI_Neighbor_allgather",
    "MPI_Ineighbor_allgather",
    "MPI_Neighbor_alltoall",
    "MPI_Ineighbor_alltoall",
    "MPI_Neighbor_allgatherv",
    "MPI_Ineighbor_allgatherv",
    "MPI_Neighbor_alltoallv",
    "MPI_Ineighbor_alltoallv",
];

/// `name(arg: Kind, ...) = c_wrapper;`: a Fortran wrapper whose arguments convert one by
/// one ([`Arg`]), then call the C wrapper, then write back, then set `IERROR`.
macro_rules! fortran {
    ($($name:ident($($arg:ident: $kind:ident),*) = $c:path;)+) => {$(
        pub(crate) unsafe extern "C" fn $name($($arg: <$kind as Arg>::F,)* ierr: *mut Fint) {
            // SAFETY: the program's arguments, valid for this call.
            $( let mut $arg = unsafe { <$kind as Arg>::new($arg) }; )*
            // SAFETY: the C wrapper, with the arguments as C takes them.
            let rc = unsafe { $c($($arg.c()),*) };
            if rc == 0 {
                $( $arg.back(); )*
            }
            set_ierr(ierr, rc);
        }
    )+};
}

fortran! {
    abort(comm: Comm, errorcode: Int) = setup::abort;
    comm_dup(comm: Comm, newcomm: NewComm) = setup::comm_dup;
    comm_split(comm: Comm, color: Int, key: Int, newcomm: NewComm) = setup::comm_split;
    comm_create(comm: Comm, group: Group, newcomm: NewComm) = setup::comm_create;
    comm_dup_with_info(comm: Comm, info: Info, newcomm: NewComm) = setup::comm_dup_with_info;
    comm_split_type(comm: Comm, split_type: Int, key: Int, info: Info, newcomm: NewComm) = setup::comm_split_type;
    comm_free(comm: FreedComm) = setup::comm_free;
    send(buf: SendBuf, count: Int, datatype: Type, dest: Int, tag: Int, comm: Comm) = p2p::send;
    ssend(buf: SendBuf, count: Int, datatype: Type, dest: Int, tag: Int, comm: Comm) = p2p::ssend;
    bsend(buf: SendBuf, count: Int, datatype: Type, dest: Int, tag: Int, comm: Comm) = p2p::bsend;
    rsend(buf: SendBuf, count: Int, datatype: Type, dest: Int, tag: Int, comm: Comm) = p2p::rsend;
    recv(buf: RecvBuf, count: Int, datatype: Type, source: Int, tag: Int, comm: Comm, status: Status) = p2p::recv;
    sendrecv(sendbuf: SendBuf, sendcount: Int, sendtype: Type, dest: Int, sendtag: Int, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, source: Int, recvtag: Int, comm: Comm, status: Status) = p2p::sendrecv;
    sendrecv_replace(buf: RecvBuf, count: Int, datatype: Type, dest: Int, sendtag: Int, source: Int, recvtag: Int, comm: Comm, status: Status) = p2p::sendrecv_replace;
    probe(source: Int, tag: Int, comm: Comm, status: Status) = p2p::probe;
    iprobe(source: Int, tag: Int, comm: Comm, flag: Flag, status: Status) = p2p::iprobe;
    isend(buf: SendBuf, count: Int, datatype: Type, dest: Int, tag: Int, comm: Comm, request: NewRequest) = p2p::isend;
    issend(buf: SendBuf, count: Int, datatype: Type, dest: Int, tag: Int, comm: Comm, request: NewRequest) = p2p::issend;
    ibsend(buf: SendBuf, count: Int, datatype: Type, dest: Int, tag: Int, comm: Comm, request: NewRequest) = p2p::ibsend;
    irsend(buf: SendBuf, count: Int, datatype: Type, dest: Int, tag: Int, comm: Comm, request: NewRequest) = p2p::irsend;
    irecv(buf: RecvBuf, count: Int, datatype: Type, source: Int, tag: Int, comm: Comm, request: NewRequest) = p2p::irecv;
    send_init(buf: SendBuf, count: Int, datatype: Type, dest: Int, tag: Int, comm: Comm, request: NewRequest) = p2p::send_init;
    recv_init(buf: RecvBuf, count: Int, datatype: Type, source: Int, tag: Int, comm: Comm, request: NewRequest) = p2p::recv_init;
    start(request: Request) = p2p::start;
    request_free(request: Request) = p2p::request_free;
    wait(request: Request, status: Status) = completion::wait;
    test(request: Request, flag: Flag, status: Status) = completion::test;
    barrier(comm: Comm) = collective::barrier;
    ibarrier(comm: Comm, request: NewRequest) = collective::ibarrier;
    bcast(buf: RecvBuf, count: Int, datatype: Type, root: Int, comm: Comm) = collective::bcast;
    ibcast(buf: RecvBuf, count: Int, datatype: Type, root: Int, comm: Comm, request: NewRequest) = collective::ibcast;
    allgather(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, comm: Comm) = collective::allgather;
    iallgather(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, comm: Comm, request: NewRequest) = collective::iallgather;
    alltoall(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, comm: Comm) = collective::alltoall;
    ialltoall(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, comm: Comm, request: NewRequest) = collective::ialltoall;
    gather(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, root: Int, comm: Comm) = collective::gather;
    igather(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, root: Int, comm: Comm, request: NewRequest) = collective::igather;
    scatter(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, root: Int, comm: Comm) = collective::scatter;
    iscatter(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, root: Int, comm: Comm, request: NewRequest) = collective::iscatter;
    allgatherv(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcounts: Ints, displs: Ints, recvtype: Type, comm: Comm) = collective::allgatherv;
    iallgatherv(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcounts: Ints, displs: Ints, recvtype: Type, comm: Comm, request: NewRequest) = collective::iallgatherv;
    gatherv(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcounts: Ints, displs: Ints, recvtype: Type, root: Int, comm: Comm) = collective::gatherv;
    igatherv(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcounts: Ints, displs: Ints, recvtype: Type, root: Int, comm: Comm, request: NewRequest) = collective::igatherv;
    scatterv(sendbuf: SendBuf, sendcounts: Ints, displs: Ints, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, root: Int, comm: Comm) = collective::scatterv;
    iscatterv(sendbuf: SendBuf, sendcounts: Ints, displs: Ints, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, root: Int, comm: Comm, request: NewRequest) = collective::iscatterv;
    alltoallv(sendbuf: SendBuf, sendcounts: Ints, sdispls: Ints, sendtype: Type, recvbuf: RecvBuf, recvcounts: Ints, rdispls: Ints, recvtype: Type, comm: Comm) = collective::alltoallv;
    ialltoallv(sendbuf: SendBuf, sendcounts: Ints, sdispls: Ints, sendtype: Type, recvbuf: RecvBuf, recvcounts: Ints, rdispls: Ints, recvtype: Type, comm: Comm, request: NewRequest) = collective::ialltoallv;
    reduce(sendbuf: SendBuf, recvbuf: RecvBuf, count: Int, datatype: Type, op: Op, root: Int, comm: Comm) = reduction::reduce;
    ireduce(sendbuf: SendBuf, recvbuf: RecvBuf, count: Int, datatype: Type, op: Op, root: Int, comm: Comm, request: NewRequest) = reduction::ireduce;
    allreduce(sendbuf: SendBuf, recvbuf: RecvBuf, count: Int, datatype: Type, op: Op, comm: Comm) = reduction::allreduce;
    iallreduce(sendbuf: SendBuf, recvbuf: RecvBuf, count: Int, datatype: Type, op: Op, comm: Comm, request: NewRequest) = reduction::iallreduce;
    scan(sendbuf: SendBuf, recvbuf: RecvBuf, count: Int, datatype: Type, op: Op, comm: Comm) = reduction::scan;
    iscan(sendbuf: SendBuf, recvbuf: RecvBuf, count: Int, datatype: Type, op: Op, comm: Comm, request: NewRequest) = reduction::iscan;
    exscan(sendbuf: SendBuf, recvbuf: RecvBuf, count: Int, datatype: Type, op: Op, comm: Comm) = reduction::exscan;
    iexscan(sendbuf: SendBuf, recvbuf: RecvBuf, count: Int, datatype: Type, op: Op, comm: Comm, request: NewRequest) = reduction::iexscan;
    reduce_scatter(sendbuf: SendBuf, recvbuf: RecvBuf, recvcounts: Ints, datatype: Type, op: Op, comm: Comm) = reduction::reduce_scatter;
    ireduce_scatter(sendbuf: SendBuf, recvbuf: RecvBuf, recvcounts: Ints, datatype: Type, op: Op, comm: Comm, request: NewRequest) = reduction::ireduce_scatter;
    reduce_scatter_block(sendbuf: SendBuf, recvbuf: RecvBuf, recvcount: Int, datatype: Type, op: Op, comm: Comm) = reduction::reduce_scatter_block;
    ireduce_scatter_block(sendbuf: SendBuf, recvbuf: RecvBuf, recvcount: Int, datatype: Type, op: Op, comm: Comm, request: NewRequest) = reduction::ireduce_scatter_block;
    cart_create(comm: Comm, ndims: Int, dims: Ints, periods: Ints, reorder: Int, newcomm: NewComm) = setup::cart_create;
    cart_sub(comm: Comm, remain_dims: Ints, newcomm: NewComm) = setup::cart_sub;
    win_create(base: RecvBuf, size: Aint, disp_unit: Int, info: Info, comm: Comm, win: NewWin) = rma::win_create;
    win_allocate(size: Aint, disp_unit: Int, info: Info, comm: Comm, baseptr: Ptr, win: NewWin) = rma::win_allocate;
    win_allocate_shared(size: Aint, disp_unit: Int, info: Info, comm: Comm, baseptr: Ptr, win: NewWin) = rma::win_allocate_shared;
    win_create_dynamic(info: Info, comm: Comm, win: NewWin) = rma::win_create_dynamic;
    win_free(win: FreedWin) = rma::win_free;
    win_fence(assert: Int, win: Win) = rma::win_fence;
    put(origin: SendBuf, origin_count: Int, origin_type: Type, target_rank: Int, target_disp: Aint, target_count: Int, target_type: Type, win: Win) = rma::put;
    get(origin: RecvBuf, origin_count: Int, origin_type: Type, target_rank: Int, target_disp: Aint, target_count: Int, target_type: Type, win: Win) = rma::get;
    rput(origin: SendBuf, origin_count: Int, origin_type: Type, target_rank: Int, target_disp: Aint, target_count: Int, target_type: Type, win: Win, request: NewRequest) = rma::rput;
    rget(origin: RecvBuf, origin_count: Int, origin_type: Type, target_rank: Int, target_disp: Aint, target_count: Int, target_type: Type, win: Win, request: NewRequest) = rma::rget;
    accumulate(origin: SendBuf, origin_count: Int, origin_type: Type, target_rank: Int, target_disp: Aint, target_count: Int, target_type: Type, op: Op, win: Win) = rma::accumulate;
    raccumulate(origin: SendBuf, origin_count: Int, origin_type: Type, target_rank: Int, target_disp: Aint, target_count: Int, target_type: Type, op: Op, win: Win, request: NewRequest) = rma::raccumulate;
    get_accumulate(origin: SendBuf, origin_count: Int, origin_type: Type, result: RecvBuf, result_count: Int, result_type: Type, target_rank: Int, target_disp: Aint, target_count: Int, target_type: Type, op: Op, win: Win) = rma::get_accumulate;
    rget_accumulate(origin: SendBuf, origin_count: Int, origin_type: Type, result: RecvBuf, result_count: Int, result_type: Type, target_rank: Int, target_disp: Aint, target_count: Int, target_type: Type, op: Op, win: Win, request: NewRequest) = rma::rget_accumulate;
    fetch_and_op(origin: SendBuf, result: RecvBuf, datatype: Type, target_rank: Int, target_disp: Aint, op: Op, win: Win) = rma::fetch_and_op;
    compare_and_swap(origin: SendBuf, compare: SendBuf, result: RecvBuf, datatype: Type, target_rank: Int, target_disp: Aint, win: Win) = rma::compare_and_swap;
    win_start(group: Group, assert: Int, win: Win) = rma_sync::win_start;
    win_post(group: Group, assert: Int, win: Win) = rma_sync::win_post;
    win_complete(win: Win) = rma_sync::win_complete;
    win_wait(win: Win) = rma_sync::win_wait;
    win_test(win: Win, flag: Flag) = rma_sync::win_test;
    win_lock(lock_type: Int, rank: Int, assert: Int, win: Win) = rma_sync::win_lock;
    win_unlock(rank: Int, win: Win) = rma_sync::win_unlock;
    win_lock_all(assert: Int, win: Win) = rma_sync::win_lock_all;
    win_unlock_all(win: Win) = rma_sync::win_unlock_all;
    win_flush(rank: Int, win: Win) = rma_sync::win_flush;
    win_flush_all(win: Win) = rma_sync::win_flush_all;
    win_flush_local(rank: Int, win: Win) = rma_sync::win_flush_local;
    win_flush_local_all(win: Win) = rma_sync::win_flush_local_all;
    win_sync(win: Win) = rma_sync::win_sync;
    neighbor_allgather(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, comm: Comm) = neighbor::neighbor_allgather;
    ineighbor_allgather(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, comm: Comm, request: NewRequest) = neighbor::ineighbor_allgather;
    neighbor_alltoall(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, comm: Comm) = neighbor::neighbor_alltoall;
    ineighbor_alltoall(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcount: Int, recvtype: Type, comm: Comm, request: NewRequest) = neighbor::ineighbor_alltoall;
    neighbor_allgatherv(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcounts: Ints, displs: Ints, recvtype: Type, comm: Comm) = neighbor::neighbor_allgatherv;
    ineighbor_allgatherv(sendbuf: SendBuf, sendcount: Int, sendtype: Type, recvbuf: RecvBuf, recvcounts: Ints, displs: Ints, recvtype: Type, comm: Comm, request: NewRequest) = neighbor::ineighbor_allgatherv;
    neighbor_alltoallv(sendbuf: SendBuf, sendcounts: Ints, sdispls: Ints, sendtype: Type, recvbuf: RecvBuf, recvcounts: Ints, rdispls: Ints, recvtype: Type, comm: Comm) = neighbor::neighbor_alltoallv;
    ineighbor_alltoallv(sendbuf: SendBuf, sendcounts: Ints, sdispls: Ints, sendtype: Type, recvbuf: RecvBuf, recvcounts: Ints, rdispls: Ints, recvtype: Type, comm: Comm, request: NewRequest) = neighbor::ineighbor_alltoallv;
}

pub(crate) unsafe extern "C" fn init(ierr: *mut Fint) {
    // SAFETY: MPI takes null argc and argv.
    let rc = unsafe { setup::init(std::ptr::null_mut(), std::ptr::null_mut()) };
    set_ierr(ierr, rc);
}

pub(crate) unsafe extern "C" fn init_thread(
    required: *const Fint,
    provided: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the program's arguments.
    let (mut required, mut provided) = unsafe { (Int::new(required), IntOut::new(provided)) };
    // SAFETY: MPI takes null argc and argv.
    let rc = unsafe {
        setup::init_thread(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            required.c(),
            provided.c(),
        )
    };
    provided.back();
    set_ierr(ierr, rc);
}

pub(crate) unsafe extern "C" fn finalize(ierr: *mut Fint) {
    // SAFETY: no arguments.
    set_ierr(ierr, unsafe { setup::finalize() });
}

pub(crate) unsafe extern "C" fn startall(count: *const Fint, requests: *mut Fint, ierr: *mut Fint) {
    // SAFETY: the program's arguments: `count` requests.
    let n = unsafe { *count };
    let mut r = unsafe { Requests::new(requests, n) };
    // SAFETY: `n` C requests.
    let rc = unsafe { p2p::startall(n, r.c()) };
    if rc == 0 {
        r.back();
    }
    set_ierr(ierr, rc);
}

pub(crate) unsafe extern "C" fn waitall(
    count: *const Fint,
    requests: *mut Fint,
    statuses: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the program's arguments: `count` requests and statuses.
    let n = unsafe { *count };
    let (mut r, mut s) = unsafe { (Requests::new(requests, n), Statuses::new(statuses, n)) };
    // SAFETY: `n` C requests and statuses.
    let rc = unsafe { completion::waitall(n, r.c(), s.c()) };
    if rc == 0 {
        r.back();
        s.back(usize::try_from(n).unwrap_or(0));
    }
    set_ierr(ierr, rc);
}

pub(crate) unsafe extern "C" fn testall(
    count: *const Fint,
    requests: *mut Fint,
    flag: *mut Fint,
    statuses: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the program's arguments: `count` requests and statuses.
    let n = unsafe { *count };
    let (mut r, mut f, mut s) = unsafe {
        (
            Requests::new(requests, n),
            Flag::new(flag),
            Statuses::new(statuses, n),
        )
    };
    // SAFETY: `n` C requests and statuses.
    let rc = unsafe { completion::testall(n, r.c(), f.c(), s.c()) };
    if rc == 0 {
        r.back();
        s.back(usize::try_from(n).unwrap_or(0));
        f.back();
    }
    set_ierr(ierr, rc);
}

pub(crate) unsafe extern "C" fn waitany(
    count: *const Fint,
    requests: *mut Fint,
    index: *mut Fint,
    status: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the program's arguments: `count` requests.
    let n = unsafe { *count };
    let (mut r, mut s) = unsafe { (Requests::new(requests, n), Status::new(status)) };
    let mut i: c_int = 0;
    // SAFETY: `n` C requests.
    let rc = unsafe { completion::waitany(n, r.c(), &mut i, s.c()) };
    if rc == 0 {
        r.back();
        s.back();
        // SAFETY: the program's argument.
        unsafe { *index = fortran_index(i) };
    }
    set_ierr(ierr, rc);
}

pub(crate) unsafe extern "C" fn testany(
    count: *const Fint,
    requests: *mut Fint,
    index: *mut Fint,
    flag: *mut Fint,
    status: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the program's arguments: `count` requests.
    let n = unsafe { *count };
    let (mut r, mut f, mut s) = unsafe {
        (
            Requests::new(requests, n),
            Flag::new(flag),
            Status::new(status),
        )
    };
    let mut i: c_int = 0;
    // SAFETY: `n` C requests.
    let rc = unsafe { completion::testany(n, r.c(), &mut i, f.c(), s.c()) };
    if rc == 0 {
        r.back();
        s.back();
        f.back();
        // SAFETY: the program's argument.
        unsafe { *index = fortran_index(i) };
    }
    set_ierr(ierr, rc);
}

/// Waitsome and Testsome: `incount` requests, `outcount` of them done, their 1-based
/// indices and statuses written back.
macro_rules! some {
    ($($name:ident = $c:path;)+) => {$(
        pub(crate) unsafe extern "C" fn $name(
            incount: *const Fint,
            requests: *mut Fint,
            outcount: *mut Fint,
            indices: *mut Fint,
            statuses: *mut Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: the program's arguments: `incount` requests, indices and statuses.
            let n = unsafe { *incount };
            let (mut r, mut s) = unsafe { (Requests::new(requests, n), Statuses::new(statuses, n)) };
            let mut out: c_int = 0;
            const { assert!(std::mem::size_of::<Fint>() == std::mem::size_of::<c_int>()) };
            // SAFETY: `n` C requests, indices (the program's array) and statuses.
            let rc = unsafe { $c(n, r.c(), &mut out, indices.cast::<c_int>(), s.c()) };
            if rc == 0 {
                r.back();
                let done = usize::try_from(out).unwrap_or(0);
                s.back(done);
                for k in 0..done {
                    // SAFETY: MPI wrote `out` indices into the program's array.
                    unsafe { *indices.add(k) = fortran_index(*indices.add(k)) };
                }
                // SAFETY: the program's argument.
                unsafe { *outcount = out };
            }
            set_ierr(ierr, rc);
        }
    )+};
}

some! {
    waitsome = completion::waitsome;
    testsome = completion::testsome;
}

crate::entry::entry! {
    // Open MPI's mpi_f08 Test, Testall, Testany, Testsome and Iprobe call `pmpi_test_`
    // and the like (the mpif.h bindings' PMPI names), not `ompi_*_f`: their own names
    // are wrapped (same arguments; an absent IERROR comes as null).
    mpi_test_f08_ => test;
    mpi_testall_f08_ => testall;
    mpi_testany_f08_ => testany;
    mpi_testsome_f08_ => testsome;
    mpi_iprobe_f08_ => iprobe;
    mpi_init_ => init;
    ompi_init_f => init;
    mpi_init_thread_ => init_thread;
    ompi_init_thread_f => init_thread;
    mpi_finalize_ => finalize;
    ompi_finalize_f => finalize;
    mpi_abort_ => abort;
    ompi_abort_f => abort;
    mpi_comm_dup_ => comm_dup;
    ompi_comm_dup_f => comm_dup;
    mpi_comm_split_ => comm_split;
    ompi_comm_split_f => comm_split;
    mpi_comm_create_ => comm_create;
    ompi_comm_create_f => comm_create;
    mpi_comm_dup_with_info_ => comm_dup_with_info;
    ompi_comm_dup_with_info_f => comm_dup_with_info;
    mpi_comm_split_type_ => comm_split_type;
    ompi_comm_split_type_f => comm_split_type;
    mpi_comm_free_ => comm_free;
    ompi_comm_free_f => comm_free;
    mpi_send_ => send;
    ompi_send_f => send;
    mpi_ssend_ => ssend;
    ompi_ssend_f => ssend;
    mpi_bsend_ => bsend;
    ompi_bsend_f => bsend;
    mpi_rsend_ => rsend;
    ompi_rsend_f => rsend;
    mpi_recv_ => recv;
    ompi_recv_f => recv;
    mpi_sendrecv_ => sendrecv;
    ompi_sendrecv_f => sendrecv;
    mpi_sendrecv_replace_ => sendrecv_replace;
    ompi_sendrecv_replace_f => sendrecv_replace;
    mpi_probe_ => probe;
    ompi_probe_f => probe;
    mpi_iprobe_ => iprobe;
    ompi_iprobe_f => iprobe;
    mpi_isend_ => isend;
    ompi_isend_f => isend;
    mpi_issend_ => issend;
    ompi_issend_f => issend;
    mpi_ibsend_ => ibsend;
    ompi_ibsend_f => ibsend;
    mpi_irsend_ => irsend;
    ompi_irsend_f => irsend;
    mpi_irecv_ => irecv;
    ompi_irecv_f => irecv;
    mpi_send_init_ => send_init;
    ompi_send_init_f => send_init;
    mpi_recv_init_ => recv_init;
    ompi_recv_init_f => recv_init;
    mpi_start_ => start;
    ompi_start_f => start;
    mpi_request_free_ => request_free;
    ompi_request_free_f => request_free;
    mpi_wait_ => wait;
    ompi_wait_f => wait;
    mpi_test_ => test;
    ompi_test_f => test;
    mpi_barrier_ => barrier;
    ompi_barrier_f => barrier;
    mpi_ibarrier_ => ibarrier;
    ompi_ibarrier_f => ibarrier;
    mpi_bcast_ => bcast;
    ompi_bcast_f => bcast;
    mpi_ibcast_ => ibcast;
    ompi_ibcast_f => ibcast;
    mpi_allgather_ => allgather;
    ompi_allgather_f => allgather;
    mpi_iallgather_ => iallgather;
    ompi_iallgather_f => iallgather;
    mpi_alltoall_ => alltoall;
    ompi_alltoall_f => alltoall;
    mpi_ialltoall_ => ialltoall;
    ompi_ialltoall_f => ialltoall;
    mpi_gather_ => gather;
    ompi_gather_f => gather;
    mpi_igather_ => igather;
    ompi_igather_f => igather;
    mpi_scatter_ => scatter;
    ompi_scatter_f => scatter;
    mpi_iscatter_ => iscatter;
    ompi_iscatter_f => iscatter;
    mpi_allgatherv_ => allgatherv;
    ompi_allgatherv_f => allgatherv;
    mpi_iallgatherv_ => iallgatherv;
    ompi_iallgatherv_f => iallgatherv;
    mpi_gatherv_ => gatherv;
    ompi_gatherv_f => gatherv;
    mpi_igatherv_ => igatherv;
    ompi_igatherv_f => igatherv;
    mpi_scatterv_ => scatterv;
    ompi_scatterv_f => scatterv;
    mpi_iscatterv_ => iscatterv;
    ompi_iscatterv_f => iscatterv;
    mpi_alltoallv_ => alltoallv;
    ompi_alltoallv_f => alltoallv;
    mpi_ialltoallv_ => ialltoallv;
    ompi_ialltoallv_f => ialltoallv;
    mpi_reduce_ => reduce;
    ompi_reduce_f => reduce;
    mpi_ireduce_ => ireduce;
    ompi_ireduce_f => ireduce;
    mpi_allreduce_ => allreduce;
    ompi_allreduce_f => allreduce;
    mpi_iallreduce_ => iallreduce;
    ompi_iallreduce_f => iallreduce;
    mpi_scan_ => scan;
    ompi_scan_f => scan;
    mpi_iscan_ => iscan;
    ompi_iscan_f => iscan;
    mpi_exscan_ => exscan;
    ompi_exscan_f => exscan;
    mpi_iexscan_ => iexscan;
    ompi_iexscan_f => iexscan;
    mpi_reduce_scatter_ => reduce_scatter;
    ompi_reduce_scatter_f => reduce_scatter;
    mpi_ireduce_scatter_ => ireduce_scatter;
    ompi_ireduce_scatter_f => ireduce_scatter;
    mpi_reduce_scatter_block_ => reduce_scatter_block;
    ompi_reduce_scatter_block_f => reduce_scatter_block;
    mpi_ireduce_scatter_block_ => ireduce_scatter_block;
    ompi_ireduce_scatter_block_f => ireduce_scatter_block;
    mpi_startall_ => startall;
    ompi_startall_f => startall;
    mpi_waitall_ => waitall;
    ompi_waitall_f => waitall;
    mpi_testall_ => testall;
    ompi_testall_f => testall;
    mpi_waitany_ => waitany;
    ompi_waitany_f => waitany;
    mpi_testany_ => testany;
    ompi_testany_f => testany;
    mpi_waitsome_ => waitsome;
    ompi_waitsome_f => waitsome;
    mpi_testsome_ => testsome;
    ompi_testsome_f => testsome;
    mpi_cart_create_ => cart_create;
    ompi_cart_create_f => cart_create;
    mpi_cart_sub_ => cart_sub;
    ompi_cart_sub_f => cart_sub;
    mpi_win_create_ => win_create;
    ompi_win_create_f => win_create;
    mpi_win_allocate_ => win_allocate;
    ompi_win_allocate_f => win_allocate;
    mpi_win_allocate_shared_ => win_allocate_shared;
    ompi_win_allocate_shared_f => win_allocate_shared;
    mpi_win_create_dynamic_ => win_create_dynamic;
    ompi_win_create_dynamic_f => win_create_dynamic;
    mpi_win_free_ => win_free;
    ompi_win_free_f => win_free;
    mpi_win_fence_ => win_fence;
    ompi_win_fence_f => win_fence;
    mpi_put_ => put;
    ompi_put_f => put;
    mpi_get_ => get;
    ompi_get_f => get;
    mpi_rput_ => rput;
    ompi_rput_f => rput;
    mpi_rget_ => rget;
    ompi_rget_f => rget;
    mpi_accumulate_ => accumulate;
    ompi_accumulate_f => accumulate;
    mpi_raccumulate_ => raccumulate;
    ompi_raccumulate_f => raccumulate;
    mpi_get_accumulate_ => get_accumulate;
    ompi_get_accumulate_f => get_accumulate;
    mpi_rget_accumulate_ => rget_accumulate;
    ompi_rget_accumulate_f => rget_accumulate;
    mpi_fetch_and_op_ => fetch_and_op;
    ompi_fetch_and_op_f => fetch_and_op;
    mpi_compare_and_swap_ => compare_and_swap;
    ompi_compare_and_swap_f => compare_and_swap;
    mpi_win_start_ => win_start;
    ompi_win_start_f => win_start;
    mpi_win_post_ => win_post;
    ompi_win_post_f => win_post;
    mpi_win_complete_ => win_complete;
    ompi_win_complete_f => win_complete;
    mpi_win_wait_ => win_wait;
    ompi_win_wait_f => win_wait;
    mpi_win_test_ => win_test;
    ompi_win_test_f => win_test;
    mpi_win_lock_ => win_lock;
    ompi_win_lock_f => win_lock;
    mpi_win_unlock_ => win_unlock;
    ompi_win_unlock_f => win_unlock;
    mpi_win_lock_all_ => win_lock_all;
    ompi_win_lock_all_f => win_lock_all;
    mpi_win_unlock_all_ => win_unlock_all;
    ompi_win_unlock_all_f => win_unlock_all;
    mpi_win_flush_ => win_flush;
    ompi_win_flush_f => win_flush;
    mpi_win_flush_all_ => win_flush_all;
    ompi_win_flush_all_f => win_flush_all;
    mpi_win_flush_local_ => win_flush_local;
    ompi_win_flush_local_f => win_flush_local;
    mpi_win_flush_local_all_ => win_flush_local_all;
    ompi_win_flush_local_all_f => win_flush_local_all;
    mpi_win_sync_ => win_sync;
    ompi_win_sync_f => win_sync;
    mpi_neighbor_allgather_ => neighbor_allgather;
    ompi_neighbor_allgather_f => neighbor_allgather;
    mpi_ineighbor_allgather_ => ineighbor_allgather;
    ompi_ineighbor_allgather_f => ineighbor_allgather;
    mpi_neighbor_alltoall_ => neighbor_alltoall;
    ompi_neighbor_alltoall_f => neighbor_alltoall;
    mpi_ineighbor_alltoall_ => ineighbor_alltoall;
    ompi_ineighbor_alltoall_f => ineighbor_alltoall;
    mpi_neighbor_allgatherv_ => neighbor_allgatherv;
    ompi_neighbor_allgatherv_f => neighbor_allgatherv;
    mpi_ineighbor_allgatherv_ => ineighbor_allgatherv;
    ompi_ineighbor_allgatherv_f => ineighbor_allgatherv;
    mpi_neighbor_alltoallv_ => neighbor_alltoallv;
    ompi_neighbor_alltoallv_f => neighbor_alltoallv;
    mpi_ineighbor_alltoallv_ => ineighbor_alltoallv;
    ompi_ineighbor_alltoallv_f => ineighbor_alltoallv;
}
