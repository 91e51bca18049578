//! The wrappers of MPICH's `mpi_f08` entry points that call `PMPI_*` directly (see
//! [`super`]), and the names they are exported under: one line per call
//! ([`f08!`]), but those with a 1-based index, written out.

use std::ffi::{c_int, c_void};
use std::marker::PhantomData;
use std::sync::OnceLock;

use mpi_sys::*;

use super::index_base::{index_base, Indexed};
use crate::calls::{collective, completion, matched, p2p, rma, rma_sync, setup};
use crate::fint::{index_from, set_ierr, symbol, Fint};

/// MPICH's `mpi_f08` sentinels: the addresses of its Fortran objects.
struct Sentinels {
    status_ignore: usize,
    statuses_ignore: usize,
}

fn sentinels() -> &'static Sentinels {
    static S: OnceLock<Sentinels> = OnceLock::new();
    S.get_or_init(|| Sentinels {
        status_ignore: symbol(c"MPIR_F08_MPI_STATUS_IGNORE_OBJ"),
        statuses_ignore: symbol(c"MPIR_F08_MPI_STATUSES_IGNORE_OBJ"),
    })
}

/// One argument of an `mpi_f08` call, as its C wrapper takes it. Every argument comes
/// by reference.
trait Arg {
    type F;
    type C;
    /// # Safety
    /// `f` is the program's argument, valid for this call.
    unsafe fn c(f: Self::F) -> Self::C;
}

/// An `INTEGER` in.
struct Int;
impl Arg for Int {
    type F = *const Fint;
    type C = c_int;
    unsafe fn c(f: *const Fint) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { *f }
    }
}

/// An `INTEGER(KIND=MPI_ADDRESS_KIND)` in.
struct Aint;
impl Arg for Aint {
    type F = *const MPI_Aint;
    type C = MPI_Aint;
    unsafe fn c(f: *const MPI_Aint) -> MPI_Aint {
        // SAFETY: the caller's promise.
        unsafe { *f }
    }
}

/// An array of `INTEGER`s (or gfortran `LOGICAL`s, 4 bytes, 1 for true) in.
struct Ints;
impl Arg for Ints {
    type F = *const Fint;
    type C = *const c_int;
    unsafe fn c(f: *const Fint) -> *const c_int {
        f
    }
}

/// A `TYPE(C_PTR)` MPI writes (`baseptr`).
struct Ptr;
impl Arg for Ptr {
    type F = *mut c_void;
    type C = *mut c_void;
    unsafe fn c(f: *mut c_void) -> *mut c_void {
        f
    }
}

/// A handle or an `INTEGER` MPI reads and writes in place: MPICH's `mpi_f08` handle is
/// one `INTEGER` holding the C handle, so the C wrapper takes the program's own.
struct Out<T>(PhantomData<T>);
impl<T> Arg for Out<T> {
    type F = *mut Fint;
    type C = *mut T;
    unsafe fn c(f: *mut Fint) -> *mut T {
        const { assert!(std::mem::size_of::<T>() == std::mem::size_of::<Fint>()) };
        f.cast()
    }
}

/// Handles passed in: the `INTEGER`'s value is MPICH's C handle.
macro_rules! handle_in {
    ($($name:ident: $c:ident;)+) => {$(
        struct $name;
        impl Arg for $name {
            type F = *const Fint;
            type C = $c;
            unsafe fn c(f: *const Fint) -> $c {
                // SAFETY: the caller's promise.
                $c(unsafe { *f })
            }
        }
    )+};
}

handle_in! {
    Comm: MPI_Comm;
    Info: MPI_Info;
    Group: MPI_Group;
    Win: MPI_Win;
}

/// A `TYPE(MPI_Status)` MPI writes (C's layout in MPICH), or `MPI_STATUS_IGNORE`.
struct Status;
impl Arg for Status {
    type F = *mut c_void;
    type C = *mut MPI_Status;
    unsafe fn c(f: *mut c_void) -> *mut MPI_Status {
        if f as usize == sentinels().status_ignore {
            // SAFETY: a plain read of the MPI shim's constant.
            unsafe { RSMPI_STATUS_IGNORE }
        } else {
            f.cast()
        }
    }
}

/// An array of `TYPE(MPI_Status)`, or `MPI_STATUSES_IGNORE`.
struct Statuses;
impl Arg for Statuses {
    type F = *mut c_void;
    type C = *mut MPI_Status;
    unsafe fn c(f: *mut c_void) -> *mut MPI_Status {
        if f as usize == sentinels().statuses_ignore {
            // SAFETY: a plain read of the MPI shim's constant.
            unsafe { RSMPI_STATUSES_IGNORE }
        } else {
            f.cast()
        }
    }
}

/// `name(arg: Kind, ...) = c_wrapper;`: an `mpi_f08` wrapper whose arguments convert one
/// by one ([`Arg`]) for the C wrapper, then `IERROR` set.
macro_rules! f08 {
    ($($name:ident($($arg:ident: $kind:ty),*) = $c:path;)+) => {$(
        unsafe extern "C" fn $name($($arg: <$kind as Arg>::F,)* ierr: *mut Fint) {
            // SAFETY: the program's arguments, valid for this call, as C takes them.
            let rc = unsafe { $c($(<$kind as Arg>::c($arg)),*) };
            set_ierr(ierr, rc);
        }
    )+};
}

f08! {
    abort(comm: Comm, errorcode: Int) = setup::abort;
    comm_dup(comm: Comm, newcomm: Out<MPI_Comm>) = setup::comm_dup;
    comm_dup_with_info(comm: Comm, info: Info, newcomm: Out<MPI_Comm>) = setup::comm_dup_with_info;
    comm_split(comm: Comm, color: Int, key: Int, newcomm: Out<MPI_Comm>) = setup::comm_split;
    comm_split_type(comm: Comm, split_type: Int, key: Int, info: Info, newcomm: Out<MPI_Comm>) = setup::comm_split_type;
    comm_create(comm: Comm, group: Group, newcomm: Out<MPI_Comm>) = setup::comm_create;
    cart_create(comm: Comm, ndims: Int, dims: Ints, periods: Ints, reorder: Int, newcomm: Out<MPI_Comm>) = setup::cart_create;
    cart_sub(comm: Comm, remain_dims: Ints, newcomm: Out<MPI_Comm>) = setup::cart_sub;
    comm_free(comm: Out<MPI_Comm>) = setup::comm_free;
    probe(source: Int, tag: Int, comm: Comm, status: Status) = p2p::probe;
    iprobe(source: Int, tag: Int, comm: Comm, flag: Out<c_int>, status: Status) = p2p::iprobe;
    mprobe(source: Int, tag: Int, comm: Comm, message: Out<MPI_Message>, status: Status) = matched::mprobe;
    improbe(source: Int, tag: Int, comm: Comm, flag: Out<c_int>, message: Out<MPI_Message>, status: Status) = matched::improbe;
    start(request: Out<MPI_Request>) = p2p::start;
    startall(count: Int, requests: Out<MPI_Request>) = p2p::startall;
    request_free(request: Out<MPI_Request>) = p2p::request_free;
    wait(request: Out<MPI_Request>, status: Status) = completion::wait;
    test(request: Out<MPI_Request>, flag: Out<c_int>, status: Status) = completion::test;
    waitall(count: Int, requests: Out<MPI_Request>, statuses: Statuses) = completion::waitall;
    testall(count: Int, requests: Out<MPI_Request>, flag: Out<c_int>, statuses: Statuses) = completion::testall;
    barrier(comm: Comm) = collective::barrier;
    ibarrier(comm: Comm, request: Out<MPI_Request>) = collective::ibarrier;
    win_allocate(size: Aint, disp_unit: Int, info: Info, comm: Comm, baseptr: Ptr, win: Out<MPI_Win>) = rma::win_allocate;
    win_allocate_shared(size: Aint, disp_unit: Int, info: Info, comm: Comm, baseptr: Ptr, win: Out<MPI_Win>) = rma::win_allocate_shared;
    win_create_dynamic(info: Info, comm: Comm, win: Out<MPI_Win>) = rma::win_create_dynamic;
    win_free(win: Out<MPI_Win>) = rma::win_free;
    win_fence(assert: Int, win: Win) = rma::win_fence;
    win_start(group: Group, assert: Int, win: Win) = rma_sync::win_start;
    win_post(group: Group, assert: Int, win: Win) = rma_sync::win_post;
    win_complete(win: Win) = rma_sync::win_complete;
    win_wait(win: Win) = rma_sync::win_wait;
    win_test(win: Win, flag: Out<c_int>) = rma_sync::win_test;
    win_lock(lock_type: Int, rank: Int, assert: Int, win: Win) = rma_sync::win_lock;
    win_unlock(rank: Int, win: Win) = rma_sync::win_unlock;
    win_lock_all(assert: Int, win: Win) = rma_sync::win_lock_all;
    win_unlock_all(win: Win) = rma_sync::win_unlock_all;
    win_flush(rank: Int, win: Win) = rma_sync::win_flush;
    win_flush_all(win: Win) = rma_sync::win_flush_all;
    win_flush_local(rank: Int, win: Win) = rma_sync::win_flush_local;
    win_flush_local_all(win: Win) = rma_sync::win_flush_local_all;
    win_sync(win: Win) = rma_sync::win_sync;
}

#[cfg(mpi4)]
f08! {
    barrier_init(comm: Comm, info: Info, request: Out<MPI_Request>) = collective::barrier_init;
}

unsafe extern "C" fn init(ierr: *mut Fint) {
    // SAFETY: MPI takes null argc and argv, as MPICH's binding passes them.
    set_ierr(ierr, unsafe {
        setup::init(std::ptr::null_mut(), std::ptr::null_mut())
    });
}

unsafe extern "C" fn init_thread(required: *const Fint, provided: *mut Fint, ierr: *mut Fint) {
    // SAFETY: the program's arguments; null argc and argv as above.
    let rc = unsafe {
        setup::init_thread(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            *required,
            provided,
        )
    };
    set_ierr(ierr, rc);
}

/// MPI Sessions: not traced, said once (see [`setup::session_init`]).
#[cfg(mpi4)]
unsafe extern "C" fn session_init(
    info: *const Fint,
    errhandler: *const Fint,
    session: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: the program's arguments: MPICH's handles are the INTEGERs' values.
    let rc = unsafe {
        setup::session_init(MPI_Info(*info), MPI_Errhandler(*errhandler), session.cast())
    };
    set_ierr(ierr, rc);
}

unsafe extern "C" fn finalize(ierr: *mut Fint) {
    // SAFETY: no arguments.
    set_ierr(ierr, unsafe { setup::finalize() });
}

unsafe extern "C" fn waitany(
    count: *const Fint,
    requests: *mut Fint,
    index: *mut Fint,
    status: *mut c_void,
    ierr: *mut Fint,
) {
    // SAFETY: the program's arguments: `count` requests, then MPI wrote the index.
    unsafe {
        let rc = completion::waitany(*count, requests.cast(), index, Status::c(status));
        *index = index_from(*index, index_base(Indexed::Waitany));
        set_ierr(ierr, rc);
    }
}

unsafe extern "C" fn testany(
    count: *const Fint,
    requests: *mut Fint,
    index: *mut Fint,
    flag: *mut Fint,
    status: *mut c_void,
    ierr: *mut Fint,
) {
    // SAFETY: the program's arguments: `count` requests, then MPI wrote the index.
    unsafe {
        let rc = completion::testany(*count, requests.cast(), index, flag, Status::c(status));
        *index = index_from(*index, index_base(Indexed::Testany));
        set_ierr(ierr, rc);
    }
}

/// Waitsome and Testsome: the indices numbered as MPICH's binding numbers them.
macro_rules! some {
    ($($name:ident = $c:path, $indexed:expr;)+) => {$(
        unsafe extern "C" fn $name(
            incount: *const Fint,
            requests: *mut Fint,
            outcount: *mut Fint,
            indices: *mut Fint,
            statuses: *mut c_void,
            ierr: *mut Fint,
        ) {
            // SAFETY: the program's arguments: `incount` requests, indices and statuses;
            // MPI wrote `outcount` indices (or MPI_UNDEFINED, none).
            unsafe {
                let rc = $c(*incount, requests.cast(), outcount, indices, Statuses::c(statuses));
                let done = usize::try_from(*outcount).unwrap_or(0);
                let base = index_base($indexed);
                for k in 0..done {
                    *indices.add(k) = index_from(*indices.add(k), base);
                }
                set_ierr(ierr, rc);
            }
        }
    )+};
}

some! {
    waitsome = completion::waitsome, Indexed::Waitsome;
    testsome = completion::testsome, Indexed::Testsome;
}

crate::entry::entry! {
    mpi_init_f08_ => init;
    mpi_init_thread_f08_ => init_thread;
    mpi_finalize_f08_ => finalize;
    mpi_abort_f08_ => abort;
    mpi_comm_dup_f08_ => comm_dup;
    mpi_comm_dup_with_info_f08_ => comm_dup_with_info;
    mpi_comm_split_f08_ => comm_split;
    mpi_comm_split_type_f08_ => comm_split_type;
    mpi_comm_create_f08_ => comm_create;
    mpi_cart_create_f08_ => cart_create;
    mpi_cart_sub_f08_ => cart_sub;
    mpi_comm_free_f08_ => comm_free;
    mpi_probe_f08_ => probe;
    mpi_iprobe_f08_ => iprobe;
    mpi_mprobe_f08_ => mprobe;
    mpi_improbe_f08_ => improbe;
    mpi_start_f08_ => start;
    mpi_startall_f08_ => startall;
    mpi_request_free_f08_ => request_free;
    mpi_wait_f08_ => wait;
    mpi_test_f08_ => test;
    mpi_waitall_f08_ => waitall;
    mpi_testall_f08_ => testall;
    mpi_barrier_f08_ => barrier;
    mpi_ibarrier_f08_ => ibarrier;
    #[cfg(mpi4)]
    mpi_barrier_init_f08_ => barrier_init;
    mpi_win_allocate_f08_ => win_allocate;
    mpi_win_allocate_shared_f08_ => win_allocate_shared;
    mpi_win_create_dynamic_f08_ => win_create_dynamic;
    mpi_win_free_f08_ => win_free;
    mpi_win_fence_f08_ => win_fence;
    mpi_win_start_f08_ => win_start;
    mpi_win_post_f08_ => win_post;
    mpi_win_complete_f08_ => win_complete;
    mpi_win_wait_f08_ => win_wait;
    mpi_win_test_f08_ => win_test;
    mpi_win_lock_f08_ => win_lock;
    mpi_win_unlock_f08_ => win_unlock;
    mpi_win_lock_all_f08_ => win_lock_all;
    mpi_win_unlock_all_f08_ => win_unlock_all;
    mpi_win_flush_f08_ => win_flush;
    mpi_win_flush_all_f08_ => win_flush_all;
    mpi_win_flush_local_f08_ => win_flush_local;
    mpi_win_flush_local_all_f08_ => win_flush_local_all;
    mpi_win_sync_f08_ => win_sync;
    #[cfg(mpi4)]
    mpi_session_init_f08_ => session_init;
    mpi_waitany_f08_ => waitany;
    mpi_testany_f08_ => testany;
    mpi_waitsome_f08_ => waitsome;
    mpi_testsome_f08_ => testsome;
    mpi_pcontrol_f08_ => crate::pcontrol::fortran::pcontrol_f08;
}
