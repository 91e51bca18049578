//! The program letting go of memory, or changing it under a watch: a watch over the
//! memory ends first (`Released`), so that no protection outlives the buffer (a page
//! given back and mapped again for something else is never re-protected or restored
//! by a watch that no longer owns it). `free` and `realloc` release the block
//! `malloc_usable_size` measures; `munmap`, `mremap`, `mprotect`, `pkey_mprotect`,
//! `madvise` and `mmap` over a watched range release that range (and tell the maps
//! they changed); `dlclose` may unmap a library's data: every watch ends.
//!
//! UCX (under MPICH or Open MPI) hooks `mmap`, `munmap`, `mremap`, `madvise`, `brk` and
//! `shmdt` itself, by rewriting the program's and the libraries' relocations (or libc's
//! code) at `MPI_Init`: the program's calls then reach UCX's hooks and libc, not these
//! wrappers. Where UCX's memory library is loaded, the watch registers for its events
//! too ([`follow_ucx`]): its "memory unmapped" event, raised before the memory goes,
//! ends the watches over it.
//!
//! Threads made with `pthread_create` have their stacks noted (never watched) until
//! they are joined.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU8, Ordering};

use overlap_instrument::schema::WatchEnd;

use super::memory;
use super::real::{call_next, free_next, Next};
use super::slots::{self, Ending};

fn released(lo: u64, hi: u64) {
    slots::end_overlapping(lo, hi, super::now(), |_, _| {
        Ending::Ended(WatchEnd::Released)
    });
}

/// Ends the watches over the heap block at `p` (not null).
fn block_released(p: *mut c_void) {
    // SAFETY: a block the program is about to free or reallocate, so a live one of its
    // allocator's.
    let size = unsafe { libc::malloc_usable_size(p) } as u64;
    let lo = p as u64;
    released(lo, lo.saturating_add(size.max(1)));
}

/// `free`: the block's watches end first.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if !p.is_null() && slots::busy() != 0 {
        block_released(p);
    }
    free_next(p);
}

/// `realloc`: the old block's watches end first (it may move, shrink or grow).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    static NEXT: Next = Next::new(c"realloc");
    if !p.is_null() && slots::busy() != 0 {
        block_released(p);
    }
    call_next!(
        NEXT,
        unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void,
        std::ptr::null_mut(),
        (p, size)
    )
}

/// `reallocarray`, as `realloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    static NEXT: Next = Next::new(c"reallocarray");
    if !p.is_null() && slots::busy() != 0 {
        block_released(p);
    }
    call_next!(
        NEXT,
        unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void,
        std::ptr::null_mut(),
        (p, n, size)
    )
}

/// Before a call that changes `[addr, addr + len)`'s mapping or protection.
fn remapping(addr: *mut c_void, len: usize) {
    if super::asked() {
        memory::mappings_changed();
        let lo = addr as u64;
        released(lo, lo.saturating_add(len as u64));
    }
}

#[unsafe(no_mangle)]
#[allow(missing_docs)]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: usize) -> c_int {
    static NEXT: Next = Next::new(c"munmap");
    remapping(addr, len);
    call_next!(
        NEXT,
        unsafe extern "C" fn(*mut c_void, usize) -> c_int,
        -1,
        (addr, len)
    )
}

/// `mremap`: the fifth argument is read only with `MREMAP_FIXED`, as libc's does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mremap(
    old: *mut c_void,
    old_len: usize,
    new_len: usize,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    static NEXT: Next = Next::new(c"mremap");
    remapping(old, old_len);
    if flags & libc::MREMAP_FIXED != 0 {
        remapping(new_addr, new_len);
    }
    call_next!(
        NEXT,
        unsafe extern "C" fn(*mut c_void, usize, usize, c_int, *mut c_void) -> *mut c_void,
        libc::MAP_FAILED,
        (old, old_len, new_len, flags, new_addr)
    )
}

#[unsafe(no_mangle)]
#[allow(missing_docs)]
pub unsafe extern "C" fn mprotect(addr: *mut c_void, len: usize, prot: c_int) -> c_int {
    static NEXT: Next = Next::new(c"mprotect");
    remapping(addr, len);
    call_next!(
        NEXT,
        unsafe extern "C" fn(*mut c_void, usize, c_int) -> c_int,
        -1,
        (addr, len, prot)
    )
}

#[unsafe(no_mangle)]
#[allow(missing_docs)]
pub unsafe extern "C" fn pkey_mprotect(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    key: c_int,
) -> c_int {
    static NEXT: Next = Next::new(c"pkey_mprotect");
    remapping(addr, len);
    call_next!(
        NEXT,
        unsafe extern "C" fn(*mut c_void, usize, c_int, c_int) -> c_int,
        -1,
        (addr, len, prot, key)
    )
}

#[unsafe(no_mangle)]
#[allow(missing_docs)]
pub unsafe extern "C" fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int {
    static NEXT: Next = Next::new(c"madvise");
    remapping(addr, len);
    call_next!(
        NEXT,
        unsafe extern "C" fn(*mut c_void, usize, c_int) -> c_int,
        -1,
        (addr, len, advice)
    )
}

macro_rules! mmaps {
    ($($name:ident, $c:literal;)+) => {$(
        /// A new mapping (over a watched range only with `MAP_FIXED`).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            addr: *mut c_void,
            len: usize,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            off: i64,
        ) -> *mut c_void {
            static NEXT: Next = Next::new($c);
            if flags & libc::MAP_FIXED != 0 {
                remapping(addr, len);
            } else if super::asked() {
                memory::mappings_changed();
            }
            call_next!(
                NEXT,
                unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, c_int, i64) -> *mut c_void,
                libc::MAP_FAILED,
                (addr, len, prot, flags, fd, off)
            )
        }
    )+};
}

mmaps! {
    mmap, c"mmap";
    mmap64, c"mmap64";
}

/// The start of glibc's `struct link_map`.
#[repr(C)]
struct LinkMap {
    l_addr: usize,
}

/// Calls `each(start, end)` for every loadable segment of the object loaded at `base`.
fn segments_of(base: usize, mut each: impl FnMut(u64, u64)) {
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr's argument, and ours.
        let (info, want) = unsafe {
            (
                &*info,
                &mut *data.cast::<(usize, &mut dyn FnMut(u64, u64))>(),
            )
        };
        if info.dlpi_addr as usize != want.0 {
            return 0;
        }
        for k in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: `dlpi_phnum` program headers at `dlpi_phdr`.
            let ph = unsafe { &*info.dlpi_phdr.add(k) };
            if ph.p_type == libc::PT_LOAD {
                let start = info.dlpi_addr + ph.p_vaddr;
                (want.1)(start, start + ph.p_memsz);
            }
        }
        1
    }
    let mut data: (usize, &mut dyn FnMut(u64, u64)) = (base, &mut each);
    // SAFETY: a callback that only reads what the loader gives it.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut data).cast()) };
}

/// `dlclose` may unmap a library, its data and its `.bss`: the watches over its
/// segments end first.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlclose(handle: *mut c_void) -> c_int {
    static NEXT: Next = Next::new(c"dlclose");
    if super::asked() {
        memory::mappings_changed();
        let mut map: *mut LinkMap = std::ptr::null_mut();
        // SAFETY: the program's handle; dlinfo writes a link_map pointer.
        let found =
            unsafe { libc::dlinfo(handle, libc::RTLD_DI_LINKMAP, (&raw mut map).cast()) == 0 };
        // SAFETY: the link map dlinfo gave.
        match unsafe { map.as_ref() }.filter(|_| found) {
            Some(m) => segments_of(m.l_addr, |lo, hi| released(lo, hi + memory::page())),
            None => released(0, u64::MAX),
        }
    }
    call_next!(
        NEXT,
        unsafe extern "C" fn(*mut c_void) -> c_int,
        -1,
        (handle)
    )
}

/// `ucm_event_type_t` of UCX's `ucm.h`: memory mapped, memory unmapped (raised before),
/// and "do not install hooks for this handler" (UCX keeps the hooks it chose).
const UCM_EVENT_VM_MAPPED: i32 = 1 << 16;
const UCM_EVENT_VM_UNMAPPED: i32 = 1 << 17;
const UCM_EVENT_FLAG_NO_INSTALL: i32 = 1 << 24;

/// The `vm_mapped` / `vm_unmapped` member of UCX's `ucm_event_t`.
#[repr(C)]
struct UcmRange {
    address: *mut c_void,
    size: usize,
}

/// UCX's memory event: memory was mapped, or is about to be unmapped.
unsafe extern "C" fn on_ucm_event(kind: i32, event: *mut c_void, _arg: *mut c_void) {
    memory::mappings_changed();
    if kind & UCM_EVENT_VM_UNMAPPED != 0 {
        // SAFETY: UCX passes its event, whose first members are the range.
        if let Some(r) = unsafe { event.cast::<UcmRange>().as_ref() } {
            let lo = r.address as u64;
            released(lo, lo.saturating_add(r.size as u64));
        }
    }
}

/// Registers for UCX's memory events when its memory library is loaded (without
/// installing hooks UCX did not install itself): true when registered.
pub(super) fn follow_ucx() -> bool {
    // SAFETY: looks up an already loaded library by name, and a function of it whose C
    // signature is `ucs_status_t ucm_set_event_handler(int, int, cb, void *)`.
    unsafe {
        let lib = libc::dlopen(c"libucm.so.0".as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if lib.is_null() {
            return false;
        }
        let set = libc::dlsym(lib, c"ucm_set_event_handler".as_ptr());
        if set.is_null() {
            return false;
        }
        type Callback = unsafe extern "C" fn(i32, *mut c_void, *mut c_void);
        let set: unsafe extern "C" fn(i32, i32, Callback, *mut c_void) -> i32 =
            std::mem::transmute(set);
        let events = UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED | UCM_EVENT_FLAG_NO_INSTALL;
        set(events, -1, on_ucm_event, std::ptr::null_mut()) == 0
    }
}

/// [`overlap_instrument::recorder::BUFFERS_ENV`], for `getenv`.
const BUFFERS_ENV_C: &std::ffi::CStr = c"OVERLAP_BUFFERS";

/// Whether the run asks for the watch, read from the environment on first need (threads
/// may be made before `MPI_Init`): 0 not read yet, 1 no, 2 yes.
static WANTED: AtomicU8 = AtomicU8::new(0);

fn wanted() -> bool {
    match WANTED.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: getenv with a NUL-terminated name (the one of `BUFFERS_ENV`); the
            // value is only compared.
            let yes = unsafe {
                let v = libc::getenv(BUFFERS_ENV_C.as_ptr());
                !v.is_null() && std::ffi::CStr::from_ptr(v).to_bytes() == b"1"
            };
            WANTED.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
            yes
        }
        w => w == 2,
    }
}

type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;

/// `pthread_create`: the new thread's stack is noted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: StartRoutine,
    arg: *mut c_void,
) -> c_int {
    static NEXT: Next = Next::new(c"pthread_create");
    let rc = call_next!(
        NEXT,
        unsafe extern "C" fn(
            *mut libc::pthread_t,
            *const libc::pthread_attr_t,
            StartRoutine,
            *mut c_void,
        ) -> c_int,
        libc::EAGAIN,
        (thread, attr, start, arg)
    );
    if rc == 0 && wanted() {
        // SAFETY: pthread_create wrote the new thread's id.
        memory::thread_made(unsafe { *thread });
    }
    rc
}

/// `pthread_join`: the joined thread's stack is memory like any other again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_join(thread: libc::pthread_t, ret: *mut *mut c_void) -> c_int {
    static NEXT: Next = Next::new(c"pthread_join");
    let rc = call_next!(
        NEXT,
        unsafe extern "C" fn(libc::pthread_t, *mut *mut c_void) -> c_int,
        libc::EINVAL,
        (thread, ret)
    );
    if rc == 0 && wanted() {
        memory::thread_joined(thread);
    }
    rc
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_variable_is_the_recorders() {
        assert_eq!(
            super::BUFFERS_ENV_C.to_str(),
            Ok(overlap_instrument::recorder::BUFFERS_ENV)
        );
    }
}
