//! `MPI_Pcontrol`, recorded as an event with its level and, for IPM's named regions,
//! the region's name (see `overlap_format::region` for the conventions), so that the
//! merge and the analysis can show regions and cut the run to one.
//!
//! `MPI_Pcontrol` is variadic (`int MPI_Pcontrol(const int level, ...)`) and Rust cannot
//! define a C-variadic function on stable. It does not need to: on x86-64 System V (the
//! only target the preload is built for, see `lib.rs`; AArch64 Linux is alike, Apple's
//! AArch64 is not, as it passes variadic arguments on the stack) a caller passes the
//! first variadic integer or pointer arguments in the same registers as fixed ones
//! (`rsi`, `rdx` after `level` in `edi`), and `al`, the count of vector registers used,
//! is ignored by a callee that reads none. So the wrapper is a plain function of three
//! arguments, `level` and the next two words, which hold whatever the caller left there
//! when it passed fewer: the preload cannot tell whether a name was passed, and
//! [`name`] decides whether the second word points at one without ever faulting.
//! Every word is forwarded to `PMPI_Pcontrol` as the program passed it.
//!
//! Fortran's `MPI_PCONTROL(LEVEL)` is wrapped in [`fortran`]: through `mpif.h` a program
//! may pass a name too (IPM's Fortran convention), which comes with its hidden length.

pub(crate) mod fortran;
pub(crate) mod name;

use std::ffi::{c_char, c_int, c_void};

use mpi_sys::PMPI_Pcontrol;
use overlap_instrument::recorder::CallData;
use overlap_instrument::region::{level_takes_a_name, RegionName};
use overlap_instrument::schema::Op;

use crate::calls::traced;

/// Forwards a Pcontrol at `level` (with the words `rest` the caller passed after it, as
/// they were) and records it, with the region `name` gives, read only for the levels
/// that may carry one.
pub(crate) fn traced_pcontrol(
    level: c_int,
    forward: impl FnOnce() -> c_int,
    name: impl FnOnce() -> Option<RegionName>,
) -> c_int {
    traced(Op::Pcontrol, forward, |t, at, _rc| {
        let name = if level_takes_a_name(level) {
            name()
        } else {
            None
        };
        let data = CallData::Pcontrol {
            level,
            name: name.unwrap_or(RegionName::NONE),
        };
        t.record(Op::Pcontrol, at, data, &[]);
    })
}

/// `MPI_Pcontrol(level, ...)`: `first` and `second` are the first two variadic words,
/// or whatever the registers held when the program passed fewer (see the module's
/// note on the ABI). `first` is read as a region name only by [`name::c_string`]'s rule.
pub(crate) unsafe extern "C" fn pcontrol(
    level: c_int,
    first: *const c_char,
    second: *const c_void,
) -> c_int {
    traced_pcontrol(
        level,
        // SAFETY: the program's words, passed on unchanged to the variadic PMPI_Pcontrol,
        // which reads at most what the program gave it.
        || unsafe { PMPI_Pcontrol(level, first, second) },
        || name::c_string(first as usize),
    )
}
