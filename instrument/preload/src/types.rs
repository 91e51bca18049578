//! Datatype sizes, cached per thread: every recorded transfer needs the size and extent
//! of its datatype, and asking MPI (`MPI_Type_size` and `MPI_Type_get_extent`) on every
//! call costs more than the rest of the recording.
//!
//! A datatype handle is not an identity for ever: `MPI_Type_free` gives the handle back
//! to MPI, which may hand it out again for a different type. So the preload wraps
//! `MPI_Type_free` (its only way to die: MPI has no other call that frees a datatype)
//! and bumps a process-wide generation *before* forwarding it; every thread's cache
//! checks the generation on each look-up and empties itself when it moved. A handle
//! reused for a new type was handed out by an `MPI_Type_*` constructor after the free
//! returned it to MPI, so whichever thread later uses it is ordered after the bump (the
//! program must synchronise for the handle to reach that thread) and sees it.
//! Predefined types are never freed, so a program that frees nothing never misses
//! twice. Only successful answers are cached.

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

use mpi_sys::*;

use crate::pmpi::{self, key};

/// Bumped by every `MPI_Type_free`: caches filled under an older value are stale.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Slots of a thread's cache (direct-mapped: a handle has one slot).
const SLOTS: usize = 64;

#[derive(Clone, Copy, Default)]
struct Entry {
    filled: bool,
    key: u64,
    size: u64,
    extent: u64,
}

/// One thread's cache of `(size, extent)` by datatype handle.
pub(crate) struct TypeCache {
    generation: Cell<u64>,
    slots: [Cell<Entry>; SLOTS],
}

impl Default for TypeCache {
    fn default() -> TypeCache {
        TypeCache {
            generation: Cell::new(GENERATION.load(Ordering::Relaxed)),
            slots: std::array::from_fn(|_| Cell::new(Entry::default())),
        }
    }
}

impl TypeCache {
    /// `(size, extent)` of the type with handle key `key`, from the cache or from
    /// `query` (whose `None`, a type MPI does not know, is not cached).
    #[inline]
    pub(crate) fn get(
        &self,
        key: u64,
        query: impl FnOnce() -> Option<(u64, u64)>,
    ) -> Option<(u64, u64)> {
        let generation = GENERATION.load(Ordering::Relaxed);
        if self.generation.get() != generation {
            self.clear(generation);
        }
        let slot = &self.slots[slot_of(key)];
        let e = slot.get();
        if e.filled && e.key == key {
            return Some((e.size, e.extent));
        }
        let (size, extent) = query()?;
        slot.set(Entry {
            filled: true,
            key,
            size,
            extent,
        });
        Some((size, extent))
    }

    #[cold]
    fn clear(&self, generation: u64) {
        for s in &self.slots {
            s.set(Entry::default());
        }
        self.generation.set(generation);
    }
}

/// A handle's slot: the handle's bits mixed (MPICH's handles differ in their low and
/// middle bits, Open MPI's are pointers aligned to 8 or more).
#[inline]
fn slot_of(key: u64) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize % SLOTS
}

/// Empties every thread's cache: a datatype is about to be freed.
pub(crate) fn evict_all() {
    GENERATION.fetch_add(1, Ordering::Release);
}

/// Message bytes and buffer span of `count` elements of `datatype`: `(count * size,
/// count * extent)`; zeros when MPI does not know the type.
#[inline]
pub(crate) fn sizes(count: c_int, datatype: MPI_Datatype) -> (u64, u64) {
    let count = u64::try_from(count).unwrap_or(0);
    if count == 0 {
        return (0, 0);
    }
    let cache = &crate::thread::current().types;
    match cache.get(key(datatype), || pmpi::type_size_extent(datatype)) {
        Some((size, extent)) => (count * size, count * extent),
        None => (0, 0),
    }
}

/// Bytes of `count` elements of `datatype`.
#[inline]
pub(crate) fn bytes(count: c_int, datatype: MPI_Datatype) -> u64 {
    sizes(count, datatype).0
}

/// `MPI_Type_free`: not recorded (its time is negligible); empties the caches first.
pub(crate) unsafe extern "C" fn type_free(datatype: *mut MPI_Datatype) -> c_int {
    evict_all();
    // SAFETY: the program's argument, passed on unchanged.
    unsafe { PMPI_Type_free(datatype) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_type_is_asked_once_until_a_type_is_freed() {
        let cache = TypeCache::default();
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
        let cache = TypeCache::default();
        assert_eq!(cache.get(7, || None), None);
        assert_eq!(cache.get(7, || Some((2, 2))), Some((2, 2)));
    }

    #[test]
    fn handles_that_share_a_slot_evict_each_other() {
        let cache = TypeCache::default();
        let a = 1u64;
        let b = (2..u64::MAX)
            .find(|k| slot_of(*k) == slot_of(a))
            .expect("a collision");
        assert_eq!(cache.get(a, || Some((1, 1))), Some((1, 1)));
        assert_eq!(cache.get(b, || Some((2, 2))), Some((2, 2)));
        assert_eq!(cache.get(a, || Some((3, 3))), Some((3, 3)), "a was evicted");
    }
}
