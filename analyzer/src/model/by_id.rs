//! Values by request id, for one rank's matching and its replay program's requests: a
//! table indexed by the id where the ids are the recorder's, a hash map where they are
//! not.
//!
//! The recorder numbers each thread's requests `(thread << 40) + n`, `n` from 1 (see
//! `overlap_instrument`'s ring): per thread, the ids are dense. A table per thread,
//! indexed by `n`, finds a request's completion with one read where a hash map of
//! every request of the rank (the rank's completions number in the millions) needs a
//! hash and a probe into memory the size of the map. Ids that are not dense (a trace
//! written by another version, or by hand) go to the map: every id is found either way.
//! [`ById::insert_first`] keeps the first value given for an id, as `entry().or_insert`
//! would; [`ById::insert`] the last, as `insert` would.

use crate::fxhash::FxHashMap;

/// The bits of an id below its thread's.
const LOW_BITS: u32 = 40;

/// How far past the ids its thread has had an id may land and still be put in the
/// thread's table: a table is never longer than twice the ids of its thread plus this.
const SLACK: u64 = 1024;

/// The most threads with a table; the ids of any more go to the map. The tables hold
/// at most twice the ids given, plus `MAX_TABLES * SLACK` slots.
const MAX_TABLES: usize = 256;

/// Values by request id; the first one given for an id is kept.
pub(crate) struct ById<V: Copy> {
    /// Per thread (the id's high bits), sorted by thread: the values by `n`, and how
    /// many ids of the thread were given (in the table or not).
    tables: Vec<(u64, Vec<Option<V>>, u64)>,
    /// The ids that did not fit a table.
    spread: FxHashMap<u64, V>,
}

impl<V: Copy> Default for ById<V> {
    fn default() -> Self {
        ById {
            tables: Vec::new(),
            spread: FxHashMap::default(),
        }
    }
}

/// An id's thread and its place in the thread's table.
fn split(id: u64) -> (u64, u64) {
    (id >> LOW_BITS, id & ((1 << LOW_BITS) - 1))
}

impl<V: Copy> ById<V> {
    /// The value of `id`, if one was given.
    pub(crate) fn get(&self, id: u64) -> Option<V> {
        let (high, low) = split(id);
        let table = self
            .tables
            .binary_search_by_key(&high, |t| t.0)
            .ok()
            .and_then(|t| {
                let slot = usize::try_from(low).ok()?;
                self.tables[t].1.get(slot).copied().flatten()
            });
        table.or_else(|| self.spread.get(&id).copied())
    }

    /// Gives `id` the value `v`, in place of any it had.
    pub(crate) fn insert(&mut self, id: u64, v: V) {
        if let Some(slot) = self.slot_mut(id) {
            *slot = v;
        } else {
            self.insert_first(id, v);
        }
    }

    /// Where `id`'s value is, if it has one: [`ById::get`]'s place for it.
    fn slot_mut(&mut self, id: u64) -> Option<&mut V> {
        let (high, low) = split(id);
        if let Ok(t) = self.tables.binary_search_by_key(&high, |t| t.0) {
            let slot = usize::try_from(low).ok();
            let table = &mut self.tables[t].1;
            if let Some(Some(v)) = slot.and_then(|slot| table.get_mut(slot)) {
                return Some(v);
            }
        }
        self.spread.get_mut(&id)
    }

    /// Gives `id` the value `v`, unless it has one already.
    pub(crate) fn insert_first(&mut self, id: u64, v: V) {
        if self.get(id).is_some() {
            return;
        }
        let (high, low) = split(id);
        let t = match self.tables.binary_search_by_key(&high, |t| t.0) {
            Ok(t) => Some(t),
            Err(at) if self.tables.len() < MAX_TABLES => {
                self.tables.insert(at, (high, Vec::new(), 0));
                Some(at)
            }
            Err(_) => None,
        };
        let Some(t) = t else {
            self.spread.insert(id, v);
            return;
        };
        let (_, table, ids) = &mut self.tables[t];
        *ids += 1;
        if low >= 2 * *ids + SLACK {
            self.spread.insert(id, v);
            return;
        }
        // Under 2 * ids + SLACK: fits a usize wherever the ids counted do.
        let slot = low as usize;
        if table.len() <= slot {
            table.resize(slot + 1, None);
        }
        table[slot] = Some(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two threads' dense ids, one far past its table, and ids with no thread bits:
    /// each found, the first value kept, whether it went to a table or the map.
    #[test]
    fn every_id_finds_its_first_value() {
        let thread = |t: u64, n: u64| (t << LOW_BITS) + n;
        let mut by = ById::default();
        by.insert_first(thread(0, 1), 'a');
        by.insert_first(thread(2, 1), 'b');
        by.insert_first(thread(0, 3), 'c');
        by.insert_first(thread(0, 1), 'x'); // kept: 'a'
        let far = thread(0, 1 << 30);
        by.insert_first(far, 'd'); // past the table: the map
        by.insert_first(far, 'y');
        by.insert_first(0x9800_0000, 'e'); // an MPI handle's size: the map
        assert_eq!(by.get(thread(0, 1)), Some('a'));
        assert_eq!(by.get(thread(2, 1)), Some('b'));
        assert_eq!(by.get(thread(0, 3)), Some('c'));
        assert_eq!(by.get(thread(0, 2)), None);
        assert_eq!(by.get(far), Some('d'));
        assert_eq!(by.get(0x9800_0000), Some('e'));
        assert_eq!(by.get(thread(1, 1)), None);
        assert_eq!(by.spread.len(), 2);
        assert_eq!(by.tables.len(), 2);
        // An id far from its thread's others goes to the map, its table staying empty;
        // threads past the most that have a table have their ids in the map.
        by.insert_first(thread(5, 1 << 20), 'f');
        assert_eq!(by.get(thread(5, 1 << 20)), Some('f'));
        assert_eq!((by.tables.len(), by.tables[2].1.len()), (3, 0));
        for t in 10..10 + MAX_TABLES as u64 {
            by.insert_first(thread(t, 1), 'g');
        }
        assert_eq!(by.tables.len(), MAX_TABLES);
        assert!((10..10 + MAX_TABLES as u64).all(|t| by.get(thread(t, 1)) == Some('g')));
        // An id first put in the map keeps its value once the table grows past it.
        let mut by = ById::default();
        let late = thread(0, 3 * SLACK);
        by.insert_first(late, 1);
        for n in 1..=3 * SLACK + 20 {
            by.insert_first(thread(0, n), 2);
        }
        assert_eq!(by.get(late), Some(1));
        assert_eq!(by.get(thread(0, 3 * SLACK + 20)), Some(2));
        assert_eq!(by.spread.len(), 1);
        // A thread whose first ids never come (freed, not completed) gets its table
        // used once it has had enough ids: the bound counts every id of the thread
        // (from 5 * SLACK, the (k + 1)-th id fits once 5 * SLACK + k < 2 (k + 1) + SLACK).
        let mut by = ById::default();
        for n in 5 * SLACK..12 * SLACK {
            by.insert_first(thread(3, n), n);
        }
        assert_eq!(by.spread.len() as u64, 4 * SLACK - 1);
        assert_eq!(by.tables[0].1.len() as u64, 12 * SLACK);
        assert!((5 * SLACK..12 * SLACK).all(|n| by.get(thread(3, n)) == Some(n)));
    }

    /// `insert` keeps the last value given, wherever the id went (a table or the map),
    /// and is found as `get` finds it; an id new to it is placed as `insert_first` would.
    #[test]
    fn insert_keeps_the_last_value() {
        let thread = |t: u64, n: u64| (t << LOW_BITS) + n;
        let mut by = ById::default();
        let far = thread(0, 1 << 30);
        for (id, first, last) in [(thread(0, 1), 'a', 'b'), (far, 'c', 'd'), (7, 'e', 'f')] {
            by.insert(id, first);
            assert_eq!(by.get(id), Some(first));
            by.insert(id, last);
            by.insert_first(id, 'x');
            assert_eq!(by.get(id), Some(last));
        }
        assert_eq!((by.tables.len(), by.spread.len()), (1, 1));
        // An id put in the map before its table reached it is overwritten there.
        let mut by = ById::default();
        let late = thread(0, 3 * SLACK);
        by.insert(late, 1);
        for n in 1..3 * SLACK + 20 {
            by.insert(thread(0, n), 2);
        }
        by.insert(late, 3);
        assert_eq!(by.get(late), Some(3));
        assert_eq!(by.spread.get(&late), Some(&3));
    }
}
