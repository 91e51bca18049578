//! overlap-preload: traces any unmodified C, C++ or Fortran MPI program.
//!
//! Loaded with `LD_PRELOAD` (which `overlap trace` sets for every rank), this library
//! defines the MPI entry points the program calls, forwards each to its `PMPI_` twin, and
//! records the call through the same recorder and format as the Rust layer: one
//! `rank-N.json` per rank in `$OVERLAP_TRACE_DIR`, streamed while the program runs, so a
//! program that aborts or never finalizes still leaves a readable trace. Each call also
//! records the address it was made from, so findings can be grouped by call site.
//!
//! MPICH's Fortran bindings (`mpif.h` and `use mpi`) call the C entry points, so Fortran
//! programs are traced through the same wrappers; the `mpi_f08` module calls `PMPI_`
//! directly and is not traced (see `docs/preload.md`).
//!
//! The library is built against the MPI headers and library that `mpicc` names (through
//! `mpi-sys`): handle types differ between MPI implementations, so it must be loaded
//! into programs built against that same MPI.

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod calls;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod entry;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod handles;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod pmpi;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod tracer;

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod exported {
    use crate::calls::{collective, completion, p2p, setup};

    crate::entry::entry! {
        MPI_Init => setup::init;
        MPI_Init_thread => setup::init_thread;
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
        MPI_Bcast => collective::bcast;
        MPI_Reduce => collective::reduce;
        MPI_Allreduce => collective::allreduce;
        MPI_Allgather => collective::allgather;
        MPI_Allgatherv => collective::allgatherv;
        MPI_Alltoall => collective::alltoall;
        MPI_Alltoallv => collective::alltoallv;
        MPI_Gather => collective::gather;
        MPI_Gatherv => collective::gatherv;
        MPI_Scatter => collective::scatter;
        MPI_Scatterv => collective::scatterv;
        MPI_Ibarrier => collective::ibarrier;
        MPI_Iallreduce => collective::iallreduce;
    }
}
