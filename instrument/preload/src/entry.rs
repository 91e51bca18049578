//! The exported MPI entry points. Each is a trampoline of four instructions that notes
//! the address the program called from (its return address) in this thread's site word,
//! then jumps to the wrapper with the program's arguments untouched. Rust has no stable
//! way to read a function's return address, and a wrapper's own frame layout is the
//! compiler's choice; a naked trampoline reads it where the `call` instruction left it,
//! at `[rsp]`.
//!
//! The site word is the first of the preload's initial-exec thread-local words (see
//! [`crate::thread`]): the trampoline reaches it through the thread pointer and a GOT
//! entry, without calling anything, and touches only `r10` and `r11`, which no MPI
//! signature passes arguments in. Arguments past the sixth stay on the stack where the
//! caller put them, and the final `jmp` leaves the return address in place.

/// Exports `MPI_<name>` as a trampoline to `$wrapper`, which must have the MPI function's
/// exact C signature; attributes (`#[cfg(mpi4)]`) apply to the export. Also defines
/// `EXPORTS`, the names exported in the invoking module (those compiled in), which
/// says what the imports scan counts as recorded ([`crate::imports`]).
macro_rules! entry {
    ($($(#[$attr:meta])* $export:ident => $wrapper:path;)+) => {
        /// The names this module exports, compiled in.
        #[allow(dead_code)]
        pub(crate) const EXPORTS: &[&str] = &[$($(#[$attr])* stringify!($export)),+];
        $(
        $(#[$attr])*
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        #[allow(non_snake_case, missing_docs)]
        pub unsafe extern "C" fn $export() {
            core::arch::naked_asm!(
                "mov r11, qword ptr [rsp]",
                "mov r10, qword ptr [rip + overlap_preload_thread@GOTTPOFF]",
                "mov qword ptr fs:[r10], r11",
                "jmp {wrapper}",
                wrapper = sym $wrapper,
            )
        }
    )+
    };
}

pub(crate) use entry;
