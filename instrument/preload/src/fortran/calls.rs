//! The Fortran wrappers of the preload built for Open MPI ([`super`] says why; the names
//! they are exported under are in [`super::exports`]). Calls with only scalar
//! arguments are declared in one line each ([`fortran!`]); those with arrays of
//! requests or statuses are written out.

use std::ffi::c_int;

use crate::calls::{
    collective, completion, matched, neighbor, p2p, reduction, rma, rma_sync, setup,
};
use crate::fint::{set_ierr, Fint};

use super::convert::{
    fortran_index, Aint, Arg, Comm, Flag, FreedComm, FreedWin, Group, Info, Int, IntOut, Ints,
    Message, NewComm, NewMessage, NewRequest, NewWin, Op, Ptr, RecvBuf, Request, Requests, SendBuf,
    Status, Statuses, Type, Win,
};

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
    bsend_init(buf: SendBuf, count: Int, datatype: Type, dest: Int, tag: Int, comm: Comm, request: NewRequest) = p2p::bsend_init;
    ssend_init(buf: SendBuf, count: Int, datatype: Type, dest: Int, tag: Int, comm: Comm, request: NewRequest) = p2p::ssend_init;
    rsend_init(buf: SendBuf, count: Int, datatype: Type, dest: Int, tag: Int, comm: Comm, request: NewRequest) = p2p::rsend_init;
    mprobe(source: Int, tag: Int, comm: Comm, message: NewMessage, status: Status) = matched::mprobe;
    improbe(source: Int, tag: Int, comm: Comm, flag: Flag, message: NewMessage, status: Status) = matched::improbe;
    mrecv(buf: RecvBuf, count: Int, datatype: Type, message: Message, status: Status) = matched::mrecv;
    imrecv(buf: RecvBuf, count: Int, datatype: Type, message: Message, request: NewRequest) = matched::imrecv;
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
