//! How every file overlap reads is opened: never one that would block or never end.
//!
//! A trace names files of its own (the objects of a rank's code maps, which the
//! symbolizer opens), and a user may name a fifo or a device where a file is expected.
//! Opening a fifo for reading blocks until a writer comes, and a device such as
//! `/dev/zero` never ends: a crafted trace could hang a CI gate, or fill its memory.
//! [`open_input`] looks at the path first (opening some devices acts: a watchdog arms
//! itself), and since the path can be swapped before it is opened, it opens without
//! blocking (`O_NONBLOCK`), looks at what it opened (`fstat`), refuses anything but a
//! regular file (or, where allowed, a directory), then clears `O_NONBLOCK` again. [`read_input`] reads such a file whole, up
//! to a cap that says how large the input may be.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// No cap on an input's size: a trace file may be as large as the disk holds; being a
/// regular file, it ends.
pub const UNCAPPED: u64 = u64::MAX;

/// Why an input cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// It does not exist, or cannot be opened or read.
    #[error("{}: {cause}", path.display())]
    Io {
        /// The input.
        path: PathBuf,
        /// The cause, shown in the message (not chained, so it is not printed twice).
        cause: io::Error,
    },
    /// It is neither a regular file nor (where allowed) a directory.
    #[error("{}: not a regular file ({kind})", path.display())]
    NotRegular {
        /// The input.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// It is larger than inputs of its kind can be.
    #[error("{}: larger than {cap} bytes, the most a {what} can be: not a {what}", path.display())]
    TooLarge {
        /// The input.
        path: PathBuf,
        /// The most bytes accepted.
        cap: u64,
        /// What it was read as.
        what: &'static str,
    },
}

/// Whether a directory is an acceptable input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accept {
    /// Only a regular file.
    File,
    /// A regular file or a directory.
    FileOrDirectory,
}

/// What kind of file system object `md` describes, for messages.
pub fn kind_of(md: &Metadata) -> &'static str {
    let t = md.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a fifo"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a regular file"
    }
}

/// Opens `path` for reading if it is a regular file (or, with
/// [`Accept::FileOrDirectory`], a directory), without ever blocking on a fifo; returns
/// the open file and what it is.
pub fn open_input(path: &Path, accept: Accept) -> Result<(File, Metadata), InputError> {
    let io_error = |cause| InputError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let acceptable =
        |md: &Metadata| md.is_file() || (accept == Accept::FileOrDirectory && md.is_dir());
    // Looked at before it is opened: opening some devices acts (a watchdog arms itself,
    // a tape rewinds), and a trace may name any path. What is opened is looked at again,
    // in case the path was swapped in between.
    let before = std::fs::metadata(path).map_err(io_error)?;
    if !acceptable(&before) {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(&before),
        });
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io_error)?;
    let md = file.metadata().map_err(io_error)?;
    if !acceptable(&md) {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(&md),
        });
    }
    clear_nonblocking(&file).map_err(io_error)?;
    Ok((file, md))
}

/// Reads the regular file `path` whole; more than `cap` bytes make it a
/// [`InputError::TooLarge`] `what` (a file growing while read stops at the cap too).
pub fn read_input(path: &Path, cap: u64, what: &'static str) -> Result<Vec<u8>, InputError> {
    let (file, md) = open_input(path, Accept::File)?;
    if md.len() > cap {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            cap,
            what,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(md.len()).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|cause| InputError::Io {
            path: path.to_path_buf(),
            cause,
        })?;
    if bytes.len() as u64 > cap {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            cap,
            what,
        });
    }
    Ok(bytes)
}

/// Makes reads of `file` block again (as they do on any regular file).
fn clear_nonblocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is open for as long as `file` lives; F_GETFL and F_SETFL only read
    // and set its status flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn fifo_in(dir: &Path) -> Option<PathBuf> {
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        made.then_some(fifo)
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let Some(fifo) = fifo_in(dir.path()) else {
            return;
        };
        let e = open_input(&fifo, Accept::FileOrDirectory)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file (a fifo)"), "{e}");
        let e = read_input(&fifo, UNCAPPED, "trace")
            .unwrap_err()
            .to_string();
        assert!(e.contains("(a fifo)"), "{e}");
    }

    #[test]
    fn a_device_is_refused() {
        let zero = Path::new("/dev/zero");
        if !zero.exists() {
            return;
        }
        let e = read_input(zero, 1 << 20, "baseline")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file (a character device)"), "{e}");
    }

    #[test]
    fn directories_only_where_accepted() {
        let dir = tempfile::tempdir().unwrap();
        assert!(open_input(dir.path(), Accept::FileOrDirectory).is_ok());
        let e = open_input(dir.path(), Accept::File)
            .unwrap_err()
            .to_string();
        assert!(e.contains("(a directory)"), "{e}");
        let e = open_input(&dir.path().join("none"), Accept::File)
            .unwrap_err()
            .to_string();
        assert_eq!(e.matches("No such file").count(), 1, "{e}");
    }

    #[test]
    fn a_file_over_its_cap_is_refused_and_one_within_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.json");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read_input(&p, 10, "baseline").unwrap(), b"0123456789");
        let e = read_input(&p, 9, "baseline").unwrap_err().to_string();
        assert!(
            e.contains("larger than 9 bytes, the most a baseline can be"),
            "{e}"
        );
    }

    #[test]
    fn reads_block_again_after_opening() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"x").unwrap();
        let (file, _) = open_input(&p, Accept::File).unwrap();
        // SAFETY: reads the flags of an open descriptor.
        let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0);
    }
}
