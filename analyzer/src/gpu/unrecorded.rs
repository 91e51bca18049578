//! A GPU runtime loaded by ranks whose GPU work was not recorded: the GPU verdicts are
//! then unknown, not clean. Made a part of whole ranks at a time ([`UnrecordedFold`]):
//! the parts say only whether any rank recorded GPU work; the run's description of its
//! ranks says which loaded a runtime.

use serde::Serialize;

use overlap_format::schema::MergedInfo;

use crate::model::Trace;

/// File names of GPU runtimes and drivers: a process that mapped one of these ran (or
/// could run) GPU work.
const GPU_RUNTIMES: [&str; 7] = [
    "libcuda.so",
    "libcudart.so",
    "libamdhip64.so",
    "libhsa-runtime64.so",
    "libze_loader.so",
    "libsycl.so",
    "libOpenCL.so",
];

/// Who loaded a GPU runtime, as far as the trace says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Loader {
    /// The program itself: its executable, a library it needs, or one it opened before
    /// `MPI_Init` (the rank's `program_objects`).
    Program,
    /// Not told: a trace recorded before the preload listed the program's own files,
    /// which lists only what the process had mapped (its MPI's components included).
    Unknown,
}

/// A GPU runtime loaded by a rank whose GPU work was not recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnrecordedRuntime {
    /// The first rank found with it.
    pub rank: u32,
    /// The library's file name (`libcudart.so.12`).
    pub library: String,
    /// Who loaded it.
    pub by: Loader,
}

impl UnrecordedRuntime {
    /// What the reports say of it, one line.
    pub fn said(&self) -> String {
        let (rank, library) = (self.rank, &self.library);
        let who = match self.by {
            Loader::Program => format!("rank {rank}'s program loads {library} itself"),
            Loader::Unknown => format!(
                "rank {rank} loaded {library} (by the program or by its MPI: a trace this old \
                 does not say which)"
            ),
        };
        format!(
            "GPU work not recorded: {who}, but the trace holds no copy or kernel (the preload \
             records MPI only): the GPU verdicts are unknown"
        )
    }
}

/// The first of `files` (paths, one a line) that is a GPU runtime: its file name.
fn gpu_runtime_in(files: &str) -> Option<String> {
    files.lines().find_map(|line| {
        let file = line.rsplit('/').next()?;
        GPU_RUNTIMES
            .iter()
            .any(|lib| file.starts_with(lib))
            .then(|| file.to_string())
    })
}

/// A GPU runtime a rank's program loaded though no rank recorded GPU work (the preload
/// records MPI only): the rank and the library's file name. Found in the files the
/// program itself loaded (`program_objects`, which leaves out what MPI loaded: MPICH's
/// hwloc opens `libOpenCL.so` in every MPI program); in a trace without that list, in
/// every executable mapping of the process (`code_maps`), which cannot tell who loaded it.
/// [`UnrecordedFold`] given the whole run as one part.
pub fn unrecorded_runtime(trace: &Trace) -> Option<UnrecordedRuntime> {
    let mut fold = UnrecordedFold::new();
    fold.add(trace);
    fold.finish(&trace.info)
}

/// [`unrecorded_runtime`] made a part of whole ranks at a time: of the parts it needs
/// only whether any rank recorded GPU work; the runtimes are looked for in the run's
/// description of its ranks, in its order, once every part is in.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct UnrecordedFold {
    /// True once a part held a rank with GPU work.
    recorded: bool,
}

impl UnrecordedFold {
    /// A fold of no part yet.
    pub fn new() -> UnrecordedFold {
        UnrecordedFold::default()
    }

    /// Notes whether a rank of `part` recorded GPU work.
    pub fn add(&mut self, part: &Trace) {
        self.recorded |= part.ranks.iter().any(|t| !t.gpu.is_empty());
    }

    /// Adds the fold of other parts.
    pub fn merge(&mut self, other: UnrecordedFold) {
        self.recorded |= other.recorded;
    }

    /// The runtime, from `info` (the run's), when no part recorded GPU work.
    pub fn finish(self, info: &MergedInfo) -> Option<UnrecordedRuntime> {
        if self.recorded {
            return None;
        }
        let found = |by: Loader| {
            info.ranks.iter().find_map(|r| {
                let files = match by {
                    Loader::Program => r.program_objects.as_deref()?,
                    Loader::Unknown if r.program_objects.is_none() => r.code_maps.as_deref()?,
                    Loader::Unknown => return None,
                };
                gpu_runtime_in(files).map(|library| UnrecordedRuntime {
                    rank: r.rank,
                    library,
                    by,
                })
            })
        };
        found(Loader::Program).or_else(|| found(Loader::Unknown))
    }
}
