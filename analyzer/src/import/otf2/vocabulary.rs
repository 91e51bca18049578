//! What overlap's OTF2 archives say beyond OTF2's own records, named once for the
//! writer ([`crate::merge::otf2`]) and the reader: the location groups' properties that
//! keep each rank's header, clock synchronisations and footer, the event attributes
//! that keep a call's arguments OTF2's records have no field for, how locations are
//! numbered, and which OTF2 collective operation each MPI collective is.
//!
//! Other writers' archives (Score-P) have none of these: they are read from OTF2's
//! records alone, and what those do not carry is unknown.

use overlap_format::schema::Op;
use overlap_otf2::{collective_op, region_role};

/// The rank's header, JSON ([`overlap_format::schema::Header`]).
pub const HEADER: &str = "OVERLAP::HEADER";
/// The rank's clock synchronisations, JSON (a list of `ClockSync`).
pub const CLOCK_SYNCS: &str = "OVERLAP::CLOCK_SYNCS";
/// The rank's footer, JSON; absent when its file had none (the rank was cut short).
pub const FOOTER: &str = "OVERLAP::FOOTER";
/// The rank's thread names, JSON (by tid).
pub const THREADS: &str = "OVERLAP::THREADS";
/// The source sites its calls name, JSON (a list of `SourceSite`).
pub const SITES: &str = "OVERLAP::SITES";
/// What the preload counted besides its calls, JSON (`CallCounts`).
pub const CALL_COUNTS: &str = "OVERLAP::CALL_COUNTS";
/// The call paths its calls name, JSON (a list of `CallPath`).
pub const CALL_PATHS: &str = "OVERLAP::CALL_PATHS";
/// Its in-flight dumps, JSON (a list of `InFlightDump`).
pub const IN_FLIGHT: &str = "OVERLAP::IN_FLIGHT";
/// The buffers its compute spans declared, JSON (a list of `SpanBuffers`, each distinct
/// one once: a span names its own by place, [`CallAttr::SpanBuffers`]).
pub const SPAN_BUFFERS: &str = "OVERLAP::SPAN_BUFFERS";
/// The groups its Win_start and Win_post calls named, JSON (a list of lists of world
/// ranks, each distinct one once: a call names its own by place, [`CallAttr::Group`]).
pub const GROUPS: &str = "OVERLAP::GROUPS";
/// The region names its Pcontrol calls gave, JSON (a list, each distinct one once: a
/// call names its own by place, [`CallAttr::Region`]).
pub const REGIONS: &str = "OVERLAP::PCONTROL_REGIONS";
/// "true" when part of its file was corrupt.
pub const DAMAGED: &str = "OVERLAP::DAMAGED";

/// The attributes an overlap archive puts on the `Enter` of an MPI call: the call's
/// arguments, in the form of its rank file (world ranks, overlap's communicator ids);
/// and on the `Enter` of a compute span, the buffers it declared. `Signed` ones are
/// `INT64`, the others `UINT64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CallAttr {
    /// The peer the call named (a receive's requested source, wildcards included).
    Peer,
    /// The tag it named.
    Tag,
    /// Its bytes (a receive's capacity).
    Bytes,
    /// Its communicator id.
    Comm,
    /// Its buffer's address.
    Buf,
    /// Its buffer's length.
    BufLen,
    /// The request it created.
    Request,
    /// Sendrecv's receive half: its source.
    RecvPeer,
    /// Sendrecv's receive half: its tag.
    RecvTag,
    /// Sendrecv's receive buffer.
    RecvBuf,
    /// Sendrecv's receive buffer's length.
    RecvBufLen,
    /// A collective's bytes sent.
    SendBytes,
    /// A collective's bytes received.
    RecvBytes,
    /// A rooted collective's root (world rank).
    Root,
    /// Where the call was made from (a code address, or a site's id).
    Site,
    /// A window call's window id.
    Win,
    /// Win_lock: exclusive (1) or shared (0).
    Exclusive,
    /// Test: the flag it returned.
    Flag,
    /// Pcontrol: its level.
    Level,
    /// Start/Startall: the persistent request a started request came from (on the
    /// started request's `MpiIsend`/`MpiIrecvRequest`).
    Persistent,
    /// A compute span: the place of the buffers it declared in its rank's
    /// [`SPAN_BUFFERS`].
    SpanBuffers,
    /// Win_start / Win_post: the place of the group it named in its rank's [`GROUPS`].
    Group,
    /// Pcontrol: the place of the region it named in its rank's [`REGIONS`].
    Region,
    /// A receive's completion (its `MpiRecv`/`MpiIrecv`): the source its status gave
    /// when it is no rank of the communicator OTF2 could name (`MPI_PROC_NULL`).
    Source,
}

impl CallAttr {
    /// Every attribute, its reference in the archive being its place here.
    pub const ALL: [CallAttr; 24] = [
        CallAttr::Peer,
        CallAttr::Tag,
        CallAttr::Bytes,
        CallAttr::Comm,
        CallAttr::Buf,
        CallAttr::BufLen,
        CallAttr::Request,
        CallAttr::RecvPeer,
        CallAttr::RecvTag,
        CallAttr::RecvBuf,
        CallAttr::RecvBufLen,
        CallAttr::SendBytes,
        CallAttr::RecvBytes,
        CallAttr::Root,
        CallAttr::Site,
        CallAttr::Win,
        CallAttr::Exclusive,
        CallAttr::Flag,
        CallAttr::Level,
        CallAttr::Persistent,
        CallAttr::SpanBuffers,
        CallAttr::Group,
        CallAttr::Region,
        CallAttr::Source,
    ];

    /// Its name in the archive.
    pub fn name(self) -> &'static str {
        match self {
            CallAttr::Peer => "overlap::peer",
            CallAttr::Tag => "overlap::tag",
            CallAttr::Bytes => "overlap::bytes",
            CallAttr::Comm => "overlap::comm",
            CallAttr::Buf => "overlap::buf",
            CallAttr::BufLen => "overlap::buf_len",
            CallAttr::Request => "overlap::request",
            CallAttr::RecvPeer => "overlap::recv_peer",
            CallAttr::RecvTag => "overlap::recv_tag",
            CallAttr::RecvBuf => "overlap::recv_buf",
            CallAttr::RecvBufLen => "overlap::recv_buf_len",
            CallAttr::SendBytes => "overlap::send_bytes",
            CallAttr::RecvBytes => "overlap::recv_bytes",
            CallAttr::Root => "overlap::root",
            CallAttr::Site => "overlap::site",
            CallAttr::Win => "overlap::win",
            CallAttr::Exclusive => "overlap::exclusive",
            CallAttr::Flag => "overlap::flag",
            CallAttr::Level => "overlap::level",
            CallAttr::Persistent => "overlap::persistent",
            CallAttr::SpanBuffers => "overlap::span_buffers",
            CallAttr::Group => "overlap::group",
            CallAttr::Region => "overlap::region",
            CallAttr::Source => "overlap::source",
        }
    }

    /// True for the signed ones (ranks, tags, levels: MPI's wildcards are negative).
    pub fn signed(self) -> bool {
        matches!(
            self,
            CallAttr::Peer
                | CallAttr::Tag
                | CallAttr::RecvPeer
                | CallAttr::RecvTag
                | CallAttr::Root
                | CallAttr::Level
                | CallAttr::Source
        )
    }

    /// The attribute of that name.
    pub fn named(name: &str) -> Option<CallAttr> {
        CallAttr::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// The location of thread `tid` of `rank` in an overlap archive.
pub fn location(rank: u32, tid: u32) -> u64 {
    (u64::from(rank) << 32) | u64::from(tid)
}

/// OTF2's collective operation for an op that performs (or starts) a collective: the
/// communicators' creation and freeing are OTF2's handle operations; the windows'
/// collectives (creation, fence, freeing) have RMA records in OTF2, not MPI ones.
pub fn collective_op_of(op: Op) -> Option<u8> {
    use collective_op as c;
    Some(match op.blocking_form()? {
        Op::Barrier => c::BARRIER,
        Op::Bcast => c::BCAST,
        Op::Gather => c::GATHER,
        Op::Gatherv => c::GATHERV,
        Op::Scatter => c::SCATTER,
        Op::Scatterv => c::SCATTERV,
        Op::Allgather | Op::NeighborAllgather => c::ALLGATHER,
        Op::Allgatherv | Op::NeighborAllgatherv => c::ALLGATHERV,
        Op::Alltoall | Op::NeighborAlltoall => c::ALLTOALL,
        Op::Alltoallv | Op::NeighborAlltoallv => c::ALLTOALLV,
        Op::Alltoallw | Op::NeighborAlltoallw => c::ALLTOALLW,
        Op::Allreduce => c::ALLREDUCE,
        Op::Reduce => c::REDUCE,
        Op::ReduceScatter => c::REDUCE_SCATTER,
        Op::ReduceScatterBlock => c::REDUCE_SCATTER_BLOCK,
        Op::Scan => c::SCAN,
        Op::Exscan => c::EXSCAN,
        Op::CommDup
        | Op::CommDupWithInfo
        | Op::CommSplit
        | Op::CommSplitType
        | Op::CommCreate
        | Op::CartCreate
        | Op::CartSub => c::CREATE_HANDLE,
        Op::CommFree => c::DESTROY_HANDLE,
        _ => return None,
    })
}

/// The region role of an MPI call's region.
pub fn role_of(op: Op) -> u8 {
    use overlap_format::schema::{CollectivePattern as P, OpClass};
    match op.class() {
        OpClass::BlockingPointToPoint | OpClass::Post | OpClass::Completion | OpClass::Local => {
            region_role::POINT2POINT
        }
        OpClass::OneSided | OpClass::OneSidedSync => region_role::RMA,
        OpClass::Collective => match op.blocking_form().and_then(Op::collective_pattern) {
            Some(P::Barrier) => region_role::BARRIER,
            Some(P::OneToAll) => region_role::COLL_ONE2ALL,
            Some(P::AllToOne) => region_role::COLL_ALL2ONE,
            Some(P::AllToAll) => region_role::COLL_ALL2ALL,
            _ => region_role::COLL_OTHER,
        },
        OpClass::Environment => region_role::FUNCTION,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attribute_has_its_own_name_and_is_found_by_it() {
        let mut names: Vec<&str> = CallAttr::ALL.iter().map(|a| a.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CallAttr::ALL.len());
        for a in CallAttr::ALL {
            assert_eq!(CallAttr::named(a.name()), Some(a));
        }
        assert_eq!(CallAttr::named("overlap::nothing"), None);
    }

    #[test]
    fn every_collective_has_its_otf2_operation() {
        use overlap_format::schema::OpClass;
        for op in Op::ALL.iter().copied() {
            let collective = op
                .blocking_form()
                .is_some_and(|b| b.collective_pattern().is_some())
                && !op.is_window_call();
            if collective {
                assert!(collective_op_of(op).is_some(), "{op:?}");
            }
            if op.class() == OpClass::Collective {
                assert_ne!(role_of(op), region_role::POINT2POINT, "{op:?}");
            }
        }
        assert_eq!(
            collective_op_of(Op::Iallreduce),
            Some(collective_op::ALLREDUCE)
        );
        assert_eq!(collective_op_of(Op::BcastInit), Some(collective_op::BCAST));
        assert_eq!(collective_op_of(Op::Isend), None);
        assert_eq!(role_of(Op::Barrier), region_role::BARRIER);
        assert_eq!(role_of(Op::Put), region_role::RMA);
    }

    #[test]
    fn locations_keep_rank_and_thread() {
        assert_eq!(location(3, 2), (3 << 32) | 2);
        assert_ne!(location(0, 1), location(1, 0));
    }
}
