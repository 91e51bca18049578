//! Reductions and prefix reductions in their blocking, non-blocking and persistent
//! forms (see [`super::collective`]): Reduce, Allreduce, Reduce_scatter(_block), Scan
//! and Exscan. Each rank contributes its whole send vector; it receives the result
//! (the root only for Reduce, its block for Reduce_scatter).

use std::ffi::{c_int, c_void};

use mpi_sys::*;
use overlap_instrument::schema::Op;

use super::collective::{
    am_root, at_root, family, held_from, members, to_receive, to_send, total, Part,
};
use crate::pmpi;
use crate::types::bytes;

/// The calls with counts, declared once for both count types: `Count` and `Displ` are
/// `int`s in the classic calls, `MPI_Count` and `MPI_Aint` in the MPI-4 large-count
/// ones ([`large`], whose `PMPI_*_c` functions are imported under the classic names).
macro_rules! counted {
    () => {
    family! {
        (sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype,
         op: MPI_Op, root: c_int, comm: MPI_Comm)
        on comm rooted at root => {
            let b = bytes(count, datatype);
            let recv = if am_root(comm, root) { b } else { 0 };
            Part::of(b, recv).rooted(root)
        };
        held [
            to_send(sendbuf, count, datatype, 1),
            at_root(comm, root, to_receive(recvbuf, count, datatype, 1)),
        ];
        blocking reduce = PMPI_Reduce, Op::Reduce;
        nonblocking ireduce = PMPI_Ireduce, Op::Ireduce;
        persistent reduce_init = PMPI_Reduce_init, Op::ReduceInit;
    }

    family! {
        (sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype,
         op: MPI_Op, comm: MPI_Comm)
        on comm => {
            let b = bytes(count, datatype);
            Part::of(b, b)
        };
        held [to_send(sendbuf, count, datatype, 1), to_receive(recvbuf, count, datatype, 1)];
        blocking allreduce = PMPI_Allreduce, Op::Allreduce;
        nonblocking iallreduce = PMPI_Iallreduce, Op::Iallreduce;
        persistent allreduce_init = PMPI_Allreduce_init, Op::AllreduceInit;
        blocking scan = PMPI_Scan, Op::Scan;
        nonblocking iscan = PMPI_Iscan, Op::Iscan;
        persistent scan_init = PMPI_Scan_init, Op::ScanInit;
        blocking exscan = PMPI_Exscan, Op::Exscan;
        nonblocking iexscan = PMPI_Iexscan, Op::Iexscan;
        persistent exscan_init = PMPI_Exscan_init, Op::ExscanInit;
    }

    family! {
        (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count,
         datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm)
        on comm => {
            let n = pmpi::size_of_comm(comm);
            // SAFETY: every rank passes the communicator's size of receive counts.
            let send = unsafe { total(recvcounts, n, datatype) };
            let mine = usize::try_from(pmpi::rank_in(comm)).ok().filter(|_| !recvcounts.is_null());
            // SAFETY: this rank's entry of the same array.
            let recv = mine.map_or(0, |r| bytes(unsafe { *recvcounts.add(r) }, datatype));
            Part::of(send, recv)
        };
        held [held_from(sendbuf), held_from(recvbuf)];
        blocking reduce_scatter = PMPI_Reduce_scatter, Op::ReduceScatter;
        nonblocking ireduce_scatter = PMPI_Ireduce_scatter, Op::IreduceScatter;
        persistent reduce_scatter_init = PMPI_Reduce_scatter_init, Op::ReduceScatterInit;
    }

    family! {
        (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: MPI_Datatype,
         op: MPI_Op, comm: MPI_Comm)
        on comm => {
            let b = bytes(recvcount, datatype);
            Part::of(b * members(comm), b)
        };
        held [to_send(sendbuf, recvcount, datatype, members(comm)), to_receive(recvbuf, recvcount, datatype, 1)];
        blocking reduce_scatter_block = PMPI_Reduce_scatter_block, Op::ReduceScatterBlock;
        nonblocking ireduce_scatter_block = PMPI_Ireduce_scatter_block, Op::IreduceScatterBlock;
        persistent reduce_scatter_block_init = PMPI_Reduce_scatter_block_init, Op::ReduceScatterBlockInit;
    }
    };
}

type Count = c_int;
counted!();

/// The MPI-4 large-count forms (`MPI_*_c`): the same wrappers over `MPI_Count` counts
/// and `MPI_Aint` displacements.
#[cfg(mpi4)]
pub(crate) mod large {
    use std::ffi::{c_int, c_void};

    use mpi_sys::PMPI_Allreduce_c as PMPI_Allreduce;
    use mpi_sys::PMPI_Allreduce_init_c as PMPI_Allreduce_init;
    use mpi_sys::PMPI_Exscan_c as PMPI_Exscan;
    use mpi_sys::PMPI_Exscan_init_c as PMPI_Exscan_init;
    use mpi_sys::PMPI_Iallreduce_c as PMPI_Iallreduce;
    use mpi_sys::PMPI_Iexscan_c as PMPI_Iexscan;
    use mpi_sys::PMPI_Ireduce_c as PMPI_Ireduce;
    use mpi_sys::PMPI_Ireduce_scatter_block_c as PMPI_Ireduce_scatter_block;
    use mpi_sys::PMPI_Ireduce_scatter_c as PMPI_Ireduce_scatter;
    use mpi_sys::PMPI_Iscan_c as PMPI_Iscan;
    use mpi_sys::PMPI_Reduce_c as PMPI_Reduce;
    use mpi_sys::PMPI_Reduce_init_c as PMPI_Reduce_init;
    use mpi_sys::PMPI_Reduce_scatter_block_c as PMPI_Reduce_scatter_block;
    use mpi_sys::PMPI_Reduce_scatter_block_init_c as PMPI_Reduce_scatter_block_init;
    use mpi_sys::PMPI_Reduce_scatter_c as PMPI_Reduce_scatter;
    use mpi_sys::PMPI_Reduce_scatter_init_c as PMPI_Reduce_scatter_init;
    use mpi_sys::PMPI_Scan_c as PMPI_Scan;
    use mpi_sys::PMPI_Scan_init_c as PMPI_Scan_init;
    use mpi_sys::{MPI_Comm, MPI_Count, MPI_Datatype, MPI_Info, MPI_Op, MPI_Request};
    use overlap_instrument::schema::Op;

    use super::super::collective::{
        am_root, at_root, family, held_from, members, to_receive, to_send, total, Part,
    };
    use crate::pmpi;
    use crate::types::bytes;

    type Count = MPI_Count;
    counted!();
}
