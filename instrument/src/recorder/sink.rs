//! Where the stream's bytes go. The writer thread hands whole frames to a [`Sink`]:
//! [`RankFileSink`] writes a per-rank file, [`MemorySink`] keeps the bytes for tests and
//! reads them back, [`NullSink`] drops them (the baseline for overhead measurements).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use overlap_format::stream::{self, Collected};

use crate::schema::{Header, FORMAT_NAME, FORMAT_VERSION};
use crate::{Error, Result};

/// Receives one rank's stream, a run of whole frames at a time, from the writer thread.
/// Errors stop the writing; they are reported by `Recorder::finish`.
pub trait Sink: Send + 'static {
    /// Whole frames, in order: a page of them, which should reach the file before this
    /// returns (nothing is flushed later), so that a rank that dies leaves all of it.
    fn write(&mut self, frames: &[u8]) -> io::Result<()>;
    /// Recording is over (the footer was the last frame written).
    fn finish(&mut self) -> io::Result<()>;
    /// Where the in-flight dump marker goes (`rank-N.dump` beside a rank file); `None`:
    /// no marker.
    fn dump_marker(&self) -> Option<PathBuf> {
        None
    }
}

/// Writes a per-rank file: the opening and the header at once, then frames as the writer
/// drains the rings. What was written stays readable if the process dies.
pub struct RankFileSink {
    path: PathBuf,
    file: Option<File>,
}

impl RankFileSink {
    /// Creates the file (and its directory) and writes the opening and header at once.
    pub fn create(path: impl AsRef<Path>, header: &Header) -> Result<RankFileSink> {
        let path = path.as_ref().to_path_buf();
        let io_err = |what: &'static str| {
            let path = path.clone();
            move |cause| Error::Io {
                what,
                path: path.clone(),
                cause,
            }
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io_err("creating the trace directory"))?;
        }
        // A symbolic link planted where the file goes is refused, never followed.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(io_err("creating the trace file"))?;
        file.write_all(&stream::file_start(header))
            .map_err(io_err("writing the trace header"))?;
        Ok(RankFileSink {
            path,
            file: Some(file),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn file(&mut self) -> io::Result<&mut File> {
        self.file
            .as_mut()
            .ok_or_else(|| io::Error::other("trace file already closed"))
    }
}

impl Sink for RankFileSink {
    fn write(&mut self, frames: &[u8]) -> io::Result<()> {
        self.file()?.write_all(frames)
    }

    fn dump_marker(&self) -> Option<PathBuf> {
        Some(crate::schema::marker::marker_path(&self.path))
    }

    fn finish(&mut self) -> io::Result<()> {
        let file = self.file.take();
        match file {
            Some(f) => f.sync_data(),
            None => Ok(()),
        }
    }
}

/// What a [`MemorySink`] received, read back.
pub type Recorded = Collected;

/// Keeps the stream in memory; clone it before handing it to a recorder and read it
/// back after.
#[derive(Clone, Debug)]
pub struct MemorySink {
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl Default for MemorySink {
    fn default() -> Self {
        MemorySink::new()
    }
}

impl MemorySink {
    /// An empty stream, with a header for rank 0 of 1.
    pub fn new() -> MemorySink {
        let header = Header {
            format: FORMAT_NAME.into(),
            format_version: FORMAT_VERSION,
            rank: 0,
            size: 1,
            host: String::new(),
            os_pid: std::process::id(),
            epoch_ns: 0,
            clock_domain: String::new(),
            program: "memory".into(),
            params: Default::default(),
            run_id: String::new(),
            start_unix_ns: 0,
        };
        MemorySink {
            bytes: Arc::new(Mutex::new(stream::file_start(&header))),
        }
    }

    /// The stream's bytes so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.lock().clone()
    }

    /// What was received so far, read back. A stream the reader cannot read at all (no
    /// clock frame yet) reads as nothing.
    pub fn recorded(&self) -> Recorded {
        let mut out = Collected::default();
        let _ = stream::read(&self.lock(), &mut out);
        out
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.bytes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Sink for MemorySink {
    fn write(&mut self, frames: &[u8]) -> io::Result<()> {
        self.lock().extend_from_slice(frames);
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Drops everything: the baseline for measuring the recorder's own cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullSink;

impl Sink for NullSink {
    fn write(&mut self, _: &[u8]) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}
