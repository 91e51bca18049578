//! The MPIs the preload's test programs run under: the default one (`mpicc`,
//! `mpiexec`: MPICH, which scripts/bootstrap.sh keeps the default) and Open MPI beside
//! it (`mpicc.openmpi`, `mpirun.openmpi`, installed by the same script). Each program
//! is compiled once per MPI and test run, when a test first asks for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::util::{mpi_lock, output_within, overlap_bin, Run, LAUNCH_LIMIT};

/// An MPI installation the tests compile and launch with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mpi {
    /// `mpicc`, `mpif90`, `mpiexec`: MPICH.
    Default,
    /// Open MPI by its Debian names.
    OpenMpi,
}

impl Mpi {
    fn c_compiler(self) -> &'static str {
        match self {
            Mpi::Default => "mpicc",
            Mpi::OpenMpi => "mpicc.openmpi",
        }
    }

    fn fortran_compiler(self) -> &'static str {
        match self {
            Mpi::Default => "mpif90",
            Mpi::OpenMpi => "mpif90.openmpi",
        }
    }

    /// Debian's `mpif90.openmpi` names no directory for `libmpi.so`, so with MPICH the
    /// default MPI the linker finds MPICH's through the alternatives' symlink and the
    /// program loads both MPIs: Open MPI's library directory goes first.
    fn fortran_flags(self) -> Vec<String> {
        match self {
            Mpi::Default => Vec::new(),
            Mpi::OpenMpi => {
                let dirs = Command::new(self.c_compiler())
                    .arg("--showme:libdirs")
                    .output()
                    .expect("mpicc.openmpi runs");
                String::from_utf8_lossy(&dirs.stdout)
                    .split_whitespace()
                    .map(|d| format!("-L{d}"))
                    .collect()
            }
        }
    }

    pub fn launcher(self) -> &'static str {
        match self {
            Mpi::Default => "mpiexec",
            Mpi::OpenMpi => "mpirun.openmpi",
        }
    }

    /// What the launcher needs here: Open MPI refuses root (the CI's user) and more
    /// ranks than cores unless told. (Its shared memory's single copy is left on: with
    /// `btl_vader_single_copy_mechanism=none` windows cannot be created.)
    pub fn env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Mpi::Default => &[],
            Mpi::OpenMpi => &[
                ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
                ("OMPI_MCA_rmaps_base_oversubscribe", "1"),
            ],
        }
    }
}

/// Set by `make test`: the tests under Open MPI must run.
const REQUIRE_OPEN_MPI_ENV: &str = "OVERLAP_REQUIRE_OPEN_MPI";

/// Open MPI, when it is installed and the preload was built for it
/// (scripts/build-preloads.sh, which `make test` runs); `None`, said on stderr, when
/// not: the test is then skipped, as on a machine without Open MPI.
pub fn open_mpi() -> Option<Mpi> {
    let compiler = Command::new(Mpi::OpenMpi.c_compiler())
        .arg("-showme:version")
        .output()
        .is_ok_and(|o| o.status.success());
    let preload = overlap_bin().with_file_name("liboverlap_preload-openmpi.so");
    if compiler && preload.is_file() {
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let default = overlap_bin().with_file_name("liboverlap_preload.so");
        assert!(
            modified(&preload) >= modified(&default),
            "{} is older than {}: the preload's code changed since it was built for Open \
             MPI; run scripts/build-preloads.sh (`make test` does)",
            preload.display(),
            default.display()
        );
        return Some(Mpi::OpenMpi);
    }
    let why = format!(
        "Open MPI is not installed ({}) or the preload is not built for it ({})",
        Mpi::OpenMpi.c_compiler(),
        preload.display()
    );
    // `make test` installs Open MPI and builds the preload for it: there, its absence
    // is a failure, not a skip.
    assert!(
        std::env::var_os(REQUIRE_OPEN_MPI_ENV).is_none(),
        "{why}, and {REQUIRE_OPEN_MPI_ENV} is set"
    );
    eprintln!("skipped: {why}: run `make test`, which installs it and builds the preload");
    None
}

/// The programs compiled so far, by MPI and name, in a directory that lives as long as
/// the test run.
fn compiled() -> &'static Mutex<BTreeMap<(Mpi, String), PathBuf>> {
    static MAP: OnceLock<Mutex<BTreeMap<(Mpi, String), PathBuf>>> = OnceLock::new();
    MAP.get_or_init(Default::default)
}

fn build_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
        .path()
}

/// tests/programs/NAME.c (or NAME.f90, with NAME.c when there is one) compiled with
/// `mpi`'s wrappers.
pub fn program_in(mpi: Mpi, name: &str) -> PathBuf {
    let mut map = compiled()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(p) = map.get(&(mpi, name.to_string())) {
        return p.clone();
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
    let (compiler, source, extra): (&str, PathBuf, Vec<String>) =
        if src.join(format!("{name}.f90")).is_file() {
            let source = src.join(format!("{name}.f90"));
            let mut extra = mpi.fortran_flags();
            // A C half beside it (NAME.c) goes into the same program.
            let c_half = src.join(format!("{name}.c"));
            if c_half.is_file() {
                extra.push(c_half.display().to_string());
            }
            if name.starts_with("threads") {
                extra.push("-fopenmp".into());
            }
            (mpi.fortran_compiler(), source, extra)
        } else {
            // GCC mistakes MPICH's MPI_STATUSES_IGNORE for a zero-length array.
            let mut extra = vec!["-Wno-stringop-overflow".to_string()];
            if name.starts_with("threads") || name.starts_with("watch_") {
                extra.push("-pthread".into());
            }
            (mpi.c_compiler(), src.join(format!("{name}.c")), extra)
        };
    let dir = build_dir().join(format!("{mpi:?}"));
    std::fs::create_dir_all(&dir).expect("build dir");
    let out = dir.join(name);
    let status = Command::new(compiler)
        .args(["-g", "-O1"])
        .args(&extra)
        .arg(&source)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("{compiler} runs (run `make setup`): {e}"));
    assert!(status.success(), "{compiler} {} failed", source.display());
    map.insert((mpi, name.to_string()), out.clone());
    out
}

/// How a test launches its ranks: with an MPI's own launcher, or with Slurm's `srun`.
#[derive(Clone, Debug)]
pub struct Launch {
    pub mpi: Mpi,
    /// The launcher and its options, before `-n RANKS`.
    command: Vec<String>,
    env: Vec<(String, String)>,
    /// How the report names the launcher, without its version.
    pub described: &'static str,
}

impl Launch {
    /// `mpi`'s own launcher.
    pub fn of(mpi: Mpi) -> Launch {
        Launch {
            mpi,
            command: vec![mpi.launcher().to_string()],
            env: owned(mpi.env()),
            described: match mpi {
                Mpi::Default => "mpiexec (MPICH Hydra)",
                Mpi::OpenMpi => "mpirun.openmpi (OpenRTE)",
            },
        }
    }

    /// Slurm's `srun` of the cluster configured by `conf`, with the PMI that `mpi`
    /// speaks (MPICH: PMI-2; Open MPI: PMIx).
    pub fn srun(mpi: Mpi, conf: &Path) -> Launch {
        let pmi = match mpi {
            Mpi::Default => "--mpi=pmi2",
            Mpi::OpenMpi => "--mpi=pmix",
        };
        let mut env = owned(mpi.env());
        env.push(("SLURM_CONF".into(), conf.display().to_string()));
        Launch {
            mpi,
            command: vec!["srun".into(), pmi.into()],
            env,
            described: "srun (slurm-wlm)",
        }
    }

    /// This `srun` allowed more tasks than the cluster's CPUs (`--overcommit`): the
    /// one-node cluster of the tests has this machine's cores, and srun otherwise holds
    /// a step of more tasks in the queue until it has as many.
    pub fn overcommitted(mut self) -> Launch {
        assert_eq!(self.command[0], "srun", "only srun overcommits");
        self.command.push("--overcommit".into());
        self
    }

    /// The launcher and its options, as one command line (`overlap analyze --launcher`).
    pub fn command_line(&self) -> String {
        self.command.join(" ")
    }

    /// `cmd` with the launch's environment: its own variables, and none of an
    /// allocation the tests may run inside (`SLURM_*` would send `srun`, and Hydra,
    /// to that job instead of this machine's cluster or processes).
    pub fn environment<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("SLURM_") {
                cmd.env_remove(k);
            }
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)))
    }
}

fn owned(env: &[(&str, &str)]) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `overlap trace --out OUT -- LAUNCHER -n RANKS PROGRAM ARGS...` in `mpi`, with `env`.
pub fn trace_in(
    mpi: Mpi,
    ranks: u32,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    out: &Path,
) -> Run {
    trace_launch(&Launch::of(mpi), ranks, program, args, env, out)
}

/// `overlap trace --out OUT -- LAUNCH -n RANKS PROGRAM ARGS...`, with `env`.
fn trace_launch(
    launch: &Launch,
    ranks: u32,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    out: &Path,
) -> Run {
    trace_launch_with(launch, &[], ranks, program, args, env, out)
}

/// `overlap trace OPTIONS --out OUT -- mpiexec -n RANKS PROGRAM` with the default MPI.
pub fn trace_options(ranks: u32, options: &[&str], program: &Path, out: &Path) -> Run {
    trace_launch_with(
        &Launch::of(Mpi::Default),
        options,
        ranks,
        program,
        &[],
        &[],
        out,
    )
}

/// [`trace_launch`] with `options` given to `overlap trace`.
fn trace_launch_with(
    launch: &Launch,
    options: &[&str],
    ranks: u32,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    out: &Path,
) -> Run {
    let _guard = mpi_lock();
    let mut cmd = Command::new(overlap_bin());
    cmd.arg("trace")
        .args(options)
        .arg("--out")
        .arg(out)
        .arg("--")
        .args(&launch.command)
        .args(["-n", &ranks.to_string()])
        .arg(program)
        .args(args);
    launch.environment(&mut cmd).envs(env.iter().copied());
    Run {
        output: output_within(&mut cmd, LAUNCH_LIMIT),
    }
}

/// `LAUNCH -n RANKS PROGRAM`, untraced.
pub fn untraced_launch(launch: &Launch, ranks: u32, program: &Path) -> Run {
    let _guard = mpi_lock();
    let mut cmd = Command::new(&launch.command[0]);
    cmd.args(&launch.command[1..])
        .args(["-n", &ranks.to_string()])
        .arg(program);
    launch.environment(&mut cmd);
    Run {
        output: output_within(&mut cmd, LAUNCH_LIMIT),
    }
}

/// tests/programs/NAME launched by `launch` on `ranks` ranks, untraced, then traced into
/// `out`: both succeed and the program prints the same. Returns (untraced, traced).
pub fn untraced_then_traced(launch: &Launch, ranks: u32, name: &str, out: &Path) -> (Run, Run) {
    let program = program_in(launch.mpi, name);
    let plain = untraced_launch(launch, ranks, &program);
    assert!(plain.success(), "{}", plain.describe());
    let run = trace_launch(launch, ranks, &program, &[], &[], out);
    assert!(run.success(), "{}", run.describe());
    assert_eq!(
        run.stdout(),
        plain.stdout(),
        "the program's output is unchanged"
    );
    (plain, run)
}
