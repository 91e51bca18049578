//! The rank's recording: set up in `MPI_Init` once MPI works, ended in `MPI_Finalize`,
//! `MPI_Abort`, or at exit for a program that never finalizes. Until it is set up, and
//! after it ends, every wrapper only forwards.
//!
//! The trace directory comes from `OVERLAP_TRACE_DIR` (set by `overlap trace`, or by
//! hand in a batch script); without it rank 0 picks `overlap-trace-<pid>` in its working
//! directory and tells the others. Whether to trace is decided by all ranks together,
//! so one rank that cannot create its file never leaves the others waiting in the clock
//! alignment: they all run untraced, and each says why on stderr.
//!
//! A process forked from a rank detaches from its recording: [`crate::fork`].

use std::ffi::{c_int, c_void};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use mpi_sys::*;
use overlap_instrument::clock::{
    clock_domain, monotonic_now_ns, synchronize, Stamp, SyncTransport, Timebase,
};
use overlap_instrument::identity::{choose_run_id, run_id_text};
use overlap_instrument::mpi_family::LAUNCHER_ENV;
use overlap_instrument::recorder::{
    CallData, CallSite, FrameKind, RankFileSink, Recorder, RecorderConfig, ThreadRecorder,
};
use overlap_instrument::schema::{
    rank_file_name, ClockSync, Completion, Header, Op, ParamValue, Params, RequestId, Started,
    SyncPhase, FORMAT_NAME, FORMAT_VERSION, LAUNCHER_PARAM, MPI_BINDINGS_PARAM, MPI_LIBRARY_PARAM,
    PRELOAD_BUILT_FOR_PARAM, PROGRAM_OBJECTS_PARAM, UNCOUNTED_CALLS_PARAM, UNRECORDED_CALLS_PARAM,
};

use crate::calls::Timed;
use crate::handles::CommTable;
use crate::pmpi::{self, Constants};
use crate::python::Gil;
use crate::windows::WinTable;

/// Environment variable naming the directory that receives `rank-N.ovlp`.
pub const TRACE_DIR_ENV: &str = "OVERLAP_TRACE_DIR";

/// One rank's recording.
pub(crate) struct Tracer {
    pub(crate) recorder: Recorder,
    /// The recorder's timebase, kept here so that a stamp reads no pointer.
    timebase: Timebase,
    pub(crate) k: Constants,
    pub(crate) comms: CommTable,
    pub(crate) wins: WinTable,
    /// A private duplicate of `MPI_COMM_WORLD` for the clock alignment.
    sync_comm: MPI_Comm,
    rank: c_int,
}

// MPI handles are plain values; MPI itself serialises their use.
unsafe impl Send for Tracer {}
unsafe impl Sync for Tracer {}

static TRACER: AtomicPtr<Tracer> = AtomicPtr::new(std::ptr::null_mut());
static WARNED: AtomicBool = AtomicBool::new(false);

/// The recording, while there is one.
#[inline]
pub(crate) fn tracer() -> Option<&'static Tracer> {
    // SAFETY: the pointer is null or a leaked Box that is never freed.
    unsafe { TRACER.load(Ordering::Acquire).as_ref() }
}

impl Tracer {
    /// Now, on the recorder's clock.
    #[inline]
    pub(crate) fn stamp(&self) -> Stamp {
        self.timebase.stamp()
    }

    /// The calling thread's handle on the recorder, kept in its thread state (so that
    /// recording never goes through the recorder's own thread-local lookup).
    #[inline]
    pub(crate) fn here(&self) -> &'static ThreadRecorder {
        crate::thread::current()
            .recorder
            .get_or_init(|| self.recorder.for_this_thread())
    }

    /// A fresh request id, from this thread's ring.
    #[inline]
    pub(crate) fn next_request_id(&self) -> RequestId {
        self.here().next_request_id()
    }

    /// Records `op`, made at `at`, with what it completed. Kept out of line: inlined
    /// into a wrapper, its encoder was no longer inlined into it (more instructions).
    #[inline(never)]
    pub(crate) fn record(&self, op: Op, at: Timed, data: CallData, completed: &[Completion]) {
        // The program is ending: MPI_Abort never waits for the GIL.
        let gil = if op == Op::Abort {
            Gil::IfHeld
        } else {
            Gil::Wait
        };
        let site = crate::python::site(at.site, gil);
        at.here
            .record_call_from(op, at.start, at.end, site, data, completed.len(), |i| {
                completed[i]
            });
    }

    /// Records a Start or Startall, made at `at`, with the requests it started.
    #[inline]
    pub(crate) fn record_started(&self, op: Op, at: Timed, started: &[Started]) {
        at.here
            .record_start(op, at.start, at.end, python_site(at), started.len(), |i| {
                started[i]
            });
    }

    /// Records a call on a group of world ranks (Win_start, Win_post), made at `at`.
    #[inline]
    pub(crate) fn record_group(&self, op: Op, at: Timed, data: CallData, group: &[c_int]) {
        at.here
            .record_group(op, at.start, at.end, python_site(at), data, group);
    }

    fn align_clock(&self, phase: SyncPhase) {
        let transport = PmpiTransport {
            comm: self.sync_comm,
            rank: self.rank,
            size: pmpi::size_of_comm(self.sync_comm),
        };
        let est = synchronize(&transport, 20, monotonic_now_ns);
        self.recorder.record_clock_sync(ClockSync {
            phase,
            local_ns: est.at_remote_ns.saturating_sub(self.recorder.epoch_ns()),
            offset_ns: est.offset_ns,
            error_ns: est.error_ns,
            rtt_ns: est.rtt_ns,
            rounds: est.rounds,
        });
    }
}

/// Where a call made at `at` is recorded: its Python frame in a Python program
/// ([`crate::python`]), else its return address.
#[inline]
fn python_site(at: Timed) -> CallSite {
    crate::python::site(at.site, Gil::Wait)
}

/// Runs recording code; a panic in it (a bug of ours) stops the tracing and is reported
/// once, and never unwinds into the program.
#[inline]
pub(crate) fn guarded(record: impl FnOnce()) {
    caught(record);
}

/// [`guarded`] for code whose result the call needs: `None` when it panicked.
#[inline]
pub(crate) fn caught<R>(f: impl FnOnce() -> R) -> Option<R> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok();
    if r.is_none() {
        disable("an internal error in the recording (reported above)");
    }
    r
}

/// Stops tracing for the rest of the run, keeping what was recorded.
pub(crate) fn disable(why: &str) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        overlap_instrument::stderr_line!(
            "overlap-preload: tracing stopped: {why}; the program goes on untraced"
        );
    }
    stop();
}

/// What `MPI_Init` or `MPI_Init_thread` saw, entering.
pub(crate) struct InitCall {
    pub(crate) op: Op,
    pub(crate) site: u64,
    pub(crate) epoch_ns: u64,
    /// `CLOCK_REALTIME` read with `epoch_ns`.
    pub(crate) start_unix_ns: u64,
    pub(crate) timebase: Timebase,
    pub(crate) start: Stamp,
    /// `MPI_Init_thread`'s provided level.
    pub(crate) thread_level: Option<c_int>,
    /// SIGUSR1 was at its default disposition before `PMPI_Init` (see
    /// [`overlap_instrument::recorder::install_dump_handler`]).
    pub(crate) sigusr1_default: bool,
    /// The files mapped when `MPI_Init` was entered ([`crate::loaded::mapped_now`]).
    pub(crate) mapped_before: Vec<std::path::PathBuf>,
}

/// Sets up the recording after a successful `MPI_Init`. Collective over the world.
pub(crate) fn start(init: InitCall) {
    // A forked child that initialises MPI again would open its parent's rank file anew.
    if tracer().is_some() || crate::fork::in_forked_child() {
        return;
    }
    let k = Constants::read();
    let world = k.comm_world;
    let rank = pmpi::rank_in(world);
    let size = pmpi::size_of_comm(world);
    let host = pmpi::processor_name();
    let run_id = run_id_text(agree_on_run_id(rank, world, &host));
    let dir = trace_dir(rank, world);
    let header = Header {
        format: FORMAT_NAME.to_string(),
        format_version: FORMAT_VERSION,
        rank: u32::try_from(rank).unwrap_or(0),
        size: u32::try_from(size).unwrap_or(0),
        host,
        os_pid: std::process::id(),
        epoch_ns: init.epoch_ns,
        clock_domain: clock_domain(),
        program: program_name(),
        params: params(init.thread_level, &init.mapped_before),
        run_id,
        start_unix_ns: init.start_unix_ns,
    };
    let path = dir.join(rank_file_name(header.rank));
    let recorder = RankFileSink::create(&path, &header)
        .and_then(|sink| {
            Recorder::with_timebase(sink, recorder_config(), init.timebase, init.epoch_ns)
        })
        .map_err(|e| e.to_string());
    // Everyone traces, or no one does.
    let failed_here = c_int::from(recorder.is_err());
    let mut failed_anywhere = failed_here;
    // SAFETY: one int each way over the world, which every rank is in.
    unsafe {
        PMPI_Allreduce(
            (&raw const failed_here).cast::<c_void>(),
            (&raw mut failed_anywhere).cast::<c_void>(),
            1,
            RSMPI_INT32_T,
            k.op_max,
            world,
        )
    };
    let recorder = match recorder {
        Ok(r) if failed_anywhere == 0 => r,
        Ok(r) => {
            let _ = r.finish();
            let _ = std::fs::remove_file(&path);
            overlap_instrument::stderr_line!(
                "overlap-preload: rank {rank}: another rank cannot trace, so none does"
            );
            return;
        }
        Err(e) => {
            overlap_instrument::stderr_line!("overlap-preload: rank {rank}: cannot trace: {e}");
            return;
        }
    };
    // Request tables are locked only if MPI may run several threads' calls at once.
    let mut level: c_int = 0;
    // SAFETY: out-pointer to a local.
    let queried = unsafe { PMPI_Query_thread(&mut level) } == 0;
    // SAFETY: a constant of the MPI shim.
    crate::tables::set_concurrent(!queried || level >= unsafe { RSMPI_THREAD_MULTIPLE });
    let mut sync_comm = k.comm_null;
    // SAFETY: out-pointer to a local; collective over the world.
    unsafe { PMPI_Comm_dup(world, &mut sync_comm) };
    recorder.write_frames_from(FrameKind::CallCounts, crate::counting::payload_if_changed);
    recorder.write_frames_from(FrameKind::CallPaths, crate::callpath::payload_of_new);
    let tracer = Box::leak(Box::new(Tracer {
        recorder,
        timebase: init.timebase,
        k,
        comms: CommTable::new(k, size),
        wins: WinTable::new(k, size),
        sync_comm,
        rank,
    }));
    tracer.align_clock(SyncPhase::Init);
    // Before MPI_Init's own record, which is placed on its Python line too.
    crate::python::start();
    // The program is in MPI_Init until the tracer is ready: the span covers both.
    let at = Timed::new(tracer, init.start, init.timebase.stamp(), init.site);
    tracer.record(init.op, at, CallData::Plain, &[]);
    crate::callpath::configure();
    TRACER.store(tracer, Ordering::Release);
    overlap_instrument::recorder::install_dump_handler(init.sigusr1_default);
    crate::watch::start(rank);
    crate::fork::detach_children();
    // SAFETY: registers a plain extern "C" function.
    unsafe { libc::atexit(at_exit) };
}

/// In a forked child ([`crate::fork`]): the recording is the parent's, so the child
/// forgets it, leaving it as it is (async-signal-safe: one atomic store).
pub(crate) fn forget() {
    TRACER.store(std::ptr::null_mut(), Ordering::Release);
}

/// Before `MPI_Finalize`: the last clock alignment, while MPI still works. Collective.
pub(crate) fn before_finalize(t: &Tracer) {
    t.align_clock(SyncPhase::Final);
    let mut comm = t.sync_comm;
    // SAFETY: the private communicator, freed once.
    unsafe { PMPI_Comm_free(&mut comm) };
}

/// Ends the recording: everything buffered reaches the file, with the footer.
pub(crate) fn stop() {
    if crate::fork::in_forked_child() {
        return;
    }
    // The watches' records go in while the recorder still takes them.
    crate::watch::finish();
    let t = TRACER.swap(std::ptr::null_mut(), Ordering::AcqRel);
    // SAFETY: as in `tracer`; the Tracer stays leaked, so other threads still inside a
    // wrapper keep a valid reference (their records are dropped).
    if let Some(t) = unsafe { t.as_ref() } {
        if let Err(e) = t.recorder.finish() {
            overlap_instrument::stderr_line!(
                "overlap-preload: rank {}: finishing the trace: {e}",
                t.rank
            );
        }
    }
}

extern "C" fn at_exit() {
    // A program that exits without MPI_Finalize: keep what it did.
    stop();
}

/// Environment variable: how often the writer flushes, ms.
pub const FLUSH_MS_ENV: &str = "OVERLAP_FLUSH_MS";
/// Environment variable: bytes of each thread's buffer.
pub const BUFFER_ENV: &str = "OVERLAP_BUFFER_BYTES";

/// Bytes buffered per thread by default: 8 MiB, about half a million calls.
const DEFAULT_BUFFER_BYTES: usize = 8 << 20;
/// Flush interval by default, ms.
const DEFAULT_FLUSH_MS: u64 = 100;

/// Buffering, from the environment (defaults: see `docs/preload.md`).
fn recorder_config() -> RecorderConfig {
    let mut config = RecorderConfig::default();
    config.idle_writer = true;
    config.ring_bytes = DEFAULT_BUFFER_BYTES;
    config.flush_interval = std::time::Duration::from_millis(DEFAULT_FLUSH_MS);
    config.hang_timeout = overlap_instrument::recorder::hang_timeout_from_env();
    let number = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    if let Some(ms) = number(FLUSH_MS_ENV) {
        config.flush_interval = std::time::Duration::from_millis(ms.max(1));
    }
    if let Some(n) = number(BUFFER_ENV) {
        config.ring_bytes = usize::try_from(n)
            .unwrap_or(usize::MAX)
            .clamp(64 << 10, 1 << 30);
    }
    config
}

/// The run id, chosen by rank 0 and broadcast over `world`. Collective; made before the
/// recording starts, so the broadcast is never a traced call and comes before the clock
/// alignment.
fn agree_on_run_id(rank: c_int, world: MPI_Comm, host: &str) -> u64 {
    let mut id: u64 = if rank == 0 { choose_run_id(host) } else { 0 };
    // SAFETY: one u64 broadcast from rank 0 over the world, which every rank is in.
    unsafe { PMPI_Bcast((&raw mut id).cast::<c_void>(), 1, RSMPI_UINT64_T, 0, world) };
    id
}

/// The trace directory, the same on every rank. Collective over `world`.
fn trace_dir(rank: c_int, world: MPI_Comm) -> PathBuf {
    if let Some(dir) = std::env::var_os(TRACE_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    // Rank 0 names it and tells the others.
    let mut name = [0u8; 4096];
    if rank == 0 {
        let chosen = format!("overlap-trace-{}", std::process::id());
        let cwd = std::env::current_dir().unwrap_or_default();
        let full = cwd.join(chosen).to_string_lossy().into_owned();
        let n = full.len().min(name.len() - 1);
        name[..n].copy_from_slice(&full.as_bytes()[..n]);
        overlap_instrument::stderr_line!(
            "overlap-preload: {TRACE_DIR_ENV} is not set; tracing to {full}"
        );
    }
    // SAFETY: a fixed-size byte buffer, broadcast from rank 0 over the world.
    unsafe {
        PMPI_Bcast(
            name.as_mut_ptr().cast(),
            name.len() as c_int,
            RSMPI_UINT8_T,
            0,
            world,
        )
    };
    let len = name.iter().position(|b| *b == 0).unwrap_or(name.len());
    PathBuf::from(String::from_utf8_lossy(&name[..len]).into_owned())
}

/// The program's command line, from `/proc/self/cmdline`.
fn command_line() -> Vec<String> {
    std::fs::read("/proc/self/cmdline")
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn program_name() -> String {
    command_line()
        .first()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn params(thread_level: Option<c_int>, mapped_before: &[std::path::PathBuf]) -> Params {
    let mut p = Params::new();
    p.insert("command".into(), ParamValue::Text(command_line().join(" ")));
    p.insert(
        "recorded_by".into(),
        ParamValue::Text("overlap-preload".into()),
    );
    let library = pmpi::library_version();
    // MPICH writes "MPICH Version:\t4.0.2": one line, one space between words.
    let first_line = library
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    p.insert(MPI_LIBRARY_PARAM.into(), ParamValue::Text(first_line));
    if let Some(level) = thread_level {
        p.insert("thread_level".into(), ParamValue::Int(i64::from(level)));
    }
    p.insert("code_maps".into(), ParamValue::Text(code_maps()));
    p.insert(
        PROGRAM_OBJECTS_PARAM.into(),
        ParamValue::Text(crate::loaded::program_objects_param(mapped_before)),
    );
    // No MPI import found (an MPI linked statically, or opened with dlopen): which
    // calls and bindings the program uses is unknown, not "none": both are left out.
    if let Some(imports) = crate::imports::scan() {
        p.insert(
            UNRECORDED_CALLS_PARAM.into(),
            ParamValue::Text(imports.unrecorded.join(",")),
        );
        p.insert(
            UNCOUNTED_CALLS_PARAM.into(),
            ParamValue::Text(imports.uncounted.join(",")),
        );
        let bindings: Vec<&str> = imports.bindings.iter().map(|b| b.name()).collect();
        p.insert(
            MPI_BINDINGS_PARAM.into(),
            ParamValue::Text(bindings.join(", ")),
        );
    }
    p.insert(
        PRELOAD_BUILT_FOR_PARAM.into(),
        ParamValue::Text(crate::built_for::described()),
    );
    if let Some(launcher) = std::env::var(LAUNCHER_ENV).ok().filter(|l| !l.is_empty()) {
        p.insert(LAUNCHER_PARAM.into(), ParamValue::Text(launcher));
    }
    overlap_instrument::cpus::add_params(&mut p);
    p
}

/// The executable mappings of the process (`/proc/self/maps` lines with `x`, as `start-end
/// offset path`, one per line): what turns a call `site` into a file offset for
/// `addr2line`, whatever address the program and its libraries were loaded at.
fn code_maps() -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    maps.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (range, perms, offset) = (f.next()?, f.next()?, f.next()?);
            let path = f.nth(2)?;
            (perms.contains('x') && path.starts_with('/'))
                .then(|| format!("{range} {offset} {path}"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The clock alignment's messages, over the private communicator through PMPI.
struct PmpiTransport {
    comm: MPI_Comm,
    rank: c_int,
    size: c_int,
}

const SYNC_TAG: c_int = 0x5c10c;

impl SyncTransport for PmpiTransport {
    fn rank(&self) -> u32 {
        u32::try_from(self.rank).unwrap_or(0)
    }
    fn size(&self) -> u32 {
        u32::try_from(self.size).unwrap_or(0)
    }
    fn send(&self, to: u32, words: [u64; 4]) {
        // SAFETY: four u64 from a local array.
        unsafe {
            PMPI_Send(
                words.as_ptr().cast(),
                4,
                RSMPI_UINT64_T,
                to as c_int,
                SYNC_TAG,
                self.comm,
            )
        };
    }
    fn recv(&self, from: u32) -> [u64; 4] {
        let mut words = [0u64; 4];
        // SAFETY: four u64 into a local array; the status is ignored.
        unsafe {
            PMPI_Recv(
                words.as_mut_ptr().cast(),
                4,
                RSMPI_UINT64_T,
                from as c_int,
                SYNC_TAG,
                self.comm,
                RSMPI_STATUS_IGNORE,
            )
        };
        words
    }
    fn await_message(&self, from: u32) {
        loop {
            let mut flag: c_int = 0;
            // SAFETY: out-pointer to a local; the status is ignored.
            unsafe {
                PMPI_Iprobe(
                    from as c_int,
                    SYNC_TAG,
                    self.comm,
                    &mut flag,
                    RSMPI_STATUS_IGNORE,
                )
            };
            if flag != 0 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
}
