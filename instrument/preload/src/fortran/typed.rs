//! The Fortran wrappers of the calls that take an array of datatypes (Alltoallw,
//! Neighbor_alltoallw and their non-blocking forms): each handle of the array goes
//! through `MPI_Type_f2c`, as many as Open MPI's own binding converts (the
//! communicator's size, or its neighbours in and out).

use std::ffi::{c_int, c_void};

use mpi_sys::*;
use smallvec::SmallVec;

use super::convert::{Arg, Comm, NewRequest, RecvBuf, SendBuf};
use crate::calls::{collective, neighbor};
use crate::fint::{set_ierr, Fint};

/// `n` Fortran datatype handles as C's.
///
/// # Safety
/// `f` holds `n` handles (or is null when `n` is 0).
unsafe fn types(f: *const Fint, n: c_int) -> SmallVec<[MPI_Datatype; 16]> {
    let n = usize::try_from(n).unwrap_or(0);
    // SAFETY: per the function's contract; the conversion takes any value.
    (0..n)
        .map(|i| unsafe { PMPI_Type_f2c(*f.add(i)) })
        .collect()
}

/// How many peers each side of an Alltoallw on `comm` has: the group, or for an
/// intercommunicator the remote group.
fn alltoallw_peers(comm: MPI_Comm) -> (c_int, c_int) {
    let (mut inter, mut n): (c_int, c_int) = (0, 0);
    // SAFETY: out-pointers to locals.
    unsafe {
        PMPI_Comm_test_inter(comm, &mut inter);
        if inter != 0 {
            PMPI_Comm_remote_size(comm, &mut n);
        } else {
            PMPI_Comm_size(comm, &mut n);
        }
    }
    (n, n)
}

/// The four calls: `$name(args) = c_wrapper` with the receive and send peer counts
/// `$peers(comm)` gives (in, out), the displacement type and, for the non-blocking
/// forms, a request.
macro_rules! typed {
    ($($name:ident = $c:path, $peers:path, $disp:ty $(, $request:ident)?;)+) => {$(
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe extern "C" fn $name(
            sendbuf: *mut c_void,
            sendcounts: *const Fint,
            sdispls: *const $disp,
            sendtypes: *const Fint,
            recvbuf: *mut c_void,
            recvcounts: *const Fint,
            rdispls: *const $disp,
            recvtypes: *const Fint,
            comm: *const Fint,
            $($request: *mut Fint,)?
            ierr: *mut Fint,
        ) {
            // SAFETY: the program's arguments, valid for this call.
            unsafe {
                let mut c = Comm::new(comm);
                let c = c.c();
                let (incoming, outgoing) = $peers(c);
                let send_types = types(sendtypes, outgoing);
                let recv_types = types(recvtypes, incoming);
                let (mut s, mut r) = (SendBuf::new(sendbuf), RecvBuf::new(recvbuf));
                $(let mut $request = NewRequest::new($request);)?
                let rc = $c(
                    s.c(), sendcounts, sdispls, send_types.as_ptr(),
                    r.c(), recvcounts, rdispls, recv_types.as_ptr(), c
                    $(, $request.c())?
                );
                if rc == 0 {
                    $($request.back();)?
                }
                set_ierr(ierr, rc);
            }
        }
    )+};
}

typed! {
    alltoallw = collective::alltoallw, alltoallw_peers, c_int;
    ialltoallw = collective::ialltoallw, alltoallw_peers, c_int, request;
    neighbor_alltoallw = neighbor::neighbor_alltoallw, neighbor::degrees, MPI_Aint;
    ineighbor_alltoallw = neighbor::ineighbor_alltoallw, neighbor::degrees, MPI_Aint, request;
}
