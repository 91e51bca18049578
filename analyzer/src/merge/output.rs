//! How a merged file is written: its format (Chrome JSON or Perfetto's protobuf, from
//! its name or `--format`) and the part of the run (a [`Window`]), as one value the
//! merge and its writers are given. A window is the protobuf's only: the JSON is what
//! the analysis reads, so it stays whole.

use std::path::Path;

use overlap_format::pftrace::TraceFormat;

use super::Window;
use crate::{Error, Result};

/// How a merged file is written: its format, and the part of the run (a window of the
/// run is for the protobuf only: the JSON is what the analysis reads, whole).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// The format.
    pub format: TraceFormat,
    /// The part of the run written.
    pub window: Window,
}

impl Output {
    /// The whole run, in the format `path`'s name says ([`TraceFormat::of_path`]).
    pub fn of_path(path: &Path) -> Output {
        Output {
            format: TraceFormat::of_path(path),
            window: Window::all(),
        }
    }

    /// Fails for a window of the run in JSON.
    pub(crate) fn check(&self, path: &Path) -> Result<()> {
        if self.format == TraceFormat::Json && !self.window.is_all() {
            return Err(Error::NotWritable {
                path: path.to_path_buf(),
                reason: "a window of the run (--from, --to, --ranks, --region) is written as Perfetto's \
                         protobuf (.pftrace) only: the JSON is the whole run, which the \
                         analysis reads"
                    .into(),
            });
        }
        Ok(())
    }
}
