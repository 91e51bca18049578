//! The compact records of the analysis model: a call's arguments ([`CallInfo`], 72
//! bytes), a completion's status ([`Done`], 16), a request's life ([`RequestLife`],
//! 28); a message ([`super::Message`], 48) is kept the same way. A trace holds one per
//! call, completion, request and message, tens of millions of each, so fields a record
//! may lack are kept with a sentinel (never a value MPI or the recorder uses) and read
//! through methods that give them back as `Option`s, and event indices are `u32` (a
//! rank holds fewer than 4 G events: each costs at least 32 bytes).

use std::num::NonZeroU64;

use overlap_format::schema::RequestKind;

use super::Buffer;

/// A non-blocking request from its post to its completion, in 28 bytes: event indices
/// are kept as `u32` (a rank holds fewer than 4 G events: each costs at least 32 bytes
/// of memory), the call that completed it and the `MPI_Request_free` that let go of it
/// in one field (a request one call completed no free let go of), the request id in two
/// halves (so that nothing in the record is aligned past 4 bytes), all read through
/// methods. A run holds one per request, tens of millions of them, from its first pass
/// to its replays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestLife {
    /// Rank.
    pub rank: u32,
    post: u32,
    args: u32,
    /// The completing call, or the free that let go of it when `freed` ([`NO_INDEX`]:
    /// neither).
    end: u32,
    /// The request id on that rank: its low half, then its high half.
    request: [u32; 2],
    /// What the request does.
    pub kind: RequestKind,
    /// True when `end` is the free that let go of it.
    freed: bool,
}

const _: () = assert!(std::mem::size_of::<RequestLife>() == 28);

/// The most records of one kind a rank can hold: analysis keeps a rank's indices in 32
/// bits, with `u32::MAX` meaning none ([`NO_INDEX`]).
pub const MAX_RECORDS: usize = NO_INDEX as usize - 1;

/// An index of a rank's records as a `u32` field (see [`RequestLife`]). Every index a
/// rank has fits: a timeline takes no more than [`MAX_RECORDS`] of
/// each kind, and the importer refuses a rank that has more (`Error::TooLarge`).
pub(crate) fn index_u32(i: usize) -> u32 {
    debug_assert!(i <= MAX_RECORDS, "a rank past MAX_RECORDS");
    i as u32
}

pub(crate) fn some_index(i: u32) -> Option<usize> {
    (i != NO_INDEX).then_some(i as usize)
}

impl RequestLife {
    /// The request `request` of `rank`, posted at event `post`, described by the call at
    /// `args`, completed at `completion` or else let go at `freed` (a request a call
    /// completed is never let go of: its completion is kept).
    pub fn new(
        rank: u32,
        request: u64,
        kind: RequestKind,
        post: usize,
        args: usize,
        completion: Option<usize>,
        freed: Option<usize>,
    ) -> RequestLife {
        debug_assert!(
            completion.is_none() || freed.is_none(),
            "a request both completed and let go"
        );
        let (end, freed) = match (completion, freed) {
            (Some(c), _) => (index_u32(c), false),
            (None, Some(f)) => (index_u32(f), true),
            (None, None) => (NO_INDEX, false),
        };
        RequestLife {
            rank,
            post: index_u32(post),
            args: index_u32(args),
            end,
            request: [request as u32, (request >> 32) as u32],
            kind,
            freed,
        }
    }

    /// The request's id on its rank.
    pub fn request(&self) -> u64 {
        u64::from(self.request[0]) | u64::from(self.request[1]) << 32
    }

    /// The post (Isend, Irecv, Start...): index in the rank's events.
    pub fn post(&self) -> usize {
        self.post as usize
    }

    /// The call whose arguments describe the transfer: the post itself, or for a
    /// started persistent request its Send_init or Recv_init.
    pub fn args(&self) -> usize {
        self.args as usize
    }

    /// The completing call, when there was one.
    pub fn completion(&self) -> Option<usize> {
        some_index(self.end).filter(|_| !self.freed)
    }

    /// The `MPI_Request_free` that let go of the request before any call completed it:
    /// the operation went on, but the program never learned when it ended.
    pub fn freed(&self) -> Option<usize> {
        some_index(self.end).filter(|_| self.freed)
    }
}

/// The receive half of a Sendrecv.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvHalf {
    /// Requested source (world rank; negative: wildcard).
    pub peer: Option<i32>,
    /// Requested tag.
    pub tag: Option<i32>,
    /// The receive buffer.
    pub buf: Option<Buffer>,
}

/// The arguments of an MPI call that analysis uses (see
/// [`CallArgs`](overlap_format::schema::CallArgs) for their meaning), in 72 bytes: a
/// trace holds one per call, tens of millions of them. Fields a call may lack are kept
/// with a sentinel (never a value MPI or the recorder uses: `i32::MIN` for a rank or
/// tag, `u64::MAX` for bytes, a request id or a buffer's length, `u32::MAX` for a
/// window) and read through
/// methods that give them back as `Option`s; the rare parts (Sendrecv's receive half,
/// the requests a Start started, a one-sided group) live in the timeline's side table
/// ([`Timeline::recv_half`](super::Timeline::recv_half),
/// [`Timeline::started`](super::Timeline::started),
/// [`Timeline::group`](super::Timeline::group)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallInfo {
    peer: i32,
    tag: i32,
    /// Communicator id (0 when not recorded).
    pub comm: u32,
    root: i32,
    win: u32,
    /// Its entry in the timeline's side table of rare arguments, or [`NO_INDEX`].
    extra: u32,
    bytes: u64,
    request: u64,
    /// The (send) buffer; its length is [`NO_U64`] when it has none.
    buf: Buffer,
    /// Requests this call completed: `done[completed.0 .. completed.0 + completed.1]` of
    /// its timeline.
    pub completed: (u32, u32),
    /// Where the program made the call: a code address (the preload), or an id of the
    /// rank's source-site table (the Rust layer); see [`crate::sites`]. `None` when not
    /// recorded. Non-zero on the wire, so it costs 8 bytes per call, not 16.
    pub site: Option<NonZeroU64>,
}

const _: () = assert!(std::mem::size_of::<CallInfo>() == 72);

/// The sentinel of a missing rank, tag or root in a [`CallInfo`].
pub(crate) const NO_I32: i32 = i32::MIN;
/// The sentinel of a missing byte count or request id.
pub(crate) const NO_U64: u64 = u64::MAX;
/// The sentinel of a missing window id or side-table entry.
pub(crate) const NO_INDEX: u32 = u32::MAX;

pub(crate) fn some_i32(v: i32) -> Option<i32> {
    (v != NO_I32).then_some(v)
}

pub(crate) fn some_u64(v: u64) -> Option<u64> {
    (v != NO_U64).then_some(v)
}

/// A buffer kept in 16 bytes: none is a length of [`NO_U64`]. A recorded length equal to
/// it (no buffer is 2^64 - 1 bytes long) is kept one shorter, so the buffer stays a
/// buffer.
pub(crate) fn buffer_or_none(b: Option<Buffer>) -> Buffer {
    match b {
        Some(b) => Buffer {
            addr: b.addr,
            len: b.len.min(NO_U64 - 1),
        },
        None => Buffer {
            addr: 0,
            len: NO_U64,
        },
    }
}

/// The buffer [`buffer_or_none`] kept.
pub(crate) fn some_buffer(b: Buffer) -> Option<Buffer> {
    (b.len != NO_U64).then_some(b)
}

/// One request a call completed, with the status MPI returned for it (see
/// [`Completion`](overlap_format::schema::Completion)), in 16 bytes with the sentinels
/// of [`CallInfo`]. The bytes a receive's status gave are not kept: no analysis reads
/// them (a message's bytes come from its matched send and receive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    request: u64,
    source: i32,
    tag: i32,
}

const _: () = assert!(std::mem::size_of::<Done>() == 16);

impl From<&overlap_format::schema::Completion> for Done {
    fn from(c: &overlap_format::schema::Completion) -> Done {
        Done {
            request: c.request.unwrap_or(NO_U64),
            source: c.source.unwrap_or(NO_I32),
            tag: c.tag.unwrap_or(NO_I32),
        }
    }
}

impl Done {
    /// The request, as numbered by the post that created it; none for the receive half
    /// of a blocking call.
    pub fn request(&self) -> Option<u64> {
        some_u64(self.request)
    }

    /// Receives only: the world rank the message actually came from.
    pub fn source(&self) -> Option<i32> {
        some_i32(self.source)
    }

    /// Receives only: the message's actual tag.
    pub fn tag(&self) -> Option<i32> {
        some_i32(self.tag)
    }
}

/// The arguments few calls have, kept apart from [`CallInfo`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CallExtra {
    /// Sendrecv's receive half.
    pub(crate) recv: Option<RecvHalf>,
    /// Start / Startall: the requests it started, `starts[started.0 ..][.. started.1]`.
    pub(crate) started: (u32, u32),
    /// Win_start / Win_post: the world ranks of the group,
    /// `groups[group.0 ..][.. group.1]` of its timeline.
    pub(crate) group: (u32, u32),
}

/// A collective's size on one rank: the larger of the bytes it contributes and the
/// bytes it receives (the recorders write both, from the call's counts and types:
/// `MPI_Ialltoall` of `c` elements of `t` on `n` ranks contributes and receives
/// `n × c × size(t)`, `MPI_Iallreduce` and `MPI_Ibcast` `c × size(t)` on every rank).
/// None when the call recorded neither (a barrier, or a call that is no collective).
fn collective_bytes(a: &overlap_format::schema::CallArgs) -> Option<u64> {
    a.send_bytes.max(a.recv_bytes)
}

impl CallInfo {
    /// The arguments of a call, its rare parts at `extra` of its timeline's side table
    /// (`None`: it has none). A value equal to a field's sentinel (see the type) reads
    /// back as not recorded.
    pub(crate) fn new(
        a: &overlap_format::schema::CallArgs,
        buf: Option<Buffer>,
        completed: (u32, u32),
        extra: Option<u32>,
    ) -> CallInfo {
        CallInfo {
            peer: a.peer.unwrap_or(NO_I32),
            tag: a.tag.unwrap_or(NO_I32),
            comm: a.comm.unwrap_or(0),
            root: a.root.unwrap_or(NO_I32),
            // A window id equal to the sentinel (the recorder's fallback ids are odd
            // values from 2^31 up, so it can make one) is kept as `NO_INDEX - 1`, an even
            // id from 2^31 up that the recorder never makes: the window stays a window.
            win: a.win.map_or(NO_INDEX, |w| w.min(NO_INDEX - 1)),
            extra: extra.unwrap_or(NO_INDEX),
            bytes: a.bytes.or_else(|| collective_bytes(a)).unwrap_or(NO_U64),
            request: a.request.unwrap_or(NO_U64),
            buf: buffer_or_none(buf),
            completed,
            site: a.site.and_then(NonZeroU64::new),
        }
    }

    /// Peer (world rank) of a point-to-point call.
    pub fn peer(&self) -> Option<i32> {
        some_i32(self.peer)
    }

    /// Tag.
    pub fn tag(&self) -> Option<i32> {
        some_i32(self.tag)
    }

    /// Bytes sent, or a receive's capacity; for a collective, its size on this rank
    /// ([`collective_bytes`]).
    pub fn bytes(&self) -> Option<u64> {
        some_u64(self.bytes)
    }

    /// The request a post created.
    pub fn request(&self) -> Option<u64> {
        some_u64(self.request)
    }

    /// Rooted collectives: the root (world rank).
    pub fn root(&self) -> Option<i32> {
        some_i32(self.root)
    }

    /// Calls on a window: its id (the same on every rank of its group).
    pub fn win(&self) -> Option<u32> {
        (self.win != NO_INDEX).then_some(self.win)
    }

    /// The (send) buffer, when recorded.
    pub fn buf(&self) -> Option<Buffer> {
        some_buffer(self.buf)
    }

    /// Its entry in the timeline's side table, if it has one.
    pub(crate) fn extra(&self) -> Option<usize> {
        some_index(self.extra)
    }
}

#[cfg(test)]
mod tests {
    use overlap_format::schema::CallArgs;

    use super::*;

    /// A window id equal to the sentinel (a recorder fallback id can be) stays a window;
    /// ids below it read back as themselves.
    #[test]
    fn a_window_id_at_the_sentinel_is_still_a_window() {
        let call = |win: Option<u32>| {
            let args = CallArgs {
                win,
                ..CallArgs::default()
            };
            CallInfo::new(&args, None, (0, 0), None).win()
        };
        assert_eq!(call(None), None);
        assert_eq!(call(Some(7)), Some(7));
        assert_eq!(call(Some(0x8000_0001)), Some(0x8000_0001));
        assert_eq!(call(Some(u32::MAX)), Some(u32::MAX - 1));
    }

    /// A call without a buffer reads back without one; a buffer whose length is the
    /// sentinel stays a buffer (one byte shorter); any other reads back as itself,
    /// address 0 and length 0 included.
    #[test]
    fn a_buffer_at_the_sentinel_is_still_a_buffer() {
        let call =
            |buf: Option<Buffer>| CallInfo::new(&CallArgs::default(), buf, (0, 0), None).buf();
        let b = |addr, len| Buffer { addr, len };
        assert_eq!(call(None), None);
        assert_eq!(call(Some(b(0, 0))), Some(b(0, 0)));
        assert_eq!(call(Some(b(0x7f00, 4096))), Some(b(0x7f00, 4096)));
        assert_eq!(call(Some(b(u64::MAX, 8))), Some(b(u64::MAX, 8)));
        assert_eq!(call(Some(b(8, u64::MAX))), Some(b(8, u64::MAX - 1)));
    }

    /// A request's id reads back whole from its two halves (an Open MPI handle is a
    /// pointer: past 32 bits), and its end as what it was: a completion, a free, or
    /// neither; a request read back past a serde round trip is itself.
    #[test]
    fn a_requests_id_and_end_read_back_as_made() {
        let life = |request, completion, freed| {
            RequestLife::new(3, request, RequestKind::Recv, 10, 8, completion, freed)
        };
        for id in [0, 7, u64::from(u32::MAX), 0x7f3a_1c00_0010, u64::MAX] {
            assert_eq!(life(id, None, None).request(), id, "{id:#x}");
        }
        let done = life(5, Some(12), None);
        assert_eq!((done.completion(), done.freed()), (Some(12), None));
        let let_go = life(5, None, Some(14));
        assert_eq!((let_go.completion(), let_go.freed()), (None, Some(14)));
        let pending = life(5, None, None);
        assert_eq!((pending.completion(), pending.freed()), (None, None));
        assert_eq!((done.rank, done.post(), done.args()), (3, 10, 8));
        assert_eq!(done.kind, RequestKind::Recv);
        for r in [done, let_go, pending, life(u64::MAX, Some(0), None)] {
            let bytes = rmp_serde::to_vec(&r).expect("written");
            let back: RequestLife = rmp_serde::from_slice(&bytes).expect("read");
            assert_eq!(back, r);
        }
    }
}
