//! One thread's one-sided calls as OTF2's RMA records, inside the `Enter` and `Leave`
//! of their MPI region, as Score-P writes them: so that Vampir, Scalasca and
//! `overlap analyze` of the archive without overlap's attributes see the windows, the
//! targets and the bytes.
//!
//! ```text
//!  Win_create      RmaCollectiveBegin | RmaWinCreate RmaCollectiveEnd(CREATE_HANDLE)
//!  Put (to 1)      RmaPut(win, 1, bytes, id)
//!  Win_fence       RmaCollectiveBegin | RmaOpCompleteBlocking(id)... RmaCollectiveEnd(BARRIER)
//!  Win_start(g)    | RmaGroupSync(win, g)            Win_complete  | RmaOpCompleteBlocking... RmaGroupSync(win, g)
//!  Win_lock(1)     | RmaRequestLock(win, 1, lock)    Win_unlock(1) | RmaOpCompleteBlocking... RmaReleaseLock
//!  Win_flush(1)    | RmaOpCompleteRemote(id)...      Win_sync      | RmaSync(win, me, MEMORY)
//!  Rput ... Wait   RmaPut(win, 1, bytes, request) ... RmaOpCompleteNonBlocking(request)
//! ```
//!
//! (`|` separates the records at the call's entry from those at its exit.) A blocking
//! operation's matching id is the thread's own count with the top bit set, apart from
//! the request ids of the request-based ones; a synchronisation completes the operations
//! it completes in MPI (the fence and Win_complete every one on the window, Win_unlock
//! and Win_flush those to its target).

use std::collections::HashMap;

use overlap_format::schema::{CallEvent, Op};
use overlap_otf2::{collective_op, rma, Attr, Record};

use super::defs::Builder;

/// Records, each with its attributes.
pub(super) type Records = Vec<(Record, Vec<Attr>)>;

/// The bit that sets a blocking operation's matching id apart from request ids.
const BLOCKING: u64 = 1 << 63;

/// What completes the operations a synchronisation covers.
#[derive(Clone, Copy)]
enum Completes {
    /// `RmaOpCompleteBlocking` (local completion: fence, Win_complete, unlock, local
    /// flushes).
    Locally,
    /// `RmaOpCompleteRemote` (Win_flush, Win_flush_all).
    Remotely,
}

/// The RMA state of one thread being written.
#[derive(Default)]
pub(super) struct RmaThread {
    /// The rank (Win_sync synchronises with itself).
    rank: u32,
    /// Blocking operations issued and not completed, by window: matching id and target.
    pending: HashMap<u32, Vec<(u64, Option<i32>)>>,
    /// The group of the open access (Win_start) epoch, by window.
    access: HashMap<u32, u32>,
    /// The group of the open exposure (Win_post) epoch, by window.
    exposure: HashMap<u32, u32>,
    /// The lock ids held, by window and target (`None`: Win_lock_all).
    locks: HashMap<(u32, Option<i32>), u64>,
    /// Matching ids and lock ids given so far.
    issued: u64,
}

impl RmaThread {
    /// The state of a thread of `rank`.
    pub fn new(rank: u32) -> RmaThread {
        RmaThread {
            rank,
            ..RmaThread::default()
        }
    }

    fn next_id(&mut self) -> u64 {
        self.issued += 1;
        BLOCKING | self.issued
    }

    /// The RMA records of a call on a window: at its entry and at its exit (`None`
    /// for a call on no window).
    pub fn records(&mut self, b: &mut Builder, c: &CallEvent) -> Option<(Records, Records)> {
        let win = c.args.win?;
        let a = &c.args;
        let window = b.window(win);
        let remote = |b: &Builder, peer: Option<i32>| b.comm_rank(Some(window.comm), peer);
        let (mut start, mut end): (Records, Records) = (Vec::new(), Vec::new());
        let put = |r: Record, list: &mut Records| list.push((r, vec![]));
        let both = rma::SYNC_LEVEL_PROCESS | rma::SYNC_LEVEL_MEMORY;
        let collective_end = |op: u8| Record::RmaCollectiveEnd {
            op,
            sync_level: both,
            win,
            root: u32::MAX,
            sent: 0,
            received: 0,
        };
        let bytes = a.bytes.unwrap_or(u64::MAX);
        // A request-based operation is matched by its request, a blocking one by an id
        // of the thread's, pending until a synchronisation completes it.
        let matching = |me: &mut RmaThread| match a.request {
            Some(r) if c.op.request_kind().is_some() => r,
            _ => {
                let id = me.next_id();
                me.pending.entry(win).or_default().push((id, a.peer));
                id
            }
        };
        match c.op {
            Op::WinCreate | Op::WinAllocate | Op::WinAllocateShared | Op::WinCreateDynamic => {
                put(Record::RmaCollectiveBegin, &mut start);
                put(Record::RmaWinCreate { win }, &mut end);
                let op = if allocates(c.op) {
                    collective_op::CREATE_HANDLE_AND_ALLOCATE
                } else {
                    collective_op::CREATE_HANDLE
                };
                put(collective_end(op), &mut end);
            }
            Op::WinFree => {
                put(Record::RmaCollectiveBegin, &mut start);
                put(Record::RmaWinDestroy { win }, &mut end);
                let op = if window.allocates {
                    collective_op::DESTROY_HANDLE_AND_DEALLOCATE
                } else {
                    collective_op::DESTROY_HANDLE
                };
                put(collective_end(op), &mut end);
            }
            Op::WinFence => {
                put(Record::RmaCollectiveBegin, &mut start);
                self.complete(win, None, Completes::Locally, &mut end);
                put(collective_end(collective_op::BARRIER), &mut end);
            }
            Op::Put | Op::Rput => {
                let matching_id = matching(self);
                let (remote, bytes) = (remote(b, a.peer), bytes);
                put(
                    Record::RmaPut {
                        win,
                        remote,
                        bytes,
                        matching_id,
                    },
                    &mut start,
                );
            }
            Op::Get | Op::Rget => {
                let matching_id = matching(self);
                let remote = remote(b, a.peer);
                put(
                    Record::RmaGet {
                        win,
                        remote,
                        bytes,
                        matching_id,
                    },
                    &mut start,
                );
            }
            Op::Accumulate
            | Op::Raccumulate
            | Op::GetAccumulate
            | Op::RgetAccumulate
            | Op::FetchAndOp
            | Op::CompareAndSwap => {
                let matching_id = matching(self);
                let (kind, received) = atomic(c.op, bytes);
                let remote = remote(b, a.peer);
                put(
                    Record::RmaAtomic {
                        win,
                        remote,
                        kind,
                        sent: bytes,
                        received,
                        matching_id,
                    },
                    &mut start,
                );
            }
            Op::WinStart | Op::WinPost => {
                let group = b.rma_group(&a.group);
                let open = if c.op == Op::WinStart {
                    &mut self.access
                } else {
                    &mut self.exposure
                };
                open.insert(win, group);
                let sync_level = rma::SYNC_LEVEL_PROCESS;
                put(
                    Record::RmaGroupSync {
                        sync_level,
                        win,
                        group,
                    },
                    &mut end,
                );
            }
            // The epoch's group closes (an empty one for an epoch never opened).
            Op::WinComplete => {
                self.complete(win, None, Completes::Locally, &mut end);
                let group = self.access.remove(&win).unwrap_or_else(|| b.rma_group(&[]));
                put(
                    Record::RmaGroupSync {
                        sync_level: both,
                        win,
                        group,
                    },
                    &mut end,
                );
            }
            Op::WinWait | Op::WinTest => {
                // A Win_test that found the exposure epoch not ended synchronised
                // nothing.
                if c.op == Op::WinWait || a.flag == Some(1) {
                    let group = self
                        .exposure
                        .remove(&win)
                        .unwrap_or_else(|| b.rma_group(&[]));
                    put(
                        Record::RmaGroupSync {
                            sync_level: both,
                            win,
                            group,
                        },
                        &mut end,
                    );
                }
            }
            Op::WinLock => {
                let lock_id = self.next_id();
                self.locks.insert((win, a.peer), lock_id);
                let lock_type = if a.exclusive == Some(1) {
                    rma::LOCK_EXCLUSIVE
                } else {
                    rma::LOCK_SHARED
                };
                let remote = remote(b, a.peer);
                put(
                    Record::RmaRequestLock {
                        win,
                        remote,
                        lock_id,
                        lock_type,
                    },
                    &mut end,
                );
            }
            Op::WinLockAll => {
                let lock_id = self.next_id();
                self.locks.insert((win, None), lock_id);
                for remote in 0..b.comm_size(window.comm) {
                    let lock_type = rma::LOCK_SHARED;
                    put(
                        Record::RmaRequestLock {
                            win,
                            remote,
                            lock_id,
                            lock_type,
                        },
                        &mut end,
                    );
                }
            }
            Op::WinUnlock => {
                self.complete(win, Some(a.peer), Completes::Locally, &mut end);
                let lock_id = match self.locks.remove(&(win, a.peer)) {
                    Some(id) => id,
                    None => self.next_id(),
                };
                let remote = remote(b, a.peer);
                put(
                    Record::RmaReleaseLock {
                        win,
                        remote,
                        lock_id,
                    },
                    &mut end,
                );
            }
            Op::WinUnlockAll => {
                self.complete(win, None, Completes::Locally, &mut end);
                let lock_id = match self.locks.remove(&(win, None)) {
                    Some(id) => id,
                    None => self.next_id(),
                };
                for remote in 0..b.comm_size(window.comm) {
                    put(
                        Record::RmaReleaseLock {
                            win,
                            remote,
                            lock_id,
                        },
                        &mut end,
                    );
                }
            }
            Op::WinFlush => self.complete(win, Some(a.peer), Completes::Remotely, &mut end),
            Op::WinFlushAll => self.complete(win, None, Completes::Remotely, &mut end),
            Op::WinFlushLocal => self.complete(win, Some(a.peer), Completes::Locally, &mut end),
            Op::WinFlushLocalAll => self.complete(win, None, Completes::Locally, &mut end),
            Op::WinSync => {
                let remote = remote(b, i32::try_from(self.rank).ok());
                let sync_type = rma::SYNC_TYPE_MEMORY;
                put(
                    Record::RmaSync {
                        win,
                        remote,
                        sync_type,
                    },
                    &mut end,
                );
            }
            _ => return None,
        }
        Some((start, end))
    }

    /// Completes the pending operations on `win` (to `target` only, when given).
    fn complete(
        &mut self,
        win: u32,
        target: Option<Option<i32>>,
        how: Completes,
        out: &mut Records,
    ) {
        let Some(pending) = self.pending.get_mut(&win) else {
            return;
        };
        pending.retain(|&(matching_id, to)| {
            if target.is_some_and(|t| t != to) {
                return true;
            }
            let r = match how {
                Completes::Locally => Record::RmaOpCompleteBlocking { win, matching_id },
                Completes::Remotely => Record::RmaOpCompleteRemote { win, matching_id },
            };
            out.push((r, vec![]));
            false
        });
    }
}

/// True for the window constructors that allocate the window's memory.
pub(super) fn allocates(op: Op) -> bool {
    matches!(op, Op::WinAllocate | Op::WinAllocateShared)
}

/// The atomic operation's kind, and the bytes it brings back (`bytes`, the origin
/// buffer's, for the operations whose result is one element of the origin's type;
/// unknown, `u64::MAX`, for a Get_accumulate, whose result buffer overlap does not
/// record).
fn atomic(op: Op, bytes: u64) -> (u8, u64) {
    match op {
        Op::Accumulate | Op::Raccumulate => (rma::ATOMIC_ACCUMULATE, 0),
        Op::CompareAndSwap => (rma::ATOMIC_COMPARE_AND_SWAP, bytes),
        Op::FetchAndOp => (rma::ATOMIC_FETCH_AND_ACCUMULATE, bytes),
        _ => (rma::ATOMIC_FETCH_AND_ACCUMULATE, u64::MAX),
    }
}
