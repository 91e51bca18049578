//! `--self-trace FILE`: the analyzer's own phases (import, matching, each metric,
//! report), which are `tracing` spans, written as a Chrome trace with tracing-chrome so
//! that a slow analysis can itself be opened in Perfetto. Its cost (about a microsecond
//! per span) is irrelevant here: there are a handful of spans per file.
//!
//! tracing-chrome writes from its own thread and panics there when a write fails (a
//! full disk, `/dev/full`); so it writes into memory, and [`Guard::finish`] writes the
//! file whole at the end, reporting a failure like any other output's.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use overlap_analyzer::output::{write_atomically, AtomicFile};
use tracing_subscriber::prelude::*;

/// The trace as tracing-chrome writes it: in memory, shared with [`Guard`].
#[derive(Clone, Default)]
struct Memory(Arc<Mutex<Vec<u8>>>);

impl Write for Memory {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Keeps the recording going; [`Guard::finish`] writes the file.
pub struct Guard {
    flush: tracing_chrome::FlushGuard,
    memory: Memory,
    file: PathBuf,
}

/// Starts recording the analyzer's spans, for `file`. The file's directory must exist
/// (checked now, so that a mistake is told before the analysis runs).
pub fn start(file: &Path) -> Result<Guard> {
    drop(AtomicFile::create(file)?);
    let memory = Memory::default();
    let (layer, flush) = tracing_chrome::ChromeLayerBuilder::new()
        .writer(memory.clone())
        .include_args(true)
        .build();
    tracing_subscriber::registry()
        .with(layer)
        .try_init()
        .context("a tracing subscriber is already installed")?;
    Ok(Guard {
        flush,
        memory,
        file: file.to_path_buf(),
    })
}

impl Guard {
    /// Ends the recording and writes the file.
    pub fn finish(self) -> Result<()> {
        drop(self.flush);
        let bytes = std::mem::take(
            &mut *self
                .memory
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        write_atomically(&self.file, &bytes)?;
        Ok(())
    }
}
