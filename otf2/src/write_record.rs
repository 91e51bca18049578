//! One [`Record`] handed to the OTF2 event writer function of its kind.

use crate::events::Record;
use crate::sys;

/// Calls the library's writer function `$f` with the writer, the attribute list, the
/// time and the record's fields; gives the function's name with its result.
macro_rules! emit {
    ($w:expr, $l:expr, $t:expr, $f:ident($($arg:expr),*)) => {
        (stringify!($f), sys::$f($w, $l, $t $(, $arg)*))
    };
}

/// Writes `record` at `time` with the attribute list `l` (null: none); the function
/// called and its result, or `None` for a record of a kind that cannot be written.
///
/// # Safety
/// `w` is an open event writer; `l` is null or an attribute list it may take.
pub(crate) unsafe fn write_record(
    w: *mut sys::OTF2_EvtWriter,
    l: *mut sys::OTF2_AttributeList,
    time: u64,
    record: &Record,
) -> Option<(&'static str, sys::OTF2_ErrorCode)> {
    // SAFETY (whole block): as the caller promises; every field is passed by value.
    Some(unsafe {
        match *record {
            Record::Enter { region } => emit!(w, l, time, OTF2_EvtWriter_Enter(region)),
            Record::Leave { region } => emit!(w, l, time, OTF2_EvtWriter_Leave(region)),
            Record::MpiSend {
                receiver,
                comm,
                tag,
                bytes,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_MpiSend(receiver, comm, tag, bytes)
            ),
            Record::MpiIsend {
                receiver,
                comm,
                tag,
                bytes,
                request,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_MpiIsend(receiver, comm, tag, bytes, request)
            ),
            Record::MpiIsendComplete { request } => {
                emit!(w, l, time, OTF2_EvtWriter_MpiIsendComplete(request))
            }
            Record::MpiIrecvRequest { request } => {
                emit!(w, l, time, OTF2_EvtWriter_MpiIrecvRequest(request))
            }
            Record::MpiRecv {
                sender,
                comm,
                tag,
                bytes,
            } => emit!(w, l, time, OTF2_EvtWriter_MpiRecv(sender, comm, tag, bytes)),
            Record::MpiIrecv {
                sender,
                comm,
                tag,
                bytes,
                request,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_MpiIrecv(sender, comm, tag, bytes, request)
            ),
            Record::MpiRequestTest { request } => {
                emit!(w, l, time, OTF2_EvtWriter_MpiRequestTest(request))
            }
            Record::MpiRequestCancelled { request } => {
                emit!(w, l, time, OTF2_EvtWriter_MpiRequestCancelled(request))
            }
            Record::MpiCollectiveBegin => emit!(w, l, time, OTF2_EvtWriter_MpiCollectiveBegin()),
            Record::MpiCollectiveEnd {
                op,
                comm,
                root,
                sent,
                received,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_MpiCollectiveEnd(op, comm, root, sent, received)
            ),
            Record::NonBlockingCollectiveRequest { request } => {
                emit!(
                    w,
                    l,
                    time,
                    OTF2_EvtWriter_NonBlockingCollectiveRequest(request)
                )
            }
            Record::NonBlockingCollectiveComplete {
                op,
                comm,
                root,
                sent,
                received,
                request,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_NonBlockingCollectiveComplete(
                    op, comm, root, sent, received, request
                )
            ),
            Record::RmaWinCreate { win } => emit!(w, l, time, OTF2_EvtWriter_RmaWinCreate(win)),
            Record::RmaWinDestroy { win } => {
                emit!(w, l, time, OTF2_EvtWriter_RmaWinDestroy(win))
            }
            Record::RmaCollectiveBegin => emit!(w, l, time, OTF2_EvtWriter_RmaCollectiveBegin()),
            Record::RmaCollectiveEnd {
                op,
                sync_level,
                win,
                root,
                sent,
                received,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_RmaCollectiveEnd(op, sync_level, win, root, sent, received)
            ),
            Record::RmaGroupSync {
                sync_level,
                win,
                group,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_RmaGroupSync(sync_level, win, group)
            ),
            Record::RmaRequestLock {
                win,
                remote,
                lock_id,
                lock_type,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_RmaRequestLock(win, remote, lock_id, lock_type)
            ),
            Record::RmaAcquireLock {
                win,
                remote,
                lock_id,
                lock_type,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_RmaAcquireLock(win, remote, lock_id, lock_type)
            ),
            Record::RmaReleaseLock {
                win,
                remote,
                lock_id,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_RmaReleaseLock(win, remote, lock_id)
            ),
            Record::RmaSync {
                win,
                remote,
                sync_type,
            } => emit!(w, l, time, OTF2_EvtWriter_RmaSync(win, remote, sync_type)),
            Record::RmaPut {
                win,
                remote,
                bytes,
                matching_id,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_RmaPut(win, remote, bytes, matching_id)
            ),
            Record::RmaGet {
                win,
                remote,
                bytes,
                matching_id,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_RmaGet(win, remote, bytes, matching_id)
            ),
            Record::RmaAtomic {
                win,
                remote,
                kind,
                sent,
                received,
                matching_id,
            } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_RmaAtomic(win, remote, kind, sent, received, matching_id)
            ),
            Record::RmaOpCompleteBlocking { win, matching_id } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_RmaOpCompleteBlocking(win, matching_id)
            ),
            Record::RmaOpCompleteNonBlocking { win, matching_id } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_RmaOpCompleteNonBlocking(win, matching_id)
            ),
            Record::RmaOpTest { win, matching_id } => {
                emit!(w, l, time, OTF2_EvtWriter_RmaOpTest(win, matching_id))
            }
            Record::RmaOpCompleteRemote { win, matching_id } => emit!(
                w,
                l,
                time,
                OTF2_EvtWriter_RmaOpCompleteRemote(win, matching_id)
            ),
            Record::Other { .. } => return None,
        }
    })
}
