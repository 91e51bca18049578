//! `overlap suggest`: the reordering each rank should make, with its predicted gain
//! (the analysis is in `overlap_analyzer::suggest`; this is the command's glue).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use overlap_analyzer::sites::SiteTable;
use overlap_analyzer::suggest::{
    confirm, program_of, render, suggest as suggest_trace, Namer, Options,
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
    /// Traces of re-runs of the program changed as suggested: their median measured
    /// run time is set against the prediction, and each rank's iteration against the
    /// suggested one.
    #[arg(long, value_name = "TRACE", num_args = 1..)]
    confirm: Vec<PathBuf>,
    /// Print the suggestion as JSON (everything: every move, the iterations, notes).
    #[arg(long)]
    json: bool,
    /// Print everything in words: every move with its verdict, every possible move, the
    /// iteration before and after, each rank's replayed end, the notes.
    #[arg(long)]
    verbose: bool,
}

pub(crate) fn suggest(a: SuggestArgs) -> Result<ExitCode> {
    let options = Options {
        dag: a.policies.options()?,
        progress: a.network.progress.into(),
        conservative: a.policies.conservative,
    };
    let trace = crate::cli::load_trace(&a.trace)?;
    let program = program_of(&trace)?;
    let fit = a.network.fitted(&trace, &program)?;
    let mut suggestion = suggest_trace(&trace, &program, fit, &options)?;
    if !a.confirm.is_empty() {
        let mut reruns = Vec::new();
        for path in &a.confirm {
            let t = crate::cli::load_trace(path)?;
            let p = program_of(&t)?;
            reruns.push((t, p));
        }
        let sites = SiteTable::build(&trace);
        let namer = Namer {
            trace: &trace,
            program: &program,
            sites: &sites,
        };
        let pairs: Vec<_> = reruns.iter().map(|(t, p)| (t, p)).collect();
        suggestion.confirmation = Some(confirm(&suggestion, &namer, &pairs));
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&suggestion)?);
    } else {
        out!("{}", render(&suggestion, a.verbose));
    }
    Ok(ExitCode::SUCCESS)
}
