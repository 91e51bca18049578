//! How far a reading of a run's rank files has come, told as it goes: the files are
//! read on rayon's threads, each adding its bytes as it is read, and whoever watches
//! (a progress bar) is told the bytes read so far and the bytes the whole reading
//! reads, from whichever thread read the last file. An analysis that reads the files
//! several times counts every reading in both.

use std::sync::atomic::{AtomicU64, Ordering};

/// A reading of several files, told to a watcher as each is read.
pub struct Reading<'a> {
    done: AtomicU64,
    total: AtomicU64,
    tell: &'a (dyn Fn(u64, u64) + Sync),
}

impl<'a> Reading<'a> {
    /// A reading of `total` bytes, of which `tell` is told (bytes read, total) as each
    /// file is read.
    pub fn new(total: u64, tell: &'a (dyn Fn(u64, u64) + Sync)) -> Reading<'a> {
        Reading {
            done: AtomicU64::new(0),
            total: AtomicU64::new(total),
            tell,
        }
    }

    /// A reading nobody watches.
    pub fn unwatched() -> Reading<'static> {
        Reading::new(0, &|_, _| {})
    }

    /// `bytes` more read.
    pub fn read(&self, bytes: u64) {
        let done = self.done.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let total = self.total.load(Ordering::Relaxed);
        (self.tell)(done.min(total), total);
    }

    /// The reading turns out to read `total` bytes in all.
    pub fn set_total(&self, total: u64) {
        self.total.store(total, Ordering::Relaxed);
    }

    /// The bytes read so far.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::Reading;
    use std::sync::Mutex;

    /// What is read from several threads adds up, never past the total.
    #[test]
    fn reads_from_many_threads_add_up_to_the_total() {
        let told = Mutex::new(Vec::new());
        let tell = |done: u64, total: u64| told.lock().expect("not poisoned").push((done, total));
        let reading = Reading::new(100, &tell);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| (0..5).for_each(|_| reading.read(4)));
            }
        });
        reading.set_total(50);
        reading.read(40);
        let told = told.into_inner().expect("not poisoned");
        assert_eq!(told.len(), 21);
        assert!(told[..20].iter().all(|&(d, t)| d <= 80 && t == 100));
        assert_eq!(told.iter().filter(|t| t.0 == 80).count(), 1);
        assert_eq!(told[20], (50, 50));
    }
}
