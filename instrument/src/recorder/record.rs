//! The compact, copyable form of an event as it sits in a thread's ring: no heap data,
//! so appending it is a memcpy. The writer thread turns records into [`crate::schema`]
//! events.

use super::site::SiteWord;
use crate::clock::Stamp;
use crate::schema::{CallArgs, ClockSync, CommId, Completion, Op, RequestId, Started};

/// One side of a point-to-point transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// Destination (send) or requested source (receive), as a world rank.
    pub peer: i32,
    /// Tag (requested tag for a receive).
    pub tag: i32,
    /// Message bytes (receive: buffer capacity).
    pub bytes: u64,
    /// Communicator.
    pub comm: CommId,
    /// Buffer address.
    pub buf: u64,
    /// Buffer length in bytes.
    pub buf_len: u64,
}

/// What a call did, in the compact form the hot path records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallData {
    /// Isend / Irecv: the transfer and the request it created.
    Post {
        /// The transfer.
        transfer: Transfer,
        /// The request created.
        request: RequestId,
    },
    /// Send / Recv (a Recv's status follows as a completion).
    Blocking {
        /// The transfer.
        transfer: Transfer,
    },
    /// Sendrecv (the receive's status follows as a completion).
    Sendrecv {
        /// The send half.
        send: Transfer,
        /// The receive half.
        recv: Transfer,
    },
    /// Wait / Waitall / Test: the completed requests follow as completions.
    Complete {
        /// Test only: whether it completed.
        flag: Option<bool>,
    },
    /// A blocking collective.
    Collective(Collective),
    /// A non-blocking collective (Ibarrier, Iallreduce) and the request it created.
    CollectivePost {
        /// The collective.
        collective: Collective,
        /// The request created.
        request: RequestId,
    },
    /// Iprobe: the transfer asked about and whether a message was there (its status
    /// follows as a completion when it was).
    Query {
        /// The transfer asked about.
        transfer: Transfer,
        /// Whether a matching message was there.
        flag: bool,
    },
    /// Request_free: the request let go.
    Free {
        /// The request.
        request: RequestId,
    },
    /// Start / Startall: the started requests follow as [`Started`] records.
    Start,
    /// A call with no arguments worth recording (Init, Finalize).
    Plain,
}

/// One rank's part in a collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Collective {
    /// Communicator.
    pub comm: CommId,
    /// Bytes contributed by this rank (0 for a barrier).
    pub send_bytes: u64,
    /// Bytes this rank receives (0 when it receives nothing).
    pub recv_bytes: u64,
    /// Rooted collectives: the root as a world rank.
    pub root: Option<i32>,
}

impl CallData {
    /// The wire arguments, with the completions and starts that followed the call and
    /// the call site (0: unknown).
    pub fn to_args(
        &self,
        site: u64,
        completed: Vec<Completion>,
        started: Vec<Started>,
    ) -> CallArgs {
        let mut args = CallArgs {
            completed,
            started,
            site: (site != 0).then_some(site),
            ..CallArgs::default()
        };
        let put_collective = |args: &mut CallArgs, c: &Collective| {
            args.comm = Some(c.comm.0);
            args.send_bytes = (c.send_bytes > 0).then_some(c.send_bytes);
            args.recv_bytes = (c.recv_bytes > 0).then_some(c.recv_bytes);
            args.root = c.root;
        };
        let put = |args: &mut CallArgs, t: &Transfer| {
            args.peer = Some(t.peer);
            args.tag = Some(t.tag);
            args.bytes = Some(t.bytes);
            args.comm = Some(t.comm.0);
            args.buf = Some(t.buf);
            args.buf_len = Some(t.buf_len);
        };
        match self {
            CallData::Post { transfer, request } => {
                put(&mut args, transfer);
                args.request = Some(request.0);
            }
            CallData::Blocking { transfer } => put(&mut args, transfer),
            CallData::Sendrecv { send, recv } => {
                put(&mut args, send);
                args.recv_peer = Some(recv.peer);
                args.recv_tag = Some(recv.tag);
                args.recv_buf = Some(recv.buf);
                args.recv_buf_len = Some(recv.buf_len);
            }
            CallData::Complete { flag } => args.flag = flag.map(u8::from),
            CallData::Collective(c) => put_collective(&mut args, c),
            CallData::CollectivePost {
                collective,
                request,
            } => {
                put_collective(&mut args, collective);
                args.request = Some(request.0);
            }
            CallData::Query { transfer, flag } => {
                put(&mut args, transfer);
                args.flag = Some(u8::from(*flag));
            }
            CallData::Free { request } => args.request = Some(request.0),
            CallData::Start | CallData::Plain => {}
        }
        args
    }
}

/// One slot of a ring.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Record {
    /// An MPI call; `follow` completion or start records come right after it in the
    /// same group.
    Call {
        op: Op,
        start: Stamp,
        end: Stamp,
        site: SiteWord,
        data: CallData,
        follow: u32,
    },
    /// A completion belonging to the call before it.
    Completed(Completion),
    /// A persistent request started by the call before it.
    Started(Started),
    /// A compute span.
    Compute {
        name: &'static str,
        start: Stamp,
        end: Stamp,
    },
    /// A clock synchronisation result.
    Sync(ClockSync),
}
