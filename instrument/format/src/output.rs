//! How every file overlap produces reaches the disk: written whole or not at all.
//!
//! A merged trace, a baseline, a table or a results file is written to a temporary
//! file beside its destination, synced, then renamed over it. A full disk, a killed
//! process or a write error therefore never leaves a partial file that a later run
//! would read as valid: the destination keeps its old content (or stays absent) and
//! the temporary file is removed. The destination's directory must exist: an output
//! path with a missing directory is a mistake to report, not a directory to create
//! silently.
//! (Inputs are opened by [`crate::input`].)

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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

/// A file being written: all of it reaches `path` on [`AtomicFile::commit`], none of
/// it if the writer is dropped first or any step fails.
pub struct AtomicFile {
    path: PathBuf,
    temp: PathBuf,
    out: Option<BufWriter<File>>,
}

static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

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

impl AtomicFile {
    /// Starts writing `path` (through a temporary file in the same directory).
    pub fn create(path: &Path) -> Result<AtomicFile, OutputError> {
        let dir = check_output(path)?;
        let name = path
            .file_name()
            .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
        let temp = dir.join(format!(
            ".{name}.tmp-{}-{}",
            std::process::id(),
            NEXT_TEMP.fetch_add(1, Ordering::Relaxed)
        ));
        let file = File::create(&temp).map_err(|cause| OutputError::Io {
            path: path.to_path_buf(),
            cause,
        })?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            temp,
            out: Some(BufWriter::with_capacity(1 << 16, file)),
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

    /// Flushes, syncs and renames the file into place.
    pub fn commit(mut self) -> Result<(), OutputError> {
        let Some(out) = self.out.take() else {
            return Err(self.error(io::Error::other("already committed")));
        };
        let file = out.into_inner().map_err(|e| self.error(e.into_error()))?;
        file.sync_all().map_err(|e| self.error(e))?;
        drop(file);
        std::fs::rename(&self.temp, &self.path).map_err(|e| self.error(e))?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.out {
            Some(out) => out.write(buf),
            None => Err(io::Error::other("already committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
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
