//! `overlap trace -- LAUNCH...`: runs any MPI program with the preload injected into
//! every rank, then merges what the ranks wrote.
//!
//! The preload reaches the ranks through the environment: `LD_PRELOAD` names the one
//! built for the program's MPI ([`crate::which_mpi`]), `OVERLAP_TRACE_DIR` says where the
//! ranks write and `OVERLAP_LAUNCHER` what launched them. MPICH's `mpiexec` (hydra) and
//! Slurm's `srun` pass the whole environment on; Open MPI's `mpirun` passes only what
//! `-x` names, so for it the `-x` options are added. Everything the program prints
//! goes through untouched; what `overlap` says goes to stderr. The launcher runs
//! supervised (`crate::supervise`): stopping `overlap` stops the whole run, and what the
//! ranks recorded is merged all the same.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use overlap_instrument::mpi_family::{MpiFamily, LAUNCHER_ENV};
use overlap_instrument::recorder::{BUFFERS_ENV, CALLPATH_ENV};
use overlap_instrument::schema::{
    MergedInfo, ParamValue, PRELOAD_BUILT_FOR_PARAM, UNCOUNTED_CALLS_PARAM, UNRECORDED_CALLS_PARAM,
};

use crate::supervise::{self, Ending, Watch, HANG_TIMEOUT_ENV};
use crate::which_mpi::Chosen;

/// Environment variable the preload reads its trace directory from.
pub const TRACE_DIR_ENV: &str = "OVERLAP_TRACE_DIR";

/// What `overlap trace` asks of the ranks beyond tracing them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceOptions {
    /// Stop the run when no MPI call completed for this long.
    pub hang_timeout: Option<Duration>,
    /// Watch what the program does with its requests' buffers (`--buffers`).
    pub buffers: bool,
    /// Frames of each call's stack to record (`--callpath`; 1: the call site alone).
    pub callpath: u32,
}

/// The launch command with what Open MPI needs to pass the preload on, and the
/// variables `options` set.
pub fn with_open_mpi_exports(command: &[String], options: &TraceOptions) -> Vec<String> {
    let mut out = Vec::with_capacity(command.len() + 6);
    out.push(command[0].clone());
    let hang = options.hang_timeout.is_some().then_some(HANG_TIMEOUT_ENV);
    let buffers = options.buffers.then_some(BUFFERS_ENV);
    let callpath = (options.callpath > 1).then_some(CALLPATH_ENV);
    for var in ["LD_PRELOAD", TRACE_DIR_ENV, LAUNCHER_ENV]
        .into_iter()
        .chain(hang)
        .chain(buffers)
        .chain(callpath)
    {
        out.push("-x".into());
        out.push(var.into());
    }
    out.extend(command[1..].iter().cloned());
    out
}

/// `LD_PRELOAD` with the preload first, keeping what the user already preloads.
pub fn ld_preload(preload: &Path, existing: Option<OsString>) -> OsString {
    let mut value = preload.as_os_str().to_os_string();
    if let Some(old) = existing.filter(|o| !o.is_empty()) {
        value.push(":");
        value.push(old);
    }
    value
}

/// Runs `command` with the chosen preload, the ranks writing into `dir`, stdio passed
/// through, supervised until it ends, is stopped, or (with a hang timeout) hangs.
pub fn run_traced(
    command: &[String],
    chosen: &Chosen,
    dir: &Path,
    options: &TraceOptions,
) -> Result<Ending> {
    let hang_timeout = options.hang_timeout;
    let Some(launcher) = command.first() else {
        bail!("nothing to run: give the launch command after `--`, e.g. `overlap trace -- mpiexec -n 4 ./app`");
    };
    let command = if chosen.launcher.family == Some(MpiFamily::OpenMpi) {
        with_open_mpi_exports(command, options)
    } else {
        command.to_vec()
    };
    let dir = std::path::absolute(dir).with_context(|| format!("resolving {}", dir.display()))?;
    let preload = std::path::absolute(&chosen.path)
        .with_context(|| format!("resolving {}", chosen.path.display()))?;
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..])
        .env(
            "LD_PRELOAD",
            ld_preload(&preload, std::env::var_os("LD_PRELOAD")),
        )
        .env(TRACE_DIR_ENV, &dir)
        .env(LAUNCHER_ENV, &chosen.launcher.description);
    if options.buffers {
        cmd.env(BUFFERS_ENV, "1");
    }
    if options.callpath > 1 {
        cmd.env(CALLPATH_ENV, options.callpath.to_string());
    }
    // The launcher has a process group of its own, which is not the terminal's
    // foreground group: reading the terminal would stop it (SIGTTIN). So a terminal
    // stdin is passed on through a pipe.
    let terminal = std::io::stdin().is_terminal();
    if terminal {
        cmd.stdin(Stdio::piped());
    }
    let mut child = supervise::spawn(&mut cmd, launcher, hang_timeout)?;
    if let Some(mut to_launcher) = child.stdin.take() {
        std::thread::spawn(move || std::io::copy(&mut std::io::stdin().lock(), &mut to_launcher));
    }
    supervise::supervise(
        &mut child,
        &Watch {
            trace_dir: &dir,
            hang_timeout,
        },
    )
}

/// What to tell the user, once, about the MPI functions the program calls that overlap
/// does not record: `None` when there are none, or when the trace says nothing of them
/// (not the preload's, or an older one). The preload counts every call of every MPI
/// function its MPI's header declares, so the note names the calls the ranks made, with
/// their counts summed over the ranks. A preload older than that listed the MPI
/// functions the program's objects import instead (the header's `unrecorded_calls`);
/// one that found no MPI import left the list out: the note then says that it could not
/// be told.
pub fn unrecorded_note(info: &MergedInfo) -> Option<String> {
    let names = match overlap_analyzer::unrecorded::unrecorded_calls(info) {
        Some(counted) => {
            let mut names = overlap_analyzer::unrecorded::with_counts(&counted);
            let uncounted: Vec<&str> = match info.params.get(UNCOUNTED_CALLS_PARAM) {
                Some(ParamValue::Text(list)) => list
                    .split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty() && !counted.contains_key(*n))
                    .collect(),
                _ => Vec::new(),
            };
            if !uncounted.is_empty() {
                let sep = if names.is_empty() { "" } else { ", " };
                names = format!(
                    "{names}{sep}{} (imported through Fortran bindings that bypass the C \
                     entry points: calls not counted)",
                    uncounted.join(", ")
                );
            }
            names
        }
        None => match info.params.get(UNRECORDED_CALLS_PARAM) {
            Some(ParamValue::Text(list)) => list
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .collect::<Vec<_>>()
                .join(", "),
            _ => {
                return info.params.contains_key(PRELOAD_BUILT_FOR_PARAM).then(|| {
                    "which MPI functions this program calls could not be told (no MPI \
                     import was found: an MPI linked statically, or opened with dlopen): \
                     calls overlap does not record, if any, count as computation"
                        .to_string()
                });
            }
        },
    };
    (!names.is_empty()).then(|| {
        format!(
            "this program calls MPI functions overlap does not record: {names}; time inside \
             them counts as computation"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use overlap_instrument::schema::{CallCounts, Params, RankClock};

    /// A merged info of `ranks` ranks with `params` and each rank's call counts.
    fn info(params: Params, counts: Vec<Option<CallCounts>>) -> MergedInfo {
        let json = serde_json::json!({
            "format": "overlap-trace", "format_version": 9, "program": "p", "params": {},
            "world_size": counts.len(), "ranks": [], "max_clock_error_ns": 0,
            "messages": 0, "unmatched_sends": 0, "unmatched_receives": 0,
            "clock_suspect": [], "incomplete": [], "missing_ranks": []
        });
        let mut info: MergedInfo = serde_json::from_value(json).expect("an info");
        info.params = params;
        for (rank, call_counts) in counts.into_iter().enumerate() {
            let mut r: RankClock = serde_json::from_value(serde_json::json!({
                "rank": rank, "host": "h", "shared_clock": true,
                "init_offset_ns": 0, "init_error_ns": 0
            }))
            .expect("a rank");
            r.call_counts = call_counts;
            info.ranks.push(r);
        }
        info
    }

    #[test]
    fn unrecorded_calls_are_named_once_or_not_at_all() {
        let mut p = Params::new();
        assert_eq!(
            unrecorded_note(&info(p.clone(), vec![])),
            None,
            "an older preload says nothing"
        );
        p.insert(
            PRELOAD_BUILT_FOR_PARAM.into(),
            ParamValue::Text("mpich 4.0.2".into()),
        );
        let unknown = unrecorded_note(&info(p.clone(), vec![])).expect("no MPI import found");
        assert!(unknown.starts_with("which MPI functions this program calls could not be told"));
        p.insert(
            UNRECORDED_CALLS_PARAM.into(),
            ParamValue::Text(String::new()),
        );
        assert_eq!(unrecorded_note(&info(p.clone(), vec![])), None, "none");
        p.insert(
            UNRECORDED_CALLS_PARAM.into(),
            ParamValue::Text("MPI_Comm_split,MPI_File_open".into()),
        );
        assert_eq!(
            unrecorded_note(&info(p.clone(), vec![])).as_deref(),
            Some(
                "this program calls MPI functions overlap does not record: MPI_Comm_split, \
                 MPI_File_open; time inside them counts as computation"
            )
        );
        // Counted calls win over imports: what the ranks called, summed, without the
        // negligible ones.
        let counted = |calls: &[(&str, u64)]| {
            Some(CallCounts {
                unrecorded: calls.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
                unseen_completions: 0,
            })
        };
        let two = vec![
            counted(&[("MPI_File_open", 1), ("MPI_Comm_rank", 9)]),
            counted(&[("MPI_File_open", 1)]),
        ];
        assert_eq!(
            unrecorded_note(&info(p.clone(), two)).as_deref(),
            Some(
                "this program calls MPI functions overlap does not record: MPI_File_open ×2; \
                 time inside them counts as computation"
            )
        );
        let negligible = vec![counted(&[("MPI_Comm_rank", 9)])];
        assert_eq!(unrecorded_note(&info(p.clone(), negligible)), None);
        // Imported through Open MPI's Fortran bindings, which bypass the counters.
        p.insert(
            UNCOUNTED_CALLS_PARAM.into(),
            ParamValue::Text("MPI_File_open,MPI_File_close".into()),
        );
        let fortran = vec![counted(&[("MPI_File_open", 1)])];
        assert_eq!(
            unrecorded_note(&info(p, fortran)).as_deref(),
            Some(
                "this program calls MPI functions overlap does not record: MPI_File_open ×1, \
                 MPI_File_close (imported through Fortran bindings that bypass the C entry \
                 points: calls not counted); time inside them counts as computation"
            )
        );
    }

    #[test]
    fn open_mpi_gets_the_variables_exported() {
        let cmd: Vec<String> = ["mpirun", "-n", "4", "./app", "x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let options = TraceOptions {
            hang_timeout: Some(Duration::from_secs(1)),
            buffers: true,
            callpath: 3,
        };
        assert_eq!(
            with_open_mpi_exports(&cmd, &options),
            [
                "mpirun",
                "-x",
                "LD_PRELOAD",
                "-x",
                "OVERLAP_TRACE_DIR",
                "-x",
                "OVERLAP_LAUNCHER",
                "-x",
                "OVERLAP_HANG_TIMEOUT_MS",
                "-x",
                "OVERLAP_BUFFERS",
                "-x",
                "OVERLAP_CALLPATH",
                "-n",
                "4",
                "./app",
                "x"
            ]
        );
    }

    #[test]
    fn the_preload_goes_first_and_keeps_the_users() {
        let p = Path::new("/x/liboverlap_preload.so");
        assert_eq!(ld_preload(p, None), "/x/liboverlap_preload.so");
        assert_eq!(ld_preload(p, Some("".into())), "/x/liboverlap_preload.so");
        assert_eq!(
            ld_preload(p, Some("/y/libasan.so".into())),
            "/x/liboverlap_preload.so:/y/libasan.so"
        );
    }
}
