//! Neighbourhood collectives in their blocking, non-blocking and persistent forms (see
//! [`super::collective`]). A rank sends to its out-neighbours and receives from its
//! in-neighbours in the communicator's topology (Cartesian: two per dimension; graph:
//! its neighbours both ways; distributed graph: its in- and out-degree).

use std::ffi::{c_int, c_void};

use mpi_sys::*;
use overlap_instrument::schema::Op;

use super::collective::{family, held_from, to_receive, to_send, total, total_w, Part};
use crate::types::bytes;

/// This rank's `(in-degree, out-degree)` in `comm`'s topology; zeros without one.
pub(crate) fn degrees(comm: MPI_Comm) -> (c_int, c_int) {
    let mut kind: c_int = 0;
    // SAFETY: out-pointers to locals; the topology constants are plain statics.
    unsafe {
        if PMPI_Topo_test(comm, &mut kind) != 0 {
            return (0, 0);
        }
        if kind == RSMPI_CART {
            let mut ndims: c_int = 0;
            PMPI_Cartdim_get(comm, &mut ndims);
            (2 * ndims, 2 * ndims)
        } else if kind == RSMPI_GRAPH {
            let mut rank: c_int = 0;
            let mut n: c_int = 0;
            PMPI_Comm_rank(comm, &mut rank);
            PMPI_Graph_neighbors_count(comm, rank, &mut n);
            (n, n)
        } else if kind == RSMPI_DIST_GRAPH {
            let (mut indegree, mut outdegree, mut weighted): (c_int, c_int, c_int) = (0, 0, 0);
            PMPI_Dist_graph_neighbors_count(comm, &mut indegree, &mut outdegree, &mut weighted);
            (indegree, outdegree)
        } else {
            (0, 0)
        }
    }
}

/// A degree as a multiplier.
fn times(degree: c_int) -> u64 {
    u64::try_from(degree).unwrap_or(0)
}

/// The calls with counts, declared once for both count types: `Count` and `Displ` are
/// `int`s in the classic calls, `MPI_Count` and `MPI_Aint` in the MPI-4 large-count
/// ones ([`large`], whose `PMPI_*_c` functions are imported under the classic names).
macro_rules! counted {
    () => {
    family! {
        (sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void,
         recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm)
        on comm => {
            let (indegree, outdegree) = degrees(comm);
            Part::of(
                bytes(sendcount, sendtype) * times(outdegree),
                bytes(recvcount, recvtype) * times(indegree),
            )
        };
        held {
            let (indegree, outdegree) = degrees(comm);
            [
                to_send(sendbuf, sendcount, sendtype, times(outdegree)),
                to_receive(recvbuf, recvcount, recvtype, times(indegree)),
            ]
        };
        blocking neighbor_allgather = PMPI_Neighbor_allgather, Op::NeighborAllgather;
        nonblocking ineighbor_allgather = PMPI_Ineighbor_allgather, Op::IneighborAllgather;
        persistent neighbor_allgather_init = PMPI_Neighbor_allgather_init, Op::NeighborAllgatherInit;
        blocking neighbor_alltoall = PMPI_Neighbor_alltoall, Op::NeighborAlltoall;
        nonblocking ineighbor_alltoall = PMPI_Ineighbor_alltoall, Op::IneighborAlltoall;
        persistent neighbor_alltoall_init = PMPI_Neighbor_alltoall_init, Op::NeighborAlltoallInit;
    }

    family! {
        (sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void,
         recvcounts: *const Count, displs: *const Displ, recvtype: MPI_Datatype, comm: MPI_Comm)
        on comm => {
            let (indegree, outdegree) = degrees(comm);
            // SAFETY: one receive count per in-neighbour.
            let recv = unsafe { total(recvcounts, indegree, recvtype) };
            Part::of(bytes(sendcount, sendtype) * times(outdegree), recv)
        };
        held {
            let (_, outdegree) = degrees(comm);
            [to_send(sendbuf, sendcount, sendtype, times(outdegree)), held_from(recvbuf)]
        };
        blocking neighbor_allgatherv = PMPI_Neighbor_allgatherv, Op::NeighborAllgatherv;
        nonblocking ineighbor_allgatherv = PMPI_Ineighbor_allgatherv, Op::IneighborAllgatherv;
        persistent neighbor_allgatherv_init = PMPI_Neighbor_allgatherv_init, Op::NeighborAllgathervInit;
    }

    family! {
        (sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Displ,
         sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count,
         rdispls: *const Displ, recvtype: MPI_Datatype, comm: MPI_Comm)
        on comm => {
            let (indegree, outdegree) = degrees(comm);
            // SAFETY: one count per out-neighbour to send, per in-neighbour to receive.
            unsafe {
                Part::of(total(sendcounts, outdegree, sendtype), total(recvcounts, indegree, recvtype))
            }
        };
        held [held_from(sendbuf), held_from(recvbuf)];
        blocking neighbor_alltoallv = PMPI_Neighbor_alltoallv, Op::NeighborAlltoallv;
        nonblocking ineighbor_alltoallv = PMPI_Ineighbor_alltoallv, Op::IneighborAlltoallv;
        persistent neighbor_alltoallv_init = PMPI_Neighbor_alltoallv_init, Op::NeighborAlltoallvInit;
    }

    family! {
        (sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const MPI_Aint,
         sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count,
         rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm)
        on comm => {
            let (indegree, outdegree) = degrees(comm);
            // SAFETY: one count and type per out-neighbour to send, per in-neighbour to receive.
            unsafe {
                Part::of(
                    total_w(sendcounts, sendtypes, outdegree),
                    total_w(recvcounts, recvtypes, indegree),
                )
            }
        };
        held [held_from(sendbuf), held_from(recvbuf)];
        blocking neighbor_alltoallw = PMPI_Neighbor_alltoallw, Op::NeighborAlltoallw;
        nonblocking ineighbor_alltoallw = PMPI_Ineighbor_alltoallw, Op::IneighborAlltoallw;
        persistent neighbor_alltoallw_init = PMPI_Neighbor_alltoallw_init, Op::NeighborAlltoallwInit;
    }
    };
}

type Count = c_int;
type Displ = c_int;
counted!();

/// The MPI-4 large-count forms (`MPI_*_c`): the same wrappers over `MPI_Count` counts
/// and `MPI_Aint` displacements.
#[cfg(mpi4)]
pub(crate) mod large {
    use std::ffi::c_void;

    use mpi_sys::PMPI_Ineighbor_allgather_c as PMPI_Ineighbor_allgather;
    use mpi_sys::PMPI_Ineighbor_allgatherv_c as PMPI_Ineighbor_allgatherv;
    use mpi_sys::PMPI_Ineighbor_alltoall_c as PMPI_Ineighbor_alltoall;
    use mpi_sys::PMPI_Ineighbor_alltoallv_c as PMPI_Ineighbor_alltoallv;
    use mpi_sys::PMPI_Ineighbor_alltoallw_c as PMPI_Ineighbor_alltoallw;
    use mpi_sys::PMPI_Neighbor_allgather_c as PMPI_Neighbor_allgather;
    use mpi_sys::PMPI_Neighbor_allgather_init_c as PMPI_Neighbor_allgather_init;
    use mpi_sys::PMPI_Neighbor_allgatherv_c as PMPI_Neighbor_allgatherv;
    use mpi_sys::PMPI_Neighbor_allgatherv_init_c as PMPI_Neighbor_allgatherv_init;
    use mpi_sys::PMPI_Neighbor_alltoall_c as PMPI_Neighbor_alltoall;
    use mpi_sys::PMPI_Neighbor_alltoall_init_c as PMPI_Neighbor_alltoall_init;
    use mpi_sys::PMPI_Neighbor_alltoallv_c as PMPI_Neighbor_alltoallv;
    use mpi_sys::PMPI_Neighbor_alltoallv_init_c as PMPI_Neighbor_alltoallv_init;
    use mpi_sys::PMPI_Neighbor_alltoallw_c as PMPI_Neighbor_alltoallw;
    use mpi_sys::PMPI_Neighbor_alltoallw_init_c as PMPI_Neighbor_alltoallw_init;
    use mpi_sys::{MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Info, MPI_Request};
    use overlap_instrument::schema::Op;

    use super::super::collective::{family, held_from, to_receive, to_send, total, total_w, Part};
    use super::{degrees, times};
    use crate::types::bytes;

    type Count = MPI_Count;
    type Displ = MPI_Aint;
    counted!();
}
