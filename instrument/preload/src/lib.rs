//! overlap-preload: traces any unmodified C, C++ or Fortran MPI program.
//!
//! Loaded with `LD_PRELOAD` (which `overlap trace` sets for every rank), this library
//! defines the MPI entry points the program calls, forwards each to its `PMPI_` twin, and
//! records the call through the same recorder and format as the Rust layer: one
//! `rank-N.ovlp` per rank in `$OVERLAP_TRACE_DIR`, streamed while the program runs, so a
//! program that aborts or never finalizes still leaves a readable trace. Each call also
//! records the address it was made from, so findings can be grouped by call site.
//!
//! MPICH's Fortran bindings (`mpif.h` and `use mpi`) call the C entry points, so Fortran
//! programs are traced through the same wrappers; Open MPI's call `PMPI_` directly, so
//! the library built for it wraps the Fortran entry points as well ([`fortran`]).
//! MPICH's `mpi_f08` bindings call `PMPI_` directly too: the library built for MPICH
//! wraps those ([`f08`]).
//!
//! The library is built against the MPI headers and library that `mpicc` names (through
//! `mpi-sys`): handle types differ between MPI implementations, so it must be loaded
//! into programs built against that same MPI.

mod built_for;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod cache;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod calls;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod entry;
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(openmpi)))]
mod f08;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod fint;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod fork;
#[cfg(all(target_arch = "x86_64", target_os = "linux", openmpi))]
mod fortran;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod handles;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod imports;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod pmpi;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod python;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod requests;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod tables;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod thread;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod tracer;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod types;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod watch;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod windows;

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod exported {
    use crate::calls::{collective, completion, neighbor, p2p, reduction, rma, rma_sync, setup};
    use crate::types;

    crate::entry::entry! {
        MPI_Init => setup::init;
        MPI_Init_thread => setup::init_thread;
        #[cfg(mpi4)]
        MPI_Session_init => setup::session_init;
        MPI_Finalize => setup::finalize;
        MPI_Abort => setup::abort;
        MPI_Comm_dup => setup::comm_dup;
        MPI_Comm_dup_with_info => setup::comm_dup_with_info;
        MPI_Comm_split => setup::comm_split;
        MPI_Comm_split_type => setup::comm_split_type;
        MPI_Comm_create => setup::comm_create;
        MPI_Cart_create => setup::cart_create;
        MPI_Cart_sub => setup::cart_sub;
        MPI_Comm_free => setup::comm_free;
        MPI_Send => p2p::send;
        MPI_Ssend => p2p::ssend;
        MPI_Bsend => p2p::bsend;
        MPI_Rsend => p2p::rsend;
        MPI_Recv => p2p::recv;
        MPI_Sendrecv => p2p::sendrecv;
        MPI_Sendrecv_replace => p2p::sendrecv_replace;
        MPI_Probe => p2p::probe;
        MPI_Iprobe => p2p::iprobe;
        MPI_Isend => p2p::isend;
        MPI_Issend => p2p::issend;
        MPI_Ibsend => p2p::ibsend;
        MPI_Irsend => p2p::irsend;
        MPI_Irecv => p2p::irecv;
        MPI_Send_init => p2p::send_init;
        MPI_Recv_init => p2p::recv_init;
        MPI_Start => p2p::start;
        MPI_Startall => p2p::startall;
        MPI_Request_free => p2p::request_free;
        MPI_Wait => completion::wait;
        MPI_Waitall => completion::waitall;
        MPI_Waitany => completion::waitany;
        MPI_Waitsome => completion::waitsome;
        MPI_Test => completion::test;
        MPI_Testall => completion::testall;
        MPI_Testany => completion::testany;
        MPI_Testsome => completion::testsome;
        MPI_Barrier => collective::barrier;
        MPI_Ibarrier => collective::ibarrier;
        #[cfg(mpi4)]
        MPI_Barrier_init => collective::barrier_init;
        MPI_Bcast => collective::bcast;
        MPI_Ibcast => collective::ibcast;
        #[cfg(mpi4)]
        MPI_Bcast_init => collective::bcast_init;
        MPI_Allgather => collective::allgather;
        MPI_Iallgather => collective::iallgather;
        #[cfg(mpi4)]
        MPI_Allgather_init => collective::allgather_init;
        MPI_Alltoall => collective::alltoall;
        MPI_Ialltoall => collective::ialltoall;
        #[cfg(mpi4)]
        MPI_Alltoall_init => collective::alltoall_init;
        MPI_Allgatherv => collective::allgatherv;
        MPI_Iallgatherv => collective::iallgatherv;
        #[cfg(mpi4)]
        MPI_Allgatherv_init => collective::allgatherv_init;
        MPI_Alltoallv => collective::alltoallv;
        MPI_Ialltoallv => collective::ialltoallv;
        #[cfg(mpi4)]
        MPI_Alltoallv_init => collective::alltoallv_init;
        MPI_Alltoallw => collective::alltoallw;
        MPI_Ialltoallw => collective::ialltoallw;
        #[cfg(mpi4)]
        MPI_Alltoallw_init => collective::alltoallw_init;
        MPI_Gather => collective::gather;
        MPI_Igather => collective::igather;
        #[cfg(mpi4)]
        MPI_Gather_init => collective::gather_init;
        MPI_Scatter => collective::scatter;
        MPI_Iscatter => collective::iscatter;
        #[cfg(mpi4)]
        MPI_Scatter_init => collective::scatter_init;
        MPI_Gatherv => collective::gatherv;
        MPI_Igatherv => collective::igatherv;
        #[cfg(mpi4)]
        MPI_Gatherv_init => collective::gatherv_init;
        MPI_Scatterv => collective::scatterv;
        MPI_Iscatterv => collective::iscatterv;
        #[cfg(mpi4)]
        MPI_Scatterv_init => collective::scatterv_init;
        MPI_Reduce => reduction::reduce;
        MPI_Ireduce => reduction::ireduce;
        #[cfg(mpi4)]
        MPI_Reduce_init => reduction::reduce_init;
        MPI_Allreduce => reduction::allreduce;
        MPI_Iallreduce => reduction::iallreduce;
        #[cfg(mpi4)]
        MPI_Allreduce_init => reduction::allreduce_init;
        MPI_Scan => reduction::scan;
        MPI_Iscan => reduction::iscan;
        #[cfg(mpi4)]
        MPI_Scan_init => reduction::scan_init;
        MPI_Exscan => reduction::exscan;
        MPI_Iexscan => reduction::iexscan;
        #[cfg(mpi4)]
        MPI_Exscan_init => reduction::exscan_init;
        MPI_Reduce_scatter => reduction::reduce_scatter;
        MPI_Ireduce_scatter => reduction::ireduce_scatter;
        #[cfg(mpi4)]
        MPI_Reduce_scatter_init => reduction::reduce_scatter_init;
        MPI_Reduce_scatter_block => reduction::reduce_scatter_block;
        MPI_Ireduce_scatter_block => reduction::ireduce_scatter_block;
        #[cfg(mpi4)]
        MPI_Reduce_scatter_block_init => reduction::reduce_scatter_block_init;
        MPI_Neighbor_allgather => neighbor::neighbor_allgather;
        MPI_Ineighbor_allgather => neighbor::ineighbor_allgather;
        #[cfg(mpi4)]
        MPI_Neighbor_allgather_init => neighbor::neighbor_allgather_init;
        MPI_Neighbor_alltoall => neighbor::neighbor_alltoall;
        MPI_Ineighbor_alltoall => neighbor::ineighbor_alltoall;
        #[cfg(mpi4)]
        MPI_Neighbor_alltoall_init => neighbor::neighbor_alltoall_init;
        MPI_Neighbor_allgatherv => neighbor::neighbor_allgatherv;
        MPI_Ineighbor_allgatherv => neighbor::ineighbor_allgatherv;
        #[cfg(mpi4)]
        MPI_Neighbor_allgatherv_init => neighbor::neighbor_allgatherv_init;
        MPI_Neighbor_alltoallv => neighbor::neighbor_alltoallv;
        MPI_Ineighbor_alltoallv => neighbor::ineighbor_alltoallv;
        #[cfg(mpi4)]
        MPI_Neighbor_alltoallv_init => neighbor::neighbor_alltoallv_init;
        MPI_Neighbor_alltoallw => neighbor::neighbor_alltoallw;
        MPI_Ineighbor_alltoallw => neighbor::ineighbor_alltoallw;
        #[cfg(mpi4)]
        MPI_Neighbor_alltoallw_init => neighbor::neighbor_alltoallw_init;
        MPI_Win_create => rma::win_create;
        MPI_Win_allocate => rma::win_allocate;
        MPI_Win_allocate_shared => rma::win_allocate_shared;
        MPI_Win_create_dynamic => rma::win_create_dynamic;
        MPI_Win_free => rma::win_free;
        MPI_Win_attach => rma::win_attach;
        MPI_Win_detach => rma::win_detach;
        MPI_Win_fence => rma::win_fence;
        MPI_Put => rma::put;
        MPI_Get => rma::get;
        MPI_Accumulate => rma::accumulate;
        MPI_Get_accumulate => rma::get_accumulate;
        MPI_Fetch_and_op => rma::fetch_and_op;
        MPI_Compare_and_swap => rma::compare_and_swap;
        MPI_Rput => rma::rput;
        MPI_Rget => rma::rget;
        MPI_Raccumulate => rma::raccumulate;
        MPI_Rget_accumulate => rma::rget_accumulate;
        MPI_Win_start => rma_sync::win_start;
        MPI_Win_complete => rma_sync::win_complete;
        MPI_Win_post => rma_sync::win_post;
        MPI_Win_wait => rma_sync::win_wait;
        MPI_Win_test => rma_sync::win_test;
        MPI_Win_lock => rma_sync::win_lock;
        MPI_Win_unlock => rma_sync::win_unlock;
        MPI_Win_lock_all => rma_sync::win_lock_all;
        MPI_Win_unlock_all => rma_sync::win_unlock_all;
        MPI_Win_flush => rma_sync::win_flush;
        MPI_Win_flush_all => rma_sync::win_flush_all;
        MPI_Win_flush_local => rma_sync::win_flush_local;
        MPI_Win_flush_local_all => rma_sync::win_flush_local_all;
        MPI_Win_sync => rma_sync::win_sync;
        MPI_Type_free => types::type_free;
    }
}
