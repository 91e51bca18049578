//! MPICH's `mpi_f08` entry points. MPICH's `mpif.h` and `use mpi` bindings call its C
//! entry points, which the preload wraps. Its `use mpi_f08` bindings do too for every
//! call with a buffer (`mpi_isend_f08ts_` goes through `MPI_Isend`), but the others
//! (`mpi_init_f08_`, `mpi_wait_f08_`, `mpi_startall_f08_`, the window
//! synchronisations...) call `PMPI_*` directly: without these wrappers an `mpi_f08`
//! program would not even start the recording. So the preload built for MPICH
//! (`cfg(not(openmpi))`; Open MPI's `mpi_f08` goes through [`crate::fortran`]) defines
//! those `mpi_*_f08_` names too, and calls the C wrappers.
//!
//! MPICH's `mpi_f08` handles are `type(MPI_Comm)` and the like, one `INTEGER` whose
//! value is the C handle, and its `type(MPI_Status)` has the C `MPI_Status`'s layout:
//! both pass through as they are. What differs from C: `MPI_STATUS_IGNORE` and
//! `MPI_STATUSES_IGNORE` are Fortran objects (`MPIR_F08_MPI_STATUS_IGNORE_OBJ`...),
//! turned into C's sentinels, and indices are 1-based.
//!
//! Calls MPICH's `mpi_f08` makes through `PMPI_*` that are not wrapped here are named
//! in the header's unrecorded calls when a program imports them (the imports scan reads
//! what is wrapped from `EXPORTS`). Calls with a buffer go through the C entry points
//! (their `_large` forms through the large-count `_c` ones); `MPI_Type_free` through
//! `PMPI_Type_free`, which the preload defines for its datatype caches
//! ([`crate::types`]).

mod calls;
mod index_base;

pub(crate) use calls::EXPORTS;
