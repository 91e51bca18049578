//! Time: the monotonic nanosecond clock every event is stamped with, the estimate of
//! each rank's offset to rank 0 (Score-P's ping-pong method), and the linear model that
//! maps a rank's local times onto rank 0's clock between two such estimates.
//!
//! The estimation protocol is written against [`SyncTransport`], so it is tested with
//! threads and run over MPI by the traced communicator.
//!
//! The hot path takes [`Stamp`]s, not nanoseconds: on x86-64 machines with an invariant
//! TSC that the kernel itself uses as its clock source, a stamp is a TSC read (~17 ns
//! here, against ~30 ns for `clock_gettime`); elsewhere it is `CLOCK_MONOTONIC`. Stamps
//! are stored raw; the writer thread adds calibration readings (TSC and monotonic taken
//! together) to the stream as the run goes, and readers convert with them, so times end
//! up on the same clock the header's epoch and the cross-rank alignment use.

mod tsc;

use crate::schema::Nanos;

pub use overlap_format::clock::ClockModel;
use overlap_format::stream::StampClock;
use tsc::read_tsc;
pub use tsc::tsc_usable;
pub(crate) use tsc::Calibrator;

/// `CLOCK_MONOTONIC` in nanoseconds. All ranks on one host share this clock.
#[inline]
pub fn monotonic_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Which clock the recorder stamps events with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClockSource {
    /// The TSC when it is usable (see [`tsc_usable`]), else `CLOCK_MONOTONIC`. The
    /// environment variable `OVERLAP_CLOCK=monotonic|tsc` overrides the choice.
    #[default]
    Auto,
    /// `CLOCK_MONOTONIC`: stamps are nanoseconds since the recorder's epoch, so
    /// [`Stamp::from_nanos`] stamps are exact (tests use this).
    Monotonic,
    /// The time-stamp counter (x86-64 only; falls back to `CLOCK_MONOTONIC` elsewhere).
    Tsc,
}

/// A raw time stamp as the hot path takes it. What its unit is depends on the
/// recorder's clock source; readers of the stream turn it into [`Nanos`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp(u64);

impl Stamp {
    /// The zero stamp.
    pub const ZERO: Stamp = Stamp(0);

    /// A stamp for a recorder that uses [`ClockSource::Monotonic`]: `ns` after its epoch.
    pub fn from_nanos(ns: Nanos) -> Stamp {
        Stamp(ns.0)
    }

    /// The raw value, as the stream records it.
    #[inline]
    pub fn raw(self) -> u64 {
        self.0
    }
}

/// Takes stamps on the hot path. A [`crate::recorder::Recorder`] owns one; a caller
/// that must stamp before its recorder exists makes one and hands it over.
#[derive(Clone, Copy, Debug)]
pub enum Timebase {
    /// Nanoseconds of `CLOCK_MONOTONIC` since `epoch_ns`.
    Monotonic {
        /// The epoch, absolute `CLOCK_MONOTONIC` ns.
        epoch_ns: u64,
    },
    /// TSC ticks.
    Tsc,
}

impl Timebase {
    /// The timebase for a source, with `epoch_ns` the recorder's epoch.
    pub fn new(source: ClockSource, epoch_ns: u64) -> Timebase {
        let source = match (source, std::env::var("OVERLAP_CLOCK").as_deref()) {
            (ClockSource::Auto, Ok("monotonic")) => ClockSource::Monotonic,
            (ClockSource::Auto, Ok("tsc")) => ClockSource::Tsc,
            (s, _) => s,
        };
        let tsc = match source {
            ClockSource::Monotonic => false,
            ClockSource::Tsc => cfg!(target_arch = "x86_64"),
            ClockSource::Auto => tsc_usable(),
        };
        if tsc {
            Timebase::Tsc
        } else {
            Timebase::Monotonic { epoch_ns }
        }
    }

    /// Now, as a stamp.
    #[inline]
    pub fn stamp(&self) -> Stamp {
        match *self {
            Timebase::Monotonic { epoch_ns } => Stamp(monotonic_now_ns().saturating_sub(epoch_ns)),
            Timebase::Tsc => Stamp(read_tsc()),
        }
    }

    /// What its stamps count, as the stream says it.
    pub fn stamp_clock(&self) -> StampClock {
        match self {
            Timebase::Monotonic { .. } => StampClock::Monotonic,
            Timebase::Tsc => StampClock::Tsc,
        }
    }
}

/// One ping-pong between the reference rank (0) and another rank: the reference sent at
/// `t0` and got the answer back at `t1` (its clock); the other rank read `t_remote` (its
/// clock) in between. All absolute `CLOCK_MONOTONIC` ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PingPong {
    /// Reference clock when the ping left.
    pub t0: u64,
    /// Remote clock when the ping arrived.
    pub t_remote: u64,
    /// Reference clock when the pong came back.
    pub t1: u64,
}

/// The offset estimate taken from the ping-pong with the smallest round trip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetEstimate {
    /// Remote clock minus reference clock, ns (Score-P's sign).
    pub offset_ns: i64,
    /// Half the best round trip: the remote read happened somewhere inside it.
    pub error_ns: u64,
    /// The best round trip, ns.
    pub rtt_ns: u64,
    /// Remote clock at the best ping-pong (absolute ns).
    pub at_remote_ns: u64,
    /// Ping-pongs made.
    pub rounds: u32,
}

/// Keeps the ping-pong with the smallest round trip and assumes the remote read its clock
/// half-way through it: `offset = t_remote - (t0 + rtt/2)`, error `rtt/2` (rounded up).
/// Returns `None` for no samples.
pub fn estimate_offset(samples: &[PingPong]) -> Option<OffsetEstimate> {
    let best = samples.iter().min_by_key(|s| s.t1.saturating_sub(s.t0))?;
    let rtt = best.t1.saturating_sub(best.t0);
    let midpoint = best.t0 as i128 + (rtt / 2) as i128;
    Some(OffsetEstimate {
        offset_ns: (best.t_remote as i128 - midpoint) as i64,
        error_ns: rtt.div_ceil(2),
        rtt_ns: rtt,
        at_remote_ns: best.t_remote,
        rounds: samples.len() as u32,
    })
}

/// What the synchronisation protocol needs from the communication layer: small
/// blocking messages of four words between rank 0 and each other rank.
pub trait SyncTransport {
    /// This rank.
    fn rank(&self) -> u32;
    /// Number of ranks.
    fn size(&self) -> u32;
    /// Blocking send of four words to `to`.
    fn send(&self, to: u32, words: [u64; 4]);
    /// Blocking receive of four words from `from`.
    fn recv(&self, from: u32) -> [u64; 4];
    /// Returns once a message from `from` is ready to be received, without keeping a core
    /// busy meanwhile (ranks waiting for their turn must not steal the CPU from the pair
    /// being measured when ranks outnumber cores). The default returns at once.
    fn await_message(&self, _from: u32) {}
}

/// The identity of this machine's `CLOCK_MONOTONIC`: the kernel's boot id, or empty
/// when it cannot be read.
pub fn clock_domain() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Runs the ping-pong protocol on every rank (collectively): rank 0 makes `rounds`
/// ping-pongs with each other rank in turn, estimates its offset and sends it back.
/// Returns this rank's estimate (rank 0's is zero offset, zero error, at `now()`).
pub fn synchronize<T: SyncTransport>(
    transport: &T,
    rounds: u32,
    now: impl Fn() -> u64,
) -> OffsetEstimate {
    let rounds = rounds.max(1);
    if transport.rank() == 0 {
        let mut samples = Vec::with_capacity(rounds as usize);
        for peer in 1..transport.size() {
            samples.clear();
            for _ in 0..rounds {
                let t0 = now();
                transport.send(peer, [t0, 0, 0, 0]);
                let reply = transport.recv(peer);
                let t1 = now();
                samples.push(PingPong {
                    t0,
                    t_remote: reply[0],
                    t1,
                });
            }
            let est = estimate_offset(&samples).expect("rounds >= 1, so there are samples");
            transport.send(
                peer,
                [
                    est.offset_ns as u64,
                    est.error_ns,
                    est.rtt_ns,
                    est.at_remote_ns,
                ],
            );
        }
        OffsetEstimate {
            offset_ns: 0,
            error_ns: 0,
            rtt_ns: 0,
            at_remote_ns: now(),
            rounds: 0,
        }
    } else {
        transport.await_message(0);
        for _ in 0..rounds {
            transport.recv(0);
            let t = now();
            transport.send(0, [t, 0, 0, 0]);
        }
        let [offset, error, rtt, at] = transport.recv(0);
        OffsetEstimate {
            offset_ns: offset as i64,
            error_ns: error,
            rtt_ns: rtt,
            at_remote_ns: at,
            rounds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Mutex;

    #[test]
    fn best_round_trip_wins() {
        // Remote clock runs 1000 ns behind the reference. The second ping-pong is the
        // fastest (rtt 40): remote read 20 ns after t0 = 5000, at remote time 4020.
        let samples = [
            PingPong {
                t0: 1000,
                t_remote: 100,
                t1: 1300,
            },
            PingPong {
                t0: 5000,
                t_remote: 4020,
                t1: 5040,
            },
            PingPong {
                t0: 9000,
                t_remote: 8090,
                t1: 9100,
            },
        ];
        let est = estimate_offset(&samples).expect("three samples");
        assert_eq!(est.offset_ns, -1000);
        assert_eq!(est.error_ns, 20);
        assert_eq!(est.rtt_ns, 40);
        assert_eq!(est.at_remote_ns, 4020);
        assert_eq!(est.rounds, 3);
        assert_eq!(estimate_offset(&[]), None);
    }

    /// Threads standing in for ranks, each with its own clock: rank r's clock reads
    /// `true_time - r * 1_000_000`, so its offset is `-r * 1_000_000`.
    struct ThreadTransport {
        rank: u32,
        size: u32,
        senders: Vec<mpsc::Sender<(u32, [u64; 4])>>,
        inbox: Mutex<mpsc::Receiver<(u32, [u64; 4])>>,
        pending: Mutex<Vec<(u32, [u64; 4])>>,
    }

    impl SyncTransport for ThreadTransport {
        fn rank(&self) -> u32 {
            self.rank
        }
        fn size(&self) -> u32 {
            self.size
        }
        fn send(&self, to: u32, words: [u64; 4]) {
            self.senders[to as usize]
                .send((self.rank, words))
                .expect("peer alive");
        }
        fn recv(&self, from: u32) -> [u64; 4] {
            let mut pending = self.pending.lock().expect("not poisoned");
            if let Some(i) = pending.iter().position(|(f, _)| *f == from) {
                return pending.remove(i).1;
            }
            loop {
                let (f, w) = self
                    .inbox
                    .lock()
                    .expect("not poisoned")
                    .recv()
                    .expect("peer alive");
                if f == from {
                    return w;
                }
                pending.push((f, w));
            }
        }
    }

    #[test]
    fn protocol_recovers_known_offsets_within_the_bound() {
        let size = 3u32;
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..size).map(|_| mpsc::channel()).unzip();
        let start = std::time::Instant::now();
        let handles: Vec<_> = receivers
            .into_iter()
            .enumerate()
            .map(|(rank, inbox)| {
                let t = ThreadTransport {
                    rank: rank as u32,
                    size,
                    senders: senders.clone(),
                    inbox: Mutex::new(inbox),
                    pending: Mutex::new(Vec::new()),
                };
                std::thread::spawn(move || {
                    let skew = rank as u64 * 1_000_000;
                    let now = || 10_000_000 + start.elapsed().as_nanos() as u64 - skew;
                    synchronize(&t, 20, now)
                })
            })
            .collect();
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect();
        assert_eq!(results[0].offset_ns, 0);
        for (rank, est) in results.iter().enumerate().skip(1) {
            let truth = -(rank as i64) * 1_000_000;
            let err = (est.offset_ns - truth).unsigned_abs();
            assert!(
                err <= est.error_ns,
                "rank {rank}: offset {} vs truth {truth}, bound {}",
                est.offset_ns,
                est.error_ns
            );
            assert_eq!(est.rounds, 20);
        }
    }
}
