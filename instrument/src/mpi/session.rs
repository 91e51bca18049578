//! The per-rank trace session: [`TraceSession::start`] creates the rank's trace file,
//! writes its header and aligns its clock with rank 0; [`TraceSession::comm`] wraps a
//! communicator in a [`TracedComm`]; [`TraceSession::finish`] aligns the clock again and
//! closes the file. Apart from the traced calls, so each file stays one job.

use std::path::PathBuf;

use mpi::collective::Root;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, Group, SimpleCommunicator};

use super::{rank_file_name, TracedComm};
use crate::clock::{clock_domain, monotonic_now_ns, synchronize, SyncTransport};
use crate::identity::{choose_run_id, realtime_now_ns, run_id_text};
use crate::recorder::{
    hang_timeout_from_env, install_dump_handler, FinishReport, RankFileSink, Recorder,
    RecorderConfig,
};
use crate::schema::{ClockSync, CommId, Header, Params, SyncPhase, FORMAT_NAME, FORMAT_VERSION};
use crate::Result;

/// How a rank's trace is set up.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TraceConfig {
    /// Directory that receives one file per rank.
    pub dir: PathBuf,
    /// What is being run, for the header.
    pub program: String,
    /// The run's parameters, for the header.
    pub params: Params,
    /// Buffering and flushing.
    pub recorder: RecorderConfig,
    /// Ping-pongs per rank for each clock alignment.
    pub sync_rounds: u32,
}

impl TraceConfig {
    /// A config writing to `dir` for `program`, with default buffering and 20 ping-pongs.
    pub fn new(dir: impl Into<PathBuf>, program: impl Into<String>) -> TraceConfig {
        TraceConfig {
            dir: dir.into(),
            program: program.into(),
            params: Params::new(),
            recorder: RecorderConfig::default(),
            sync_rounds: 20,
        }
    }
}

/// One rank's recording: its file, its recorder, and a private communicator for clock
/// alignment (so it never matches the program's own messages).
pub struct TraceSession {
    recorder: Recorder,
    sync_comm: SimpleCommunicator,
    rounds: u32,
    path: PathBuf,
}

struct MpiTransport<'c>(&'c SimpleCommunicator);

const SYNC_TAG: i32 = 0x5c10c;

impl SyncTransport for MpiTransport<'_> {
    fn rank(&self) -> u32 {
        self.0.rank() as u32
    }
    fn size(&self) -> u32 {
        self.0.size() as u32
    }
    fn send(&self, to: u32, words: [u64; 4]) {
        self.0
            .process_at_rank(to as i32)
            .send_with_tag(&words[..], SYNC_TAG);
    }
    fn recv(&self, from: u32) -> [u64; 4] {
        let mut words = [0u64; 4];
        self.0
            .process_at_rank(from as i32)
            .receive_into_with_tag(&mut words[..], SYNC_TAG);
        words
    }
    fn await_message(&self, from: u32) {
        let source = self.0.process_at_rank(from as i32);
        while source.immediate_probe_with_tag(SYNC_TAG).is_none() {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
}

impl TraceSession {
    /// Collective over `world`: agrees on the run id (rank 0 chooses it), creates
    /// `dir/rank-N.ovlp`, writes the header, and aligns this rank's clock with rank 0's.
    pub fn start(world: &SimpleCommunicator, config: TraceConfig) -> Result<TraceSession> {
        let rank = world.rank() as u32;
        let epoch_ns = monotonic_now_ns();
        let start_unix_ns = realtime_now_ns();
        let host = mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into());
        // Straight on `world`, not through a TracedComm: the broadcast is the recorder's,
        // not the program's, and it comes before the clock alignment.
        let mut run_id = if rank == 0 { choose_run_id(&host) } else { 0 };
        world.process_at_rank(0).broadcast_into(&mut run_id);
        let mut params = config.params.clone();
        crate::cpus::add_params(&mut params);
        let header = Header {
            format: FORMAT_NAME.to_string(),
            format_version: FORMAT_VERSION,
            rank,
            size: world.size() as u32,
            host,
            os_pid: std::process::id(),
            epoch_ns,
            clock_domain: clock_domain(),
            program: config.program.clone(),
            params,
            run_id: run_id_text(run_id),
            start_unix_ns,
        };
        let path = config.dir.join(rank_file_name(rank));
        let sink = RankFileSink::create(&path, &header)?;
        let mut recorder_config = config.recorder;
        if recorder_config.hang_timeout.is_none() {
            recorder_config.hang_timeout = hang_timeout_from_env();
        }
        let recorder = Recorder::with_epoch(sink, recorder_config, epoch_ns)?;
        let session = TraceSession {
            recorder,
            sync_comm: world.duplicate(),
            rounds: config.sync_rounds,
            path,
        };
        session.align_clock(SyncPhase::Init);
        // MPI is initialised already: whatever handles SIGUSR1 now (MPICH's own, or the
        // program's) is kept and called after the dump is asked for.
        install_dump_handler(true);
        Ok(session)
    }

    fn align_clock(&self, phase: SyncPhase) {
        let est = synchronize(
            &MpiTransport(&self.sync_comm),
            self.rounds,
            monotonic_now_ns,
        );
        let epoch = self.recorder.epoch_ns();
        self.recorder.record_clock_sync(ClockSync {
            phase,
            local_ns: est.at_remote_ns.saturating_sub(epoch),
            offset_ns: est.offset_ns,
            error_ns: est.error_ns,
            rtt_ns: est.rtt_ns,
            rounds: est.rounds,
        });
    }

    /// The recorder, for compute spans (`session.recorder().compute("name")`) and for a
    /// [`crate::layer::ComputeLayer`].
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// The file this rank writes.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// `comm` with its calls recorded under communicator id `id`: [`CommId::WORLD`] for
    /// the world communicator, and for others an id every rank gives the same
    /// communicator. Peers are recorded as world ranks, so messages on any communicator
    /// line up with the merged trace's processes.
    pub fn comm<'a, C: Communicator>(&'a self, comm: &'a C, id: CommId) -> TracedComm<'a, C> {
        let ranks: Vec<i32> = (0..comm.size()).collect();
        let to_world = comm
            .group()
            .translate_ranks(&ranks, &self.sync_comm.group())
            .into_iter()
            .zip(&ranks)
            .map(|(w, r)| w.unwrap_or(*r))
            .collect();
        TracedComm {
            comm,
            recorder: &self.recorder,
            id,
            to_world,
        }
    }

    /// Collective: aligns the clock again, writes the footer and closes the file.
    pub fn finish(self) -> Result<FinishReport> {
        self.align_clock(SyncPhase::Final);
        self.recorder.finish()
    }
}
