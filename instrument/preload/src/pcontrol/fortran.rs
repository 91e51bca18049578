//! Fortran's `MPI_PCONTROL(LEVEL)`, recorded as its C twin ([`super::pcontrol`]).
//!
//! Through `mpif.h` (no interface checks the arguments) a program may follow IPM's
//! convention, `call MPI_PCONTROL(1, "solve")`: gfortran then passes the name's address
//! after `LEVEL`'s and its length as a hidden last argument, so [`pcontrol_f`] reads the
//! name from those two words by [`super::name::fortran_string`]'s rule (a call without a
//! name leaves whatever the registers held, as in C). `use mpi` and `use mpi_f08` take
//! `LEVEL` alone.
//!
//! Exported under each MPI's names: MPICH's `mpif.h` and `use mpi` bindings would call
//! `MPI_Pcontrol` with `LEVEL` alone, so the preload built for MPICH defines their four
//! manglings itself (below), and its `mpi_f08` one in `src/f08`; Open MPI's names,
//! `mpi_pcontrol_` and `ompi_pcontrol_f` (which its `mpi_f08` binding calls), are in
//! `src/fortran` with every other call it wraps there. Each forwards to `PMPI_Pcontrol`.

use std::ffi::{c_char, c_int};

use mpi_sys::PMPI_Pcontrol;

use super::{name, traced_pcontrol};
use crate::fint::{set_ierr, Fint};

/// `LEVEL`'s value (0 for a null pointer, which no compiler passes).
fn level_of(level: *const Fint) -> c_int {
    // SAFETY: the program's LEVEL argument, when not null.
    unsafe { level.as_ref() }.copied().unwrap_or(0)
}

/// `MPI_PCONTROL(LEVEL)` through `mpif.h` or `use mpi`, with the words a name would
/// come in (`name`, `len`: see the module's note).
pub(crate) unsafe extern "C" fn pcontrol_f(level: *const Fint, name: *const c_char, len: usize) {
    let level = level_of(level);
    traced_pcontrol(
        level,
        // SAFETY: LEVEL's value, as the MPI's own binding passes it.
        || unsafe { PMPI_Pcontrol(level) },
        || name::fortran_string(name as usize, len),
    );
}

/// `MPI_PCONTROL(LEVEL)` where no name can come (Open MPI's `ompi_pcontrol_f`).
#[cfg_attr(not(openmpi), allow(dead_code))]
pub(crate) unsafe extern "C" fn pcontrol_level(level: *const Fint) {
    let level = level_of(level);
    // SAFETY: LEVEL's value, as the MPI's own binding passes it.
    traced_pcontrol(level, || unsafe { PMPI_Pcontrol(level) }, || None);
}

/// `MPI_Pcontrol(level, ierror)` of MPICH's `mpi_f08` (IERROR optional).
#[cfg_attr(openmpi, allow(dead_code))]
pub(crate) unsafe extern "C" fn pcontrol_f08(level: *const Fint, ierr: *mut Fint) {
    let level = level_of(level);
    // SAFETY: LEVEL's value, as the MPI's own binding passes it.
    let rc = traced_pcontrol(level, || unsafe { PMPI_Pcontrol(level) }, || None);
    set_ierr(ierr, rc);
}

/// MPICH's `mpif.h` and `use mpi` names for MPI_PCONTROL.
#[cfg(not(openmpi))]
mod mpich {
    use super::pcontrol_f;

    crate::entry::entry! {
        mpi_pcontrol => pcontrol_f;
        mpi_pcontrol_ => pcontrol_f;
        mpi_pcontrol__ => pcontrol_f;
        MPI_PCONTROL => pcontrol_f;
    }
}
