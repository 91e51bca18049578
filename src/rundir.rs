//! The directory a run's ranks write into (`T.ranks/` beside `--out T.json`), held by
//! that run alone from before its launch to the end of its merge.
//!
//! A second `overlap trace` or `overlap run` given the same `--out` would otherwise
//! delete the first run's live rank files and merge its own in their place, each
//! saying it succeeded. So the run takes an exclusive `flock` on `.overlap.lock` in the
//! directory (released by the kernel however `overlap` ends: no stale lock survives a
//! crash); a second run finds it held and is refused, told which run holds it. The
//! lock file names its holder (pid and command) for that message. `overlap merge` of a
//! held directory warns that its run is still writing.
//!
//! The directory must be a real one: a symbolic link planted at `T.ranks` is refused,
//! never followed (its target's `rank-*` files would be deleted), and only the files a
//! run writes (`rank-N.ovlp`, `rank-N.json`, dump markers) are ever removed.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use overlap_analyzer::import::is_rank_file_name;

use crate::supervise::{self, is_marker_file_name};

/// The lock file's name inside the run directory.
pub const LOCK_FILE: &str = ".overlap.lock";

/// A run directory held by this process until dropped.
#[derive(Debug)]
pub struct RunDir {
    /// Holds the exclusive lock while open.
    lock: File,
}

impl Drop for RunDir {
    fn drop(&mut self) {
        unlock(&self.lock);
    }
}

impl RunDir {
    /// Takes `dir` for the run `command`: creates it (not its parent) when missing,
    /// refuses a symbolic link or a directory another run holds, then removes what an
    /// earlier run left there, so it cannot be merged by mistake.
    pub fn claim(dir: &Path, command: &str) -> Result<RunDir> {
        match std::fs::symlink_metadata(dir) {
            Ok(md) if md.file_type().is_symlink() => bail!(
                "{} is a symbolic link: the ranks' files go only into a real directory \
                 (remove the link, or give another --out)",
                dir.display()
            ),
            Ok(md) if !md.is_dir() => bail!(
                "{} exists and is not a directory: it is where the ranks' files would go \
                 (remove it, or give another --out)",
                dir.display()
            ),
            Ok(_) => {}
            Err(_) => create(dir)?,
        }
        let lock = open_lock(dir)?;
        if !try_lock(&lock, libc::LOCK_EX) {
            bail!(
                "{} is in use by another run ({}): wait for it to end, or give another --out",
                dir.display(),
                holder_text(&lock)
            );
        }
        let mut lock = lock;
        let holder = format!("pid {}: {command}", std::process::id());
        // What the holder is, for a second run's message; the lock works without it.
        let _ = lock
            .set_len(0)
            .and_then(|()| lock.write_all(holder.as_bytes()));
        clear(dir)?;
        Ok(RunDir { lock })
    }
}

/// Which run holds `dir` right now, when one does (for `overlap merge`'s warning).
pub fn holder(dir: &Path) -> Option<String> {
    let lock = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(LOCK_FILE))
        .ok()?;
    if try_lock(&lock, libc::LOCK_SH | libc::LOCK_NB) {
        unlock(&lock);
        return None;
    }
    Some(holder_text(&lock))
}

fn create(dir: &Path) -> Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.is_dir() {
            bail!(
                "the directory {} does not exist (it would hold {})",
                parent.display(),
                dir.display()
            );
        }
    }
    std::fs::create_dir(dir).with_context(|| format!("creating {}", dir.display()))
}

fn open_lock(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))
}

/// Takes a `flock` of `kind` without waiting; false when another holds it.
fn try_lock(file: &File, kind: libc::c_int) -> bool {
    // SAFETY: flock on a descriptor this process owns.
    unsafe { libc::flock(file.as_raw_fd(), kind | libc::LOCK_NB) == 0 }
}

/// Releases a `flock` now, not when the last descriptor of it closes: a child forked by
/// another thread shares the descriptor until it execs (then it is closed on exec), and
/// would hold the lock that long.
fn unlock(file: &File) {
    // SAFETY: flock on a descriptor this process owns.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
}

/// What the lock file says of its holder.
fn holder_text(lock: &File) -> String {
    let mut text = String::new();
    let read = lock
        .take(4096)
        .read_to_string(&mut text)
        .ok()
        .filter(|_| !text.trim().is_empty());
    match read {
        Some(_) => text.trim().to_string(),
        None => "a process that did not say which".into(),
    }
}

/// Removes the per-rank files (`rank-N.ovlp`, `rank-N.json`) and dump markers
/// (`rank-N.dump` and their temporary files) of an earlier run; nothing else.
fn clear(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_rank_file_name(name) || is_marker_file_name(name) {
            supervise::remove_if_present(&entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_held_directory_is_refused_naming_its_holder_and_freed_on_drop() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t.ranks");
        let first = RunDir::claim(&dir, "overlap trace -- mpiexec -n 2 ./a").unwrap();
        std::fs::write(dir.join("rank-0.ovlp"), "live").unwrap();
        let e = RunDir::claim(&dir, "second").unwrap_err().to_string();
        assert!(e.contains("is in use by another run"), "{e}");
        assert!(e.contains("overlap trace -- mpiexec -n 2 ./a"), "{e}");
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        assert!(
            dir.join("rank-0.ovlp").exists(),
            "the first run's file is kept"
        );
        assert!(holder(&dir).is_some());
        drop(first);
        assert_eq!(holder(&dir), None);
        let _second = RunDir::claim(&dir, "second").unwrap();
        assert!(
            !dir.join("rank-0.ovlp").exists(),
            "an ended run's file is cleared"
        );
    }

    #[test]
    fn a_planted_link_is_refused_and_its_target_untouched() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("precious");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("rank-0.ovlp"), "keep").unwrap();
        let dir = d.path().join("t.ranks");
        std::os::unix::fs::symlink(&target, &dir).unwrap();
        let e = RunDir::claim(&dir, "x").unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        assert!(target.join("rank-0.ovlp").exists());
    }

    #[test]
    fn only_a_runs_own_files_are_removed() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t.ranks");
        std::fs::create_dir(&dir).unwrap();
        for f in ["rank-0.ovlp", "rank-1.json", "rank-0.dump", "notes.txt"] {
            std::fs::write(dir.join(f), "x").unwrap();
        }
        let _held = RunDir::claim(&dir, "x").unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [LOCK_FILE, "notes.txt"]);
    }
}
