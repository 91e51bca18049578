//! `overlap trace -- srun ...` on a real one-node Slurm, started by the test: `munged`,
//! `slurmctld` and `slurmd` from the system packages (`slurm-wlm`, `munge`), on free
//! ports, with a minimal `slurm.conf` in a temporary directory, stopped when the test
//! ends. The test programs run under `srun` as under `mpiexec` (MPICH through Slurm's
//! PMI-2, Open MPI through PMIx) and their merged traces have the same shape. Where the
//! daemons cannot start (no Slurm installed, no right to run them), the tests say why
//! and are skipped.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::mpis::{open_mpi, Launch, Mpi};

/// A one-node Slurm cluster of this machine.
pub struct Slurm {
    dir: tempfile::TempDir,
    /// The daemons, run in the foreground as this test's children: stopped and waited
    /// for when the cluster is dropped, whatever happened.
    daemons: Vec<std::process::Child>,
}

impl Slurm {
    /// The `slurm.conf` that `srun` reads (`SLURM_CONF`).
    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Starts the cluster, or says why it cannot.
    pub fn start() -> Result<Slurm, String> {
        let tool = |name: &str| {
            which(name).ok_or_else(|| {
                format!(
                    "{name} is not installed (scripts/bootstrap.sh installs slurm-wlm and munge)"
                )
            })
        };
        let (munged, slurmctld, slurmd) = (tool("munged")?, tool("slurmctld")?, tool("slurmd")?);
        for name in ["srun", "sinfo", "hostname"] {
            tool(name)?;
        }
        let mut slurm = Slurm {
            dir: tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?,
            daemons: Vec::new(),
        };
        for sub in ["state", "spool", "munge"] {
            std::fs::create_dir_all(slurm.path(sub)).map_err(|e| e.to_string())?;
        }
        slurm.start_munge(&munged)?;
        std::fs::write(slurm.conf(), slurm.config()?).map_err(|e| e.to_string())?;
        for daemon in [slurmctld, slurmd] {
            let mut cmd = Command::new(&daemon);
            cmd.arg("-D").arg("-f").arg(slurm.conf());
            slurm.spawn(&mut cmd)?;
        }
        slurm.wait_idle()?;
        slurm.try_a_step()?;
        Ok(slurm)
    }

    /// Starts a daemon in the foreground, as a child kept to be stopped.
    fn spawn(&mut self, cmd: &mut Command) -> Result<(), String> {
        let child = cmd
            .env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{cmd:?}: {e}"))?;
        self.daemons.push(child);
        Ok(())
    }

    /// Whether every daemon still runs (one that ended could not start: its log says).
    fn daemons_alive(&mut self) -> Result<(), String> {
        for d in &mut self.daemons {
            if let Ok(Some(status)) = d.try_wait() {
                return Err(format!("a daemon ended ({status}){}", self.logs()));
            }
        }
        Ok(())
    }

    /// Runs `srun -n 2 true` (30 s at most): a node that is idle but cannot launch a job
    /// step (a container that refuses what slurmd needs) is found here, not in a test
    /// that would wait for ever.
    fn try_a_step(&self) -> Result<(), String> {
        let mut child = self
            .client("srun")
            .args(["-n", "2", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("srun: {e}"))?;
        let start = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut e, &mut err);
                    }
                    return Err(format!(
                        "`srun -n 2 true` failed ({status}): {err}{}",
                        self.logs()
                    ));
                }
                Ok(None) if start.elapsed() < Duration::from_secs(30) => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "`srun -n 2 true` did not end in 30 s{}",
                        self.logs()
                    ));
                }
            }
        }
    }

    /// munged with a key of its own, on a socket of its own.
    fn start_munge(&mut self, munged: &std::path::Path) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let key = self.path("munge/key");
        let mut bytes = vec![0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .map_err(|e| format!("random bytes for the munge key: {e}"))?;
        std::fs::write(&key, &bytes).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| e.to_string())?;
        let socket = self.path("munge/sock");
        let mut cmd = Command::new(munged);
        cmd.arg("--foreground")
            .arg("--force")
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--pid-file={}", self.path("munge/pid").display()))
            .arg(format!("--log-file={}", self.path("munge/log").display()))
            .arg(format!("--seed-file={}", self.path("munge/seed").display()));
        self.spawn(&mut cmd)?;
        // Ready once its socket is there (5 s at most).
        let start = Instant::now();
        while !socket.exists() {
            self.daemons_alive()?;
            if start.elapsed() > Duration::from_secs(5) {
                return Err(format!("munged made no socket in 5 s{}", self.logs()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    fn config(&self) -> Result<String, String> {
        let host = String::from_utf8_lossy(
            &Command::new("hostname")
                .arg("-s")
                .output()
                .map_err(|e| e.to_string())?
                .stdout,
        )
        .trim()
        .to_string();
        let user = String::from_utf8_lossy(
            &Command::new("id")
                .arg("-un")
                .output()
                .map_err(|e| e.to_string())?
                .stdout,
        )
        .trim()
        .to_string();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let d = self.dir.path().display();
        let mut c = String::new();
        let _ = writeln!(c, "ClusterName=overlaptest");
        // Addresses given, so that a host name nothing resolves still works.
        let _ = writeln!(c, "SlurmctldHost={host}(127.0.0.1)");
        let _ = writeln!(c, "SlurmUser={user}");
        let _ = writeln!(c, "SlurmdUser={user}");
        let _ = writeln!(c, "SlurmctldPort={}", free_port()?);
        let _ = writeln!(c, "SlurmdPort={}", free_port()?);
        let _ = writeln!(c, "AuthType=auth/munge");
        let _ = writeln!(c, "AuthInfo=socket={d}/munge/sock");
        let _ = writeln!(c, "CredType=cred/munge");
        let _ = writeln!(c, "StateSaveLocation={d}/state");
        let _ = writeln!(c, "SlurmdSpoolDir={d}/spool");
        let _ = writeln!(c, "SlurmctldPidFile={d}/slurmctld.pid");
        let _ = writeln!(c, "SlurmdPidFile={d}/slurmd.pid");
        let _ = writeln!(c, "SlurmctldLogFile={d}/slurmctld.log");
        let _ = writeln!(c, "SlurmdLogFile={d}/slurmd.log");
        let _ = writeln!(c, "ProctrackType=proctrack/linuxproc");
        let _ = writeln!(c, "TaskPlugin=task/none");
        let _ = writeln!(c, "JobAcctGatherType=jobacct_gather/none");
        let _ = writeln!(c, "SchedulerType=sched/builtin");
        let _ = writeln!(c, "SelectType=select/cons_tres");
        let _ = writeln!(c, "SelectTypeParameters=CR_Core");
        let _ = writeln!(c, "MpiDefault=none");
        let _ = writeln!(c, "ReturnToService=2");
        let _ = writeln!(
            c,
            "NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN"
        );
        let _ = writeln!(
            c,
            "PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP \
             OverSubscribe=FORCE:4"
        );
        Ok(c)
    }

    /// A Slurm client command of this cluster (none of an allocation the tests may run
    /// inside).
    fn client(&self, name: &str) -> Command {
        let mut cmd = Command::new(name);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("SLURM_") {
                cmd.env_remove(k);
            }
        }
        cmd.env("SLURM_CONF", self.conf());
        cmd
    }

    /// Waits for the node to be idle (20 s at most).
    fn wait_idle(&mut self) -> Result<(), String> {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            self.daemons_alive()?;
            let state = self
                .client("sinfo")
                .args(["-h", "-o", "%T"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            if state == "idle" {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(format!(
            "the node did not become idle in 20 s{}",
            self.logs()
        ))
    }

    /// The daemons' logs' last lines, for an error message.
    fn logs(&self) -> String {
        let mut out = String::new();
        for log in ["slurmctld.log", "slurmd.log", "munge/log"] {
            let text = std::fs::read_to_string(self.path(log)).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(5).collect();
            let _ = write!(out, "\n--- {log}:");
            for l in tail.iter().rev() {
                let _ = write!(out, "\n{l}");
            }
        }
        out
    }
}

impl Drop for Slurm {
    /// Stops the daemons (slurmd first, munged last) and waits for each: SIGTERM, then
    /// SIGKILL after 5 s.
    fn drop(&mut self) {
        for d in self.daemons.iter_mut().rev() {
            let Ok(pid) = i32::try_from(d.id()) else {
                continue;
            };
            if matches!(d.try_wait(), Ok(None)) {
                // SAFETY: a signal to a child of this process, not yet waited for.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            let start = Instant::now();
            while matches!(d.try_wait(), Ok(None)) {
                if start.elapsed() > Duration::from_secs(5) {
                    let _ = d.kill();
                    let _ = d.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// A TCP port no one listens on now.
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// The cluster, or `None` and why on stderr (the test is then skipped).
pub fn cluster() -> Option<Slurm> {
    match Slurm::start() {
        Ok(s) => Some(s),
        Err(why) => {
            eprintln!("skipped: a one-node Slurm could not start: {why}");
            None
        }
    }
}

fn srun(mpi: Mpi, slurm: &Slurm) -> Launch {
    Launch::srun(mpi, &slurm.conf())
}

#[test]
fn srun_traces_the_c_and_fortran_programs_as_mpiexec_does() {
    let Some(slurm) = cluster() else { return };
    let launch = srun(Mpi::Default, &slurm);
    let under_srun = crate::trace::check_calls_program(&launch, 2);
    let under_mpiexec = crate::trace::check_calls_program(&Launch::of(Mpi::Default), 2);
    assert_eq!(
        under_srun, under_mpiexec,
        "the same analysis as under mpiexec"
    );
    crate::trace::check_fortran(&launch, 2);
}

#[test]
fn srun_traces_open_mpi_programs_through_pmix() {
    let Some(mpi) = open_mpi() else { return };
    let Some(slurm) = cluster() else { return };
    let launch = srun(mpi, &slurm);
    let under_srun = crate::trace::check_calls_program(&launch, 2);
    let under_mpirun = crate::trace::check_calls_program(&Launch::of(mpi), 2);
    assert_eq!(
        under_srun, under_mpirun,
        "the same analysis as under mpirun"
    );
    crate::trace::check_fortran(&launch, 2);
}
