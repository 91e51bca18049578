//! The exported MPI entry points. Each is a trampoline of a dozen instructions that notes
//! the address the program called from (its return address) for this thread, then jumps
//! to the wrapper with the program's arguments untouched. Rust has no stable way to read
//! a function's return address, and a wrapper's own frame layout is the compiler's
//! choice; a naked trampoline reads it where the `call` instruction left it, at `[rsp]`.
//!
//! The trampolines save and restore the six argument registers around the note, so they
//! work for every MPI signature (arguments past the sixth stay on the stack where the
//! caller put them, and the final `jmp` leaves the return address in place).

use std::cell::Cell;

thread_local! {
    /// The return address of the MPI call this thread is in (0 before any).
    static SITE: Cell<u64> = const { Cell::new(0) };
}

/// Called by the trampolines, with the caller's return address.
pub(crate) extern "C" fn note_site(address: u64) {
    SITE.set(address);
}

/// The address the program called the current MPI function from.
#[inline]
pub(crate) fn site() -> u64 {
    SITE.get()
}

/// Exports `MPI_<name>` as a trampoline to `$wrapper`, which must have the MPI function's
/// exact C signature.
macro_rules! entry {
    ($($export:ident => $wrapper:path;)+) => {$(
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        #[allow(non_snake_case, missing_docs)]
        pub unsafe extern "C" fn $export() {
            core::arch::naked_asm!(
                // On entry rsp % 16 == 8; six pushes and 8 bytes more realign it for
                // the call. The return address is then at rsp + 56.
                "push rdi",
                "push rsi",
                "push rdx",
                "push rcx",
                "push r8",
                "push r9",
                "sub rsp, 8",
                "mov rdi, [rsp + 56]",
                "call {note}",
                "add rsp, 8",
                "pop r9",
                "pop r8",
                "pop rcx",
                "pop rdx",
                "pop rsi",
                "pop rdi",
                "jmp {wrapper}",
                note = sym $crate::entry::note_site,
                wrapper = sym $wrapper,
            )
        }
    )+};
}

pub(crate) use entry;
