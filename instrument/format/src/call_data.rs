//! What a call did, in the compact typed form the hot path records ([`CallData`]): plain
//! values, no heap data, so recording one is a few stores. The binary stream encodes it
//! field by field; [`CallData::to_args`] turns it into the wire arguments of a
//! [`crate::schema::CallEvent`].

use crate::region::RegionName;
use crate::schema::{CallArgs, CommId, Completion, RequestId, Started};

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
    /// Isendrecv / Isendrecv_replace: both halves and the one request that completes
    /// them (with the receive's status).
    SendrecvPost {
        /// The send half.
        send: Transfer,
        /// The receive half.
        recv: Transfer,
        /// The request created.
        request: RequestId,
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
    /// Start / Startall: the started requests follow as `Started` records.
    Start,
    /// One-sided communication (Put, Get, Accumulate...), with the request of the
    /// request-based ones (Rput, Rget...).
    OneSided {
        /// What it accesses.
        access: Access,
        /// Rput, Rget, Raccumulate, Rget_accumulate: the request created.
        request: Option<RequestId>,
    },
    /// A window call every rank of the window's group makes (Win_create, Win_allocate,
    /// Win_free, Win_fence).
    WindowCollective {
        /// The window.
        win: u32,
        /// The communicator the window was created over.
        comm: CommId,
    },
    /// One-sided synchronisation other than the fence. Win_start and Win_post's group
    /// follows as group members.
    WindowSync {
        /// The window.
        win: u32,
        /// Win_lock, Win_unlock, Win_flush, Win_flush_local: the target, as a world rank.
        target: Option<i32>,
        /// Win_lock: whether the lock is exclusive.
        exclusive: Option<bool>,
        /// Win_test: whether the exposure epoch had ended.
        flag: Option<bool>,
    },
    /// Pcontrol: its level and the region it names, if any (see [`crate::region`]).
    Pcontrol {
        /// The level.
        level: i32,
        /// The region's name ([`RegionName::NONE`] when none).
        name: RegionName,
    },
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

/// What a one-sided operation accesses, from the origin's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The target, as a world rank.
    pub target: i32,
    /// Bytes of the origin buffer: written to the target (Put, Accumulate,
    /// Get_accumulate's operand), or read into it (Get); Fetch_and_op and
    /// Compare_and_swap: one element.
    pub bytes: u64,
    /// The window.
    pub win: u32,
    /// Origin buffer address.
    pub buf: u64,
    /// Origin buffer length in bytes.
    pub buf_len: u64,
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
        let put_recv_half = |args: &mut CallArgs, recv: &Transfer| {
            args.recv_peer = Some(recv.peer);
            args.recv_tag = Some(recv.tag);
            args.recv_buf = Some(recv.buf);
            args.recv_buf_len = Some(recv.buf_len);
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
                put_recv_half(&mut args, recv);
            }
            CallData::SendrecvPost {
                send,
                recv,
                request,
            } => {
                put(&mut args, send);
                put_recv_half(&mut args, recv);
                args.request = Some(request.0);
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
            CallData::OneSided { access, request } => {
                args.peer = Some(access.target);
                args.bytes = Some(access.bytes);
                args.win = Some(access.win);
                args.buf = Some(access.buf);
                args.buf_len = Some(access.buf_len);
                args.request = request.map(|r| r.0);
            }
            CallData::WindowCollective { win, comm } => {
                args.win = Some(*win);
                args.comm = Some(comm.0);
            }
            CallData::WindowSync {
                win,
                target,
                exclusive,
                flag,
            } => {
                args.win = Some(*win);
                args.peer = *target;
                args.exclusive = exclusive.map(u8::from);
                args.flag = flag.map(u8::from);
            }
            CallData::Pcontrol { level, name } => {
                args.level = Some(*level);
                args.region = name.as_str().map(str::to_string);
            }
            CallData::Start | CallData::Plain => {}
        }
        args
    }
}
