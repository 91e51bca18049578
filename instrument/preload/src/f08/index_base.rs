//! How MPICH's own `mpi_f08` bindings number the indices that Waitany, Testany,
//! Waitsome and Testsome return (MPI says from 1; MPICH 4.0's give C's, from 0), asked
//! of the bindings themselves, once each.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use mpi_sys::*;

use crate::fint::{symbol, Fint};

/// The calls that return indices.
#[derive(Clone, Copy)]
pub(crate) enum Indexed {
    Waitany,
    Testany,
    Waitsome,
    Testsome,
}

/// How MPICH's own binding of `call` numbers the indices it returns. MPI says from 1;
/// MPICH 4.0's `mpi_f08` Waitany, Testany, Waitsome and Testsome return C's numbers,
/// from 0. The preload must not change what the program sees, so it asks the binding
/// once, with one request that is complete already (a receive from `MPI_PROC_NULL`,
/// through `PMPI_*`: nothing is recorded), and answers the same way. 1 when the binding
/// cannot be found or asked.
pub(crate) fn index_base(call: Indexed) -> c_int {
    static BASES: [OnceLock<c_int>; 4] = [const { OnceLock::new() }; 4];
    let slot = &BASES[call as usize];
    if let Some(base) = slot.get() {
        return *base;
    }
    // Outside MPI_Init ... MPI_Finalize (an erroneous call) the binding cannot be asked:
    // MPI's numbering this once, asked again next time.
    if !mpi_is_running() {
        return 1;
    }
    *slot.get_or_init(|| ask_index_base(call).unwrap_or(1))
}

/// Whether MPI is initialized and not finalized.
fn mpi_is_running() -> bool {
    let (mut initialized, mut finalized): (c_int, c_int) = (0, 0);
    // SAFETY: out-pointers to locals; both calls are allowed at any time.
    unsafe {
        PMPI_Initialized(&mut initialized);
        PMPI_Finalized(&mut finalized);
    }
    initialized != 0 && finalized == 0
}

fn ask_index_base(call: Indexed) -> Option<c_int> {
    let name = match call {
        Indexed::Waitany => c"pmpir_waitany_f08_",
        Indexed::Testany => c"pmpir_testany_f08_",
        Indexed::Waitsome => c"pmpir_waitsome_f08_",
        Indexed::Testsome => c"pmpir_testsome_f08_",
    };
    let at = symbol(name);
    if at == 0 {
        return None;
    }
    let mut request = MPI_Request(0);
    let mut byte = 0u8;
    // SAFETY: a receive of nothing from MPI_PROC_NULL, complete at once; plain reads of
    // the MPI shim's constants.
    let rc = unsafe {
        PMPI_Irecv(
            (&raw mut byte).cast(),
            0,
            RSMPI_UINT8_T,
            RSMPI_PROC_NULL,
            0,
            RSMPI_COMM_WORLD,
            &mut request,
        )
    };
    if rc != 0 {
        return None;
    }
    let one: Fint = 1;
    let (mut index, mut flag, mut ierr): (Fint, Fint, Fint) = (-1, 0, 0);
    let mut indices: [Fint; 1] = [-1];
    // SAFETY: an MPI_Status in C's layout is MPICH's type(MPI_Status).
    let mut status: MPI_Status = unsafe { std::mem::zeroed() };
    let requests = (&raw mut request).cast::<Fint>();
    let status = (&raw mut status).cast::<c_void>();
    type Any = unsafe extern "C" fn(*const Fint, *mut Fint, *mut Fint, *mut c_void, *mut Fint);
    type TestAny =
        unsafe extern "C" fn(*const Fint, *mut Fint, *mut Fint, *mut Fint, *mut c_void, *mut Fint);
    type Some =
        unsafe extern "C" fn(*const Fint, *mut Fint, *mut Fint, *mut Fint, *mut c_void, *mut Fint);
    // SAFETY: MPICH's bindings of these calls have these signatures (their Fortran
    // arguments by reference, then IERROR); one complete request, one status.
    unsafe {
        match call {
            Indexed::Waitany => {
                std::mem::transmute::<usize, Any>(at)(
                    &one, requests, &mut index, status, &mut ierr,
                );
            }
            Indexed::Testany => std::mem::transmute::<usize, TestAny>(at)(
                &one, requests, &mut index, &mut flag, status, &mut ierr,
            ),
            Indexed::Waitsome | Indexed::Testsome => {
                let mut out: Fint = 0;
                std::mem::transmute::<usize, Some>(at)(
                    &one,
                    requests,
                    &mut out,
                    indices.as_mut_ptr(),
                    status,
                    &mut ierr,
                );
                index = if out == 1 { indices[0] } else { -1 };
            }
        }
    }
    // SAFETY: a C request is MPICH's Fortran one; one not completed above is freed.
    unsafe {
        if request != RSMPI_REQUEST_NULL {
            PMPI_Request_free(&mut request);
        }
    }
    (ierr == 0 && (index == 0 || index == 1)).then_some(index)
}
