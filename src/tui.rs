//! `overlap tui TRACE [TRACE2]`: loads and analyses the trace(s) here, with the same
//! progress bar, warnings and errors as `overlap analyze` (all before the screen is
//! switched), then hands the runs to the terminal UI (`overlap-tui`).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use crate::cli::{load_trace, AnalysisArgs};

#[derive(Debug, Args)]
pub(crate) struct TuiArgs {
    /// A merged trace, or a directory of per-rank files.
    trace: PathBuf,
    /// A second trace to compare with the first (the Compare view).
    other: Option<PathBuf>,
    #[command(flatten)]
    analysis: AnalysisArgs,
    #[command(flatten)]
    window: crate::window::WindowArgs,
}

/// Runs `overlap tui`.
pub(crate) fn tui(a: TuiArgs) -> Result<ExitCode> {
    let opts = a.analysis.options()?;
    let mut runs = Vec::new();
    for path in std::iter::once(&a.trace).chain(a.other.as_ref()) {
        let (trace, window) = a.window.apply(load_trace(path)?)?;
        let started = Instant::now();
        let tty = std::io::stderr().is_terminal();
        if tty {
            eprint!("analysing {} ...", path.display());
            let _ = std::io::stderr().flush();
        }
        let mut label = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        if !window.asked.is_all() {
            label = format!(
                "{label} [{} to {}{}]",
                overlap_analyzer::units::duration(window.from_ns),
                overlap_analyzer::units::duration(window.to_ns),
                window
                    .asked
                    .ranks
                    .as_ref()
                    .map_or(String::new(), |r| format!(
                        ", ranks {}",
                        overlap_analyzer::window::rank_ranges(r)
                    ))
            );
        }
        runs.push(overlap_tui::Run::new(label, trace, &opts).in_window(window));
        if tty {
            eprintln!(" {:.1} s", started.elapsed().as_secs_f64());
        }
    }
    overlap_tui::run(runs)?;
    Ok(ExitCode::SUCCESS)
}
