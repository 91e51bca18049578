//! Fortran's entry points where the MPI's Fortran bindings bypass its C ones.
//!
//! MPICH's `mpif.h` and `use mpi` bindings call the C entry points (`MPI_Isend`), so the
//! C wrappers see Fortran programs too. Open MPI's call `PMPI_Isend` directly, and its
//! `mpi_f08` bindings call the `mpif.h` ones' internal names (`ompi_isend_f`): under
//! Open MPI a Fortran program would leave no trace. So the preload built for Open MPI
//! (`cfg(openmpi)`, see `build.rs`) defines the Fortran names too, `mpi_isend_` (the
//! name gfortran and ifort give `MPI_ISEND`) and `ompi_isend_f`, and does what Open
//! MPI's own binding does: the handles turned into C ones (`MPI_Comm_f2c`...), the
//! sentinels (`MPI_BOTTOM`, `MPI_IN_PLACE`, `MPI_STATUS(ES)_IGNORE`, addresses of
//! Open MPI's Fortran common blocks) into C's, then the C wrapper called (which records
//! and forwards to `PMPI_*`), and what it wrote turned back (requests, statuses, flags,
//! 1-based indices). A Fortran call is recorded exactly as its C twin.
//!
//! Every call the C wrappers record is wrapped here (the imports scan reads what from
//! `exports::EXPORTS`), but for the MPI-4 persistent collectives, which Open MPI 4 (MPI
//! 3.1) does not have.

mod calls;
mod convert;
mod exports;
mod typed;

pub(crate) use exports::EXPORTS;
