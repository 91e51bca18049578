//! `overlap suggest`: the reordering each rank should make, with its predicted gain
//! (the analysis is in `overlap_analyzer::suggest`; this is the command's glue).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use overlap_analyzer::model::Trace;
use overlap_analyzer::ops::Program;
use overlap_analyzer::sites::SiteTable;
use overlap_analyzer::suggest::{
    confirm, program_of, render, suggest as suggest_trace, suggest_without_network, Namer, Options,
    Run,
};

use crate::output::{out, outln};
use crate::replay_args::{NetworkArgs, PolicyArgs};

#[derive(Debug, Args)]
pub(crate) struct SuggestArgs {
    /// A merged trace, or a directory of per-rank files.
    trace: PathBuf,
    #[command(flatten)]
    policies: PolicyArgs,
    #[command(flatten)]
    network: NetworkArgs,
    /// Traces of runs of the program changed as suggested: the gain measured from the
    /// original runs (TRACE and --original) to these is set against the predicted gain,
    /// their median run time against the predicted one, and each rank's iteration
    /// against the suggested one.
    #[arg(long, value_name = "TRACE", num_args = 1..)]
    confirm: Vec<PathBuf>,
    /// Traces of more runs of the original program, for --confirm (TRACE is one): 3
    /// original and 3 changed runs at least give a verdict on the gain.
    #[arg(long, value_name = "TRACE", num_args = 1.., requires = "confirm")]
    original: Vec<PathBuf>,
    /// Print the suggestion as JSON (everything: every move, the iterations, notes).
    #[arg(long)]
    json: bool,
    /// Print everything in words: every move with its verdict, every possible move, the
    /// iteration before and after, each rank's replayed end, the notes.
    #[arg(long)]
    verbose: bool,
}

/// The traces at `paths`, each with its program.
fn load_runs(paths: &[PathBuf]) -> Result<Vec<(Trace, Program)>> {
    paths
        .iter()
        .map(|path| {
            let t = crate::cli::load_trace(path)?;
            let p = program_of(&t)?;
            Ok((t, p))
        })
        .collect()
}

/// Each run as the pair of references a confirmation takes.
fn pairs(runs: &[(Trace, Program)]) -> Vec<Run<'_>> {
    runs.iter().map(|(t, p)| (t, p)).collect()
}

pub(crate) fn suggest(a: SuggestArgs) -> Result<ExitCode> {
    let options = Options {
        dag: a.policies.options()?,
        progress: a.network.progress.into(),
        conservative: a.policies.conservative,
    };
    let trace = crate::cli::load_trace(&a.trace)?;
    let program = program_of(&trace)?;
    // Without a network the proven moves are suggested all the same, their gains
    // unknown: the order does not need the network, only the predictions do.
    let mut suggestion = match a.network.completed(a.network.measured(&trace)?) {
        Ok(fit) => suggest_trace(&trace, &program, fit, &options)?,
        Err(unknown) => suggest_without_network(&trace, &program, unknown, &options)?,
    };
    if !a.confirm.is_empty() {
        let originals = load_runs(&a.original)?;
        let changed = load_runs(&a.confirm)?;
        let sites = SiteTable::build(&trace);
        let namer = Namer {
            trace: &trace,
            program: &program,
            sites: &sites,
        };
        suggestion.confirmation =
            confirm(&suggestion, &namer, &pairs(&originals), &pairs(&changed));
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&suggestion)?);
    } else {
        out!("{}", render(&suggestion, a.verbose));
    }
    Ok(ExitCode::SUCCESS)
}
