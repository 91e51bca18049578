//! Which MPI function a call event is. Kinds are an enum; their MPI names appear only here.

mod negligible;
mod roles;
mod waiting;

pub use negligible::negligible_mpi_call;
pub use waiting::Waiting;

/// Declares [`Op`] with each variant's MPI name and role, so that the three never drift
/// apart.
macro_rules! ops {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, $class:ident;)+) => {
        /// An MPI function that overlap records. The wire name is the MPI function's name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Op {
            $($(#[$doc])* $variant,)+
        }

        impl Op {
            /// Every op, in declaration order.
            pub const ALL: &'static [Op] = &[$(Op::$variant,)+];

            /// The op's code in the binary stream: its place in this list. New ops go at
            /// the end of the list, so that a code never changes meaning.
            #[inline]
            pub fn code(self) -> u16 {
                self as u16
            }

            /// The op with that code, if this build knows it.
            pub fn from_code(code: u16) -> Option<Op> {
                Op::ALL.get(usize::from(code)).copied()
            }

            /// The MPI function's name, which is the event's name on the wire.
            pub fn mpi_name(self) -> &'static str {
                match self {
                    $(Op::$variant => $name,)+
                }
            }

            /// The op with that MPI name, if overlap knows it.
            pub fn from_mpi_name(name: &str) -> Option<Op> {
                match name {
                    $($name => Some(Op::$variant),)+
                    _ => None,
                }
            }

            /// The role the call plays.
            pub fn class(self) -> OpClass {
                match self {
                    $(Op::$variant => OpClass::$class,)+
                }
            }
        }
    };
}

ops! {
    /// `MPI_Init`.
    Init = "MPI_Init", Environment;
    /// `MPI_Init_thread`.
    InitThread = "MPI_Init_thread", Environment;
    /// `MPI_Finalize`.
    Finalize = "MPI_Finalize", Environment;
    /// `MPI_Abort`: the program gave up; the trace ends here.
    Abort = "MPI_Abort", Environment;
    /// `MPI_Send`: blocking standard send.
    Send = "MPI_Send", BlockingPointToPoint;
    /// `MPI_Ssend`: blocking synchronous send (returns once the receive has started).
    Ssend = "MPI_Ssend", BlockingPointToPoint;
    /// `MPI_Bsend`: blocking buffered send.
    Bsend = "MPI_Bsend", BlockingPointToPoint;
    /// `MPI_Rsend`: blocking ready send.
    Rsend = "MPI_Rsend", BlockingPointToPoint;
    /// `MPI_Recv`: blocking receive.
    Recv = "MPI_Recv", BlockingPointToPoint;
    /// `MPI_Sendrecv`: blocking send and receive in one call.
    Sendrecv = "MPI_Sendrecv", BlockingPointToPoint;
    /// `MPI_Sendrecv_replace`: Sendrecv with one buffer.
    SendrecvReplace = "MPI_Sendrecv_replace", BlockingPointToPoint;
    /// `MPI_Probe`: waits until a matching message can be received.
    Probe = "MPI_Probe", BlockingPointToPoint;
    /// `MPI_Iprobe`: asks, without waiting, whether a matching message can be received.
    Iprobe = "MPI_Iprobe", Local;
    /// `MPI_Isend`: posts a send, completed later by a Wait or Test.
    Isend = "MPI_Isend", Post;
    /// `MPI_Issend`: posts a synchronous send.
    Issend = "MPI_Issend", Post;
    /// `MPI_Ibsend`: posts a buffered send.
    Ibsend = "MPI_Ibsend", Post;
    /// `MPI_Irsend`: posts a ready send.
    Irsend = "MPI_Irsend", Post;
    /// `MPI_Irecv`: posts a receive, completed later by a Wait or Test.
    Irecv = "MPI_Irecv", Post;
    /// `MPI_Send_init`: creates an inactive persistent send request.
    SendInit = "MPI_Send_init", Local;
    /// `MPI_Recv_init`: creates an inactive persistent receive request.
    RecvInit = "MPI_Recv_init", Local;
    /// `MPI_Start`: starts one persistent request.
    Start = "MPI_Start", Post;
    /// `MPI_Startall`: starts several persistent requests.
    Startall = "MPI_Startall", Post;
    /// `MPI_Request_free`: lets go of a request without waiting for it.
    RequestFree = "MPI_Request_free", Local;
    /// `MPI_Wait`: waits for one request.
    Wait = "MPI_Wait", Completion;
    /// `MPI_Waitall`: waits for all requests of a list.
    Waitall = "MPI_Waitall", Completion;
    /// `MPI_Waitany`: waits for one request of a list.
    Waitany = "MPI_Waitany", Completion;
    /// `MPI_Waitsome`: waits for at least one request of a list.
    Waitsome = "MPI_Waitsome", Completion;
    /// `MPI_Test`: checks one request without blocking.
    Test = "MPI_Test", Completion;
    /// `MPI_Testall`: checks whether all requests of a list are done.
    Testall = "MPI_Testall", Completion;
    /// `MPI_Testany`: checks whether any request of a list is done.
    Testany = "MPI_Testany", Completion;
    /// `MPI_Testsome`: completes the requests of a list that are done.
    Testsome = "MPI_Testsome", Completion;
    /// `MPI_Barrier`.
    Barrier = "MPI_Barrier", Collective;
    /// `MPI_Bcast`.
    Bcast = "MPI_Bcast", Collective;
    /// `MPI_Reduce`.
    Reduce = "MPI_Reduce", Collective;
    /// `MPI_Allreduce`.
    Allreduce = "MPI_Allreduce", Collective;
    /// `MPI_Allgather`.
    Allgather = "MPI_Allgather", Collective;
    /// `MPI_Allgatherv`.
    Allgatherv = "MPI_Allgatherv", Collective;
    /// `MPI_Alltoall`.
    Alltoall = "MPI_Alltoall", Collective;
    /// `MPI_Alltoallv`.
    Alltoallv = "MPI_Alltoallv", Collective;
    /// `MPI_Gather`.
    Gather = "MPI_Gather", Collective;
    /// `MPI_Gatherv`.
    Gatherv = "MPI_Gatherv", Collective;
    /// `MPI_Scatter`.
    Scatter = "MPI_Scatter", Collective;
    /// `MPI_Scatterv`.
    Scatterv = "MPI_Scatterv", Collective;
    /// `MPI_Ibarrier`: posts a barrier, completed later by a Wait or Test.
    Ibarrier = "MPI_Ibarrier", Post;
    /// `MPI_Iallreduce`: posts an allreduce, completed later by a Wait or Test.
    Iallreduce = "MPI_Iallreduce", Post;
    /// `MPI_Alltoallw`.
    Alltoallw = "MPI_Alltoallw", Collective;
    /// `MPI_Reduce_scatter`.
    ReduceScatter = "MPI_Reduce_scatter", Collective;
    /// `MPI_Reduce_scatter_block`.
    ReduceScatterBlock = "MPI_Reduce_scatter_block", Collective;
    /// `MPI_Scan`: inclusive prefix reduction.
    Scan = "MPI_Scan", Collective;
    /// `MPI_Exscan`: exclusive prefix reduction.
    Exscan = "MPI_Exscan", Collective;
    /// `MPI_Neighbor_allgather`: with the neighbours of a topology.
    NeighborAllgather = "MPI_Neighbor_allgather", Collective;
    /// `MPI_Neighbor_allgatherv`.
    NeighborAllgatherv = "MPI_Neighbor_allgatherv", Collective;
    /// `MPI_Neighbor_alltoall`.
    NeighborAlltoall = "MPI_Neighbor_alltoall", Collective;
    /// `MPI_Neighbor_alltoallv`.
    NeighborAlltoallv = "MPI_Neighbor_alltoallv", Collective;
    /// `MPI_Neighbor_alltoallw`.
    NeighborAlltoallw = "MPI_Neighbor_alltoallw", Collective;
    /// `MPI_Ibcast`: posts the collective, completed later by a Wait or Test.
    Ibcast = "MPI_Ibcast", Post;
    /// `MPI_Ireduce`: posts the collective, completed later by a Wait or Test.
    Ireduce = "MPI_Ireduce", Post;
    /// `MPI_Iallgather`: posts the collective, completed later by a Wait or Test.
    Iallgather = "MPI_Iallgather", Post;
    /// `MPI_Iallgatherv`: posts the collective, completed later by a Wait or Test.
    Iallgatherv = "MPI_Iallgatherv", Post;
    /// `MPI_Ialltoall`: posts the collective, completed later by a Wait or Test.
    Ialltoall = "MPI_Ialltoall", Post;
    /// `MPI_Ialltoallv`: posts the collective, completed later by a Wait or Test.
    Ialltoallv = "MPI_Ialltoallv", Post;
    /// `MPI_Ialltoallw`: posts the collective, completed later by a Wait or Test.
    Ialltoallw = "MPI_Ialltoallw", Post;
    /// `MPI_Igather`: posts the collective, completed later by a Wait or Test.
    Igather = "MPI_Igather", Post;
    /// `MPI_Igatherv`: posts the collective, completed later by a Wait or Test.
    Igatherv = "MPI_Igatherv", Post;
    /// `MPI_Iscatter`: posts the collective, completed later by a Wait or Test.
    Iscatter = "MPI_Iscatter", Post;
    /// `MPI_Iscatterv`: posts the collective, completed later by a Wait or Test.
    Iscatterv = "MPI_Iscatterv", Post;
    /// `MPI_Ireduce_scatter`: posts the collective, completed later by a Wait or Test.
    IreduceScatter = "MPI_Ireduce_scatter", Post;
    /// `MPI_Ireduce_scatter_block`: posts the collective, completed later by a Wait or Test.
    IreduceScatterBlock = "MPI_Ireduce_scatter_block", Post;
    /// `MPI_Iscan`: posts the collective, completed later by a Wait or Test.
    Iscan = "MPI_Iscan", Post;
    /// `MPI_Iexscan`: posts the collective, completed later by a Wait or Test.
    Iexscan = "MPI_Iexscan", Post;
    /// `MPI_Ineighbor_allgather`: posts the collective, completed later by a Wait or Test.
    IneighborAllgather = "MPI_Ineighbor_allgather", Post;
    /// `MPI_Ineighbor_allgatherv`: posts the collective, completed later by a Wait or Test.
    IneighborAllgatherv = "MPI_Ineighbor_allgatherv", Post;
    /// `MPI_Ineighbor_alltoall`: posts the collective, completed later by a Wait or Test.
    IneighborAlltoall = "MPI_Ineighbor_alltoall", Post;
    /// `MPI_Ineighbor_alltoallv`: posts the collective, completed later by a Wait or Test.
    IneighborAlltoallv = "MPI_Ineighbor_alltoallv", Post;
    /// `MPI_Ineighbor_alltoallw`: posts the collective, completed later by a Wait or Test.
    IneighborAlltoallw = "MPI_Ineighbor_alltoallw", Post;
    /// `MPI_Barrier_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    BarrierInit = "MPI_Barrier_init", Local;
    /// `MPI_Bcast_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    BcastInit = "MPI_Bcast_init", Local;
    /// `MPI_Reduce_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    ReduceInit = "MPI_Reduce_init", Local;
    /// `MPI_Allreduce_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    AllreduceInit = "MPI_Allreduce_init", Local;
    /// `MPI_Allgather_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    AllgatherInit = "MPI_Allgather_init", Local;
    /// `MPI_Allgatherv_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    AllgathervInit = "MPI_Allgatherv_init", Local;
    /// `MPI_Alltoall_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    AlltoallInit = "MPI_Alltoall_init", Local;
    /// `MPI_Alltoallv_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    AlltoallvInit = "MPI_Alltoallv_init", Local;
    /// `MPI_Alltoallw_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    AlltoallwInit = "MPI_Alltoallw_init", Local;
    /// `MPI_Gather_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    GatherInit = "MPI_Gather_init", Local;
    /// `MPI_Gatherv_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    GathervInit = "MPI_Gatherv_init", Local;
    /// `MPI_Scatter_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    ScatterInit = "MPI_Scatter_init", Local;
    /// `MPI_Scatterv_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    ScattervInit = "MPI_Scatterv_init", Local;
    /// `MPI_Reduce_scatter_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    ReduceScatterInit = "MPI_Reduce_scatter_init", Local;
    /// `MPI_Reduce_scatter_block_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    ReduceScatterBlockInit = "MPI_Reduce_scatter_block_init", Local;
    /// `MPI_Scan_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    ScanInit = "MPI_Scan_init", Local;
    /// `MPI_Exscan_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    ExscanInit = "MPI_Exscan_init", Local;
    /// `MPI_Neighbor_allgather_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    NeighborAllgatherInit = "MPI_Neighbor_allgather_init", Local;
    /// `MPI_Neighbor_allgatherv_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    NeighborAllgathervInit = "MPI_Neighbor_allgatherv_init", Local;
    /// `MPI_Neighbor_alltoall_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    NeighborAlltoallInit = "MPI_Neighbor_alltoall_init", Local;
    /// `MPI_Neighbor_alltoallv_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    NeighborAlltoallvInit = "MPI_Neighbor_alltoallv_init", Local;
    /// `MPI_Neighbor_alltoallw_init` (MPI-4): creates an inactive persistent collective request, started by Start.
    NeighborAlltoallwInit = "MPI_Neighbor_alltoallw_init", Local;
    /// `MPI_Comm_dup`: collective over the communicator it copies.
    CommDup = "MPI_Comm_dup", Collective;
    /// `MPI_Comm_dup_with_info`: collective over the communicator it copies.
    CommDupWithInfo = "MPI_Comm_dup_with_info", Collective;
    /// `MPI_Comm_split`: collective over the parent communicator.
    CommSplit = "MPI_Comm_split", Collective;
    /// `MPI_Comm_split_type`: collective over the parent communicator.
    CommSplitType = "MPI_Comm_split_type", Collective;
    /// `MPI_Comm_create`: collective over the parent communicator.
    CommCreate = "MPI_Comm_create", Collective;
    /// `MPI_Cart_create`: collective over the parent communicator.
    CartCreate = "MPI_Cart_create", Collective;
    /// `MPI_Cart_sub`: collective over the Cartesian communicator.
    CartSub = "MPI_Cart_sub", Collective;
    /// `MPI_Comm_free`: marks a communicator for deallocation (no synchronisation).
    CommFree = "MPI_Comm_free", Local;
    /// `MPI_Win_create`: collective over the communicator; creates a window.
    WinCreate = "MPI_Win_create", Collective;
    /// `MPI_Win_allocate`: collective; allocates memory and a window.
    WinAllocate = "MPI_Win_allocate", Collective;
    /// `MPI_Win_allocate_shared`: collective; a shared-memory window.
    WinAllocateShared = "MPI_Win_allocate_shared", Collective;
    /// `MPI_Win_create_dynamic`: collective; a window memory is attached to later.
    WinCreateDynamic = "MPI_Win_create_dynamic", Collective;
    /// `MPI_Win_free`: collective over the window's group.
    WinFree = "MPI_Win_free", Collective;
    /// `MPI_Win_fence`: collective synchronisation of a window (active target).
    WinFence = "MPI_Win_fence", Collective;
    /// `MPI_Put`: writes to a target's window; returns at once.
    Put = "MPI_Put", OneSided;
    /// `MPI_Get`: reads from a target's window; returns at once.
    Get = "MPI_Get", OneSided;
    /// `MPI_Accumulate`: combines into a target's window.
    Accumulate = "MPI_Accumulate", OneSided;
    /// `MPI_Get_accumulate`: fetches and combines.
    GetAccumulate = "MPI_Get_accumulate", OneSided;
    /// `MPI_Fetch_and_op`: one-element Get_accumulate.
    FetchAndOp = "MPI_Fetch_and_op", OneSided;
    /// `MPI_Compare_and_swap`: atomic compare and swap on a target.
    CompareAndSwap = "MPI_Compare_and_swap", OneSided;
    /// `MPI_Rput`: Put with a request, completed by a Wait or Test.
    Rput = "MPI_Rput", Post;
    /// `MPI_Rget`: Get with a request.
    Rget = "MPI_Rget", Post;
    /// `MPI_Raccumulate`: Accumulate with a request.
    Raccumulate = "MPI_Raccumulate", Post;
    /// `MPI_Rget_accumulate`: Get_accumulate with a request.
    RgetAccumulate = "MPI_Rget_accumulate", Post;
    /// `MPI_Win_start`: opens an access epoch to a group of targets (may wait for their Post).
    WinStart = "MPI_Win_start", OneSidedSync;
    /// `MPI_Win_complete`: closes an access epoch (may wait for its operations).
    WinComplete = "MPI_Win_complete", OneSidedSync;
    /// `MPI_Win_post`: opens an exposure epoch to a group of origins.
    WinPost = "MPI_Win_post", OneSidedSync;
    /// `MPI_Win_wait`: closes an exposure epoch, waiting for every origin's Complete.
    WinWait = "MPI_Win_wait", OneSidedSync;
    /// `MPI_Win_test`: Win_wait that does not block.
    WinTest = "MPI_Win_test", OneSidedSync;
    /// `MPI_Win_lock`: opens a passive-target epoch to one target.
    WinLock = "MPI_Win_lock", OneSidedSync;
    /// `MPI_Win_unlock`: closes it, completing its operations.
    WinUnlock = "MPI_Win_unlock", OneSidedSync;
    /// `MPI_Win_lock_all`: shared lock on every target.
    WinLockAll = "MPI_Win_lock_all", OneSidedSync;
    /// `MPI_Win_unlock_all`.
    WinUnlockAll = "MPI_Win_unlock_all", OneSidedSync;
    /// `MPI_Win_flush`: completes the operations to one target.
    WinFlush = "MPI_Win_flush", OneSidedSync;
    /// `MPI_Win_flush_all`: completes the operations to every target.
    WinFlushAll = "MPI_Win_flush_all", OneSidedSync;
    /// `MPI_Win_flush_local`: local completion to one target.
    WinFlushLocal = "MPI_Win_flush_local", OneSidedSync;
    /// `MPI_Win_flush_local_all`.
    WinFlushLocalAll = "MPI_Win_flush_local_all", OneSidedSync;
    /// `MPI_Win_sync`: synchronises the public and private copies of a window.
    WinSync = "MPI_Win_sync", OneSidedSync;
    /// `MPI_Isendrecv` (MPI 4): posts a send and a receive completed by one request.
    Isendrecv = "MPI_Isendrecv", Post;
    /// `MPI_Isendrecv_replace` (MPI 4): Isendrecv with one buffer.
    IsendrecvReplace = "MPI_Isendrecv_replace", Post;
    /// `MPI_Mprobe`: waits for a matching message and takes it out of matching, for a
    /// later Mrecv or Imrecv.
    Mprobe = "MPI_Mprobe", BlockingPointToPoint;
    /// `MPI_Improbe`: Mprobe that does not block.
    Improbe = "MPI_Improbe", Local;
    /// `MPI_Mrecv`: receives the message an Mprobe or Improbe matched.
    Mrecv = "MPI_Mrecv", BlockingPointToPoint;
    /// `MPI_Imrecv`: posts the receive of the message an Mprobe or Improbe matched.
    Imrecv = "MPI_Imrecv", Post;
    /// `MPI_Bsend_init`: creates an inactive persistent buffered send request.
    BsendInit = "MPI_Bsend_init", Local;
    /// `MPI_Ssend_init`: creates an inactive persistent synchronous send request.
    SsendInit = "MPI_Ssend_init", Local;
    /// `MPI_Rsend_init`: creates an inactive persistent ready send request.
    RsendInit = "MPI_Rsend_init", Local;
    /// `MPI_Pcontrol`: the program marks a region (IPM: level 1 enters the region its
    /// name names, -1 leaves it) or turns profiling on and off (mpiP: levels 1 and 0);
    /// see [`crate::region`].
    Pcontrol = "MPI_Pcontrol", Local;
}

/// What role a call plays for overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// Sets up or ends MPI (Init, Finalize, Abort).
    Environment,
    /// Starts a non-blocking operation and returns at once (Isend, Irecv, Start, Ibarrier...).
    Post,
    /// Returns at once without communicating (Send_init, Request_free, Iprobe).
    Local,
    /// Completes requests posted earlier (the Wait and Test families).
    Completion,
    /// Point-to-point call that returns only when its own transfer is done, or, for
    /// Probe, when a message has arrived.
    BlockingPointToPoint,
    /// A blocking call every rank of a communicator takes part in (Barrier, Allreduce...,
    /// and the window calls that are collective: Win_create, Win_free, Win_fence).
    Collective,
    /// One-sided communication that returns at once (Put, Get, Accumulate...): its
    /// transfer completes at the epoch's synchronisation.
    OneSided,
    /// One-sided synchronisation other than the fence (Win_start/complete/post/wait,
    /// locks, flushes): may wait for other ranks or for pending operations.
    OneSidedSync,
}

/// Who waits for whom in a blocking collective (Scalasca's collective wait states).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollectivePattern {
    /// Nobody leaves before everybody entered (Barrier).
    Barrier,
    /// Every rank needs every rank's data (Allreduce, Allgather, Alltoall).
    AllToAll,
    /// The root's data goes to every rank (Bcast, Scatter): a rank that enters before
    /// the root waits for it.
    OneToAll,
    /// Every rank's data goes to the root (Reduce, Gather): the root waits for the last
    /// rank to enter.
    AllToOne,
    /// Rank i needs the data of ranks 0..i (Scan, Exscan): Scalasca's Early Scan.
    Prefix,
    /// Each rank exchanges with its topology neighbours only (Neighbor_*): who waits
    /// for whom depends on the topology, which is not recorded.
    Neighborhood,
}

/// An op crosses between processes (the analysis's workers) as its code, which never
/// changes meaning ([`Op::code`]).
impl serde::Serialize for Op {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u16(self.code())
    }
}

impl<'de> serde::Deserialize<'de> for Op {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Op, D::Error> {
        let code = <u16 as serde::Deserialize>::deserialize(d)?;
        Op::from_code(code)
            .ok_or_else(|| serde::de::Error::custom(format!("no MPI call has code {code}")))
    }
}

/// The kind of request a post or persistent init creates, as the completing call sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum RequestKind {
    /// A point-to-point send.
    Send,
    /// A point-to-point receive.
    Recv,
    /// A non-blocking collective.
    Collective,
    /// A request-based one-sided operation (Rput, Rget, Raccumulate, Rget_accumulate).
    OneSided,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binary stream records ops by code: these must never change (new ops go at the
    /// end of the list).
    #[test]
    fn codes_are_stable() {
        assert_eq!(Op::Init.code(), 0);
        assert_eq!(Op::Isend.code(), 13);
        assert_eq!(Op::Irecv.code(), 17);
        assert_eq!(Op::WinSync.code(), 134);
        for (i, op) in Op::ALL.iter().enumerate() {
            assert_eq!(Op::from_code(i as u16), Some(*op));
        }
        assert_eq!(Op::from_code(Op::ALL.len() as u16), None);
    }

    #[test]
    fn names_round_trip_and_are_distinct() {
        for &op in Op::ALL {
            assert_eq!(Op::from_mpi_name(op.mpi_name()), Some(op));
        }
        assert_eq!(Op::from_mpi_name("MPI_Frobnicate"), None);
        let mut names: Vec<_> = Op::ALL.iter().map(|o| o.mpi_name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Op::ALL.len());
    }

    #[test]
    fn every_blocking_collective_has_a_pattern() {
        for &op in Op::ALL {
            assert_eq!(
                op.class() == OpClass::Collective,
                op.collective_pattern().is_some(),
                "{op:?}"
            );
            if op.request_kind().is_some() {
                assert!(
                    matches!(op.class(), OpClass::Post | OpClass::Local),
                    "{op:?}"
                );
            }
            // Every post creates a request of a known kind, but Start/Startall, whose
            // requests take the kind of what they start.
            if op.class() == OpClass::Post && !matches!(op, Op::Start | Op::Startall) {
                assert!(op.request_kind().is_some(), "{op:?}");
            }
            if op.is_persistent_collective() {
                assert_eq!(op.class(), OpClass::Local, "{op:?}");
            }
            if op.is_collective_post() {
                assert_eq!(op.class(), OpClass::Post, "{op:?}");
            }
            // Every collective form has a blocking form with a pattern.
            if op.is_collective_post() || op.is_persistent_collective() {
                let blocking = op.blocking_form().expect("a blocking form");
                assert_eq!(blocking.class(), OpClass::Collective, "{op:?}");
                assert!(blocking.collective_pattern().is_some(), "{op:?}");
            }
        }
    }
}
