//! What the Fortran wrappers of both MPIs share ([`crate::fortran`] for Open MPI,
//! [`crate::f08`] for MPICH's `mpi_f08`): Fortran's `INTEGER`, its `IERROR` argument,
//! indices counted from 1 (or as the MPI's own binding counts them), and the MPI's
//! Fortran objects and bindings, looked up by name at run time (only Fortran programs
//! load the libraries that define them).

use std::ffi::{c_int, CStr};

use mpi_sys::RSMPI_UNDEFINED;

/// A Fortran `INTEGER` as MPI's Fortran bindings take it (`MPI_Fint`: a macro in Open
/// MPI's `mpi.h` that the bindings do not carry, `int` in both MPIs).
pub(crate) type Fint = c_int;

/// Writes MPI's return code to `IERROR`, when the program passed one (it is optional in
/// `mpi_f08`).
pub(crate) fn set_ierr(ierr: *mut Fint, rc: c_int) {
    if !ierr.is_null() {
        // SAFETY: the program's IERROR argument.
        unsafe { *ierr = rc };
    }
}

/// A C index (0-based, or `MPI_UNDEFINED`) counted from `base` (1 in Fortran).
pub(crate) fn index_from(i: c_int, base: c_int) -> Fint {
    // SAFETY: a plain read of the MPI shim's constant.
    if i == unsafe { RSMPI_UNDEFINED } || i < 0 {
        i
    } else {
        i + base
    }
}

/// The address of a symbol in the process (0 when absent).
pub(crate) fn symbol(name: &CStr) -> usize {
    // SAFETY: a NUL-terminated name looked up in the process's global scope.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
}
