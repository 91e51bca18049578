//! Datatype sizes, cached per thread: every recorded transfer needs the size and extent
//! of its datatype, and asking MPI (`MPI_Type_size` and `MPI_Type_get_extent`) on every
//! call costs more than the rest of the recording.
//!
//! A datatype handle is not an identity for ever: `MPI_Type_free` gives the handle back
//! to MPI, which may hand it out again for a different type. So the preload wraps
//! `MPI_Type_free` and `PMPI_Type_free` (its only way to die: MPI has no other call
//! that frees a datatype, and its Fortran bindings free through the PMPI name)
//! and bumps a process-wide generation *before* forwarding it; every thread's cache
//! checks the generation on each look-up and empties itself when it moved. A handle
//! reused for a new type was handed out by an `MPI_Type_*` constructor after the free
//! returned it to MPI, so whichever thread later uses it is ordered after the bump (the
//! program must synchronise for the handle to reach that thread) and sees it.
//! Predefined types are never freed, so a program that frees nothing never misses
//! twice. Only successful answers are cached.

use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use mpi_sys::*;

use crate::cache::HandleCache;
use crate::pmpi::{self, key};

/// Bumped by every `MPI_Type_free`: caches filled under an older value are stale.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Slots of a thread's cache.
const SLOTS: usize = 64;

/// One thread's cache of `(size, extent)` by datatype handle.
pub(crate) type TypeCache = HandleCache<(u64, u64), SLOTS>;

/// A thread's empty cache.
pub(crate) fn cache() -> TypeCache {
    HandleCache::new(&GENERATION)
}

/// Empties every thread's cache: a datatype is about to be freed.
pub(crate) fn evict_all() {
    GENERATION.fetch_add(1, Ordering::Release);
}

/// Message bytes and buffer span of `count` elements of `datatype`: `(count * size,
/// count * extent)`; zeros when MPI does not know the type. `count` is an `int` or,
/// in the MPI-4 large-count (`_c`) calls, an `MPI_Count`: both are kept in 64 bits.
#[inline]
pub(crate) fn sizes(count: impl Into<i64>, datatype: MPI_Datatype) -> (u64, u64) {
    let count = u64::try_from(count.into()).unwrap_or(0);
    if count == 0 {
        return (0, 0);
    }
    let cache = &crate::thread::current().types;
    match cache.get(key(datatype), || pmpi::type_size_extent(datatype)) {
        Some((size, extent)) => (count.saturating_mul(size), count.saturating_mul(extent)),
        None => (0, 0),
    }
}

/// Bytes of `count` elements of `datatype`.
#[inline]
pub(crate) fn bytes(count: impl Into<i64>, datatype: MPI_Datatype) -> u64 {
    sizes(count, datatype).0
}

/// `MPI_Type_free`: not recorded (its time is negligible); empties the caches first.
pub(crate) unsafe extern "C" fn type_free(datatype: *mut MPI_Datatype) -> c_int {
    evict_all();
    // SAFETY: the program's argument, passed on unchanged.
    unsafe { PMPI_Type_free(datatype) }
}

/// `PMPI_Type_free`, defined here too, so that every free empties the caches: MPI's own
/// Fortran bindings free through it (Open MPI's `mpi_type_free_` and `mpi_f08`'s, and
/// the temporary types MPICH's `mpi_f08` builds for a non-contiguous buffer, which its
/// next temporary type gets the handle of), and so may a program. The call goes on to
/// MPI's own (the next definition, `RTLD_NEXT`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PMPI_Type_free(datatype: *mut MPI_Datatype) -> c_int {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    evict_all();
    let mut at = NEXT.load(Ordering::Relaxed);
    if at == 0 {
        // SAFETY: a NUL-terminated name looked up after this library.
        at = unsafe { libc::dlsym(libc::RTLD_NEXT, c"PMPI_Type_free".as_ptr()) } as usize;
        if at == 0 {
            overlap_instrument::stderr_line!(
                "overlap-preload: no MPI library defines PMPI_Type_free after the preload"
            );
            std::process::abort();
        }
        NEXT.store(at, Ordering::Relaxed);
    }
    type TypeFree = unsafe extern "C" fn(*mut MPI_Datatype) -> c_int;
    // SAFETY: MPI's PMPI_Type_free, with the program's argument.
    unsafe { std::mem::transmute::<usize, TypeFree>(at)(datatype) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::slot_of;
    use std::cell::Cell;

    #[test]
    fn a_type_is_asked_once_until_a_type_is_freed() {
        let cache = cache();
        let asked = Cell::new(0);
        let query = |v| {
            asked.set(asked.get() + 1);
            Some(v)
        };
        assert_eq!(cache.get(0x4c00_080b, || query((8, 8))), Some((8, 8)));
        assert_eq!(cache.get(0x4c00_080b, || query((99, 99))), Some((8, 8)));
        assert_eq!(asked.get(), 1, "the second look-up is a hit");
        // A derived type is freed and its handle reused for another type.
        assert_eq!(cache.get(0x8c00_0000, || query((24, 32))), Some((24, 32)));
        evict_all();
        assert_eq!(cache.get(0x8c00_0000, || query((4, 4))), Some((4, 4)));
        assert_eq!(
            cache.get(0x4c00_080b, || query((8, 8))),
            Some((8, 8)),
            "predefined types are asked again after an eviction, and answer the same"
        );
        assert_eq!(asked.get(), 4);
    }

    #[test]
    fn unknown_types_are_not_cached() {
        let cache = cache();
        assert_eq!(cache.get(7, || None), None);
        assert_eq!(cache.get(7, || Some((2, 2))), Some((2, 2)));
    }

    #[test]
    fn handles_that_share_a_slot_evict_each_other() {
        let cache = cache();
        let a = 1u64;
        let b = (2..u64::MAX)
            .find(|k| slot_of::<SLOTS>(*k) == slot_of::<SLOTS>(a))
            .expect("a collision");
        assert_eq!(cache.get(a, || Some((1, 1))), Some((1, 1)));
        assert_eq!(cache.get(b, || Some((2, 2))), Some((2, 2)));
        assert_eq!(cache.get(a, || Some((3, 3))), Some((3, 3)), "a was evicted");
    }
}
