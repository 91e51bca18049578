//! The event records overlap reads and writes, as plain Rust data: region enter and
//! leave, the MPI records of point-to-point, requests and collectives, and the RMA
//! records of one-sided communication. Ranks in them are ranks of their communicator
//! (an RMA record's `remote`: of its window's communicator), as OTF2 defines; times are
//! the location's ticks. Records of other kinds are read as [`Record::Other`] with
//! their name.

/// One event record (its time and location are given beside it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// The location enters a region.
    Enter {
        /// The region.
        region: u32,
    },
    /// The location leaves a region.
    Leave {
        /// The region.
        region: u32,
    },
    /// A blocking send.
    MpiSend {
        /// Receiver, a rank of `comm`.
        receiver: u32,
        /// Communicator.
        comm: u32,
        /// Tag.
        tag: u32,
        /// Bytes.
        bytes: u64,
    },
    /// A non-blocking send is posted.
    MpiIsend {
        /// Receiver, a rank of `comm`.
        receiver: u32,
        /// Communicator.
        comm: u32,
        /// Tag.
        tag: u32,
        /// Bytes.
        bytes: u64,
        /// Its request.
        request: u64,
    },
    /// A non-blocking send completes.
    MpiIsendComplete {
        /// Its request.
        request: u64,
    },
    /// A non-blocking receive is posted.
    MpiIrecvRequest {
        /// Its request.
        request: u64,
    },
    /// A blocking receive completes.
    MpiRecv {
        /// Sender, a rank of `comm`.
        sender: u32,
        /// Communicator.
        comm: u32,
        /// Tag.
        tag: u32,
        /// Bytes.
        bytes: u64,
    },
    /// A non-blocking receive completes.
    MpiIrecv {
        /// Sender, a rank of `comm`.
        sender: u32,
        /// Communicator.
        comm: u32,
        /// Tag.
        tag: u32,
        /// Bytes.
        bytes: u64,
        /// Its request.
        request: u64,
    },
    /// A request was tested and found not complete.
    MpiRequestTest {
        /// The request.
        request: u64,
    },
    /// A request was cancelled.
    MpiRequestCancelled {
        /// The request.
        request: u64,
    },
    /// A blocking collective starts (inside its region).
    MpiCollectiveBegin,
    /// A blocking collective ends.
    MpiCollectiveEnd {
        /// `OTF2_CollectiveOp`.
        op: u8,
        /// Communicator.
        comm: u32,
        /// Root, a rank of `comm` (`u32::MAX`: none).
        root: u32,
        /// Bytes this rank sent.
        sent: u64,
        /// Bytes this rank received.
        received: u64,
    },
    /// A non-blocking collective is posted.
    NonBlockingCollectiveRequest {
        /// Its request.
        request: u64,
    },
    /// A non-blocking collective completes.
    NonBlockingCollectiveComplete {
        /// `OTF2_CollectiveOp`.
        op: u8,
        /// Communicator.
        comm: u32,
        /// Root, a rank of `comm` (`u32::MAX`: none).
        root: u32,
        /// Bytes this rank sent.
        sent: u64,
        /// Bytes this rank received.
        received: u64,
        /// Its request.
        request: u64,
    },
    /// An RMA window is created (inside the RMA collective of its creation).
    RmaWinCreate {
        /// The window (`RmaWin` definition).
        win: u32,
    },
    /// An RMA window is destroyed.
    RmaWinDestroy {
        /// The window.
        win: u32,
    },
    /// A collective RMA operation starts (creation, fence, freeing).
    RmaCollectiveBegin,
    /// A collective RMA operation ends.
    RmaCollectiveEnd {
        /// `OTF2_CollectiveOp`.
        op: u8,
        /// `OTF2_RmaSyncLevel` bits.
        sync_level: u32,
        /// The window.
        win: u32,
        /// Root, a rank of the window's communicator (`u32::MAX`: none).
        root: u32,
        /// Bytes sent.
        sent: u64,
        /// Bytes received.
        received: u64,
    },
    /// Synchronisation with a group of ranks on a window (an epoch of general active
    /// target synchronisation opened or closed).
    RmaGroupSync {
        /// `OTF2_RmaSyncLevel` bits.
        sync_level: u32,
        /// The window.
        win: u32,
        /// The group (`COMM_GROUP`: world ranks).
        group: u32,
    },
    /// A lock on a target of a window is requested.
    RmaRequestLock {
        /// The window.
        win: u32,
        /// The target, a rank of the window's communicator.
        remote: u32,
        /// The lock, as its release names it.
        lock_id: u64,
        /// `OTF2_LockType`.
        lock_type: u8,
    },
    /// A lock on a target of a window is acquired.
    RmaAcquireLock {
        /// The window.
        win: u32,
        /// The target, a rank of the window's communicator.
        remote: u32,
        /// The lock.
        lock_id: u64,
        /// `OTF2_LockType`.
        lock_type: u8,
    },
    /// A lock on a target of a window is released.
    RmaReleaseLock {
        /// The window.
        win: u32,
        /// The target, a rank of the window's communicator.
        remote: u32,
        /// The lock.
        lock_id: u64,
    },
    /// Direct synchronisation with a (possibly remote) rank of a window.
    RmaSync {
        /// The window.
        win: u32,
        /// The rank, of the window's communicator.
        remote: u32,
        /// `OTF2_RmaSyncType`.
        sync_type: u8,
    },
    /// A put is issued.
    RmaPut {
        /// The window.
        win: u32,
        /// The target, a rank of the window's communicator.
        remote: u32,
        /// Bytes.
        bytes: u64,
        /// The operation, as its completion names it.
        matching_id: u64,
    },
    /// A get is issued.
    RmaGet {
        /// The window.
        win: u32,
        /// The target, a rank of the window's communicator.
        remote: u32,
        /// Bytes.
        bytes: u64,
        /// The operation, as its completion names it.
        matching_id: u64,
    },
    /// An atomic operation (accumulate, fetch-and-op, compare-and-swap) is issued.
    RmaAtomic {
        /// The window.
        win: u32,
        /// The target, a rank of the window's communicator.
        remote: u32,
        /// `OTF2_RmaAtomicType`.
        kind: u8,
        /// Bytes sent to the target.
        sent: u64,
        /// Bytes received from it.
        received: u64,
        /// The operation, as its completion names it.
        matching_id: u64,
    },
    /// A blocking RMA operation completes locally (at the synchronisation that
    /// completes it).
    RmaOpCompleteBlocking {
        /// The window.
        win: u32,
        /// The operation.
        matching_id: u64,
    },
    /// A non-blocking (request-based) RMA operation completes locally.
    RmaOpCompleteNonBlocking {
        /// The window.
        win: u32,
        /// The operation.
        matching_id: u64,
    },
    /// A non-blocking RMA operation was tested and found not complete.
    RmaOpTest {
        /// The window.
        win: u32,
        /// The operation.
        matching_id: u64,
    },
    /// An RMA operation completes at its target.
    RmaOpCompleteRemote {
        /// The window.
        win: u32,
        /// The operation.
        matching_id: u64,
    },
    /// A record of another kind, read and not interpreted.
    Other {
        /// Its kind (`RmaPut`, `ThreadFork`, ...).
        kind: &'static str,
    },
}

impl Record {
    /// The name OTF2 and `otf2-print` give the record's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Record::Enter { .. } => "ENTER",
            Record::Leave { .. } => "LEAVE",
            Record::MpiSend { .. } => "MPI_SEND",
            Record::MpiIsend { .. } => "MPI_ISEND",
            Record::MpiIsendComplete { .. } => "MPI_ISEND_COMPLETE",
            Record::MpiIrecvRequest { .. } => "MPI_IRECV_REQUEST",
            Record::MpiRecv { .. } => "MPI_RECV",
            Record::MpiIrecv { .. } => "MPI_IRECV",
            Record::MpiRequestTest { .. } => "MPI_REQUEST_TEST",
            Record::MpiRequestCancelled { .. } => "MPI_REQUEST_CANCELLED",
            Record::MpiCollectiveBegin => "MPI_COLLECTIVE_BEGIN",
            Record::MpiCollectiveEnd { .. } => "MPI_COLLECTIVE_END",
            Record::NonBlockingCollectiveRequest { .. } => "NON_BLOCKING_COLLECTIVE_REQUEST",
            Record::NonBlockingCollectiveComplete { .. } => "NON_BLOCKING_COLLECTIVE_COMPLETE",
            Record::RmaWinCreate { .. } => "RMA_WIN_CREATE",
            Record::RmaWinDestroy { .. } => "RMA_WIN_DESTROY",
            Record::RmaCollectiveBegin => "RMA_COLLECTIVE_BEGIN",
            Record::RmaCollectiveEnd { .. } => "RMA_COLLECTIVE_END",
            Record::RmaGroupSync { .. } => "RMA_GROUP_SYNC",
            Record::RmaRequestLock { .. } => "RMA_REQUEST_LOCK",
            Record::RmaAcquireLock { .. } => "RMA_ACQUIRE_LOCK",
            Record::RmaReleaseLock { .. } => "RMA_RELEASE_LOCK",
            Record::RmaSync { .. } => "RMA_SYNC",
            Record::RmaPut { .. } => "RMA_PUT",
            Record::RmaGet { .. } => "RMA_GET",
            Record::RmaAtomic { .. } => "RMA_ATOMIC",
            Record::RmaOpCompleteBlocking { .. } => "RMA_OP_COMPLETE_BLOCKING",
            Record::RmaOpCompleteNonBlocking { .. } => "RMA_OP_COMPLETE_NON_BLOCKING",
            Record::RmaOpTest { .. } => "RMA_OP_TEST",
            Record::RmaOpCompleteRemote { .. } => "RMA_OP_COMPLETE_REMOTE",
            Record::Other { kind } => kind,
        }
    }
}

/// An attribute's value on an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrValue {
    /// `OTF2_TYPE_UINT64`.
    U64(u64),
    /// `OTF2_TYPE_INT64`.
    I64(i64),
    /// `OTF2_TYPE_SOURCE_CODE_LOCATION`: a source code location definition.
    SourceCodeLocation(u32),
    /// Another type (read, not interpreted).
    Other,
}

/// An attribute on an event: which (an attribute definition) and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    /// The attribute definition's reference.
    pub attribute: u32,
    /// Its value.
    pub value: AttrValue,
}
