//! What memory a watch may protect: whole pages of private writable memory (anonymous,
//! the heap, or a file mapped privately), on no thread's stack and in no MPI window.
//! The process's mappings are read from `/proc/self/maps` and kept until a wrapped call
//! maps, unmaps or re-protects memory (or a range is not found in them): a watch is
//! armed only over pages the last reading proves eligible, and restored to the
//! protection that reading gave.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use overlap_instrument::schema::UnwatchedReason;

/// The page size (4096 on x86-64 Linux, read once).
pub(super) fn page() -> u64 {
    static PAGE: AtomicU64 = AtomicU64::new(0);
    let p = PAGE.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    // SAFETY: sysconf has no preconditions.
    let p = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096);
    PAGE.store(p, Ordering::Relaxed);
    p
}

/// The whole pages inside `[addr, addr + len)`: `None` when there is none.
pub(super) fn whole_pages(addr: u64, len: u64) -> Option<(u64, u64)> {
    let p = page();
    let lo = addr.checked_add(p - 1)? & !(p - 1);
    let hi = addr.checked_add(len)? & !(p - 1);
    (lo < hi).then_some((lo, hi))
}

/// True when `[a, b)` and `[c, d)` share a byte.
#[inline]
pub(super) fn overlap(a: u64, b: u64, c: u64, d: u64) -> bool {
    a < d && c < b
}

/// Set when a wrapped call may have changed the mappings: the next check reads them again.
static STALE: AtomicBool = AtomicBool::new(true);

/// The mappings may have changed (a wrapped mmap, munmap, mremap, mprotect, madvise).
pub(super) fn mappings_changed() {
    STALE.store(true, Ordering::Relaxed);
}

/// One line of `/proc/self/maps`, as far as watching goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Region {
    lo: u64,
    hi: u64,
    /// `PROT_*` bits.
    prot: i32,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Private and writable, anonymous or a regular file mapped privately.
    Private,
    /// The main thread's stack.
    Stack,
    /// Anything else: shared, read-only, a device, the vDSO.
    Other,
}

/// The mappings as last read.
#[derive(Default)]
pub(super) struct Maps {
    regions: Vec<Region>,
}

impl Maps {
    /// Reads the mappings; `ours` are the pages the watches protect now (`lo`, `hi`,
    /// the protection they had), which the maps show with the watch's protection and are
    /// taken as they were.
    fn read(&mut self, ours: &[(u64, u64, i32)]) {
        STALE.store(false, Ordering::Relaxed);
        let text = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        self.regions = text.lines().filter_map(parse_line).collect();
        for &(lo, hi, prot) in ours {
            self.restate(lo, hi, prot);
        }
    }

    /// Takes `[lo, hi)` as private memory of protection `prot`, splitting the regions
    /// at its ends.
    fn restate(&mut self, lo: u64, hi: u64, prot: i32) {
        let mut out = Vec::with_capacity(self.regions.len() + 2);
        for &r in &self.regions {
            if !overlap(r.lo, r.hi, lo, hi) {
                out.push(r);
                continue;
            }
            if r.lo < lo {
                out.push(Region { hi: lo, ..r });
            }
            out.push(Region {
                lo: r.lo.max(lo),
                hi: r.hi.min(hi),
                prot,
                kind: Kind::Private,
            });
            if hi < r.hi {
                out.push(Region { lo: hi, ..r });
            }
        }
        self.regions = out;
    }

    /// The protection to restore `[lo, hi)` (whole pages) to, when every page of it may be
    /// watched; else why not. `ours` as for [`Maps::read`].
    pub(super) fn eligible(
        &mut self,
        lo: u64,
        hi: u64,
        ours: impl Fn() -> Vec<(u64, u64, i32)>,
    ) -> Result<i32, UnwatchedReason> {
        if STALE.load(Ordering::Relaxed) {
            self.read(&ours());
        }
        match self.covering(lo, hi) {
            Some(found) => found,
            None => {
                // Not found: mapped since the last reading.
                self.read(&ours());
                self.covering(lo, hi)
                    .unwrap_or(Err(UnwatchedReason::NotPrivateMemory))
            }
        }
    }

    /// What the regions say of `[lo, hi)`; `None` when they do not cover it all.
    fn covering(&self, lo: u64, hi: u64) -> Option<Result<i32, UnwatchedReason>> {
        let first = self.regions.partition_point(|r| r.hi <= lo);
        let mut at = lo;
        let mut prot = None;
        for r in &self.regions[first..] {
            if r.lo > at || at >= hi {
                break;
            }
            match r.kind {
                Kind::Stack => return Some(Err(UnwatchedReason::OnStack)),
                Kind::Other => return Some(Err(UnwatchedReason::NotPrivateMemory)),
                Kind::Private => {}
            }
            // One protection to restore: ranges over mappings of different ones are
            // left alone.
            if prot.is_some_and(|p| p != r.prot) {
                return Some(Err(UnwatchedReason::NotPrivateMemory));
            }
            prot = Some(r.prot);
            at = r.hi;
        }
        (at >= hi).then(|| prot.ok_or(UnwatchedReason::NotPrivateMemory))
    }
}

fn parse_line(line: &str) -> Option<Region> {
    let mut f = line.split_whitespace();
    let range = f.next()?;
    let perms = f.next()?.as_bytes();
    let path = f.nth(3).unwrap_or("");
    let (lo, hi) = range.split_once('-')?;
    let lo = u64::from_str_radix(lo, 16).ok()?;
    let hi = u64::from_str_radix(hi, 16).ok()?;
    if perms.len() < 4 {
        return None;
    }
    let mut prot = 0;
    for (i, bit) in [libc::PROT_READ, libc::PROT_WRITE, libc::PROT_EXEC]
        .into_iter()
        .enumerate()
    {
        if perms[i] != b'-' {
            prot |= bit;
        }
    }
    let private_rw = perms[0] == b'r' && perms[1] == b'w' && perms[3] == b'p';
    let plain = path.is_empty()
        || path == "[heap]"
        || path.starts_with("[anon:")
        || (path.starts_with('/') && !path.starts_with("/dev/"));
    let kind = if path == "[stack]" {
        Kind::Stack
    } else if private_rw && plain {
        Kind::Private
    } else {
        Kind::Other
    };
    Some(Region { lo, hi, prot, kind })
}

/// Thread stacks the watch knows of beside the main one (which the maps name): those of
/// threads made with `pthread_create` since the preload was loaded, by thread.
static STACKS: Mutex<BTreeMap<u64, (u64, u64)>> = Mutex::new(BTreeMap::new());

/// The stack of `thread` (a `pthread_t`), from its attributes.
fn stack_of(thread: libc::pthread_t) -> Option<(u64, u64)> {
    // SAFETY: a zeroed attribute object, filled by glibc and destroyed after use.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(thread, &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        ok.then(|| (addr as u64, addr as u64 + size as u64))
    }
}

/// A thread was made: its stack is never watched.
pub(super) fn thread_made(thread: libc::pthread_t) {
    if let Some(range) = stack_of(thread) {
        STACKS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(thread, range);
    }
}

/// A thread was joined: its stack is memory like any other again.
pub(super) fn thread_joined(thread: libc::pthread_t) {
    STACKS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&thread);
}

thread_local! {
    /// The calling thread's stack, once asked.
    static OWN_STACK: std::cell::Cell<Option<(u64, u64)>> = const { std::cell::Cell::new(None) };
}

/// True when `[lo, hi)` touches the calling thread's stack or a known thread's stack
/// (the main stack is in the maps).
pub(super) fn on_a_stack(lo: u64, hi: u64) -> bool {
    // SAFETY: gettid and getpid have no preconditions.
    let main = unsafe { libc::gettid() == libc::getpid() };
    let own = (!main)
        .then(|| {
            OWN_STACK
                .try_with(|s| {
                    if s.get().is_none() {
                        // SAFETY: pthread_self has no preconditions.
                        s.set(stack_of(unsafe { libc::pthread_self() }));
                    }
                    s.get()
                })
                .ok()
                .flatten()
        })
        .flatten();
    own.is_some_and(|(a, b)| overlap(lo, hi, a, b))
        || STACKS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .any(|&(a, b)| overlap(lo, hi, a, b))
}

/// Memory of MPI windows (another process may read or write it at any time), by
/// window handle: the base and size each constructor or `MPI_Win_attach` gave.
#[derive(Default)]
pub(super) struct Windows {
    ranges: Vec<(u64, u64, u64)>,
}

impl Windows {
    /// Window `win` exposes `[base, base + size)`.
    pub(super) fn add(&mut self, win: u64, base: u64, size: u64) {
        if size > 0 {
            self.ranges.push((win, base, base.saturating_add(size)));
        }
    }

    /// `MPI_Win_detach(win, base)`.
    pub(super) fn detach(&mut self, win: u64, base: u64) {
        self.ranges.retain(|&(w, b, _)| (w, b) != (win, base));
    }

    /// `MPI_Win_free(win)`.
    pub(super) fn free(&mut self, win: u64) {
        self.ranges.retain(|&(w, _, _)| w != win);
    }

    /// True when `[lo, hi)` touches a window's memory.
    pub(super) fn touch(&self, lo: u64, hi: u64) -> bool {
        self.ranges.iter().any(|&(_, a, b)| overlap(lo, hi, a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_pages_inside_a_range() {
        let p = page();
        assert_eq!(whole_pages(p + 16, 2 * p), Some((2 * p, 3 * p)));
        assert_eq!(whole_pages(p, p), Some((p, 2 * p)));
        assert_eq!(whole_pages(p + 16, p), None, "no whole page");
        assert_eq!(whole_pages(u64::MAX - 10, 100), None);
    }

    #[test]
    fn maps_lines_say_what_may_be_watched() {
        let r = |l: &str| parse_line(l).map(|r| (r.prot, r.kind));
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        assert_eq!(
            r("7f00-8f00 rw-p 00000000 00:00 0 "),
            Some((rw, Kind::Private))
        );
        assert_eq!(
            r("5600-5700 rw-p 00000000 00:00 0    [heap]"),
            Some((rw, Kind::Private))
        );
        assert_eq!(
            r("5600-5700 rw-p 00002000 08:01 123  /usr/bin/app"),
            Some((rw, Kind::Private))
        );
        assert_eq!(
            r("7ffc-7ffd rw-p 00000000 00:00 0    [stack]"),
            Some((rw, Kind::Stack))
        );
        assert_eq!(
            r("7f00-8f00 rw-s 00000000 00:05 9    /dev/shm/mpich_shar_tmp"),
            Some((rw, Kind::Other))
        );
        assert_eq!(
            r("7f00-8f00 r--p 00000000 08:01 9    /usr/lib/libc.so.6"),
            Some((libc::PROT_READ, Kind::Other))
        );
        assert_eq!(
            r("7f00-8f00 rw-p 00000000 00:05 9    /dev/zero"),
            Some((rw, Kind::Other))
        );
    }

    #[test]
    fn a_range_is_eligible_only_when_every_page_is() {
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        let m = Maps {
            regions: vec![
                Region {
                    lo: 0x1000,
                    hi: 0x3000,
                    prot: rw,
                    kind: Kind::Private,
                },
                Region {
                    lo: 0x3000,
                    hi: 0x5000,
                    prot: rw,
                    kind: Kind::Private,
                },
                Region {
                    lo: 0x5000,
                    hi: 0x6000,
                    prot: libc::PROT_READ,
                    kind: Kind::Private,
                },
                Region {
                    lo: 0x8000,
                    hi: 0x9000,
                    prot: rw,
                    kind: Kind::Stack,
                },
            ],
        };
        assert_eq!(m.covering(0x2000, 0x4000), Some(Ok(rw)), "across two");
        assert_eq!(
            m.covering(0x4000, 0x6000),
            Some(Err(UnwatchedReason::NotPrivateMemory)),
            "two protections"
        );
        assert_eq!(m.covering(0x6000, 0x7000), None, "unmapped: read again");
        assert_eq!(
            m.covering(0x8000, 0x9000),
            Some(Err(UnwatchedReason::OnStack))
        );
    }

    #[test]
    fn pages_the_watch_protects_are_taken_as_they_were() {
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        let private = |lo, hi, prot| Region {
            lo,
            hi,
            prot,
            kind: Kind::Private,
        };
        // The maps read while a watch protects 0x2000-0x4000 with no access.
        let mut m = Maps {
            regions: vec![
                private(0x1000, 0x2000, rw),
                Region {
                    kind: Kind::Other,
                    ..private(0x2000, 0x4000, libc::PROT_NONE)
                },
                private(0x4000, 0x6000, rw),
            ],
        };
        m.restate(0x2000, 0x3000, rw);
        assert_eq!(
            m.covering(0x1000, 0x4000),
            Some(Err(UnwatchedReason::NotPrivateMemory)),
            "0x3000-0x4000 is no watch's"
        );
        m.restate(0x3000, 0x4000, rw);
        assert_eq!(m.covering(0x1000, 0x6000), Some(Ok(rw)));
        assert_eq!(m.regions.len(), 4);
    }

    #[test]
    fn windows_are_kept_by_handle() {
        let mut w = Windows::default();
        w.add(1, 0x1000, 0x1000);
        w.add(2, 0x4000, 0x100);
        w.add(2, 0x8000, 0x100);
        assert!(w.touch(0x1fff, 0x3000) && !w.touch(0x2000, 0x3000));
        w.detach(2, 0x4000);
        assert!(!w.touch(0x4000, 0x4100) && w.touch(0x8000, 0x8001));
        w.free(2);
        assert!(!w.touch(0, u64::MAX >> 1) || w.touch(0x1000, 0x1001));
        w.free(1);
        assert!(!w.touch(0, u64::MAX));
    }
}
