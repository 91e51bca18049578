//! overlap-tui: the analysis in a terminal, for the login node over SSH where a browser
//! with Perfetto is far away. It shows what the analyzer concluded on the timeline
//! (compute, MPI and waiting per rank), and walks from a finding to the calls behind it:
//! a wait state to its late partner, a false-overlap finding to its wait, a send to its
//! receive.
//!
//! The trace is read by the analyzer's importer and analysed once ([`Run::new`]); the
//! TUI never parses a file. [`App`] is the state machine (keys and mouse, tested apart
//! from drawing), [`view`] draws it, [`term`] owns the terminal, and [`lod`] is the
//! level-of-detail pyramid that keeps every redraw independent of the events in view.
//!
//! ```no_run
//! use overlap_analyzer::load::load;
//! let loaded = load(std::path::Path::new("run.json"), &mut |_, _| {}).unwrap();
//! let run = overlap_tui::Run::new("run.json".into(), loaded.trace, &Default::default());
//! overlap_tui::run(vec![run]).unwrap();
//! ```

pub mod app;
pub mod filter;
pub mod gpu_lane;
mod keys;
pub mod lists;
pub mod lod;
mod mouse;
pub mod nav;
pub mod profile;
pub mod run;
pub mod search;
pub mod selection;
pub mod term;
pub mod text;
pub mod view;

pub use app::{App, Input, View};
pub use run::Run;

/// Errors of the TUI.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Standard input or output is not a terminal.
    #[error("overlap tui needs a terminal on standard input and output (for a report in a pipe, use `overlap analyze`)")]
    NotATerminal,
    /// The terminal could not be set up or drawn on.
    #[error("terminal: {0}")]
    Terminal(String),
}

/// Runs the TUI over one run, or two to compare, until the user quits; the terminal is
/// restored however it ends.
pub fn run(runs: Vec<Run>) -> Result<(), Error> {
    term::run(App::new(runs))
}
