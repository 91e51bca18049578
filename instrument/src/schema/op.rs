//! Which MPI function a call event is. Kinds are an enum; their MPI names appear only here.

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
    /// A blocking call every rank of a communicator takes part in (Barrier, Allreduce...).
    Collective,
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
}

/// The kind of request a post or persistent init creates, as the completing call sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// A point-to-point send.
    Send,
    /// A point-to-point receive.
    Recv,
    /// A non-blocking collective.
    Collective,
}

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
        )
    }

    /// True for blocking calls that receive a message (their status is recorded as a
    /// completion without a request).
    pub fn receives_blocking(self) -> bool {
        matches!(self, Op::Recv | Op::Sendrecv | Op::SendrecvReplace)
    }

    /// True for Sendrecv and Sendrecv_replace, whose receive half has its own peer and tag.
    pub fn is_sendrecv(self) -> bool {
        matches!(self, Op::Sendrecv | Op::SendrecvReplace)
    }

    /// What a post or persistent init creates; `None` for other calls and for Start and
    /// Startall, whose requests take the kind of the persistent request they start.
    pub fn request_kind(self) -> Option<RequestKind> {
        match self {
            Op::Isend | Op::Issend | Op::Ibsend | Op::Irsend | Op::SendInit => {
                Some(RequestKind::Send)
            }
            Op::Irecv | Op::RecvInit => Some(RequestKind::Recv),
            Op::Ibarrier | Op::Iallreduce => Some(RequestKind::Collective),
            _ => None,
        }
    }

    /// True for completion calls that never block (the Test family).
    pub fn is_test(self) -> bool {
        matches!(self, Op::Test | Op::Testall | Op::Testany | Op::Testsome)
    }

    /// Who waits for whom, for a blocking collective.
    pub fn collective_pattern(self) -> Option<CollectivePattern> {
        match self {
            Op::Barrier => Some(CollectivePattern::Barrier),
            Op::Allreduce | Op::Allgather | Op::Allgatherv | Op::Alltoall | Op::Alltoallv => {
                Some(CollectivePattern::AllToAll)
            }
            Op::Bcast | Op::Scatter | Op::Scatterv => Some(CollectivePattern::OneToAll),
            Op::Reduce | Op::Gather | Op::Gatherv => Some(CollectivePattern::AllToOne),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        }
    }
}
