//! What a replay keeps of each message and each request of the program while it runs:
//! the largest part of its memory (a state per message, a bit per request, each replay
//! its own), so each is as small as the rules of [`super`] allow.

/// A time not known yet.
pub(super) const UNKNOWN: u64 = u64::MAX;

/// When a request the replay has nothing to wait for is done (no message, by design
/// or for want of its partner; no collective instance it could join; not a
/// communication): at its post, and so before any call of its rank that completes it
/// enters. Any time up to that entry ends such a call alike (at its entry and cost), so
/// the post's own time is not kept.
pub(super) const AT_ITS_POST: u64 = 0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Protocol {
    /// Send completes at its post.
    Eager,
    /// Data leaves at the post; the send completes once the receive is posted.
    EagerSync,
    /// Transfer after both are posted; both complete when it is done.
    Rendezvous,
}

/// A message's state: one per message of the program, held by every replay running (32
/// B; its size is read from the program's message). Before its receive completes, one
/// time is all it needs of it: the receive's post, when posted first (an eager
/// message's data arrives at `max(arrival, post)`), or the data's arrival, when the
/// eager send was posted first; so `recv` holds that, then the receive's completion.
///
/// ```text
///  eager, send first   send ─ recv = arrival ─ recv post ─ recv = max(arrival, post) ✓
///  eager, recv first   recv post ─ recv = post ─ send ─ recv = max(send + transfer, post) ✓
///  rendezvous          both posted ─ handshake ─ transfer ─ recv = send_done = its end ✓
/// ```
pub(super) struct MsgState {
    /// Slots of its sender and receiver ([`NO_SLOT`]: not a rank of the program).
    sender: u32,
    receiver: u32,
    pub(super) protocol: Protocol,
    /// [`SEND_POSTED`], [`RECV_POSTED`], [`RECV_DONE`].
    flags: u8,
    /// When the send completed ([`UNKNOWN`]: not yet).
    pub(super) send_done: u64,
    /// The receive's completion once [`RECV_DONE`]; before, its post or the data's
    /// arrival, whichever happened first.
    pub(super) recv: u64,
}

/// The message's send is posted.
pub(super) const SEND_POSTED: u8 = 1;
/// Its receive is posted.
pub(super) const RECV_POSTED: u8 = 2;
/// Its receive is complete: [`MsgState::recv`] is when.
const RECV_DONE: u8 = 4;

const _: () = assert!(std::mem::size_of::<MsgState>() == 32);

/// No rank slot.
pub(super) const NO_SLOT: u32 = u32::MAX;

impl MsgState {
    /// A message of `protocol` between slots `sender` and `receiver`, neither side posted.
    pub(super) fn new(sender: u32, receiver: u32, protocol: Protocol) -> MsgState {
        MsgState {
            sender,
            receiver,
            protocol,
            flags: 0,
            send_done: UNKNOWN,
            recv: UNKNOWN,
        }
    }

    /// When its receive completed ([`UNKNOWN`]: not yet).
    pub(super) fn recv_done(&self) -> u64 {
        match self.flags & RECV_DONE {
            0 => UNKNOWN,
            _ => self.recv,
        }
    }

    /// Its receive completes at `at`.
    pub(super) fn set_recv_done(&mut self, at: u64) {
        self.recv = at;
        self.flags |= RECV_DONE;
    }

    /// `flag` is true of it from now on.
    pub(super) fn mark(&mut self, flag: u8) {
        self.flags |= flag;
    }

    pub(super) fn is(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    pub(super) fn sender(&self) -> Option<u32> {
        (self.sender != NO_SLOT).then_some(self.sender)
    }
    pub(super) fn receiver(&self) -> Option<u32> {
        (self.receiver != NO_SLOT).then_some(self.receiver)
    }
}

/// Which of the program's requests are posted, a bit each: what refuses an order that
/// completes a request before posting it, and what says a request with nothing to wait
/// for is done ([`AT_ITS_POST`]). The only record a replay keeps per request.
pub(super) struct Posted(Vec<u64>);

impl Posted {
    /// None of `requests` requests posted.
    pub(super) fn none(requests: usize) -> Posted {
        Posted(vec![0; requests.div_ceil(64)])
    }

    pub(super) fn set(&mut self, request: usize) {
        self.0[request / 64] |= 1 << (request % 64);
    }

    /// True when `request` is posted (false past the program's requests).
    pub(super) fn has(&self, request: usize) -> bool {
        (self.0.get(request / 64)).is_some_and(|w| w & (1 << (request % 64)) != 0)
    }
}
