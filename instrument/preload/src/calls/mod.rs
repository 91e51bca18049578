//! The wrappers: one function per MPI function, with its exact C signature. Each
//! forwards to its PMPI twin between two clock stamps, then records the call (inside
//! [`guarded`], so a bug of ours never unwinds into the program). Completion calls read
//! the request handles before forwarding, because MPI nulls them as it completes them.
//!
//! - [`p2p`]: sends, receives, probes, posts and persistent requests.
//! - [`completion`]: the Wait and Test families.
//! - [`collective`]: collectives in their blocking, non-blocking and persistent forms;
//!   [`reduction`] the reductions and scans, [`neighbor`] the neighbourhood ones.
//! - [`rma`]: windows and one-sided communication; [`rma_sync`] its synchronisation.
//! - [`setup`]: Init, Finalize, Abort, and the communicator constructors whose ids the
//!   preload keeps in step across ranks.

pub(crate) mod collective;
pub(crate) mod completion;
pub(crate) mod neighbor;
pub(crate) mod p2p;
pub(crate) mod reduction;
pub(crate) mod rma;
pub(crate) mod rma_sync;
pub(crate) mod setup;

use std::ffi::{c_int, c_void};

use mpi_sys::{MPI_Datatype, MPI_Status};
use overlap_instrument::clock::Stamp;
use overlap_instrument::recorder::Transfer;
use overlap_instrument::schema::{CommId, Completion};

use crate::entry::site;
use crate::handles::CommInfo;
use crate::pmpi;
use crate::tracer::{guarded, tracer, Tracer};

/// One side of a point-to-point transfer as recorded: the peer as a world rank, the
/// message bytes and the buffer's span.
#[inline]
pub(crate) fn transfer(
    comm: &CommInfo,
    peer: c_int,
    tag: c_int,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
) -> Transfer {
    let (bytes, span) = pmpi::sizes(count, datatype);
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
/// status.
#[inline]
pub(crate) fn received(
    request: Option<u64>,
    status: &MPI_Status,
    comm: &CommInfo,
    byte: MPI_Datatype,
) -> Completion {
    let (source, tag, bytes) = pmpi::status_fields(status, byte);
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

/// When a call ran and where the program called it from.
#[derive(Clone, Copy)]
pub(crate) struct Timed {
    pub(crate) start: Stamp,
    pub(crate) end: Stamp,
    pub(crate) site: u64,
}

/// The shape of every wrapper. Not tracing: `forward(None)`, nothing else. Tracing:
/// `before` reads what MPI will overwrite (request handles) and sets up what the call
/// needs redirected (statuses the program ignores); the call is forwarded with that state
/// between two stamps; `record` runs after it with MPI's return code, guarded.
#[inline(always)]
pub(crate) fn traced_with<S>(
    before: impl FnOnce(&Tracer) -> S,
    forward: impl FnOnce(Option<&mut S>) -> c_int,
    record: impl FnOnce(&Tracer, Timed, c_int, &S),
) -> c_int {
    let Some(t) = tracer() else {
        return forward(None);
    };
    let site = site();
    let mut state = before(t);
    let start = t.stamp();
    let rc = forward(Some(&mut state));
    let end = t.stamp();
    guarded(|| record(t, Timed { start, end, site }, rc, &state));
    rc
}

/// [`traced_with`] for calls with nothing to read or redirect.
#[inline(always)]
pub(crate) fn traced(
    forward: impl FnOnce() -> c_int,
    record: impl FnOnce(&Tracer, Timed, c_int),
) -> c_int {
    traced_with(|_| (), |_| forward(), |t, at, rc, _| record(t, at, rc))
}

/// The status a call writes: the program's, or the preload's own when the program
/// passed `MPI_STATUS_IGNORE` (the source and size of a received message are recorded
/// all the same).
pub(crate) struct StatusSlot {
    program: *mut MPI_Status,
    local: MPI_Status,
}

impl StatusSlot {
    pub(crate) fn new(program: *mut MPI_Status, t: &Tracer) -> StatusSlot {
        let ignored = program.is_null() || program == t.k.status_ignore;
        StatusSlot {
            program: if ignored {
                std::ptr::null_mut()
            } else {
                program
            },
            local: pmpi::blank_status(),
        }
    }

    /// The status argument to forward: `program` when not tracing, else the slot.
    pub(crate) fn arg(slot: Option<&mut StatusSlot>, program: *mut MPI_Status) -> *mut MPI_Status {
        match slot {
            None => program,
            Some(s) if s.program.is_null() => &mut s.local,
            Some(s) => s.program,
        }
    }

    /// The status, once MPI wrote it.
    pub(crate) fn get(&self) -> &MPI_Status {
        if self.program.is_null() {
            &self.local
        } else {
            // SAFETY: the program's status, which MPI just wrote and the program still
            // owns for the duration of its call.
            unsafe { &*self.program }
        }
    }
}
