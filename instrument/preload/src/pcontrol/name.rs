//! Reads a region name from a word that may or may not point at one, without ever
//! faulting: `MPI_Pcontrol(1)` leaves in the name's register whatever the caller had
//! there (see [`super`]), which may be any number, an unmapped address, or a pointer to
//! anything.
//!
//! The rule: the bytes are read with `process_vm_readv` on the process itself, which
//! returns `EFAULT` (or fewer bytes) for memory that is not readable instead of raising
//! `SIGSEGV`; the read is split at every 4 KiB boundary so that a string ending just
//! before an unmapped page still reads. A C name is 1 to 64 printable ASCII bytes
//! followed by a NUL within the 65 read; a Fortran name is the `len` bytes its hidden
//! length gives (1 to 64), cut at a NUL, trailing blanks dropped, each printable. Any
//! other word gives no name. Addresses below 64 KiB (null and near-null pointers,
//! small integers) and above the user half of the address space are refused without
//! a read. Where `process_vm_readv` is refused (a seccomp filter), no name is read.
//!
//! The limit: a word that happens to point at a short printable string is taken for a
//! name, so an unnamed `MPI_Pcontrol(1)` may, rarely, open a named region instead of
//! the unnamed one.

use overlap_instrument::region::{RegionName, REGION_NAME_MAX};

/// Lowest address read: below it are the null page and small integers.
const LOWEST: usize = 1 << 16;

/// Highest user-space address on x86-64 Linux (47-bit user half).
const HIGHEST: usize = (1 << 47) - 1;

/// Reads granule: the smallest page size, so no piece crosses a page.
const GRANULE: usize = 4096;

/// The NUL-terminated name at `addr`, by the module's rule.
pub(crate) fn c_string(addr: usize) -> Option<RegionName> {
    let mut buf = [0u8; REGION_NAME_MAX + 1];
    let got = read_own(addr, &mut buf);
    let nul = buf[..got].iter().position(|b| *b == 0)?;
    if nul == 0 {
        return None;
    }
    // A C name keeps its blanks: only Fortran pads with them.
    let name = &buf[..nul];
    (name.last() != Some(&b' ')).then(|| RegionName::new(name))?
}

/// The Fortran name of `len` bytes at `addr` (its hidden length), by the module's rule.
pub(crate) fn fortran_string(addr: usize, len: usize) -> Option<RegionName> {
    if len == 0 || len > REGION_NAME_MAX {
        return None;
    }
    let mut buf = [0u8; REGION_NAME_MAX];
    if read_own(addr, &mut buf[..len]) != len {
        return None;
    }
    let name = &buf[..len];
    let end = name.iter().position(|b| *b == 0).unwrap_or(len);
    RegionName::new(&name[..end])
}

/// Copies what is readable of `buf.len()` bytes at `addr` in this process into `buf`,
/// from `addr` on up to the first unreadable page; returns how many bytes that is.
fn read_own(addr: usize, buf: &mut [u8]) -> usize {
    let Some(last) = addr.checked_add(buf.len()) else {
        return 0;
    };
    if addr < LOWEST || last > HIGHEST || buf.is_empty() {
        return 0;
    }
    // At most two pieces: `buf` is shorter than a granule.
    let split = ((addr / GRANULE + 1) * GRANULE).min(last);
    let first = split - addr;
    let remote = [
        libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: first,
        },
        libc::iovec {
            iov_base: split as *mut libc::c_void,
            iov_len: last - split,
        },
    ];
    let pieces = if last > split { 2 } else { 1 };
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: `local` is our own buffer of its length; the kernel checks every remote
    // address and returns EFAULT (or a partial count, piece by piece) for what is not
    // mapped readable, without a signal.
    let n =
        unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, remote.as_ptr(), pieces, 0) };
    usize::try_from(n).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two pages: the first readable, the second not.
    struct Guarded {
        base: *mut u8,
    }

    impl Guarded {
        fn new() -> Guarded {
            // SAFETY: a fresh anonymous mapping of two pages, the second made unreadable.
            unsafe {
                let base = libc::mmap(
                    std::ptr::null_mut(),
                    2 * GRANULE,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                assert_ne!(base, libc::MAP_FAILED);
                assert_eq!(
                    libc::mprotect(
                        base.cast::<u8>().add(GRANULE).cast(),
                        GRANULE,
                        libc::PROT_NONE
                    ),
                    0
                );
                Guarded { base: base.cast() }
            }
        }

        /// Writes `bytes` to end exactly at the unreadable page; returns their address.
        fn at_end(&self, bytes: &[u8]) -> usize {
            // SAFETY: within the first, writable page.
            unsafe {
                let at = self.base.add(GRANULE - bytes.len());
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), at, bytes.len());
                at as usize
            }
        }

        fn unreadable(&self) -> usize {
            self.base as usize + GRANULE
        }
    }

    impl Drop for Guarded {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`.
            unsafe { libc::munmap(self.base.cast(), 2 * GRANULE) };
        }
    }

    fn name(n: Option<RegionName>) -> Option<String> {
        n.and_then(|n| n.as_str().map(str::to_string))
    }

    #[test]
    fn a_c_name_is_read() {
        let s = c"solve";
        assert_eq!(name(c_string(s.as_ptr() as usize)), Some("solve".into()));
    }

    #[test]
    fn garbage_words_give_no_name_and_do_not_fault() {
        let g = Guarded::new();
        for word in [
            0usize,
            1,
            42,
            0xffff,
            usize::MAX,
            usize::MAX - 8,
            0xdead_beef_dead_beef,
            1 << 47,
            g.unreadable(),
            g.unreadable() + 100,
        ] {
            assert_eq!(name(c_string(word)), None, "{word:#x}");
            assert_eq!(name(fortran_string(word, 5)), None, "{word:#x}");
        }
        // Code, not text: not printable.
        assert_eq!(name(c_string(a_c_name_is_read as *const () as usize)), None);
    }

    #[test]
    fn a_name_just_before_an_unreadable_page_reads_and_one_running_into_it_does_not() {
        let g = Guarded::new();
        assert_eq!(name(c_string(g.at_end(b"halo\0"))), Some("halo".into()));
        // No NUL before the unreadable page.
        assert_eq!(name(c_string(g.at_end(b"halo"))), None);
        assert_eq!(
            name(fortran_string(g.at_end(b"halo"), 4)),
            Some("halo".into())
        );
        assert_eq!(name(fortran_string(g.at_end(b"halo"), 5)), None);
    }

    #[test]
    fn only_short_printable_strings_are_names() {
        let long = [b'x'; REGION_NAME_MAX + 1];
        let mut with_nul = long.to_vec();
        with_nul.push(0);
        assert_eq!(name(c_string(with_nul.as_ptr() as usize)), None);
        let just = [&[b'y'; REGION_NAME_MAX][..], &[0]].concat();
        assert_eq!(
            name(c_string(just.as_ptr() as usize)).map(|s| s.len()),
            Some(REGION_NAME_MAX)
        );
        assert_eq!(name(c_string(c"".as_ptr() as usize)), None);
        assert_eq!(name(c_string(c"tab\there".as_ptr() as usize)), None);
        assert_eq!(name(c_string(c"trailing ".as_ptr() as usize)), None);
        // Fortran: blank-padded, or NUL-terminated inside its length.
        assert_eq!(
            name(fortran_string(b"step    ".as_ptr() as usize, 8)),
            Some("step".into())
        );
        assert_eq!(
            name(fortran_string(b"step\0xyz".as_ptr() as usize, 8)),
            Some("step".into())
        );
        assert_eq!(name(fortran_string(b"step".as_ptr() as usize, 0)), None);
        assert_eq!(
            name(fortran_string(long.as_ptr() as usize, long.len())),
            None
        );
    }
}
