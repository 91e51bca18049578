//! OTF2's RMA records into the one-sided call they are inside: the window, the target
//! (a rank of the window's communicator made a world rank), the bytes and, for the
//! request-based operations, the request (their matching id); an epoch's group from
//! its `RmaGroupSync`, a lock's target and kind from its lock records, and a request
//! completed by a Wait from its `RmaOpCompleteNonBlocking`. Another writer's archive
//! (Score-P) says its one-sided communication this way only.
//!
//! In overlap's own archives the call's arguments are its attributes (`kept`): the
//! records give only its completions.

use std::collections::HashMap;

use overlap_format::schema::{CallArgs, Completion, Op, OpClass, RequestKind};
use overlap_otf2::{rma, Record};

use super::layout::Layout;

/// The blocking operations a location issued and no synchronisation has completed
/// yet: their targets (world ranks) by matching id, for the flush that completes them.
pub(super) type Issued = HashMap<u64, Option<i32>>;

/// True for the records of one-sided communication.
pub(super) fn is_rma(record: &Record) -> bool {
    record.kind().starts_with("RMA_")
}

/// The call open on the location, as an RMA record inside it sees it.
pub(super) struct InCall<'a> {
    pub op: Op,
    pub args: &'a mut CallArgs,
    /// Its arguments were kept as overlap's attributes.
    pub kept: bool,
}

/// Takes one RMA record inside the call `call` of rank `me`.
pub(super) fn take(layout: &Layout, me: u32, issued: &mut Issued, call: InCall, record: &Record) {
    let InCall { op, args, kept } = call;
    let with_request = op.request_kind() == Some(RequestKind::OneSided);
    // What the records say whatever the attributes: the operations pending, and the
    // requests completed.
    match *record {
        Record::RmaPut {
            win,
            remote,
            matching_id,
            ..
        }
        | Record::RmaGet {
            win,
            remote,
            matching_id,
            ..
        }
        | Record::RmaAtomic {
            win,
            remote,
            matching_id,
            ..
        } if !with_request => {
            issued.insert(matching_id, layout.win_world(win, remote, me).1);
        }
        Record::RmaOpCompleteNonBlocking { matching_id, .. }
            if op.class() == OpClass::Completion =>
        {
            args.completed.push(Completion {
                request: Some(matching_id),
                source: None,
                tag: None,
                bytes: None,
            });
        }
        Record::RmaOpCompleteBlocking { matching_id, .. }
        | Record::RmaOpCompleteRemote { matching_id, .. } => {
            let target = issued.remove(&matching_id).flatten();
            if !kept && matches!(op, Op::WinFlush | Op::WinFlushLocal) {
                args.peer = args.peer.or(target);
            }
        }
        _ => {}
    }
    if kept {
        return;
    }
    // The call's arguments.
    let known = |v: u64| (v != u64::MAX).then_some(v);
    match *record {
        Record::RmaPut {
            win,
            remote,
            bytes,
            matching_id,
        }
        | Record::RmaGet {
            win,
            remote,
            bytes,
            matching_id,
        }
        | Record::RmaAtomic {
            win,
            remote,
            sent: bytes,
            matching_id,
            ..
        } => {
            args.win = Some(win);
            args.peer = layout.win_world(win, remote, me).1;
            args.bytes = known(bytes);
            if with_request {
                args.request = Some(matching_id);
            }
        }
        Record::RmaCollectiveEnd { win, .. } => {
            args.win = Some(win);
            args.comm = layout.win_world(win, u32::MAX, me).0;
        }
        Record::RmaGroupSync { win, group, .. } => {
            args.win = Some(win);
            match op {
                Op::WinStart | Op::WinPost => args.group = layout.rank_group(group),
                // The exposure epoch had ended.
                Op::WinTest => args.flag = Some(1),
                _ => {}
            }
        }
        Record::RmaRequestLock {
            win,
            remote,
            lock_type,
            ..
        }
        | Record::RmaAcquireLock {
            win,
            remote,
            lock_type,
            ..
        } => {
            args.win = Some(win);
            if op == Op::WinLock {
                args.peer = layout.win_world(win, remote, me).1;
                args.exclusive = Some(u8::from(lock_type == rma::LOCK_EXCLUSIVE));
            }
        }
        Record::RmaReleaseLock { win, remote, .. } => {
            args.win = Some(win);
            if op == Op::WinUnlock {
                args.peer = layout.win_world(win, remote, me).1;
            }
        }
        Record::RmaWinCreate { win }
        | Record::RmaWinDestroy { win }
        | Record::RmaSync { win, .. }
        | Record::RmaOpCompleteBlocking { win, .. }
        | Record::RmaOpCompleteRemote { win, .. } => args.win = Some(win),
        _ => {}
    }
}
