//! Init, Finalize, Abort, and the communicator constructors.
//!
//! `MPI_Init` starts the recording once MPI works; `MPI_Finalize` aligns the clocks a
//! last time while MPI still works and closes the trace; `MPI_Abort` closes this rank's
//! trace before MPI kills the job, so the rank that gave up leaves a complete file.
//! The constructors agree on the new communicator's id (see [`crate::handles`]).

use std::ffi::{c_char, c_int};

use mpi_sys::*;
use overlap_instrument::clock::{monotonic_now_ns, ClockSource, Timebase};
use overlap_instrument::identity::realtime_now_ns;
use overlap_instrument::recorder::{CallData, Collective};
use overlap_instrument::schema::{CommId, Op};

use super::{traced_with, Timed};
use crate::thread::site;
use crate::tracer::{self, guarded, tracer, InitCall};

/// Forwards an init and starts the recording.
fn init_with(
    op: Op,
    forward: impl FnOnce() -> c_int,
    provided: impl FnOnce() -> Option<c_int>,
) -> c_int {
    if tracer().is_some() {
        return forward();
    }
    let site = site();
    let epoch_ns = monotonic_now_ns();
    let start_unix_ns = realtime_now_ns();
    let timebase = Timebase::new(ClockSource::Auto, epoch_ns);
    let start = timebase.stamp();
    let sigusr1_default = overlap_instrument::recorder::sigusr1_is_default();
    // Read before MPI starts: what it opens while starting is its own (crate::loaded).
    let mapped_before = crate::loaded::mapped_now();
    let rc = forward();
    if rc == 0 {
        guarded(|| {
            tracer::start(InitCall {
                op,
                site,
                epoch_ns,
                start_unix_ns,
                timebase,
                start,
                thread_level: provided(),
                sigusr1_default,
                mapped_before,
            })
        });
    }
    rc
}

pub(crate) unsafe extern "C" fn init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    // SAFETY: the program's arguments, passed on unchanged.
    init_with(Op::Init, || unsafe { PMPI_Init(argc, argv) }, || None)
}

pub(crate) unsafe extern "C" fn init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    init_with(
        Op::InitThread,
        // SAFETY: the program's arguments, passed on unchanged.
        || unsafe { PMPI_Init_thread(argc, argv, required, provided) },
        // SAFETY: MPI wrote the provided level.
        || Some(unsafe { *provided }),
    )
}

pub(crate) unsafe extern "C" fn finalize() -> c_int {
    let rc = traced_with(
        Op::Finalize,
        // The last clock alignment needs MPI: before forwarding.
        |t| guarded(|| tracer::before_finalize(t)),
        // SAFETY: no arguments.
        |_| unsafe { PMPI_Finalize() },
        |t, at, _, _| t.record(Op::Finalize, at, CallData::Plain, &[]),
    );
    tracer::stop();
    rc
}

pub(crate) unsafe extern "C" fn abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    if let Some(t) = tracer() {
        let now = t.stamp();
        let site = site();
        guarded(|| {
            let at = Timed::new(t, now, now, site);
            let c = t.comms.info(comm);
            let data = CallData::Collective(Collective {
                comm: CommId(c.id),
                send_bytes: 0,
                recv_bytes: 0,
                root: None,
            });
            t.record(Op::Abort, at, data, &[]);
        });
        // Everything reaches the file before MPI kills the job.
        tracer::stop();
    }
    // SAFETY: the program's arguments, passed on unchanged.
    unsafe { PMPI_Abort(comm, errorcode) }
}

/// The record of a communicator call over `comm`: its id, nothing moved.
fn over(t: &crate::tracer::Tracer, comm: MPI_Comm) -> CallData {
    CallData::Collective(Collective {
        comm: CommId(t.comms.info(comm).id),
        send_bytes: 0,
        recv_bytes: 0,
        root: None,
    })
}

/// Forwards a constructor of `*newcomm` over `parent`, agrees on the new id, and records
/// the call over `parent` (the agreement's own collective is part of its time).
fn created(
    op: Op,
    parent: MPI_Comm,
    newcomm: *mut MPI_Comm,
    forward: impl FnOnce() -> c_int,
) -> c_int {
    let Some(t) = tracer() else {
        return forward();
    };
    let site = site();
    let start = t.stamp();
    let rc = forward();
    if rc == 0 {
        // SAFETY: MPI wrote the new handle (maybe MPI_COMM_NULL).
        let new = unsafe { *newcomm };
        guarded(|| t.comms.created(parent, new));
    }
    let end = t.stamp();
    if rc == 0 {
        guarded(|| t.record(op, Timed::new(t, start, end, site), over(t, parent), &[]));
    }
    rc
}

pub(crate) unsafe extern "C" fn comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    // SAFETY (all forwards below): the program's arguments, passed on unchanged.
    created(Op::CommDup, comm, newcomm, || unsafe {
        PMPI_Comm_dup(comm, newcomm)
    })
}

pub(crate) unsafe extern "C" fn comm_dup_with_info(
    comm: MPI_Comm,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    created(Op::CommDupWithInfo, comm, newcomm, || unsafe {
        PMPI_Comm_dup_with_info(comm, info, newcomm)
    })
}

pub(crate) unsafe extern "C" fn comm_split(
    comm: MPI_Comm,
    color: c_int,
    key: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    created(Op::CommSplit, comm, newcomm, || unsafe {
        PMPI_Comm_split(comm, color, key, newcomm)
    })
}

pub(crate) unsafe extern "C" fn comm_split_type(
    comm: MPI_Comm,
    split_type: c_int,
    key: c_int,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    created(Op::CommSplitType, comm, newcomm, || unsafe {
        PMPI_Comm_split_type(comm, split_type, key, info, newcomm)
    })
}

pub(crate) unsafe extern "C" fn comm_create(
    comm: MPI_Comm,
    group: MPI_Group,
    newcomm: *mut MPI_Comm,
) -> c_int {
    created(Op::CommCreate, comm, newcomm, || unsafe {
        PMPI_Comm_create(comm, group, newcomm)
    })
}

pub(crate) unsafe extern "C" fn cart_create(
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    reorder: c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    created(Op::CartCreate, comm, newcomm, || unsafe {
        PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm)
    })
}

pub(crate) unsafe extern "C" fn cart_sub(
    comm: MPI_Comm,
    remain_dims: *const c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    created(Op::CartSub, comm, newcomm, || unsafe {
        PMPI_Cart_sub(comm, remain_dims, newcomm)
    })
}

pub(crate) unsafe extern "C" fn comm_free(comm: *mut MPI_Comm) -> c_int {
    let Some(t) = tracer() else {
        // SAFETY: the program's argument, passed on unchanged.
        return unsafe { PMPI_Comm_free(comm) };
    };
    let site = site();
    // SAFETY: read before MPI nulls it.
    let handle = unsafe { *comm };
    let mut data = None;
    guarded(|| {
        data = Some(over(t, handle));
        t.comms.freed(handle);
    });
    let start = t.stamp();
    // SAFETY: the program's argument, passed on unchanged.
    let rc = unsafe { PMPI_Comm_free(comm) };
    let end = t.stamp();
    if let (0, Some(data)) = (rc, data) {
        guarded(|| {
            let at = Timed::new(t, start, end, site);
            t.record(Op::CommFree, at, data, &[]);
        });
    }
    rc
}

/// `MPI_Session_init` (MPI-4 Sessions): forwarded untraced. The recording is set up in
/// `MPI_Init` / `MPI_Init_thread`: it numbers ranks, agrees on the trace directory and
/// aligns clocks over `MPI_COMM_WORLD`, which a program that starts MPI only through a
/// session does not have. Says so once per process (rank 0 of the launch only, when
/// the launcher names the rank), so the user knows why such a program leaves no trace.
#[cfg(mpi4)]
pub(crate) unsafe extern "C" fn session_init(
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    session: *mut MPI_Session,
) -> c_int {
    static TOLD: std::sync::Once = std::sync::Once::new();
    TOLD.call_once(|| {
        if launch_rank().is_none_or(|r| r == 0) {
            overlap_instrument::stderr_line!(
                "overlap-preload: this program starts MPI through MPI_Session_init (MPI \
                 Sessions); overlap records only what follows MPI_Init or MPI_Init_thread, \
                 because it numbers ranks and aligns clocks over MPI_COMM_WORLD: calls made \
                 through sessions before or without MPI_Init are not recorded"
            );
        }
    });
    // SAFETY: the program's arguments, passed on unchanged.
    unsafe { PMPI_Session_init(info, errhandler, session) }
}

/// This process's rank as the launcher told it (MPICH/hydra, PMIx, Open MPI, Slurm).
#[cfg(mpi4)]
fn launch_rank() -> Option<u32> {
    [
        "PMI_RANK",
        "PMIX_RANK",
        "OMPI_COMM_WORLD_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}
