//! The compact, copyable form of an event as it sits in a thread's ring: no heap data,
//! so appending it is a memcpy. The writer thread turns records into [`crate::schema`]
//! events.

use crate::clock::Stamp;
use crate::schema::{CallArgs, ClockSync, CommId, Completion, Op, RequestId};

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
    /// Barrier / Allreduce.
    Collective {
        /// Communicator.
        comm: CommId,
        /// Bytes contributed by this rank (0 for a barrier).
        bytes: u64,
    },
}

impl CallData {
    /// The wire arguments, with the completions that followed the call.
    pub fn to_args(&self, completed: Vec<Completion>) -> CallArgs {
        let mut args = CallArgs {
            completed,
            ..CallArgs::default()
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
            CallData::Collective { comm, bytes } => {
                args.comm = Some(comm.0);
                if *bytes > 0 {
                    args.send_bytes = Some(*bytes);
                }
            }
        }
        args
    }
}

/// One slot of a ring.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Record {
    /// An MPI call; `follow` completion records come right after it in the same group.
    Call {
        op: Op,
        start: Stamp,
        end: Stamp,
        data: CallData,
        follow: u32,
    },
    /// A completion belonging to the call before it.
    Completed(Completion),
    /// A compute span.
    Compute {
        name: &'static str,
        start: Stamp,
        end: Stamp,
    },
    /// A clock synchronisation result.
    Sync(ClockSync),
}
