//! What each call does, asked of [`Op`]: which calls send, receive, post which kind of
//! request, wait for others, or act on a window. The list of calls and their classes is
//! declared in the parent module; these are the questions the recorder, the matcher and
//! the analysis ask of it.

use super::{CollectivePattern, Op, OpClass, RequestKind};

impl Op {
    /// True for calls that send a message to `peer` (blocking or not, alone or paired).
    pub fn sends(self) -> bool {
        matches!(
            self,
            Op::Send
                | Op::Ssend
                | Op::Bsend
                | Op::Rsend
                | Op::Isend
                | Op::Issend
                | Op::Ibsend
                | Op::Irsend
                | Op::Sendrecv
                | Op::SendrecvReplace
                | Op::Isendrecv
                | Op::IsendrecvReplace
        )
    }

    /// True for blocking calls that receive a message (their status is recorded as a
    /// completion without a request).
    pub fn receives_blocking(self) -> bool {
        matches!(
            self,
            Op::Recv | Op::Sendrecv | Op::SendrecvReplace | Op::Mrecv
        )
    }

    /// True for Sendrecv and Sendrecv_replace, whose receive half has its own peer and tag.
    pub fn is_sendrecv(self) -> bool {
        matches!(self, Op::Sendrecv | Op::SendrecvReplace)
    }

    /// True for the calls whose receive half has its own peer and tag: Sendrecv and
    /// Sendrecv_replace, and their non-blocking forms (whose request is the receive's).
    pub fn has_recv_half(self) -> bool {
        matches!(
            self,
            Op::Sendrecv | Op::SendrecvReplace | Op::Isendrecv | Op::IsendrecvReplace
        )
    }

    /// True for the blocking probes (Probe, Mprobe): they wait for a message but
    /// receive nothing.
    pub fn is_probe(self) -> bool {
        matches!(self, Op::Probe | Op::Mprobe)
    }

    /// What a post or persistent init creates; `None` for other calls and for Start and
    /// Startall, whose requests take the kind of the persistent request they start.
    pub fn request_kind(self) -> Option<RequestKind> {
        match self {
            Op::Isend
            | Op::Issend
            | Op::Ibsend
            | Op::Irsend
            | Op::SendInit
            | Op::BsendInit
            | Op::SsendInit
            | Op::RsendInit => Some(RequestKind::Send),
            // An Isendrecv's one request completes with the receive's status.
            Op::Irecv | Op::RecvInit | Op::Imrecv | Op::Isendrecv | Op::IsendrecvReplace => {
                Some(RequestKind::Recv)
            }
            Op::Rput | Op::Rget | Op::Raccumulate | Op::RgetAccumulate => {
                Some(RequestKind::OneSided)
            }
            op if op.is_collective_post() || op.is_persistent_collective() => {
                Some(RequestKind::Collective)
            }
            _ => None,
        }
    }

    /// True for the non-blocking collectives (Ibarrier, Ibcast, Ineighbor_alltoall...).
    pub fn is_collective_post(self) -> bool {
        matches!(
            self,
            Op::Ibarrier
                | Op::Iallreduce
                | Op::Ibcast
                | Op::Ireduce
                | Op::Iallgather
                | Op::Iallgatherv
                | Op::Ialltoall
                | Op::Ialltoallv
                | Op::Ialltoallw
                | Op::Igather
                | Op::Igatherv
                | Op::Iscatter
                | Op::Iscatterv
                | Op::IreduceScatter
                | Op::IreduceScatterBlock
                | Op::Iscan
                | Op::Iexscan
                | Op::IneighborAllgather
                | Op::IneighborAllgatherv
                | Op::IneighborAlltoall
                | Op::IneighborAlltoallv
                | Op::IneighborAlltoallw
        )
    }

    /// The blocking collective that a non-blocking (Ibcast) or persistent
    /// (Bcast_init) collective performs, and a blocking collective itself; `None` for
    /// other calls. Its [`Op::collective_pattern`] says who waits for whom.
    pub fn blocking_form(self) -> Option<Op> {
        match self {
            Op::Barrier | Op::Ibarrier | Op::BarrierInit => Some(Op::Barrier),
            Op::Bcast | Op::Ibcast | Op::BcastInit => Some(Op::Bcast),
            Op::Reduce | Op::Ireduce | Op::ReduceInit => Some(Op::Reduce),
            Op::Allreduce | Op::Iallreduce | Op::AllreduceInit => Some(Op::Allreduce),
            Op::Allgather | Op::Iallgather | Op::AllgatherInit => Some(Op::Allgather),
            Op::Allgatherv | Op::Iallgatherv | Op::AllgathervInit => Some(Op::Allgatherv),
            Op::Alltoall | Op::Ialltoall | Op::AlltoallInit => Some(Op::Alltoall),
            Op::Alltoallv | Op::Ialltoallv | Op::AlltoallvInit => Some(Op::Alltoallv),
            Op::Alltoallw | Op::Ialltoallw | Op::AlltoallwInit => Some(Op::Alltoallw),
            Op::Gather | Op::Igather | Op::GatherInit => Some(Op::Gather),
            Op::Gatherv | Op::Igatherv | Op::GathervInit => Some(Op::Gatherv),
            Op::Scatter | Op::Iscatter | Op::ScatterInit => Some(Op::Scatter),
            Op::Scatterv | Op::Iscatterv | Op::ScattervInit => Some(Op::Scatterv),
            Op::ReduceScatter | Op::IreduceScatter | Op::ReduceScatterInit => {
                Some(Op::ReduceScatter)
            }
            Op::ReduceScatterBlock | Op::IreduceScatterBlock | Op::ReduceScatterBlockInit => {
                Some(Op::ReduceScatterBlock)
            }
            Op::Scan | Op::Iscan | Op::ScanInit => Some(Op::Scan),
            Op::Exscan | Op::Iexscan | Op::ExscanInit => Some(Op::Exscan),
            Op::NeighborAllgather | Op::IneighborAllgather | Op::NeighborAllgatherInit => {
                Some(Op::NeighborAllgather)
            }
            Op::NeighborAllgatherv | Op::IneighborAllgatherv | Op::NeighborAllgathervInit => {
                Some(Op::NeighborAllgatherv)
            }
            Op::NeighborAlltoall | Op::IneighborAlltoall | Op::NeighborAlltoallInit => {
                Some(Op::NeighborAlltoall)
            }
            Op::NeighborAlltoallv | Op::IneighborAlltoallv | Op::NeighborAlltoallvInit => {
                Some(Op::NeighborAlltoallv)
            }
            Op::NeighborAlltoallw | Op::IneighborAlltoallw | Op::NeighborAlltoallwInit => {
                Some(Op::NeighborAlltoallw)
            }
            op if op.class() == OpClass::Collective => Some(op),
            _ => None,
        }
    }

    /// True for the MPI-4 persistent collective inits (Barrier_init, Allreduce_init...).
    pub fn is_persistent_collective(self) -> bool {
        matches!(
            self,
            Op::BarrierInit
                | Op::BcastInit
                | Op::ReduceInit
                | Op::AllreduceInit
                | Op::AllgatherInit
                | Op::AllgathervInit
                | Op::AlltoallInit
                | Op::AlltoallvInit
                | Op::AlltoallwInit
                | Op::GatherInit
                | Op::GathervInit
                | Op::ScatterInit
                | Op::ScattervInit
                | Op::ReduceScatterInit
                | Op::ReduceScatterBlockInit
                | Op::ScanInit
                | Op::ExscanInit
                | Op::NeighborAllgatherInit
                | Op::NeighborAllgathervInit
                | Op::NeighborAlltoallInit
                | Op::NeighborAlltoallvInit
                | Op::NeighborAlltoallwInit
        )
    }

    /// True for the calls on a window: creation and freeing, the fence, one-sided
    /// communication (with or without a request) and synchronisation.
    pub fn is_window_call(self) -> bool {
        matches!(self.class(), OpClass::OneSided | OpClass::OneSidedSync)
            || matches!(
                self,
                Op::WinCreate
                    | Op::WinAllocate
                    | Op::WinAllocateShared
                    | Op::WinCreateDynamic
                    | Op::WinFree
                    | Op::WinFence
                    | Op::Rput
                    | Op::Rget
                    | Op::Raccumulate
                    | Op::RgetAccumulate
            )
    }

    /// True for completion calls that never block (the Test family).
    pub fn is_test(self) -> bool {
        matches!(self, Op::Test | Op::Testall | Op::Testany | Op::Testsome)
    }

    /// Who waits for whom, for a blocking collective.
    pub fn collective_pattern(self) -> Option<CollectivePattern> {
        match self {
            Op::Barrier => Some(CollectivePattern::Barrier),
            Op::Allreduce
            | Op::Allgather
            | Op::Allgatherv
            | Op::Alltoall
            | Op::Alltoallv
            | Op::Alltoallw
            | Op::ReduceScatter
            | Op::ReduceScatterBlock
            | Op::CommDup
            | Op::CommDupWithInfo
            | Op::CommSplit
            | Op::CommSplitType
            | Op::CommCreate
            | Op::CartCreate
            | Op::CartSub
            | Op::WinCreate
            | Op::WinAllocate
            | Op::WinAllocateShared
            | Op::WinCreateDynamic => Some(CollectivePattern::AllToAll),
            Op::WinFree | Op::WinFence => Some(CollectivePattern::Barrier),
            Op::Bcast | Op::Scatter | Op::Scatterv => Some(CollectivePattern::OneToAll),
            Op::Reduce | Op::Gather | Op::Gatherv => Some(CollectivePattern::AllToOne),
            Op::Scan | Op::Exscan => Some(CollectivePattern::Prefix),
            Op::NeighborAllgather
            | Op::NeighborAllgatherv
            | Op::NeighborAlltoall
            | Op::NeighborAlltoallv
            | Op::NeighborAlltoallw => Some(CollectivePattern::Neighborhood),
            _ => None,
        }
    }
}
