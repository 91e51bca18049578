//! The wrappers: one function per MPI function, with its exact C signature. Each
//! forwards to its PMPI twin between two clock stamps, then records the call (inside
//! [`guarded`], so a bug of ours never unwinds into the program). Completion calls read
//! the request handles before forwarding, because MPI nulls them as it completes them.
//!
//! - [`p2p`]: sends, receives, probes, posts and persistent requests; [`isendrecv`]
//!   MPI-4's non-blocking Sendrecv; [`matched`] the matched probes and receives.
//! - [`completion`]: the Wait and Test families.
//! - [`collective`]: collectives in their blocking, non-blocking and persistent forms;
//!   [`reduction`] the reductions and scans, [`neighbor`] the neighbourhood ones.
//! - [`rma`]: windows and one-sided communication; [`rma_sync`] its synchronisation.
//! - [`setup`]: Init, Finalize, Abort, and the communicator constructors whose ids the
//!   preload keeps in step across ranks.

pub(crate) mod collective;
pub(crate) mod completion;
#[cfg(mpi4)]
pub(crate) mod isendrecv;
pub(crate) mod matched;
pub(crate) mod neighbor;
pub(crate) mod p2p;
pub(crate) mod reduction;
pub(crate) mod rma;
pub(crate) mod rma_sync;
pub(crate) mod setup;

use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;

use mpi_sys::{MPI_Datatype, MPI_Status};
use overlap_instrument::clock::Stamp;
use overlap_instrument::recorder::{ThreadRecorder, Transfer, WaitsOn};
use overlap_instrument::schema::{CommId, Completion, Op};

use crate::handles::CommInfo;
use crate::pmpi;
use crate::thread::site;
use crate::tracer::{caught, guarded, tracer, Tracer};

/// One side of a point-to-point transfer as recorded: the peer as a world rank, the
/// message bytes and the buffer's span.
#[inline]
pub(crate) fn transfer(
    comm: &CommInfo,
    peer: c_int,
    tag: c_int,
    buf: *const c_void,
    count: impl Into<i64>,
    datatype: MPI_Datatype,
) -> Transfer {
    let (bytes, span) = crate::types::sizes(count, datatype);
    Transfer {
        peer: comm.world(peer),
        tag,
        bytes,
        comm: CommId(comm.id),
        buf: pmpi::addr(buf),
        buf_len: span,
    }
}

/// The completion of a receive (`request` is `None` for a blocking one), from its
/// status (without one, source, tag and size are not known).
#[inline]
pub(crate) fn received(
    request: Option<u64>,
    status: Option<&MPI_Status>,
    comm: &CommInfo,
) -> Completion {
    let Some(status) = status else {
        return Completion {
            request,
            source: None,
            tag: None,
            bytes: None,
        };
    };
    let (source, tag, bytes) = pmpi::status_fields(status);
    Completion {
        request,
        source: Some(comm.world(source)),
        tag: Some(tag),
        bytes: Some(bytes),
    }
}

/// The completion of a send or a collective request.
#[inline]
pub(crate) fn finished(request: u64) -> Completion {
    Completion {
        request: Some(request),
        source: None,
        tag: None,
        bytes: None,
    }
}

/// When a call ran, where the program called it from, and the calling thread's handle
/// on the recorder (looked up once per call).
#[derive(Clone, Copy)]
pub(crate) struct Timed {
    pub(crate) start: Stamp,
    pub(crate) end: Stamp,
    pub(crate) site: u64,
    pub(crate) here: &'static ThreadRecorder,
}

impl Timed {
    /// A call of the calling thread that ran from `start` to `end`, made at `site`.
    pub(crate) fn new(t: &Tracer, start: Stamp, end: Stamp, site: u64) -> Timed {
        Timed {
            start,
            end,
            site,
            here: t.here(),
        }
    }
}

/// The shape of every wrapper. Not tracing: `forward(None)`, nothing else. Tracing:
/// `before` reads what MPI will overwrite (request handles), sets up what the call needs
/// redirected (statuses the program ignores) and says what the call waits on; the call is
/// forwarded with that state between two stamps, published as this thread's in-flight
/// call meanwhile (read only by an in-flight dump); `record` runs after it with MPI's
/// return code. Both are guarded: a panic in `before` stops the tracing and the call is
/// forwarded as the program made it.
#[inline(always)]
pub(crate) fn traced_in<S>(
    op: Op,
    before: impl FnOnce(&Tracer) -> (S, WaitsOn),
    forward: impl FnOnce(Option<&mut S>) -> c_int,
    record: impl FnOnce(&Tracer, Timed, c_int, &S),
) -> c_int {
    let Some(t) = tracer() else {
        return forward(None);
    };
    let site = crate::callpath::of(site());
    let Some((mut state, waits, here)) = caught(|| {
        if crate::watch::asked() {
            crate::watch::before_call();
        }
        let (state, waits) = before(t);
        (state, waits, t.here())
    }) else {
        return forward(None);
    };
    let start = t.stamp();
    here.enter(op, start, site, &waits);
    let rc = forward(Some(&mut state));
    let end = t.stamp();
    here.leave();
    let at = Timed {
        start,
        end,
        site,
        here,
    };
    guarded(|| record(t, at, rc, &state));
    rc
}

/// [`traced_in`] for calls whose wait is not described beyond their op.
#[inline(always)]
pub(crate) fn traced_with<S>(
    op: Op,
    before: impl FnOnce(&Tracer) -> S,
    forward: impl FnOnce(Option<&mut S>) -> c_int,
    record: impl FnOnce(&Tracer, Timed, c_int, &S),
) -> c_int {
    traced_in(op, |t| (before(t), WaitsOn::default()), forward, record)
}

/// [`traced_with`] for calls with nothing to read or redirect.
#[inline(always)]
pub(crate) fn traced(
    op: Op,
    forward: impl FnOnce() -> c_int,
    record: impl FnOnce(&Tracer, Timed, c_int),
) -> c_int {
    traced_with(op, |_| (), |_| forward(), |t, at, rc, _| record(t, at, rc))
}

/// What a point-to-point call on `comm` with `peer` and `tag` waits on.
#[inline(always)]
pub(crate) fn waits_p2p(comm: &CommInfo, peer: c_int, tag: c_int) -> WaitsOn {
    WaitsOn {
        comm: Some(comm.id),
        peer: Some((comm.world(peer), tag)),
        ..WaitsOn::default()
    }
}

/// The status a call writes: the program's, or the preload's own when the program
/// passed `MPI_STATUS_IGNORE` and the call may complete a receive (whose source and size
/// are recorded all the same). A call that cannot complete a receive forwards the
/// program's argument as it is and never reads the status.
pub(crate) struct StatusSlot {
    /// The program's status; null when it ignores it.
    program: *mut MPI_Status,
    /// Written (zeros, then by MPI) only when `redirect`.
    local: MaybeUninit<MPI_Status>,
    redirect: bool,
}

impl StatusSlot {
    /// The slot for a call that completes a receive when it returns.
    pub(crate) fn new(program: *mut MPI_Status, t: &Tracer) -> StatusSlot {
        StatusSlot::maybe(program, t, true)
    }

    /// The slot for a call that may complete a receive only when `receive`.
    #[inline]
    pub(crate) fn maybe(program: *mut MPI_Status, t: &Tracer, receive: bool) -> StatusSlot {
        let ignored = program.is_null() || program == t.k.status_ignore;
        let mut local = MaybeUninit::uninit();
        let redirect = ignored && receive;
        if redirect {
            local.write(pmpi::blank_status());
        }
        StatusSlot {
            program: if ignored {
                std::ptr::null_mut()
            } else {
                program
            },
            local,
            redirect,
        }
    }

    /// The status argument to forward: `program` when not tracing, else the slot.
    pub(crate) fn arg(slot: Option<&mut StatusSlot>, program: *mut MPI_Status) -> *mut MPI_Status {
        match slot {
            Some(s) if s.redirect => s.local.as_mut_ptr(),
            _ => program,
        }
    }

    /// The status, once MPI wrote it; `None` when the program ignored it and the call
    /// was not expected to complete a receive.
    pub(crate) fn get(&self) -> Option<&MPI_Status> {
        if self.redirect {
            // SAFETY: initialised in `maybe`, then written by MPI.
            Some(unsafe { self.local.assume_init_ref() })
        } else {
            // SAFETY: null, or the program's status, which MPI just wrote and the
            // program still owns for the duration of its call.
            unsafe { self.program.as_ref() }
        }
    }
}
