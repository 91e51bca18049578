//! Fortran call sites where an MPI's own Fortran binding sits between the program and
//! the preload.
//!
//! MPICH's `mpif.h` and `use mpi` bindings (`mpi_isend_` in `libmpichfort.so`) and its
//! `mpi_f08` calls with a buffer (`mpi_isend_f08ts_`) call the C entry points
//! (`MPI_Isend`), and Open MPI's `mpi_f08` bindings (`mpi_isend_f08_`) call the internal
//! names the preload wraps (`ompi_isend_f`): the entry trampoline then notes a return
//! address inside the binding's library, the same for every call of that function
//! whatever line made it. So the preload also exports each such binding name (the list is
//! made by rule in `build.rs`, see [`names`]) as a site-only trampoline: it notes its own
//! return address (the program's line) and stack pointer in two more thread words and
//! jumps to the MPI's binding, found with `dlsym(RTLD_NEXT)` on the first call (a
//! binding no library defines ends the program as the dynamic linker would have,
//! "symbol lookup error", exit 127). Nothing else changes: the binding runs with the
//! program's arguments, stack and return address untouched.
//!
//! [`program_site`] then decides, for each recorded call made while those words are set:
//! a C site inside the text of a library one of these bindings was found in means the
//! binding called the C entry point, and the site is the binding's caller. The words
//! are taken (zeroed) by the first recorded call that reads them, whichever it is, and
//! used only when the binding's stack pointer lies above the current frame: a binding
//! call lends its line to one call at most, never to a C call of the program's, nor to
//! a later call from inside the MPI that came another way (a binding name the rule
//! misses), which keeps its address inside the library, reported by the analysis as
//! "site unknown". A C program never enters a binding: its calls pay one test of a
//! thread word that stays 0, beside the site word.

// The naming rule is `build.rs`'s; compiled here for its tests.
#[cfg(test)]
mod names;

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Exports each `index name;` as a site-only trampoline to the MPI's `name`; attributes
/// (`#[cfg(mpi4)]`) apply to the export. Also defines `NAMES` (NUL-terminated, by index,
/// every name whatever its attributes) for the late lookup.
///
/// Like an entry trampoline ([`crate::entry`]) it touches only `r10` and `r11` and
/// leaves the stack as the program's call left it: it stores the return address and
/// the stack pointer in this thread's words, then jumps to `REAL[index]`, or, while
/// that is 0, to [`late_stub`] with the index in `r11d`.
macro_rules! site_only {
    ($($(#[$attr:meta])* $index:literal $name:ident;)*) => {
        /// Every binding name, by index, NUL-terminated.
        pub(crate) const NAMES: &[&str] = &[$(concat!(stringify!($name), "\0")),*];
        $(
        $(#[$attr])*
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        #[allow(non_snake_case, missing_docs)]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                "mov r11, qword ptr [rsp]",
                "mov r10, qword ptr [rip + overlap_preload_thread@GOTTPOFF]",
                "mov qword ptr fs:[r10 + {site}], r11",
                "mov qword ptr fs:[r10 + {sp}], rsp",
                "mov r11, qword ptr [rip + {real} + {slot}]",
                "test r11, r11",
                "jz 2f",
                "jmp r11",
                "2:",
                "mov r11d, {index}",
                "jmp {late}",
                site = const OUTER_SITE_OFFSET,
                sp = const OUTER_SP_OFFSET,
                real = sym REAL,
                slot = const $index * 8,
                index = const $index,
                late = sym late_stub,
            )
        }
        )*
    };
}

mod exported {
    use super::{late_stub, REAL};
    use crate::thread::{OUTER_SITE_OFFSET, OUTER_SP_OFFSET};

    include!(concat!(env!("OUT_DIR"), "/fortran_sites.rs"));
}

/// The MPI's binding of each name, by index; 0 until the first call looks it up.
static REAL: [AtomicUsize; exported::NAMES.len()] =
    [const { AtomicUsize::new(0) }; exported::NAMES.len()];

/// How many libraries' text the bindings were found in, at most.
const MAX_RANGES: usize = 8;

/// The text ranges `[start, end)` of the libraries the bindings were found in; (0, 0)
/// where unused.
static RANGES: [(AtomicU64, AtomicU64); MAX_RANGES] =
    [const { (AtomicU64::new(0), AtomicU64::new(0)) }; MAX_RANGES];

/// The site to record for a call whose entry trampoline noted `site`, made after the
/// program entered a binding ([`crate::thread::site`] asks only then): the binding's
/// caller when `site` lies inside a binding library and the binding is still running,
/// else `site`. Either way the binding's words are taken: one binding call lends its
/// site to one recorded call at most.
#[cold]
#[inline(never)]
pub(crate) fn program_site(site: u64) -> u64 {
    let (outer, outer_sp) = crate::thread::take_outer();
    let inside = RANGES.iter().any(|(s, e)| {
        let (s, e) = (s.load(Ordering::Relaxed), e.load(Ordering::Acquire));
        (s..e).contains(&site)
    });
    let here = 0u8;
    choose(
        site,
        inside,
        outer,
        outer_sp,
        std::ptr::addr_of!(here) as u64,
    )
}

/// The site of a call whose entry trampoline noted `site` (`inside` a binding library
/// or not), given the last binding call's return address and stack pointer and a stack
/// address of the current frame: the binding's caller when the call came from inside a
/// binding that it is nested in (whose stack pointer lies above), else `site`.
fn choose(site: u64, inside: bool, outer: u64, outer_sp: u64, here: u64) -> u64 {
    if inside && outer != 0 && outer_sp > here {
        outer
    } else {
        site
    }
}

/// Entered from a trampoline whose binding is not looked up yet, with its index in
/// `r11d` and the program's arguments in place: saves every register an argument can
/// come in, looks the binding up ([`late`]), restores them and jumps to it.
#[unsafe(naked)]
unsafe extern "C" fn late_stub() {
    // On entry rsp is 8 mod 16 (the program's call pushed its return address); rbp and
    // seven registers leave it so, and 136 bytes for xmm0-7 align it for the call.
    core::arch::naked_asm!(
        "push rbp",
        "mov rbp, rsp",
        "push rdi",
        "push rsi",
        "push rdx",
        "push rcx",
        "push r8",
        "push r9",
        "push rax",
        "sub rsp, 136",
        "movdqu xmmword ptr [rsp], xmm0",
        "movdqu xmmword ptr [rsp + 16], xmm1",
        "movdqu xmmword ptr [rsp + 32], xmm2",
        "movdqu xmmword ptr [rsp + 48], xmm3",
        "movdqu xmmword ptr [rsp + 64], xmm4",
        "movdqu xmmword ptr [rsp + 80], xmm5",
        "movdqu xmmword ptr [rsp + 96], xmm6",
        "movdqu xmmword ptr [rsp + 112], xmm7",
        "mov edi, r11d",
        "call {late}",
        "mov r11, rax",
        "movdqu xmm0, xmmword ptr [rsp]",
        "movdqu xmm1, xmmword ptr [rsp + 16]",
        "movdqu xmm2, xmmword ptr [rsp + 32]",
        "movdqu xmm3, xmmword ptr [rsp + 48]",
        "movdqu xmm4, xmmword ptr [rsp + 64]",
        "movdqu xmm5, xmmword ptr [rsp + 80]",
        "movdqu xmm6, xmmword ptr [rsp + 96]",
        "movdqu xmm7, xmmword ptr [rsp + 112]",
        "add rsp, 136",
        "pop rax",
        "pop r9",
        "pop r8",
        "pop rcx",
        "pop rdx",
        "pop rsi",
        "pop rdi",
        "pop rbp",
        "jmp r11",
        late = sym late,
    )
}

/// Looks up binding `index` past the preload (as the dynamic linker would have bound
/// the program's call without it), notes its library's text, and returns its address.
/// Never returns without one: the program called a function no library defines, which
/// ends it as it would have ended untraced.
extern "C" fn late(index: u32) -> usize {
    let name = exported::NAMES
        .get(index as usize)
        .copied()
        .unwrap_or("?\0");
    // SAFETY: a NUL-terminated name, looked up after this library.
    let real = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
    if real == 0 {
        let text = name.trim_end_matches('\0');
        let msg = format!("overlap-preload: symbol lookup error: undefined symbol: {text}\n");
        // SAFETY: a plain write of our own buffer to stderr, then the exit the dynamic
        // linker takes for an unbound symbol.
        unsafe {
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::_exit(127);
        }
    }
    note_library(real as u64);
    if let Some(slot) = REAL.get(index as usize) {
        // Release: the trampoline that reads it on another thread sees the ranges too.
        slot.store(real, Ordering::Release);
    }
    real
}

/// Adds the text of the library holding `addr` to the ranges (once per library).
fn note_library(addr: u64) {
    static WRITER: Mutex<()> = Mutex::new(());
    let _one = WRITER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut found = Text {
        addr,
        ranges: [(0, 0); 4],
        count: 0,
    };
    // SAFETY: the callback reads the loader's records for the duration of the call.
    unsafe { libc::dl_iterate_phdr(Some(text_of), std::ptr::addr_of_mut!(found).cast()) };
    for &(start, end) in &found.ranges[..found.count] {
        add_range(start, end);
    }
}

/// Records `[start, end)` among the ranges, when new and there is room (a library
/// left out keeps its calls' addresses inside it). Called under `WRITER`.
fn add_range(start: u64, end: u64) {
    let mut free = None;
    for (i, (s, e)) in RANGES.iter().enumerate() {
        let (s, e) = (s.load(Ordering::Relaxed), e.load(Ordering::Relaxed));
        if (s, e) == (start, end) {
            return;
        }
        if free.is_none() && (s, e) == (0, 0) {
            free = Some(i);
        }
    }
    let Some(i) = free else { return };
    // The end last: a reader between the two stores sees an empty range.
    RANGES[i].0.store(start, Ordering::Relaxed);
    RANGES[i].1.store(end, Ordering::Release);
}

/// What [`text_of`] looks for and finds: the executable segments of the object that
/// holds `addr`.
struct Text {
    addr: u64,
    ranges: [(u64, u64); 4],
    count: usize,
}

/// `dl_iterate_phdr`'s callback: fills the [`Text`] when this object holds its address.
unsafe extern "C" fn text_of(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut c_void,
) -> c_int {
    // SAFETY: the loader's record of one object, valid during the callback, and our
    // `Text`.
    let (info, found) = unsafe { (&*info, &mut *data.cast::<Text>()) };
    if info.dlpi_phdr.is_null() {
        return 0;
    }
    // SAFETY: `dlpi_phnum` headers at `dlpi_phdr`, as the loader describes the object.
    let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum.into()) };
    let mut text = [(0u64, 0u64); 4];
    let mut count = 0;
    let mut holds = false;
    for h in headers {
        if h.p_type != libc::PT_LOAD || h.p_flags & libc::PF_X == 0 {
            continue;
        }
        let start = info.dlpi_addr + h.p_vaddr;
        let end = start + h.p_memsz;
        holds |= (start..end).contains(&found.addr);
        if count < text.len() {
            text[count] = (start, end);
            count += 1;
        }
    }
    if holds {
        found.ranges = text;
        found.count = count;
        1
    } else {
        0
    }
}

#[cfg(test)]
mod tests;
