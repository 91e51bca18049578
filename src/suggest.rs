//! `overlap suggest`: the reordering each rank should make, with its predicted gain
//! (the analysis is in `overlap_analyzer::suggest`; this is the command's glue).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use overlap_analyzer::dag::{built_in_names, BuiltIn, Options as DagOptions};
use overlap_analyzer::ops::Program;
use overlap_analyzer::replay::{NetworkFit, Progress};
use overlap_analyzer::sites::SiteTable;
use overlap_analyzer::suggest::{
    confirm, program_of, render, suggest as suggest_trace, Namer, Options,
};

use crate::output::{out, outln};

/// How rendezvous transfers progress, on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProgressArg {
    /// Only while the sender or the receiver is inside an MPI call (MPICH's default).
    InMpi,
    /// Continuously (a progress thread or an offloading NIC).
    Async,
}

impl From<ProgressArg> for Progress {
    fn from(p: ProgressArg) -> Progress {
        match p {
            ProgressArg::InMpi => Progress::InMpi,
            ProgressArg::Async => Progress::Async,
        }
    }
}

/// The network a replay runs on: fitted from the trace, or from a model file.
#[derive(Debug, Args)]
pub(crate) struct NetworkArgs {
    /// A network model from `overlap run pingpong --model FILE` (default: fitted to the
    /// trace's own messages).
    #[arg(long, value_name = "FILE")]
    pub(crate) model: Option<PathBuf>,
    /// Messages up to this many bytes are eager (default: fitted from the trace where
    /// it shows it, else 64 KiB).
    #[arg(long, value_name = "BYTES")]
    pub(crate) eager_limit: Option<u64>,
    /// How rendezvous transfers progress.
    #[arg(long, value_enum, default_value_t = ProgressArg::InMpi)]
    pub(crate) progress: ProgressArg,
}

impl NetworkArgs {
    /// The network for `program` of `trace`.
    pub(crate) fn fit(
        &self,
        trace: &overlap_analyzer::model::Trace,
        program: &Program,
    ) -> Result<NetworkFit> {
        let fit = match &self.model {
            Some(path) => NetworkFit::from_file(path, program, self.eager_limit)?,
            None => NetworkFit::from_trace(trace, program, self.eager_limit),
        };
        Ok(match self.eager_limit {
            Some(b) => fit.with_eager_limit(b),
            None => fit,
        })
    }
}

#[derive(Debug, Args)]
pub(crate) struct SuggestArgs {
    /// A merged trace, or a directory of per-rank files.
    trace: PathBuf,
    /// The built-in policies to apply after data dependence, in priority order (program
    /// order is always the last tie-break).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "posts-early,lower-tag-first"
    )]
    policy: Vec<String>,
    /// Only moves that need no assumption about compute whose buffers are unknown.
    #[arg(long)]
    conservative: bool,
    #[command(flatten)]
    network: NetworkArgs,
    /// Traces of re-runs of the program changed as suggested: their median measured
    /// run time is set against the prediction, and each rank's iteration against the
    /// suggested one.
    #[arg(long, value_name = "TRACE", num_args = 1..)]
    confirm: Vec<PathBuf>,
    /// Print the suggestion as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn suggest(a: SuggestArgs) -> Result<ExitCode> {
    let mut policies = Vec::new();
    for name in &a.policy {
        match BuiltIn::parse(name.trim()) {
            Some(b) => policies.push(b.policy()),
            None if name.trim() == "program-order" => {}
            None => bail!(
                "--policy: unknown policy {name:?} (built-ins: {}; program-order is always last)",
                built_in_names()
            ),
        }
    }
    let trace = crate::cli::load_trace(&a.trace)?;
    let options = Options {
        dag: DagOptions {
            policies,
            conservative: a.conservative,
        },
        progress: a.network.progress.into(),
    };
    let program = program_of(&trace)?;
    let fit = a.network.fit(&trace, &program)?;
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
        out!("{}", render(&suggestion));
    }
    Ok(ExitCode::SUCCESS)
}
