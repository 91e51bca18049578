//! The event records overlap reads and writes, as plain Rust data: region enter and
//! leave, and the MPI records of point-to-point, requests and collectives. Ranks in
//! them are ranks of their communicator, as OTF2 defines; times are the location's
//! ticks. Records of other kinds are read as [`Record::Other`] with their name.

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
