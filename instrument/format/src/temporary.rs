//! Where an output lives until it is complete, so that nobody can plant anything in its
//! way and nothing of it is left when the writer dies.
//!
//! The file is made without a name (`O_TMPFILE` in the destination's directory): until
//! it is complete no path leads to it, so there is nothing to hijack, and a process that
//! is killed leaves nothing behind. Only when it is complete does it get a fresh
//! temporary name (`linkat`, which never replaces an existing entry), renamed over the
//! destination at once. Where the file system cannot make unnamed files (old kernels,
//! some network file systems), or `/proc` (through which the unnamed file gets its name)
//! is not mounted, it is created under a fresh unpredictable name with
//! `O_CREAT|O_EXCL|O_NOFOLLOW`, which refuses any entry already there, symbolic link
//! or not.
//!
//! A named temporary file is listed in a table that [`remove_live_temporaries`] empties
//! from a signal handler: it takes no lock and allocates nothing, so a SIGINT or a
//! SIGTERM in the middle of a write still leaves no temporary file behind.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// How many named temporary files can be listed at once for removal on a signal (more
/// are still removed on every error, just not from a signal handler).
const LIVE_SLOTS: usize = 64;

/// The named temporary files of this process, as leaked C strings (never freed, so a
/// signal handler reading one can never read freed memory; a few hundred bytes per
/// output file).
static LIVE: [AtomicPtr<libc::c_char>; LIVE_SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; LIVE_SLOTS];

/// How many names are tried before giving up when each is taken.
const NAME_TRIES: u32 = 32;

static NEXT_NAME: AtomicU64 = AtomicU64::new(0);

/// A name beside `dest` that nobody can guess: `.<name>.tmp-<pid>-<random>`.
fn fresh_name(dir: &Path, dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(NEXT_NAME.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    dir.join(format!(
        ".{name}.tmp-{}-{:016x}",
        std::process::id(),
        h.finish()
    ))
}

/// A temporary name listed for removal on a signal while it exists.
struct Listed {
    path: PathBuf,
    table: &'static [AtomicPtr<libc::c_char>],
    slot: Option<usize>,
}

impl Listed {
    fn new(path: PathBuf) -> Listed {
        Listed::new_in(&LIVE, path)
    }

    fn new_in(table: &'static [AtomicPtr<libc::c_char>], path: PathBuf) -> Listed {
        let slot = CString::new(path.as_os_str().as_bytes())
            .ok()
            .and_then(|c| {
                let raw = c.into_raw();
                let slot = table.iter().position(|s| {
                    s.compare_exchange(
                        std::ptr::null_mut(),
                        raw,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok()
                });
                if slot.is_none() {
                    // SAFETY: `raw` came from `into_raw` just above and was not listed.
                    drop(unsafe { CString::from_raw(raw) });
                }
                slot
            });
        Listed { path, table, slot }
    }

    /// No longer a temporary file (renamed into place, or removed).
    fn unlist(&mut self) {
        if let Some(slot) = self.slot.take() {
            self.table[slot].store(std::ptr::null_mut(), Ordering::Release);
        }
    }
}

impl Drop for Listed {
    fn drop(&mut self) {
        self.unlist();
    }
}

/// Removes every named temporary file this process is writing. Async-signal-safe: for
/// a handler of SIGINT or SIGTERM that is about to end the process.
pub fn remove_live_temporaries() {
    remove_listed(&LIVE);
}

fn remove_listed(table: &[AtomicPtr<libc::c_char>]) {
    for slot in table {
        let p = slot.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            // SAFETY: a NUL-terminated string leaked by `Listed::new`, never freed.
            unsafe { libc::unlink(p) };
        }
    }
}

/// An output file being written, not yet at its destination.
pub(crate) struct Temporary {
    file: File,
    /// The named fallback's name; `None` while the file has no name.
    named: Option<Listed>,
}

impl Temporary {
    /// A file in `dir` that will become `dest`.
    pub(crate) fn create(dir: &Path, dest: &Path) -> io::Result<Temporary> {
        // An unnamed file is named later through /proc/self/fd: without it, a name now.
        if !Path::new("/proc/self/fd").is_dir() {
            return Temporary::create_named(dir, dest);
        }
        let unnamed = OpenOptions::new()
            .write(true)
            .mode(0o666)
            .custom_flags(libc::O_TMPFILE)
            .open(dir);
        match unnamed {
            Ok(file) => return Ok(Temporary { file, named: None }),
            Err(e) if !unnamed_unsupported(&e) => return Err(e),
            Err(_) => {}
        }
        Temporary::create_named(dir, dest)
    }

    /// A file in `dir` under a fresh name that nothing was at.
    fn create_named(dir: &Path, dest: &Path) -> io::Result<Temporary> {
        for _ in 0..NAME_TRIES {
            let path = fresh_name(dir, dest);
            let listed = Listed::new(path.clone());
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
            {
                Ok(file) => {
                    return Ok(Temporary {
                        file,
                        named: Some(listed),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(taken())
    }

    pub(crate) fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Gives the complete file a name beside `dest` (when it has none yet): the first
    /// step of putting it in place, which can still be undone by dropping it.
    pub(crate) fn name(&mut self, dir: &Path, dest: &Path) -> io::Result<()> {
        if self.named.is_some() {
            return Ok(());
        }
        let fd = format!("/proc/self/fd/{}", self.file.as_raw_fd());
        let fd = CString::new(fd).map_err(io::Error::other)?;
        for _ in 0..NAME_TRIES {
            let path = fresh_name(dir, dest);
            let listed = Listed::new(path.clone());
            let to = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
            // SAFETY: two NUL-terminated paths; linkat never replaces an existing entry.
            let rc = unsafe {
                libc::linkat(
                    libc::AT_FDCWD,
                    fd.as_ptr(),
                    libc::AT_FDCWD,
                    to.as_ptr(),
                    libc::AT_SYMLINK_FOLLOW,
                )
            };
            if rc == 0 {
                self.named = Some(listed);
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(e);
            }
        }
        Err(taken())
    }

    /// Renames the named file over `dest`. Nothing is left at the temporary name
    /// either way.
    pub(crate) fn rename_to(mut self, dest: &Path) -> io::Result<()> {
        let Some(listed) = self.named.as_mut() else {
            return Err(io::Error::other("the file has no name yet"));
        };
        std::fs::rename(&listed.path, dest)?;
        listed.unlist();
        self.named = None;
        Ok(())
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if let Some(listed) = self.named.take() {
            let _ = std::fs::remove_file(&listed.path);
        }
    }
}

/// True when `e` says this file system (or kernel) makes no unnamed files.
fn unnamed_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL | libc::ENOENT)
    )
}

fn taken() -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{NAME_TRIES} fresh temporary names were all taken: is something planting files in this directory?"),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_are_fresh_each_time() {
        let d = Path::new("/d");
        let a = fresh_name(d, Path::new("/d/x.json"));
        let b = fresh_name(d, Path::new("/d/x.json"));
        assert_ne!(a, b);
        let a = a.to_string_lossy().into_owned();
        assert!(
            a.starts_with(&format!("/d/.x.json.tmp-{}-", std::process::id())),
            "{a}"
        );
    }

    fn entries(dir: &Path) -> usize {
        std::fs::read_dir(dir).unwrap().count()
    }

    #[test]
    fn a_named_temporary_is_renamed_into_place_or_removed() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.json");
        let mut t = Temporary::create_named(dir.path(), &dest).unwrap();
        assert_eq!(entries(dir.path()), 1);
        drop(t);
        assert_eq!(entries(dir.path()), 0, "dropped: nothing left");
        t = Temporary::create_named(dir.path(), &dest).unwrap();
        t.file().write_all(b"x").unwrap();
        t.name(dir.path(), &dest).unwrap();
        t.rename_to(&dest).unwrap();
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "x");
        assert_eq!(entries(dir.path()), 1);
    }

    #[test]
    fn a_listed_name_is_removed_by_the_signal_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".x.tmp-1-2");
        std::fs::write(&p, "x").unwrap();
        static TABLE: [AtomicPtr<libc::c_char>; 2] =
            [const { AtomicPtr::new(std::ptr::null_mut()) }; 2];
        let mut listed = Listed::new_in(&TABLE, p.clone());
        assert!(listed.slot.is_some());
        remove_listed(&TABLE);
        assert!(!p.exists());
        listed.unlist();
    }
}
