//! A run as programs of operations: the unit that reordering moves ([`crate::dag`]) and
//! the replay executes ([`crate::replay`]).
//!
//! Each rank's events become a sequence of [`Operation`]s in program order (the thread
//! that makes the rank's MPI calls; other threads are left out and said so):
//!
//! - every compute span (recorded), or every gap between two MPI calls of a thread
//!   without spans (inferred compute, whose reads and writes are unknown);
//! - every post (Isend, Irecv, each request a Start or Startall starts, non-blocking
//!   collectives, Rput...), one [`OpKind::Post`] per request;
//! - every request a Wait/Test call completed, one [`OpKind::Complete`] per request: a
//!   Waitall over four requests is four operations sharing its `call` (regrouped for
//!   output);
//! - blocking point-to-point calls (their messages), blocking collectives (their
//!   instance), and every other MPI call ([`OpKind::Local`]: Test that completed nothing,
//!   Iprobe, Comm_rank...), which only take time inside MPI.
//!
//! A gap is cut at the first touches of the program's buffers learned inside it
//! ([`cuts`]): one inferred compute per part.
//!
//! Time a span-recording thread spent outside both spans and MPI (bookkeeping the
//! program did not mark) is kept as the `lead_in` of the operation that follows it, so a
//! replay of the measured order loses no time.
//!
//! ```text
//!  recorded  |Irecv|Isend|  Waitall(r, s)  |compute 5|
//!  operations  Post(r) Post(s) Complete(r) Complete(s) Compute   (the two completions
//!                                                                 share call 2)
//! ```

mod blocking;
pub mod cuts;
mod extract;
pub mod gpu_uses;
pub mod learned;
mod measured;
mod sites;

pub use blocking::{BlockingAt, BlockingMessages};
pub use cuts::Cut;
pub use extract::{extract, extract_measured, extract_owned, ExtractError, INFERRED_NAME};
pub(crate) use extract::{Builder, Keep, Run, RunMessages};
pub use gpu_uses::{gpu_uses, GpuUse};
pub use learned::{Knowledge, LearnedEnd, LearnedOp};
pub use measured::{EncodedOps, MeasuredProgram, OpReader, ReplayKind, ReplayOp, ReplayRequest};
/// How an operation or the program touches a buffer (reads or writes it).
pub use overlap_format::schema::Touch;
pub use sites::CallSites;

use overlap_format::schema::Op;

use crate::model::compact::{
    buffer_or_none, index_u32, some_buffer, some_i32, some_index, NO_I32, NO_INDEX,
};
pub use crate::model::Access;
use crate::model::Buffer;

/// Index of a message in [`Program::messages`].
pub type MessageId = usize;
/// Index of a request in [`Program::requests`].
pub type RequestIndex = usize;
/// Index of a collective instance in [`Program::collectives`].
pub type InstanceId = usize;

/// Every rank's operations, and what links them across ranks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    /// Ranks, by rank.
    pub ranks: Vec<RankProgram>,
    /// Point-to-point messages, matched from send to receive.
    pub messages: Vec<MessageOp>,
    /// Non-blocking requests (posted by a [`OpKind::Post`]).
    pub requests: Vec<RequestOp>,
    /// Collective instances (blocking, and non-blocking ones through their requests).
    pub collectives: Vec<CollectiveOp>,
    /// Compute names (recorded span names, or "compute" for inferred gaps).
    pub names: Vec<String>,
    /// The measured run time, ns: from the first rank's start to the last rank's end.
    pub measured_ns: u64,
}

/// One rank's operations, in program order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankProgram {
    /// The rank.
    pub rank: u32,
    /// When it started (ns on the run's timeline): the end of its MPI_Init, or its
    /// first event.
    pub start_ns: u64,
    /// Its operations, in program order.
    pub ops: Vec<Operation>,
    /// The messages its blocking point-to-point calls send and receive.
    pub blocking: BlockingMessages,
    /// False when the rank's file was cut short (its program is what was recorded).
    pub complete: bool,
    /// Where its compute comes from.
    pub inferred_compute: bool,
    /// Unmarked time after its last operation, until its end, ns.
    pub tail_ns: u64,
    /// Threads other than the one whose operations these are that made MPI calls or
    /// recorded compute (left out of the program).
    pub other_threads: Vec<u32>,
    /// The host buffers its GPU copies use, by the operations they span ([`gpu_uses`]).
    pub gpu_uses: Vec<GpuUse>,
    /// The buffers its compute operations declared, by [`OpKind::Compute`]'s `access`.
    pub accesses: Vec<Access>,
    /// What the program did with its requests' buffers after they completed, learned
    /// while it ran ([`learned`]), by completion; empty when not recorded.
    pub learned: Vec<LearnedOp>,
    /// The parts of inferred compute that start at a learned first touch, by operation
    /// ([`cuts`], [`RankProgram::cut_at`]).
    pub cuts: Vec<Cut>,
    /// The buffers collectives and other calls named, by operation (taken to be written:
    /// a Bcast's buffer, an Allreduce's receive buffer, an MPI_Pack's output).
    pub call_buffers: Vec<(u32, Buffer)>,
}

impl RankProgram {
    /// The buffers compute operation `op` declared, when it did.
    pub fn access(&self, op: &Operation) -> Option<&Access> {
        match op.kind {
            OpKind::Compute {
                access: Some(a), ..
            } => self.accesses.get(a.get()),
            _ => None,
        }
    }

    /// Keeps `access` for a compute operation of this rank: what its `access` names.
    pub fn add_access(&mut self, access: Access) -> CompactIndex {
        self.accesses.push(access);
        CompactIndex::new(self.accesses.len() - 1)
    }
}

/// An index in 4 bytes, with `None` taking none more: an operation's optional links
/// (a program holds about one and a half operations per event).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompactIndex(std::num::NonZeroU32);

impl CompactIndex {
    /// Index `i` (below `u32::MAX`, as every index of the compact model).
    pub fn new(i: usize) -> CompactIndex {
        CompactIndex(std::num::NonZeroU32::MIN.saturating_add(index_u32(i)))
    }

    /// The index.
    pub fn get(self) -> usize {
        self.0.get() as usize - 1
    }
}

/// One operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    /// What it is.
    pub kind: OpKind,
    /// Time it takes when it need not wait for anything, ns: a compute's length, a
    /// post's or local call's measured length, a completion's or blocking call's
    /// shortest length on this rank (what it costs when the data is already there).
    pub cost_ns: u64,
    /// Unmarked time just before it (not compute, not MPI), ns, kept with it.
    pub lead_in_ns: u64,
    /// When it started in the measured run (ns on the run's timeline).
    pub measured_start_ns: u64,
    /// When it ended in the measured run.
    pub measured_end_ns: u64,
    /// The MPI call it comes from (index of the call's span in the rank's
    /// [`crate::model::Timeline`]); for an inferred compute, the call before the gap.
    /// A `u32`, as event indices are in the compact model: a program has about one and a
    /// half operations per event, so every byte here counts.
    pub span: u32,
    /// The MPI call behind it, when it is (part of) one. Where the program made it is
    /// the trace's ([`CallSites`]): an operation keeps no site of its own.
    pub call: Option<Op>,
}

// A program holds about one and a half operations per event of the trace.
const _: () = assert!(std::mem::size_of::<OpKind>() == 16);
const _: () = assert!(std::mem::size_of::<Operation>() == 56);

/// What an operation does.
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// Compute: `name` indexes [`Program::names`].
    Compute {
        /// Its name.
        name: u32,
        /// Inferred from a gap between MPI calls (its buffers are unknown).
        inferred: bool,
        /// The buffers it reads and writes, when the program said: an entry of its
        /// rank's [`RankProgram::accesses`] (an index, not a box: every operation is as
        /// large as the largest kind, and this keeps that at 16 bytes).
        access: Option<CompactIndex>,
        /// For an inferred compute: the call after the gap (span index).
        until_span: Option<CompactIndex>,
    },
    /// Posts a request.
    Post {
        /// The request.
        request: RequestIndex,
    },
    /// Completes a request (one of the requests of a Wait/Test call).
    Complete {
        /// The request.
        request: RequestIndex,
    },
    /// A blocking point-to-point call: returns when its own transfers are done (its
    /// messages: its rank's [`RankProgram::blocking`]).
    Blocking {
        /// Its buffers (boxed: every operation is as large as the largest kind).
        transfers: Box<Transfers>,
        /// Communicator.
        comm: u32,
        /// Its halves to or from `MPI_PROC_NULL` (no message by design).
        null_peers: u8,
    },
    /// A blocking collective.
    Collective {
        /// Its instance.
        instance: InstanceId,
        /// Communicator (or window) it is ordered in.
        comm: u32,
    },
    /// Any other MPI call: takes its time inside MPI, waits for nothing.
    Local,
}

impl OpKind {
    /// True for an operation that keeps its program order with the others like it
    /// (compute and every MPI call but posts and completions, which are what moves).
    pub fn is_anchor(&self) -> bool {
        !matches!(self, OpKind::Post { .. } | OpKind::Complete { .. })
    }
}

/// What a blocking point-to-point call moves, of its own memory (its messages are its
/// rank's [`RankProgram::blocking`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transfers {
    /// Its buffers (send buffer, receive buffer).
    pub buffers: Vec<(Buffer, Touch)>,
}

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestRole {
    /// Sends a message.
    Send,
    /// Receives a message.
    Recv,
    /// Takes part in a non-blocking collective.
    Collective,
    /// Something else (one-sided): completes when waited for.
    Other,
}

/// A non-blocking request, in 64 bytes (a program holds one per request of the trace):
/// its links, its peer and tag and its buffer kept with the sentinels of
/// [`crate::model::compact`] and read through methods.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestOp {
    /// The rank that posted it.
    pub rank: u32,
    message: u32,
    instance: u32,
    post: u32,
    complete: u32,
    peer: i32,
    tag: i32,
    /// Communicator.
    pub comm: u32,
    /// Bytes.
    pub bytes: u64,
    buffer: Buffer,
    /// What it does.
    pub role: RequestRole,
    /// To or from `MPI_PROC_NULL`: completes at once, with no message by design.
    pub proc_null: bool,
}

const _: () = assert!(std::mem::size_of::<RequestOp>() == 64);

impl RequestOp {
    /// A request of `rank` posted by its operation `post`: no message, instance, peer,
    /// tag, buffer or completion yet, communicator 0, 0 bytes.
    pub fn new(rank: u32, role: RequestRole, post: usize) -> RequestOp {
        RequestOp {
            rank,
            message: NO_INDEX,
            instance: NO_INDEX,
            post: index_u32(post),
            complete: NO_INDEX,
            peer: NO_I32,
            tag: NO_I32,
            comm: 0,
            bytes: 0,
            buffer: buffer_or_none(None),
            role,
            proc_null: false,
        }
    }

    /// The message it sends or receives, when matched.
    pub fn message(&self) -> Option<MessageId> {
        some_index(self.message)
    }

    /// Links it to its message.
    pub fn set_message(&mut self, m: MessageId) {
        self.message = index_u32(m);
    }

    /// The non-blocking collective it is part of.
    pub fn instance(&self) -> Option<InstanceId> {
        some_index(self.instance)
    }

    /// Makes it part of a non-blocking collective instance (none: of none).
    pub fn set_instance(&mut self, i: Option<InstanceId>) {
        self.instance = i.map_or(NO_INDEX, index_u32);
    }

    /// Index of its post in the rank's operations.
    pub fn post(&self) -> usize {
        self.post as usize
    }

    /// Moves its post to the rank's operation `i`.
    pub fn set_post(&mut self, i: usize) {
        self.post = index_u32(i);
    }

    /// Index of its completion in the rank's operations, when it was completed.
    pub fn complete(&self) -> Option<usize> {
        some_index(self.complete)
    }

    /// Marks it completed by the rank's operation `i`.
    pub fn set_complete(&mut self, i: usize) {
        self.complete = index_u32(i);
    }

    /// Peer (world rank) of a point-to-point request; negative: a wildcard or
    /// `MPI_PROC_NULL`.
    pub fn peer(&self) -> Option<i32> {
        some_i32(self.peer)
    }

    /// Tag; negative: a wildcard.
    pub fn tag(&self) -> Option<i32> {
        some_i32(self.tag)
    }

    /// Its buffer, when recorded.
    pub fn buffer(&self) -> Option<Buffer> {
        some_buffer(self.buffer)
    }

    /// Sets its buffer (none: not recorded).
    pub fn set_buffer(&mut self, b: Option<Buffer>) {
        self.buffer = buffer_or_none(b);
    }

    /// Sets its peer and tag (none: not recorded).
    pub fn set_peer_and_tag(&mut self, peer: Option<i32>, tag: Option<i32>) {
        self.peer = peer.unwrap_or(NO_I32);
        self.tag = tag.unwrap_or(NO_I32);
    }
}

/// A point-to-point message, in 32 bytes (a program holds one per message of the
/// trace): its operations' indices kept as `u32`, as [`Operation::span`] is, and read
/// through methods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageOp {
    from: (u32, u32),
    to: (u32, u32),
    /// Bytes.
    pub bytes: u64,
    /// Tag.
    pub tag: i32,
    /// The MPI call of the operation that sent it (what decides its protocol: a Bsend
    /// is buffered, an Ssend synchronous), kept here so that a replay reads the sender's
    /// call without reading the sender's operations.
    pub send_call: Option<Op>,
}

const _: () = assert!(std::mem::size_of::<MessageOp>() == 32);

impl MessageOp {
    /// A message of `bytes` with `tag` sent by operation `from.1` of rank `from.0`, whose
    /// call is `send_call`, and received by operation `to.1` of rank `to.0`.
    pub fn new(
        from: (u32, usize),
        to: (u32, usize),
        bytes: u64,
        tag: i32,
        send_call: Option<Op>,
    ) -> MessageOp {
        MessageOp {
            from: (from.0, index_u32(from.1)),
            to: (to.0, index_u32(to.1)),
            bytes,
            tag,
            send_call,
        }
    }

    /// Sender rank and the index of the operation that sent it (a post or a blocking
    /// call).
    pub fn from(&self) -> (u32, usize) {
        (self.from.0, self.from.1 as usize)
    }

    /// Receiver rank and the operation that received it (post or blocking call).
    pub fn to(&self) -> (u32, usize) {
        (self.to.0, self.to.1 as usize)
    }
}

/// A collective instance.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveOp {
    /// The call (its post, for a non-blocking one).
    pub op: Op,
    /// Bytes (the largest count of its members).
    pub bytes: u64,
    /// Members: rank and operation index (the post of a non-blocking one).
    pub members: Vec<(u32, usize)>,
    /// Its pure time from the last member's entry, ns, fitted from the trace (the
    /// shortest observation of this call and size class); `None` when never observed.
    pub cost_ns: Option<u64>,
}

impl Program {
    /// The rank's program.
    pub fn rank(&self, rank: u32) -> Option<&RankProgram> {
        self.slot(rank).map(|i| &self.ranks[i])
    }

    /// Where rank `rank` is in [`Self::ranks`].
    pub fn slot(&self, rank: u32) -> Option<usize> {
        crate::model::slot_of_rank(&self.ranks, rank, |r| r.rank)
    }

    /// The name of a compute.
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("?", String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every index a rank can have reads back as itself, in 4 bytes with or without
    /// `None`.
    #[test]
    fn compact_indices_read_back() {
        assert_eq!(std::mem::size_of::<Option<CompactIndex>>(), 4);
        let last = crate::model::MAX_RECORDS;
        for i in [0, 1, 7, 1 << 20, last - 1, last] {
            assert_eq!(CompactIndex::new(i).get(), i);
        }
    }

    /// A message's operations read back as given; a compute's buffers are found through
    /// its rank.
    #[test]
    fn messages_and_accesses_read_back() {
        let m = MessageOp::new((3, 5), (1, 1 << 31), 64, -2, Some(Op::Ssend));
        assert_eq!(
            (m.from(), m.to(), m.bytes, m.tag, m.send_call),
            ((3, 5), (1, 1 << 31), 64, -2, Some(Op::Ssend))
        );
        let mut rank = RankProgram::default();
        let access = Access {
            reads: Vec::new(),
            writes: vec![crate::model::NamedBuffer {
                name: "out".into(),
                buf: Buffer { addr: 64, len: 8 },
            }],
        };
        let id = rank.add_access(access.clone());
        let op = |access| Operation {
            kind: OpKind::Compute {
                name: 0,
                inferred: false,
                access,
                until_span: None,
            },
            cost_ns: 1,
            lead_in_ns: 0,
            measured_start_ns: 0,
            measured_end_ns: 1,
            span: 0,
            call: None,
        };
        assert_eq!(rank.access(&op(Some(id))), Some(&access));
        assert_eq!(rank.access(&op(None)), None);
    }
}
