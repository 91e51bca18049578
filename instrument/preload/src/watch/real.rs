//! The libc functions the buffer watch wraps, reached past the preload: each found once
//! with `dlsym(RTLD_NEXT, name)` (the next definition after this library: libc's, or
//! another preloaded library's) and kept. A wrapper may run before the preload's own
//! constructors, inside the dynamic linker's or the MPI library's (UCX's constructor
//! installs signal handlers and maps memory), so each is found on its first call.

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where one libc function really is, found on first use.
pub(crate) struct Next {
    name: &'static CStr,
    at: AtomicUsize,
}

impl Next {
    pub(crate) const fn new(name: &'static CStr) -> Next {
        Next {
            name,
            at: AtomicUsize::new(0),
        }
    }

    /// The function's address; 0 when there is none (a libc without it, or `free`
    /// asked for while `dlsym` itself frees: see [`free_next`]).
    #[inline]
    pub(crate) fn get(&self) -> usize {
        let at = self.at.load(Ordering::Relaxed);
        if at != 0 {
            return at;
        }
        self.find()
    }

    #[cold]
    fn find(&self) -> usize {
        // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT from this library.
        let at = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) } as usize;
        self.at.store(at, Ordering::Relaxed);
        at
    }
}

/// Calls the next definition of a libc function as type `$ty` with `$args`; `$none` when
/// there is none.
macro_rules! call_next {
    ($next:expr, $ty:ty, $none:expr, ($($arg:expr),*)) => {{
        match $next.get() {
            0 => $none,
            // SAFETY: the next definition of the function this wrapper stands for, whose
            // C signature is `$ty`.
            at => unsafe { std::mem::transmute::<usize, $ty>(at)($($arg),*) },
        }
    }};
}

pub(crate) use call_next;

/// `free`, found without recursing: `dlsym` may free memory itself, which reaches the
/// preload's `free` before it knows where libc's is; that memory is then kept.
static FREE: Next = Next::new(c"free");
static FINDING_FREE: AtomicUsize = AtomicUsize::new(0);

/// Frees `p` with the next `free`.
pub(crate) fn free_next(p: *mut c_void) {
    let at = FREE.at.load(Ordering::Relaxed);
    let at = if at != 0 {
        at
    } else if FINDING_FREE.swap(1, Ordering::AcqRel) == 0 {
        let at = FREE.find();
        FINDING_FREE.store(0, Ordering::Release);
        at
    } else {
        // Inside dlsym: the block is kept (dlsym frees only its own error strings).
        return;
    };
    if at != 0 {
        // SAFETY: libc's free (or the next allocator's), given what the program frees.
        unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void)>(at)(p) };
    }
}
