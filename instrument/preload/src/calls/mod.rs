//! The wrappers: one function per MPI function, with its exact C signature. Each
//! forwards to its PMPI twin between two clock stamps, then records the call (inside
//! [`guarded`], so a bug of ours never unwinds into the program). Completion calls read
//! the request handles before forwarding, because MPI nulls them as it completes them.
//!
//! - [`p2p`]: sends, receives, probes, posts and persistent requests.
//! - [`completion`]: the Wait and Test families.
//! - [`collective`]: blocking and non-blocking collectives.
//! - [`setup`]: Init, Finalize, Abort, and the communicator constructors whose ids the
//!   preload keeps in step across ranks.

pub(crate) mod collective;
pub(crate) mod completion;
pub(crate) mod p2p;
pub(crate) mod setup;

use std::ffi::{c_int, c_void};

use mpi_sys::{MPI_Datatype, MPI_Status};
use overlap_instrument::recorder::Transfer;
use overlap_instrument::schema::{CommId, Completion};

use crate::handles::CommInfo;
use crate::pmpi;

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

/// A completion function for calls that complete nothing.
#[inline]
pub(crate) fn nothing(_: usize) -> Completion {
    finished(0)
}

/// Where MPI should write a status: the program's, or `local` when it passed
/// `MPI_STATUS_IGNORE` (the preload still needs the source and size).
#[inline]
pub(crate) fn status_slot(
    program: *mut MPI_Status,
    ignore: *mut MPI_Status,
    local: &mut MPI_Status,
) -> *mut MPI_Status {
    if program.is_null() || program == ignore {
        local
    } else {
        program
    }
}
