//! Which MPI function a call event is. Kinds are an enum; their MPI names appear only here.

/// An MPI function that overlap records. The wire name is the MPI function's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `MPI_Send`: blocking standard send.
    Send,
    /// `MPI_Recv`: blocking receive.
    Recv,
    /// `MPI_Sendrecv`: blocking send and receive in one call.
    Sendrecv,
    /// `MPI_Isend`: posts a send, completed later by a Wait or Test.
    Isend,
    /// `MPI_Irecv`: posts a receive, completed later by a Wait or Test.
    Irecv,
    /// `MPI_Wait`: waits for one request.
    Wait,
    /// `MPI_Waitall`: waits for all requests of a list.
    Waitall,
    /// `MPI_Test`: checks one request without blocking.
    Test,
    /// `MPI_Barrier`.
    Barrier,
    /// `MPI_Allreduce`.
    Allreduce,
}

/// What role a call plays for overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// Starts a non-blocking operation and returns at once (Isend, Irecv).
    Post,
    /// Completes requests posted earlier (Wait, Waitall, Test).
    Completion,
    /// Point-to-point call that returns only when its own transfer is done (Send, Recv, Sendrecv).
    BlockingPointToPoint,
    /// A call every rank of a communicator takes part in (Barrier, Allreduce).
    Collective,
}

impl Op {
    /// Every op, in declaration order.
    pub const ALL: [Op; 10] = [
        Op::Send,
        Op::Recv,
        Op::Sendrecv,
        Op::Isend,
        Op::Irecv,
        Op::Wait,
        Op::Waitall,
        Op::Test,
        Op::Barrier,
        Op::Allreduce,
    ];

    /// The MPI function's name, which is the event's name on the wire.
    pub fn mpi_name(self) -> &'static str {
        match self {
            Op::Send => "MPI_Send",
            Op::Recv => "MPI_Recv",
            Op::Sendrecv => "MPI_Sendrecv",
            Op::Isend => "MPI_Isend",
            Op::Irecv => "MPI_Irecv",
            Op::Wait => "MPI_Wait",
            Op::Waitall => "MPI_Waitall",
            Op::Test => "MPI_Test",
            Op::Barrier => "MPI_Barrier",
            Op::Allreduce => "MPI_Allreduce",
        }
    }

    /// The op with that MPI name, if overlap knows it.
    pub fn from_mpi_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.mpi_name() == name)
    }

    /// The role the call plays.
    pub fn class(self) -> OpClass {
        match self {
            Op::Isend | Op::Irecv => OpClass::Post,
            Op::Wait | Op::Waitall | Op::Test => OpClass::Completion,
            Op::Send | Op::Recv | Op::Sendrecv => OpClass::BlockingPointToPoint,
            Op::Barrier | Op::Allreduce => OpClass::Collective,
        }
    }

    /// True for calls that send a message to `peer` (blocking or not, alone or paired).
    pub fn sends(self) -> bool {
        matches!(self, Op::Send | Op::Isend | Op::Sendrecv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_distinct() {
        for op in Op::ALL {
            assert_eq!(Op::from_mpi_name(op.mpi_name()), Some(op));
        }
        assert_eq!(Op::from_mpi_name("MPI_Frobnicate"), None);
        let mut names: Vec<_> = Op::ALL.iter().map(|o| o.mpi_name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Op::ALL.len());
    }
}
