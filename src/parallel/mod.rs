//! `overlap analyze --parallel W`: the analysis of a directory of rank files as an MPI
//! job of W workers, the way Scalasca's analyser runs on the cluster the run came from.
//! The command launches the workers (`mpiexec -n W overlap analyze ...` with the
//! launcher given or found), each worker reads and digests its share of the rank files
//! ([`overlap_analyzer::analysis::analyze_dir_shared`]) and worker 0 prints the report,
//! the one a single process prints. `overlap analyze` started under an MPI launcher
//! itself (`srun -n 64 overlap analyze DIR`) is a worker too.
//!
//! ```text
//!  overlap analyze --parallel 4 DIR ─► mpiexec -n 4 overlap analyze DIR --exchange-library L
//!     worker 0..3: MPI started through L (src/parallel/exchange.c, this MPI's)
//!     worker 0: the report, as one process prints it, and the tables asked for
//!               (--csv, --parquet), as one process writes them in parts;
//!     the others print and write nothing
//! ```

mod mpi;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};
use clap::Args;
use overlap_analyzer::exchange::Exchange;
use overlap_analyzer::metrics::Options;
use overlap_instrument::mpi_family::MpiFamily;

use crate::hold::WorkerRun;
use crate::output::sayln;
use mpi::MpiExchange;

/// The exchange library's file for `family`, as scripts/build-preloads.sh names it.
fn library_file(family: MpiFamily) -> String {
    format!("liboverlap_exchange-{}.so", family.name())
}

/// `--parallel` and what goes with it, for `overlap analyze`.
#[derive(Debug, Args)]
pub(crate) struct ParallelArgs {
    /// Analyse a directory of rank files with W workers, an MPI job (each worker reads
    /// and digests its share of the files, worker 0 makes the report: the same report).
    /// Started under an MPI launcher (`srun -n 64 overlap analyze DIR`), overlap is a
    /// worker without it.
    #[arg(long, value_name = "W", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) parallel: Option<u32>,
    /// The command that starts the workers, before `-n W` (default `mpiexec`; e.g.
    /// "mpirun --oversubscribe", "srun --mpi=pmi2").
    #[arg(long, value_name = "COMMAND", requires = "parallel")]
    launcher: Option<String>,
    /// The MPI the workers run under, when the launcher does not say (`srun`): mpich or
    /// openmpi (default: the launcher's, else the MPI the preload was built for).
    #[arg(long, value_name = "FAMILY", value_parser = parse_family)]
    mpi: Option<MpiFamily>,
    /// The MPI library a worker starts MPI through (given by the launching command to
    /// its workers).
    #[arg(long, value_name = "FILE", hide = true)]
    exchange_library: Option<PathBuf>,
    /// Whether the launching command's standard output and error, where worker 0's
    /// report and progress go in the end, are terminals, as `OUT,ERR` (given by the
    /// launching command to its workers: the launcher's own output may be a pipe, or a
    /// terminal of its making, as Open MPI's is).
    #[arg(long, value_name = "OUT,ERR", value_delimiter = ',', hide = true)]
    terminals: Option<Vec<bool>>,
}

fn parse_family(name: &str) -> std::result::Result<MpiFamily, String> {
    MpiFamily::from_name(name).ok_or_else(|| format!("{name}: not mpich nor openmpi"))
}

/// What this `overlap analyze` is: a process alone, the command that launches workers,
/// or a worker.
pub(crate) enum Role {
    Alone,
    Launch(u32),
    Worker(PathBuf),
}

/// The environment variables an MPI launcher gives its processes, and the family of
/// MPI each says (PMI: MPICH's Hydra and Slurm's PMI-2; Open MPI's and PMIx).
const LAUNCHED_BY: [(&str, MpiFamily); 4] = [
    ("OMPI_COMM_WORLD_SIZE", MpiFamily::OpenMpi),
    ("PMIX_RANK", MpiFamily::OpenMpi),
    ("PMI_SIZE", MpiFamily::Mpich),
    ("PMI_RANK", MpiFamily::Mpich),
];

/// Where a launcher says how many processes it started: Open MPI's, Hydra's and
/// Slurm's PMI-2, and Slurm's own (srun with PMIx says no other).
const JOB_SIZE: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"];

/// The MPI of the job of several processes this one was started in by an MPI launcher,
/// if it was: `None` for a process started otherwise, or alone (which has no one to
/// share the work with, and starts no MPI).
fn launched_among_several() -> Option<MpiFamily> {
    let (_, family) = LAUNCHED_BY
        .iter()
        .find(|(var, _)| std::env::var_os(var).is_some())?;
    let size = JOB_SIZE.iter().find_map(|var| {
        std::env::var(var)
            .ok()
            .and_then(|n| n.trim().parse::<u32>().ok())
    });
    size.is_some_and(|n| n > 1).then_some(*family)
}

impl ParallelArgs {
    /// The role the arguments and the environment give.
    pub(crate) fn role(&self) -> Result<Role> {
        if let Some(library) = &self.exchange_library {
            match self.terminals.as_deref() {
                Some([out, err]) => crate::output::set_terminals(*out, *err),
                Some(_) => bail!("--terminals takes two booleans, OUT,ERR"),
                None => {}
            }
            return Ok(Role::Worker(library.clone()));
        }
        if let Some(w) = self.parallel {
            return Ok(Role::Launch(w));
        }
        // Started by an MPI launcher among several: a worker of that job.
        match launched_among_several() {
            Some(family) => Ok(Role::Worker(library_of(self.mpi.unwrap_or(family))?)),
            None => Ok(Role::Alone),
        }
    }

    /// Launches `workers` workers of the `overlap analyze` this process was started as
    /// (its own arguments, given again to each worker with the exchange library), and
    /// waits for them: worker 0 prints the report, or the error.
    pub(crate) fn launch(&self, workers: u32) -> Result<ExitCode> {
        let launcher: Vec<String> = match &self.launcher {
            Some(l) => l.split_whitespace().map(str::to_string).collect(),
            None => vec!["mpiexec".to_string()],
        };
        let Some(first) = launcher.first() else {
            bail!("--launcher is empty: give the command that starts the workers, e.g. mpiexec");
        };
        let said = crate::which_mpi::launcher(first);
        let family = match (self.mpi, said.family) {
            (Some(f), _) | (None, Some(f)) => f,
            (None, None) => default_family()?,
        };
        let library = library_of(family)?;
        let exe = std::env::current_exe().context("finding this program's own path")?;
        let mut cmd = Command::new(first);
        cmd.args(&launcher[1..])
            .args(["-n", &workers.to_string()])
            .arg(&exe)
            .args(std::env::args_os().skip(1))
            .arg("--exchange-library")
            .arg(&library)
            .arg("--terminals")
            .arg(format!(
                "{},{}",
                std::io::stdout().is_terminal(),
                std::io::stderr().is_terminal()
            ));
        let shown = describe(&cmd);
        // The job's standard output is worker 0's report, and what the launcher says of
        // workers that died: kept until the job ends, then printed as the report only
        // when every worker succeeded (never a report cut short), else on stderr.
        let job = cmd
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting the analysis workers: {shown}"))?;
        let ended = job
            .wait_with_output()
            .with_context(|| format!("waiting for the analysis workers: {shown}"))?;
        if ended.status.success() {
            crate::output::pass_stdout(&ended.stdout);
            return Ok(ExitCode::SUCCESS);
        }
        let said = String::from_utf8_lossy(&ended.stdout);
        if !said.trim().is_empty() {
            sayln!("{}", said.trim_end());
        }
        // Worker 0 said the analysis's error, if it lived to; the launcher, which worker
        // died.
        let status = ended.status;
        sayln!(
            "overlap: error: the {workers} analysis workers failed ({status}), no report: {shown}"
        );
        Ok(ExitCode::FAILURE)
    }
}

/// A command as it would be typed.
fn describe(cmd: &Command) -> String {
    let mut words: Vec<OsString> = vec![cmd.get_program().to_owned()];
    words.extend(cmd.get_args().map(|a| a.to_owned()));
    let words: Vec<String> = words
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    words.join(" ")
}

/// The exchange library built for `family`, beside this binary or in the installed
/// layout (as the preloads are looked for).
fn library_of(family: MpiFamily) -> Result<PathBuf> {
    let file = library_file(family);
    let dirs = crate::which_mpi::preload_dirs()?;
    if let Some(found) = dirs.iter().map(|d| d.join(&file)).find(|p| p.is_file()) {
        return Ok(found);
    }
    bail!(
        "the analysis workers' library for {family} ({file}) is not built: run \
         scripts/build-preloads.sh (it builds one for each MPI installed), or give the \
         workers' MPI with --mpi"
    )
}

/// The family of the preload cargo built (the default MPI's), or the only family whose
/// exchange library is built.
fn default_family() -> Result<MpiFamily> {
    if let Some(f) = crate::which_mpi::default_family() {
        return Ok(f);
    }
    let built: Vec<MpiFamily> = MpiFamily::ALL
        .into_iter()
        .filter(|&f| library_of(f).is_ok())
        .collect();
    match built[..] {
        [one] => Ok(one),
        _ => bail!("the launcher does not say which MPI it is: give the workers' MPI with --mpi"),
    }
}

/// The abort of the MPI job this process is a worker of, for a panic.
static ABORT: OnceLock<Box<dyn Fn() + Send + Sync>> = OnceLock::new();

/// The analysis of the rank files `dir` by the worker this process is (MPI started
/// through `library`): the report at worker 0, with the tables asked for to finish,
/// `None` at the others. A worker that panics ends the job (the others would wait for
/// it); an error of any worker is worker 0's to say, said here (the exit code it gives
/// is returned), and the others fail quietly.
pub(crate) fn analyze(
    library: &Path,
    dir: &Path,
    opts: &Options,
    tables: (&Option<PathBuf>, &Option<PathBuf>),
) -> Result<std::result::Result<WorkerRun, ExitCode>> {
    let exchange = MpiExchange::start(library)?;
    let _ = ABORT.set(Box::new(exchange.abort_handle()));
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        hook(info);
        if let Some(abort) = ABORT.get() {
            abort();
        }
    }));
    let first = exchange.worker() == 0;
    match crate::hold::analyze_in_parts_with(dir, opts, &exchange, tables) {
        Ok(run) => Ok(Ok(run)),
        // Said before MPI is finalized (when `exchange` is dropped): once it is, the
        // others may exit, and a launcher that ends the job when a worker exits
        // non-zero (Open MPI's mpirun) would kill worker 0 before it said why.
        Err(e) if first => Ok(Err(crate::say_error(&e))),
        Err(_) => Ok(Err(ExitCode::FAILURE)),
    }
}
