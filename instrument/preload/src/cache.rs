//! A thread's cache of what the preload learnt about handles (datatype sizes in
//! [`crate::types`], communicators in [`crate::handles`]): direct-mapped by the handle's
//! key, and emptied whenever a process-wide generation moved (bumped before MPI may hand
//! a freed handle out again, so a thread that meets the reused handle sees the bump).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// `N` slots (a power of two) of `V` by handle key, valid while `generation` stays.
pub(crate) struct HandleCache<V: Copy, const N: usize> {
    generation: &'static AtomicU64,
    seen: Cell<u64>,
    slots: [Cell<Option<(u64, V)>>; N],
}

impl<V: Copy, const N: usize> HandleCache<V, N> {
    /// An empty cache that `generation` invalidates.
    pub(crate) fn new(generation: &'static AtomicU64) -> Self {
        const { assert!(N.is_power_of_two()) };
        HandleCache {
            generation,
            seen: Cell::new(generation.load(Ordering::Relaxed)),
            slots: std::array::from_fn(|_| Cell::new(None)),
        }
    }

    /// The value of `key`, cached, or from `fill` (whose `None` is not cached).
    #[inline]
    pub(crate) fn get(&self, key: u64, fill: impl FnOnce() -> Option<V>) -> Option<V> {
        match self.probe(key) {
            Ok(v) => Some(v),
            Err(slot) => {
                let v = fill()?;
                slot.set(Some((key, v)));
                Some(v)
            }
        }
    }

    /// [`HandleCache::get`] for a `fill` that always answers.
    #[inline]
    pub(crate) fn get_with(&self, key: u64, fill: impl FnOnce() -> V) -> V {
        self.probe(key).unwrap_or_else(|slot| {
            let v = fill();
            slot.set(Some((key, v)));
            v
        })
    }

    /// The cached value of `key`, or the slot it goes in.
    #[inline]
    fn probe(&self, key: u64) -> Result<V, &Cell<Option<(u64, V)>>> {
        let generation = self.generation.load(Ordering::Relaxed);
        if self.seen.get() != generation {
            self.clear(generation);
        }
        let slot = &self.slots[slot_of::<N>(key)];
        match slot.get() {
            Some((k, v)) if k == key => Ok(v),
            _ => Err(slot),
        }
    }

    #[cold]
    fn clear(&self, generation: u64) {
        for s in &self.slots {
            s.set(None);
        }
        self.seen.set(generation);
    }
}

/// A handle's slot: the handle's bits mixed (MPICH's handles differ in their low and
/// middle bits, Open MPI's are pointers aligned to 8 or more), the top bits kept.
#[inline]
pub(crate) fn slot_of<const N: usize>(key: u64) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - N.trailing_zeros())) as usize
}
