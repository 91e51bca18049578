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
//! wraps those ([`f08`]). Where an MPI's Fortran binding calls the wrappers, the site
//! recorded is still the program's line: [`fortran_sites`]. In a Python program (mpi4py)
//! each call is placed on the Python frame that made it rather than inside mpi4py
//! ([`python`]).
//!
//! The library is built against the MPI headers and library that `mpicc` names (through
//! `mpi-sys`): handle types differ between MPI implementations, so it must be loaded
//! into programs built against that same MPI.

mod built_for;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod cache;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod callpath;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod calls;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod counting;
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
mod fortran_sites;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod handles;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod imports;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod loaded;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod pcontrol;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod pmpi;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod python;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod recent;
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
    #[cfg(mpi4)]
    use crate::calls::isendrecv;
    use crate::calls::{
        collective, completion, matched, neighbor, p2p, reduction, rma, rma_sync, setup,
    };
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
        MPI_Bsend_init => p2p::bsend_init;
        MPI_Ssend_init => p2p::ssend_init;
        MPI_Rsend_init => p2p::rsend_init;
        MPI_Mprobe => matched::mprobe;
        MPI_Improbe => matched::improbe;
        MPI_Mrecv => matched::mrecv;
        MPI_Imrecv => matched::imrecv;
        #[cfg(mpi4)]
        MPI_Isendrecv => isendrecv::isendrecv;
        #[cfg(mpi4)]
        MPI_Isendrecv_replace => isendrecv::isendrecv_replace;
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
        // Variadic: see crate::pcontrol for the ABI this relies on.
        MPI_Pcontrol => crate::pcontrol::pcontrol;
        // The MPI-4 large-count forms: the same wrappers over `MPI_Count` counts.
        #[cfg(mpi4)]
        MPI_Bsend_init_c => p2p::large::bsend_init;
        #[cfg(mpi4)]
        MPI_Ssend_init_c => p2p::large::ssend_init;
        #[cfg(mpi4)]
        MPI_Rsend_init_c => p2p::large::rsend_init;
        #[cfg(mpi4)]
        MPI_Mrecv_c => matched::large::mrecv;
        #[cfg(mpi4)]
        MPI_Imrecv_c => matched::large::imrecv;
        #[cfg(mpi4)]
        MPI_Isendrecv_c => isendrecv::large::isendrecv;
        #[cfg(mpi4)]
        MPI_Isendrecv_replace_c => isendrecv::large::isendrecv_replace;
        #[cfg(mpi4)]
        MPI_Send_c => p2p::large::send;
        #[cfg(mpi4)]
        MPI_Ssend_c => p2p::large::ssend;
        #[cfg(mpi4)]
        MPI_Bsend_c => p2p::large::bsend;
        #[cfg(mpi4)]
        MPI_Rsend_c => p2p::large::rsend;
        #[cfg(mpi4)]
        MPI_Recv_c => p2p::large::recv;
        #[cfg(mpi4)]
        MPI_Sendrecv_c => p2p::large::sendrecv;
        #[cfg(mpi4)]
        MPI_Sendrecv_replace_c => p2p::large::sendrecv_replace;
        #[cfg(mpi4)]
        MPI_Isend_c => p2p::large::isend;
        #[cfg(mpi4)]
        MPI_Issend_c => p2p::large::issend;
        #[cfg(mpi4)]
        MPI_Ibsend_c => p2p::large::ibsend;
        #[cfg(mpi4)]
        MPI_Irsend_c => p2p::large::irsend;
        #[cfg(mpi4)]
        MPI_Irecv_c => p2p::large::irecv;
        #[cfg(mpi4)]
        MPI_Send_init_c => p2p::large::send_init;
        #[cfg(mpi4)]
        MPI_Recv_init_c => p2p::large::recv_init;
        #[cfg(mpi4)]
        MPI_Bcast_c => collective::large::bcast;
        #[cfg(mpi4)]
        MPI_Ibcast_c => collective::large::ibcast;
        #[cfg(mpi4)]
        MPI_Bcast_init_c => collective::large::bcast_init;
        #[cfg(mpi4)]
        MPI_Allgather_c => collective::large::allgather;
        #[cfg(mpi4)]
        MPI_Iallgather_c => collective::large::iallgather;
        #[cfg(mpi4)]
        MPI_Allgather_init_c => collective::large::allgather_init;
        #[cfg(mpi4)]
        MPI_Alltoall_c => collective::large::alltoall;
        #[cfg(mpi4)]
        MPI_Ialltoall_c => collective::large::ialltoall;
        #[cfg(mpi4)]
        MPI_Alltoall_init_c => collective::large::alltoall_init;
        #[cfg(mpi4)]
        MPI_Allgatherv_c => collective::large::allgatherv;
        #[cfg(mpi4)]
        MPI_Iallgatherv_c => collective::large::iallgatherv;
        #[cfg(mpi4)]
        MPI_Allgatherv_init_c => collective::large::allgatherv_init;
        #[cfg(mpi4)]
        MPI_Alltoallv_c => collective::large::alltoallv;
        #[cfg(mpi4)]
        MPI_Ialltoallv_c => collective::large::ialltoallv;
        #[cfg(mpi4)]
        MPI_Alltoallv_init_c => collective::large::alltoallv_init;
        #[cfg(mpi4)]
        MPI_Alltoallw_c => collective::large::alltoallw;
        #[cfg(mpi4)]
        MPI_Ialltoallw_c => collective::large::ialltoallw;
        #[cfg(mpi4)]
        MPI_Alltoallw_init_c => collective::large::alltoallw_init;
        #[cfg(mpi4)]
        MPI_Gather_c => collective::large::gather;
        #[cfg(mpi4)]
        MPI_Igather_c => collective::large::igather;
        #[cfg(mpi4)]
        MPI_Gather_init_c => collective::large::gather_init;
        #[cfg(mpi4)]
        MPI_Scatter_c => collective::large::scatter;
        #[cfg(mpi4)]
        MPI_Iscatter_c => collective::large::iscatter;
        #[cfg(mpi4)]
        MPI_Scatter_init_c => collective::large::scatter_init;
        #[cfg(mpi4)]
        MPI_Gatherv_c => collective::large::gatherv;
        #[cfg(mpi4)]
        MPI_Igatherv_c => collective::large::igatherv;
        #[cfg(mpi4)]
        MPI_Gatherv_init_c => collective::large::gatherv_init;
        #[cfg(mpi4)]
        MPI_Scatterv_c => collective::large::scatterv;
        #[cfg(mpi4)]
        MPI_Iscatterv_c => collective::large::iscatterv;
        #[cfg(mpi4)]
        MPI_Scatterv_init_c => collective::large::scatterv_init;
        #[cfg(mpi4)]
        MPI_Reduce_c => reduction::large::reduce;
        #[cfg(mpi4)]
        MPI_Ireduce_c => reduction::large::ireduce;
        #[cfg(mpi4)]
        MPI_Reduce_init_c => reduction::large::reduce_init;
        #[cfg(mpi4)]
        MPI_Allreduce_c => reduction::large::allreduce;
        #[cfg(mpi4)]
        MPI_Iallreduce_c => reduction::large::iallreduce;
        #[cfg(mpi4)]
        MPI_Allreduce_init_c => reduction::large::allreduce_init;
        #[cfg(mpi4)]
        MPI_Scan_c => reduction::large::scan;
        #[cfg(mpi4)]
        MPI_Iscan_c => reduction::large::iscan;
        #[cfg(mpi4)]
        MPI_Scan_init_c => reduction::large::scan_init;
        #[cfg(mpi4)]
        MPI_Exscan_c => reduction::large::exscan;
        #[cfg(mpi4)]
        MPI_Iexscan_c => reduction::large::iexscan;
        #[cfg(mpi4)]
        MPI_Exscan_init_c => reduction::large::exscan_init;
        #[cfg(mpi4)]
        MPI_Reduce_scatter_c => reduction::large::reduce_scatter;
        #[cfg(mpi4)]
        MPI_Ireduce_scatter_c => reduction::large::ireduce_scatter;
        #[cfg(mpi4)]
        MPI_Reduce_scatter_init_c => reduction::large::reduce_scatter_init;
        #[cfg(mpi4)]
        MPI_Reduce_scatter_block_c => reduction::large::reduce_scatter_block;
        #[cfg(mpi4)]
        MPI_Ireduce_scatter_block_c => reduction::large::ireduce_scatter_block;
        #[cfg(mpi4)]
        MPI_Reduce_scatter_block_init_c => reduction::large::reduce_scatter_block_init;
        #[cfg(mpi4)]
        MPI_Neighbor_allgather_c => neighbor::large::neighbor_allgather;
        #[cfg(mpi4)]
        MPI_Ineighbor_allgather_c => neighbor::large::ineighbor_allgather;
        #[cfg(mpi4)]
        MPI_Neighbor_allgather_init_c => neighbor::large::neighbor_allgather_init;
        #[cfg(mpi4)]
        MPI_Neighbor_alltoall_c => neighbor::large::neighbor_alltoall;
        #[cfg(mpi4)]
        MPI_Ineighbor_alltoall_c => neighbor::large::ineighbor_alltoall;
        #[cfg(mpi4)]
        MPI_Neighbor_alltoall_init_c => neighbor::large::neighbor_alltoall_init;
        #[cfg(mpi4)]
        MPI_Neighbor_allgatherv_c => neighbor::large::neighbor_allgatherv;
        #[cfg(mpi4)]
        MPI_Ineighbor_allgatherv_c => neighbor::large::ineighbor_allgatherv;
        #[cfg(mpi4)]
        MPI_Neighbor_allgatherv_init_c => neighbor::large::neighbor_allgatherv_init;
        #[cfg(mpi4)]
        MPI_Neighbor_alltoallv_c => neighbor::large::neighbor_alltoallv;
        #[cfg(mpi4)]
        MPI_Ineighbor_alltoallv_c => neighbor::large::ineighbor_alltoallv;
        #[cfg(mpi4)]
        MPI_Neighbor_alltoallv_init_c => neighbor::large::neighbor_alltoallv_init;
        #[cfg(mpi4)]
        MPI_Neighbor_alltoallw_c => neighbor::large::neighbor_alltoallw;
        #[cfg(mpi4)]
        MPI_Ineighbor_alltoallw_c => neighbor::large::ineighbor_alltoallw;
        #[cfg(mpi4)]
        MPI_Neighbor_alltoallw_init_c => neighbor::large::neighbor_alltoallw_init;
        #[cfg(mpi4)]
        MPI_Win_create_c => rma::large::win_create;
        #[cfg(mpi4)]
        MPI_Win_allocate_c => rma::large::win_allocate;
        #[cfg(mpi4)]
        MPI_Win_allocate_shared_c => rma::large::win_allocate_shared;
        #[cfg(mpi4)]
        MPI_Put_c => rma::large::put;
        #[cfg(mpi4)]
        MPI_Get_c => rma::large::get;
        #[cfg(mpi4)]
        MPI_Accumulate_c => rma::large::accumulate;
        #[cfg(mpi4)]
        MPI_Get_accumulate_c => rma::large::get_accumulate;
        #[cfg(mpi4)]
        MPI_Rput_c => rma::large::rput;
        #[cfg(mpi4)]
        MPI_Rget_c => rma::large::rget;
        #[cfg(mpi4)]
        MPI_Raccumulate_c => rma::large::raccumulate;
        #[cfg(mpi4)]
        MPI_Rget_accumulate_c => rma::large::rget_accumulate;
    }
}
