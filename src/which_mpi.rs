//! Which MPI a launch runs, and the preload library that matches it.
//!
//! A preload works only in programs of the MPI family it was built against (handles are
//! integers in MPICH and its derivatives, pointers in Open MPI), so `overlap trace` asks,
//! in this order:
//! 1. the program: the first ELF file of the launch command that links an MPI library
//!    (`ldd`), told apart by the symbols that library defines. This is what the
//!    preload is loaded into, so it decides;
//! 2. the launcher: `mpiexec --version` names Open MPI, MPICH's hydra, Intel MPI or
//!    MVAPICH (a launcher of no MPI, such as `srun`, is not asked);
//!
//! and loads the library built for that family: `liboverlap_preload-<family>.so` (built
//! by `scripts/build-preloads.sh` for each MPI besides the default) or cargo's
//! `liboverlap_preload.so`, whichever carries that family's marker
//! ([`overlap_instrument::mpi_family`]). When neither answers, cargo's library is used.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use overlap_instrument::mpi_family::{built_for, find, BuiltFor, MpiFamily};

/// The preload's file name, as cargo builds it (for the default `mpicc`).
pub const PRELOAD_FILE: &str = "liboverlap_preload.so";
/// Environment variable naming the preload explicitly.
pub const PRELOAD_ENV: &str = "OVERLAP_PRELOAD";

/// What a launcher said about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launcher {
    /// The MPI it belongs to, when it is an MPI's launcher.
    pub family: Option<MpiFamily>,
    /// The first line of its `--version`, or its name when it was not asked.
    pub description: String,
}

/// The MPI a program is linked with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramMpi {
    pub family: MpiFamily,
    /// The program file that links it.
    pub program: PathBuf,
    /// The MPI library it loads.
    pub library: PathBuf,
}

/// The preload chosen for a launch, and why.
#[derive(Clone, Debug)]
pub struct Chosen {
    pub path: PathBuf,
    /// What the library says it was built for (`None` for a library without a marker).
    pub built_for: Option<BuiltFor>,
    pub launcher: Launcher,
    /// What to tell the user: the MPI could not be told, and several preloads were
    /// there to choose from.
    pub note: Option<String>,
}

/// How long a launcher's `--version` or `ldd` may take: a site's own wrapper script
/// must not hold `overlap trace` before anything runs.
const ASK_LIMIT: Duration = Duration::from_secs(5);

/// `cmd`'s output, or `None` when it cannot run or takes more than [`ASK_LIMIT`] (it is
/// then killed). Its output is small (a version, a list of libraries).
fn ask(cmd: &mut Command) -> Option<Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().ok(),
            Ok(None) if start.elapsed() < ASK_LIMIT => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// The family a launcher's `--version` text names.
fn family_in_version(text: &str) -> Option<MpiFamily> {
    if text.contains("Open MPI") || text.contains("OpenRTE") || text.contains("PRRTE") {
        Some(MpiFamily::OpenMpi)
    } else if ["HYDRA", "MPICH", "Intel(R) MPI", "MVAPICH"]
        .iter()
        .any(|k| text.contains(k))
    {
        Some(MpiFamily::Mpich)
    } else {
        None
    }
}

/// How a launcher's `--version` text describes it, in one line: its first line, but
/// for MPICH's hydra, which begins with "HYDRA build details:" and gives the version
/// further down.
fn describe_version(name: &str, text: &str) -> Option<String> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next()?;
    if first.starts_with("HYDRA build details") {
        let version = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("Version:"))
            .map(str::trim)
            .unwrap_or("");
        return Some(format!("{name} (MPICH Hydra) {version}").trim().to_string());
    }
    let first = first.split_whitespace().collect::<Vec<_>>().join(" ");
    // srun says "slurm-wlm 22.05.8": the launcher's name goes first.
    let base = name.split('.').next().unwrap_or(name);
    if first.starts_with(base) {
        Some(first)
    } else {
        Some(format!("{name} ({first})"))
    }
}

/// Asks `launcher` what it is (`--version`), when its name is a known launcher's: an
/// MPI's, or Slurm's `srun`.
pub fn launcher(launcher: &str) -> Launcher {
    let name = Path::new(launcher)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let base = name.split('.').next().unwrap_or(name);
    let unasked = Launcher {
        family: None,
        description: name.to_string(),
    };
    let mpi = matches!(
        base,
        "mpirun" | "mpiexec" | "orterun" | "prterun" | "mpiexec-hydra"
    );
    if !mpi && base != "srun" {
        return unasked;
    }
    let Some(out) = ask(Command::new(launcher).arg("--version")) else {
        return unasked;
    };
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    Launcher {
        family: if mpi { family_in_version(&text) } else { None },
        description: describe_version(name, &text).unwrap_or_else(|| name.to_string()),
    }
}

/// The family an MPI library file belongs to, by the symbols it defines.
fn library_family(bytes: &[u8]) -> Option<MpiFamily> {
    if find(bytes, b"ompi_mpi_comm_world").is_some() {
        Some(MpiFamily::OpenMpi)
    } else if find(bytes, b"MPIR_").is_some() || find(bytes, b"MPICH").is_some() {
        Some(MpiFamily::Mpich)
    } else {
        None
    }
}

/// An MPI library `ldd` lists for a program.
enum Linked {
    /// Resolved to a file.
    Found(PathBuf),
    /// Not found (the program's MPI is not on the library path here): only its name.
    NotFound(String),
}

impl Linked {
    /// The family and the library's path (or name), told by its symbols, or for a
    /// library not found by its name: `libmpich*` is MPICH's, `libmpi.so.40` (and
    /// `.20`) Open MPI's; `libmpi.so.12` is both's (MPICH built from source, old Open
    /// MPI) and tells nothing.
    fn family(&self) -> Option<(MpiFamily, PathBuf)> {
        match self {
            Linked::Found(p) => Some((library_family(&std::fs::read(p).ok()?)?, p.clone())),
            Linked::NotFound(name) => {
                let family = if name.starts_with("libmpich") {
                    MpiFamily::Mpich
                } else if name == "libmpi.so.40" || name == "libmpi.so.20" {
                    MpiFamily::OpenMpi
                } else {
                    return None;
                };
                Some((family, PathBuf::from(format!("{name}, not found here"))))
            }
        }
    }
}

/// The libraries `ldd` lists for `file` whose names start with `libmpi`.
fn linked_mpi_libraries(file: &Path) -> Vec<Linked> {
    let Some(out) = ask(Command::new("ldd").arg(file)) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(" => ")?;
            if !name.starts_with("libmpi") {
                return None;
            }
            let path = rest.split(" (").next()?.trim();
            if path == "not found" {
                Some(Linked::NotFound(name.to_string()))
            } else {
                let path = PathBuf::from(path);
                path.is_absolute().then_some(Linked::Found(path))
            }
        })
        .collect()
}

fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// A launch argument as a file: a path as given, or a bare name found in `PATH`.
fn as_file(arg: &str) -> Option<PathBuf> {
    if arg.starts_with('-') || arg.is_empty() {
        return None;
    }
    if arg.contains('/') {
        let p = PathBuf::from(arg);
        return p.is_file().then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(arg))
        .find(|p| p.is_file())
}

/// The MPI of the first file in `command` (after the launcher) that links one; else of
/// the command's first word, a program run without a launcher.
pub fn program_mpi(command: &[String]) -> Option<ProgramMpi> {
    let after = command.iter().skip(1).find_map(|arg| linked_mpi(arg));
    after.or_else(|| linked_mpi(command.first()?))
}

/// The MPI `arg` links, when it names an ELF file (a path, or a name found in `PATH`)
/// that links one.
pub fn linked_mpi(arg: &str) -> Option<ProgramMpi> {
    let program = as_file(arg).filter(|p| is_elf(p))?;
    linked_mpi_libraries(&program).iter().find_map(|linked| {
        let (family, library) = linked.family()?;
        Some(ProgramMpi {
            family,
            program: program.clone(),
            library,
        })
    })
}

/// The directories a preload is looked for in: beside this binary (where cargo builds
/// both), then the installed layout `../lib/overlap/`.
pub(crate) fn preload_dirs() -> Result<Vec<PathBuf>> {
    let exe = std::env::current_exe().context("finding this program's own path")?;
    let dir = exe.parent().unwrap_or(Path::new(".")).to_path_buf();
    let installed = dir.join("..").join("lib").join("overlap");
    Ok(vec![dir, installed])
}

/// The MPI cargo's own preload was built for (the default `mpicc`'s), when it is found
/// and its marker says.
pub fn default_family() -> Option<MpiFamily> {
    let dirs = preload_dirs().ok()?;
    let path = dirs
        .iter()
        .map(|d| d.join(PRELOAD_FILE))
        .find(|p| p.is_file())?;
    marker_of(&path).map(|b| b.family)
}

/// The marker of the library at `path` (`None` when it has none or cannot be read).
fn marker_of(path: &Path) -> Option<BuiltFor> {
    built_for(&std::fs::read(path).ok()?)
}

/// The preload for `command`: `given` (checked against the program's MPI when both are
/// known), else the library built for the MPI the program or launcher names.
pub fn choose(given: Option<&Path>, command: &[String]) -> Result<Chosen> {
    let Some(first) = command.first() else {
        bail!("nothing to run: give the launch command after `--`, e.g. `overlap trace -- mpiexec -n 4 ./app`");
    };
    let launcher = launcher(first);
    let program = program_mpi(command);
    let wanted = program.as_ref().map(|p| p.family).or(launcher.family);
    let why = match (&program, wanted) {
        (Some(p), _) => format!(
            "{} is linked with {} ({})",
            p.program.display(),
            p.family,
            p.library.display()
        ),
        (None, Some(f)) => format!("the launcher `{first}` is {f}'s"),
        (None, None) => String::new(),
    };
    if let Some(path) = given {
        if path.is_dir() {
            bail!(
                "the preload library {} is a directory, not a library",
                path.display()
            );
        }
        if !path.is_file() {
            bail!("the preload library {} does not exist", path.display());
        }
        let built_for = marker_of(path);
        if let (Some(b), Some(w)) = (&built_for, wanted) {
            if b.family != w {
                bail!(
                    "the preload {} was built for {b}, but {why}: a preload works only in \
                     programs of the MPI it was built for (give the one built for {w}, or \
                     drop --preload / {PRELOAD_ENV} to let overlap choose)",
                    path.display()
                );
            }
        }
        return Ok(Chosen {
            path: path.to_path_buf(),
            built_for,
            launcher,
            note: None,
        });
    }
    let dirs = preload_dirs()?;
    // Every candidate, in the order of preference: in each directory the libraries named
    // by their MPI, then cargo's. Markers are read (a whole library each) only as needed.
    let found: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|dir| {
            let names = MpiFamily::ALL.iter().map(|f| f.preload_file());
            names
                .chain([PRELOAD_FILE.to_string()])
                .map(move |name| dir.join(name))
        })
        .filter(|p| p.is_file())
        .collect();
    // A library named by its MPI may be a link to cargo's: read each file once.
    let mut seen = std::collections::BTreeSet::new();
    let found: Vec<PathBuf> = found
        .into_iter()
        .filter(|p| seen.insert(p.canonicalize().unwrap_or_else(|_| p.clone())))
        .collect();
    let mut markers: Vec<Option<Option<BuiltFor>>> = vec![None; found.len()];
    let mut marker = |i: usize| -> Option<BuiltFor> {
        markers[i]
            .get_or_insert_with(|| marker_of(&found[i]))
            .clone()
    };
    let pick = match wanted {
        Some(w) => (0..found.len()).find(|&i| marker(i).is_some_and(|b| b.family == w)),
        None => (0..found.len())
            .find(|&i| found[i].file_name().is_some_and(|n| n == PRELOAD_FILE))
            .or((!found.is_empty()).then_some(0)),
    };
    if let Some(i) = pick {
        let built_for = marker(i);
        // Other MPIs' preloads lie beside it (told by their names): say which was taken.
        let others = found.iter().any(|p| {
            MpiFamily::ALL.iter().any(|f| {
                p.file_name().is_some_and(|n| *n == *f.preload_file())
                    && built_for.as_ref().is_none_or(|b| b.family != *f)
            })
        });
        let note = (wanted.is_none() && others).then(|| {
            let built = built_for
                .as_ref()
                .map_or("an MPI it does not name".into(), |b| b.to_string());
            format!(
                "could not tell which MPI `{}` runs (no program of the command links an \
                 MPI library, and `{first}` names none): loading the preload built for \
                 {built}, {}; name another with --preload",
                command.join(" "),
                found[i].display()
            )
        });
        return Ok(Chosen {
            path: found[i].clone(),
            built_for,
            launcher,
            note,
        });
    }
    let looked = dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(" and ");
    match wanted {
        Some(w) if !found.is_empty() => {
            let have: Vec<String> = (0..found.len())
                .map(|i| match marker(i) {
                    Some(b) => format!("{} ({b})", found[i].display()),
                    None => format!("{} (built for an MPI it does not name)", found[i].display()),
                })
                .collect();
            bail!(
                "{why}, but no preload built for {w} was found in {looked}; found only {}. \
                 Build one with `scripts/build-preloads.sh` (add --release beside a release \
                 build; `make test` runs it for every MPI installed, `make demo` for the \
                 default one only), or name it with --preload or {PRELOAD_ENV}",
                have.join(", ")
            )
        }
        _ => bail!(
            "{PRELOAD_FILE} was not found in {looked}: build it with `cargo build --workspace` \
             (or `make build`), or name it with --preload or {PRELOAD_ENV}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launchers_are_told_apart_by_their_version_text() {
        let open = "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/";
        assert_eq!(family_in_version(open), Some(MpiFamily::OpenMpi));
        let hydra = "HYDRA build details:\n    Version:  4.0.2";
        assert_eq!(family_in_version(hydra), Some(MpiFamily::Mpich));
        let intel = "Intel(R) MPI Library for Linux* OS, Version 2021.10";
        assert_eq!(family_in_version(intel), Some(MpiFamily::Mpich));
        assert_eq!(family_in_version("slurm 22.05.8"), None);
    }

    #[test]
    fn launchers_describe_themselves_in_one_line() {
        let hydra = "HYDRA build details:\n    Version:                                 4.0.2\n";
        assert_eq!(
            describe_version("mpiexec", hydra).as_deref(),
            Some("mpiexec (MPICH Hydra) 4.0.2")
        );
        let open = "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/";
        assert_eq!(
            describe_version("mpirun", open).as_deref(),
            Some("mpirun (Open MPI) 4.1.4")
        );
        assert_eq!(
            describe_version("srun", "slurm-wlm   22.05.8\n").as_deref(),
            Some("srun (slurm-wlm 22.05.8)")
        );
        assert_eq!(describe_version("x", ""), None);
    }

    #[test]
    fn launchers_of_no_mpi_are_not_asked() {
        let env = launcher("env");
        assert_eq!(env.family, None);
        assert_eq!(env.description, "env");
        assert_eq!(launcher("/no/such/mpirun").family, None);
    }

    #[test]
    fn libraries_are_told_apart_by_their_symbols() {
        assert_eq!(
            library_family(b"\x7fELF..ompi_mpi_comm_world.."),
            Some(MpiFamily::OpenMpi)
        );
        assert_eq!(
            library_family(b"\x7fELF..MPIR_Err_return_comm.."),
            Some(MpiFamily::Mpich)
        );
        assert_eq!(library_family(b"\x7fELF..libc.."), None);
    }

    #[test]
    fn a_library_not_found_here_is_told_by_its_name() {
        let family = |name: &str| Linked::NotFound(name.into()).family().map(|f| f.0);
        assert_eq!(family("libmpi.so.40"), Some(MpiFamily::OpenMpi));
        assert_eq!(family("libmpich.so.12"), Some(MpiFamily::Mpich));
        assert_eq!(family("libmpi.so.12"), None, "MPICH's or an old Open MPI's");
    }

    #[test]
    fn a_launcher_that_does_not_answer_is_not_waited_for() {
        let start = Instant::now();
        assert!(ask(Command::new("sleep").arg("30")).is_none());
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(ask(&mut Command::new("true")).is_some());
    }

    #[test]
    fn scripts_and_options_are_not_programs() {
        assert_eq!(as_file("-n"), None);
        assert_eq!(as_file("./no/such/app"), None);
        let dir = tempfile::tempdir().expect("temp dir");
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "#!/bin/sh\n").expect("write");
        let cmd: Vec<String> = ["mpiexec", "-n", "2", script.to_str().expect("utf-8")]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(program_mpi(&cmd), None);
    }
}
