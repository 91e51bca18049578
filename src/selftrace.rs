//! `--self-trace FILE`: the analyzer's own phases (import, matching, each metric,
//! report), which are `tracing` spans, written as a Chrome trace with tracing-chrome so
//! that a slow analysis can itself be opened in Perfetto. Its cost (about a microsecond
//! per span) is irrelevant here: there are a handful of spans per file.

use std::path::Path;

use anyhow::{Context, Result};
use tracing_subscriber::prelude::*;

/// Keeps the trace open; the file is complete when this is dropped.
pub struct Guard {
    _flush: tracing_chrome::FlushGuard,
}

/// Starts recording the analyzer's spans into `file`.
pub fn start(file: &Path) -> Result<Guard> {
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // tracing-chrome panics when it cannot create the file: check first.
    std::fs::File::create(file).with_context(|| format!("creating {}", file.display()))?;
    let (layer, flush) = tracing_chrome::ChromeLayerBuilder::new()
        .file(file)
        .include_args(true)
        .build();
    tracing_subscriber::registry()
        .with(layer)
        .try_init()
        .context("a tracing subscriber is already installed")?;
    Ok(Guard { _flush: flush })
}
