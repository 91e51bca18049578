//! How every file overlap produces reaches the disk: written whole or not at all.
//!
//! A merged trace, a baseline, a table or a results file is written to a temporary
//! file beside its destination ([`crate::temporary`]: unnamed while it is written, so
//! nobody can plant a link in its way), synced, then renamed over it. A full disk, a
//! killed process or a write error therefore never leaves a partial file that a later
//! run would read as valid: the destination keeps its old content (or stays absent) and
//! nothing of the temporary file is left. The destination's directory must exist: an output
//! path with a missing directory is a mistake to report, not a directory to create
//! silently. (Inputs are opened by [`crate::input`].)

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub use crate::temporary::remove_live_temporaries;
use crate::temporary::Temporary;

use crate::input::kind_of;

/// Why an output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The destination's directory does not exist.
    #[error("cannot write {}: the directory {} does not exist", path.display(), dir.display())]
    NoDirectory {
        /// The destination.
        path: PathBuf,
        /// Its missing directory.
        dir: PathBuf,
    },
    /// The destination exists and is not a regular file.
    #[error("cannot write {}: it exists and is not a regular file ({kind})", path.display())]
    NotRegular {
        /// The destination.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// Creating, writing, syncing or renaming failed.
    #[error("writing {}: {cause}", path.display())]
    Io {
        /// The destination (not the temporary file, which is gone).
        path: PathBuf,
        /// The cause, shown in the message (not chained, so it is not printed twice).
        cause: io::Error,
    },
}

/// Checks that `path` can be an output: its directory exists, and it is not something
/// other than a regular file. Returns the directory. Commands that run a program before
/// writing call it first, so that a mistyped path is told before the run, not after.
pub fn check_output(path: &Path) -> Result<PathBuf, OutputError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(OutputError::NoDirectory {
            path: path.to_path_buf(),
            dir,
        });
    }
    if let Ok(md) = std::fs::metadata(path) {
        if !md.is_file() {
            return Err(OutputError::NotRegular {
                path: path.to_path_buf(),
                kind: kind_of(&md),
            });
        }
    }
    Ok(dir)
}

/// A file being written: all of it reaches `path` on [`AtomicFile::commit`], none of
/// it if the writer is dropped first or any step fails. Until then it has no name a
/// process could plant anything at ([`crate::temporary`]).
pub struct AtomicFile {
    path: PathBuf,
    dir: PathBuf,
    temp: Option<Temporary>,
    out: Option<BufWriter<File>>,
    /// The first write that failed, as (OS error, or kind and text): a writer that
    /// wraps the error in its own (a Parquet encoder) still lets it be told as the
    /// disk's.
    failed: Option<(Option<i32>, io::ErrorKind, String)>,
}

impl AtomicFile {
    /// Starts writing `path` (through a temporary file in the same directory).
    pub fn create(path: &Path) -> Result<AtomicFile, OutputError> {
        let dir = check_output(path)?;
        let mut temp = Temporary::create(&dir, path).map_err(|cause| OutputError::Io {
            path: path.to_path_buf(),
            cause,
        })?;
        let writer = temp.file().try_clone().map_err(|cause| OutputError::Io {
            path: path.to_path_buf(),
            cause,
        })?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            dir,
            temp: Some(temp),
            out: Some(BufWriter::with_capacity(1 << 16, writer)),
            failed: None,
        })
    }

    /// The destination.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The error for `cause`, naming the destination.
    pub fn error(&self, cause: io::Error) -> OutputError {
        OutputError::Io {
            path: self.path.clone(),
            cause,
        }
    }

    /// Why a write to the file failed, when one did.
    pub fn write_error(&self) -> Option<io::Error> {
        self.failed.as_ref().map(|(os, kind, text)| match os {
            Some(code) => io::Error::from_raw_os_error(*code),
            None => io::Error::new(*kind, text.clone()),
        })
    }

    /// Flushes, syncs and names the file beside its destination: everything of
    /// [`AtomicFile::commit`] that can fail for want of room, without replacing the
    /// destination yet (dropping it still leaves the destination as it was).
    fn prepare(&mut self) -> Result<(), OutputError> {
        let Some(out) = self.out.take() else {
            return Err(self.error(io::Error::other("already committed")));
        };
        let file = out.into_inner().map_err(|e| self.error(e.into_error()))?;
        file.sync_all().map_err(|e| self.error(e))?;
        drop(file);
        let Some(temp) = self.temp.as_mut() else {
            return Err(self.error(io::Error::other("already committed")));
        };
        temp.name(&self.dir, &self.path)
            .map_err(|cause| OutputError::Io {
                path: self.path.clone(),
                cause,
            })
    }

    /// Renames the prepared file over its destination.
    fn publish(&mut self) -> Result<(), OutputError> {
        let Some(temp) = self.temp.take() else {
            return Err(self.error(io::Error::other("already committed")));
        };
        temp.rename_to(&self.path).map_err(|e| self.error(e))
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(mut self) -> Result<(), OutputError> {
        self.prepare()?;
        self.publish()
    }
}

impl AtomicFile {
    /// Keeps the first write error for [`AtomicFile::write_error`].
    fn note<T>(&mut self, result: io::Result<T>) -> io::Result<T> {
        if let (Err(e), None) = (&result, &self.failed) {
            self.failed = Some((e.raw_os_error(), e.kind(), e.to_string()));
        }
        result
    }
}

/// Commits `files` all or none: each is written out and named first, and only when all
/// of them are does any replace its destination (a full disk leaves every destination
/// as it was).
pub fn commit_all(mut files: Vec<AtomicFile>) -> Result<(), OutputError> {
    for f in &mut files {
        f.prepare()?;
    }
    for f in &mut files {
        f.publish()?;
    }
    Ok(())
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let result = match &mut self.out {
            Some(out) => out.write(buf),
            None => Err(io::Error::other("already committed")),
        };
        self.note(result)
    }

    fn flush(&mut self) -> io::Result<()> {
        let result = match &mut self.out {
            Some(out) => out.flush(),
            None => Ok(()),
        };
        self.note(result)
    }
}

/// Writes `bytes` to `path` whole or not at all.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes).map_err(|e| f.error(e))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_committed_file_replaces_the_old_one_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        std::fs::write(&p, "old").unwrap();
        write_atomically(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(entries(dir.path()), ["out.json"]);
    }

    #[test]
    fn a_dropped_file_leaves_the_old_content_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        std::fs::write(&p, "old").unwrap();
        {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(b"half of it").unwrap();
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(entries(dir.path()), ["out.json"]);
    }

    #[test]
    fn links_planted_where_temporary_files_would_go_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let p = dir.path().join("gate.json");
        // Every name the temporary file used to take, for this process.
        for n in 0..64 {
            let planted = dir
                .path()
                .join(format!(".gate.json.tmp-{}-{n}", std::process::id()));
            std::os::unix::fs::symlink(&victim, planted).unwrap();
        }
        write_atomically(&p, b"baseline").unwrap();
        write_atomically(&p, b"baseline 2").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "baseline 2");
        assert!(!std::fs::symlink_metadata(&p)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_link_at_the_destination_is_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let p = dir.path().join("out.json");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        write_atomically(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
    }

    #[test]
    fn files_committed_together_replace_their_destinations_all_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.csv");
        let b = dir.path().join("b.csv");
        std::fs::write(&a, "old a").unwrap();
        let mut fa = AtomicFile::create(&a).unwrap();
        fa.write_all(b"new a").unwrap();
        let mut fb = AtomicFile::create(&b).unwrap();
        fb.write_all(b"new b").unwrap();
        // b's directory goes away before the commit: a must keep its old content.
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let c = sub.join("c.csv");
        let fc = AtomicFile::create(&c).unwrap();
        std::fs::remove_dir(&sub).unwrap();
        assert!(commit_all(vec![fa, fb, fc]).is_err());
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a");
        assert!(!b.exists());
        assert_eq!(entries(dir.path()), ["a.csv"]);
    }

    #[test]
    fn a_missing_directory_is_an_error_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("no/such/out.json");
        let e = write_atomically(&p, b"x").unwrap_err().to_string();
        assert!(
            e.contains("the directory") && e.contains("does not exist"),
            "{e}"
        );
        assert!(!dir.path().join("no").exists());
    }

    #[test]
    fn a_device_is_refused_as_an_output() {
        let full = Path::new("/dev/full");
        if !full.exists() {
            return;
        }
        let e = write_atomically(full, b"x").unwrap_err().to_string();
        assert!(e.contains("not a regular file (a character device)"), "{e}");
    }
}
