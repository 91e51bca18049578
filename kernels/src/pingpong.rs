//! Ping-pong latency and bandwidth per message size, in three patterns (after the EPCC
//! coarray micro-benchmark suite, in MPI).
//!
//! - `single`: the first and the last rank ping-pong; the others are idle (they only
//!   join the barrier and the reduction around each sample).
//! - `multiple`: every rank `i < N/2` ping-pongs with `i + N/2`, all pairs at once.
//! - `crossing`: as `multiple`, but every other pair starts from the upper half, so
//!   messages cross in both directions at once and use the bidirectional bandwidth.
//!
//! One repetition is a round trip: the initiator posts the receive for the pong
//! (`MPI_Irecv`), sends the ping (`MPI_Isend`), and waits for both (`MPI_Wait` twice);
//! the responder receives the ping (`MPI_Irecv` + `MPI_Wait`) and sends it back
//! (`MPI_Isend` + `MPI_Wait`). Latency is half the round trip (the slowest pair's, the
//! median over samples, see [`crate::stats`]); bandwidth is `bytes / latency`, and the
//! aggregate bandwidth adds up the pairs. After each size, the responder checks the
//! ping it received and the initiator checks the echo it got back.
//!
//! The `single` figures are the network model that [`network_model`] builds for the
//! analyzer.

use std::time::Instant;

use mpi::request::scope;
use overlap_instrument::network_model::{ModelPoint, ModelSource, NetworkModel};
use overlap_instrument::schema::{ParamValue, Params};
use serde::Serialize;

use crate::results::{self, Table, REPETITION_HEADERS};
use crate::stats::{measure, BatchTime, Measurement, Stability};
use crate::{Kernel, KernelContext, KernelError};

const TAG: i32 = 91;
const HOST_TAG: i32 = 92;
/// Bytes of a host name sent from the last rank to rank 0 (longer names are cut).
const HOST_BYTES: usize = 256;

pub use crate::options::pingpong::{Options, Pattern};

/// The (initiator, responder) pairs of `pattern` on `ranks` ranks.
pub fn pairs(pattern: Pattern, ranks: i32) -> Vec<(i32, i32)> {
    let half = ranks / 2;
    match pattern {
        Pattern::Single => vec![(0, ranks - 1)],
        Pattern::Multiple => (0..half).map(|i| (i, i + half)).collect(),
        Pattern::Crossing => (0..half)
            .map(|i| {
                if i % 2 == 0 {
                    (i, i + half)
                } else {
                    (i + half, i)
                }
            })
            .collect(),
    }
}

/// What a rank does in a pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Initiator(i32),
    Responder(i32),
    Idle,
}

fn role(rank: i32, pairs: &[(i32, i32)]) -> Role {
    for &(a, b) in pairs {
        if a == rank {
            return Role::Initiator(b);
        }
        if b == rank {
            return Role::Responder(a);
        }
    }
    Role::Idle
}

impl Options {
    /// The patterns that run on `ranks` ranks.
    pub fn patterns(&self, ranks: usize) -> Vec<Pattern> {
        match &self.patterns {
            Some(p) => p.clone(),
            None => Pattern::ALL.into_iter().filter(|p| p.fits(ranks)).collect(),
        }
    }

    /// Why these options cannot run on `ranks` ranks, naming the option.
    pub fn check(&self, ranks: usize) -> Result<(), String> {
        if ranks < 2 {
            return Err(format!(
                "pingpong needs at least 2 ranks (--ranks), got {ranks}"
            ));
        }
        for (flag, v) in [
            ("--min-bytes", self.min_bytes),
            ("--max-bytes", self.max_bytes),
        ] {
            if !v.is_power_of_two() || v > 1 << 30 {
                return Err(format!(
                    "{flag} must be a power of two up to 1 GiB, got {v}"
                ));
            }
        }
        if self.min_bytes > self.max_bytes {
            return Err(format!(
                "--min-bytes ({}) must not exceed --max-bytes ({})",
                self.min_bytes, self.max_bytes
            ));
        }
        if let Some(p) = &self.patterns {
            if p.is_empty() {
                return Err("--patterns names no pattern".into());
            }
            if let Some(bad) = p.iter().find(|p| !p.fits(ranks)) {
                return Err(format!(
                    "--patterns {}: needs an even number of ranks, at least 4 (rank i pairs \
                     with i + N/2), got {ranks}",
                    bad.name()
                ));
            }
        }
        self.stability.check()
    }

    /// The message sizes, smallest first.
    pub fn sizes(&self) -> Vec<usize> {
        std::iter::successors(Some(self.min_bytes), |b| Some(b * 2))
            .take_while(|b| *b <= self.max_bytes)
            .collect()
    }
}

/// One figure: a pattern at a message size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PingpongRow {
    /// The pattern.
    pub pattern: Pattern,
    /// Message size.
    pub bytes: u64,
    /// Pairs ping-ponging at once.
    pub pairs: u32,
    /// One-way time: half the slowest pair's round trip, seconds.
    pub latency_s: f64,
    /// `bytes / latency`.
    pub bandwidth_bytes_per_s: f64,
    /// `pairs * bytes / latency`.
    pub aggregate_bandwidth_bytes_per_s: f64,
    /// How the round trip was measured (seconds per round trip).
    pub round_trip: Measurement,
}

/// What a ping-pong run reports (the same on every rank, hosts only on rank 0).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PingpongResults {
    /// Every figure, by pattern then size.
    pub rows: Vec<PingpongRow>,
    /// Hosts of the first and the last rank (known on rank 0).
    pub single_pair_hosts: Vec<String>,
}

/// The kernel.
#[derive(Clone, Debug, Default)]
pub struct Pingpong {
    /// Its options.
    pub options: Options,
}

/// The ping of `bytes` bytes in `pattern`: never a zero byte, so an unreceived buffer
/// (zeroed) is told apart.
fn payload_byte(j: usize, bytes: usize, pattern: Pattern) -> u8 {
    ((j.wrapping_mul(31) ^ bytes ^ (pattern as usize) << 5) as u8) | 1
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

impl Pingpong {
    /// One batch of `reps` round trips in `role`.
    fn batch(
        ctx: &KernelContext<'_>,
        role: Role,
        reps: u64,
        send: &[u8],
        recv: &mut [u8],
    ) -> BatchTime {
        let comm = &ctx.comm;
        let t0 = Instant::now();
        match role {
            Role::Initiator(peer) => {
                for _ in 0..reps {
                    scope(|s| {
                        let pong = comm.irecv(s, peer, TAG, &mut *recv);
                        let ping = comm.isend(s, peer, TAG, send);
                        comm.wait(ping);
                        comm.wait(pong);
                    });
                }
            }
            Role::Responder(peer) => {
                for _ in 0..reps {
                    scope(|s| {
                        let ping = comm.irecv(s, peer, TAG, &mut *recv);
                        comm.wait(ping);
                    });
                    scope(|s| {
                        let pong = comm.isend(s, peer, TAG, &*recv);
                        comm.wait(pong);
                    });
                }
            }
            Role::Idle => return BatchTime::default(),
        }
        BatchTime {
            total: t0.elapsed().as_secs_f64(),
            baseline: 0.0,
        }
    }

    /// The last rank tells rank 0 its host name (for the network model's source).
    fn single_pair_hosts(ctx: &KernelContext<'_>) -> Vec<String> {
        let comm = &ctx.comm;
        let (rank, last) = (comm.rank(), comm.size() - 1);
        let mine = mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into());
        let mut buf = [0u8; HOST_BYTES];
        if rank == last {
            let n = mine.len().min(HOST_BYTES);
            buf[..n].copy_from_slice(&mine.as_bytes()[..n]);
            comm.send(0, HOST_TAG, &buf[..]);
            Vec::new()
        } else if rank == 0 {
            comm.recv(last, HOST_TAG, &mut buf[..]);
            let end = buf.iter().position(|b| *b == 0).unwrap_or(HOST_BYTES);
            vec![mine, String::from_utf8_lossy(&buf[..end]).into_owned()]
        } else {
            Vec::new()
        }
    }
}

impl Kernel for Pingpong {
    type Output = PingpongResults;

    fn name(&self) -> &'static str {
        "pingpong"
    }

    fn params(&self) -> Params {
        let o = &self.options;
        let mut p = Params::new();
        p.insert("kernel".into(), ParamValue::Text(self.name().into()));
        let names: Vec<&str> = o.patterns.iter().flatten().map(|p| p.name()).collect();
        let names = if names.is_empty() {
            "all that fit".to_string()
        } else {
            names.join(",")
        };
        p.insert("patterns".into(), ParamValue::Text(names));
        p.insert("min_bytes".into(), ParamValue::Int(o.min_bytes as i64));
        p.insert("max_bytes".into(), ParamValue::Int(o.max_bytes as i64));
        p
    }

    fn run(&self, ctx: &KernelContext<'_>) -> Result<PingpongResults, KernelError> {
        let o = &self.options;
        let comm = &ctx.comm;
        let (rank, ranks) = (comm.rank(), comm.size());
        o.check(ranks as usize)
            .map_err(KernelError::InvalidOption)?;
        let single_pair_hosts = Self::single_pair_hosts(ctx);
        let mut send = vec![0u8; o.max_bytes];
        let mut recv = vec![0u8; o.max_bytes];
        let mut rows = Vec::new();
        for pattern in o.patterns(ranks as usize) {
            let pairs = pairs(pattern, ranks);
            let role = role(rank, &pairs);
            for bytes in o.sizes() {
                for (j, b) in send[..bytes].iter_mut().enumerate() {
                    *b = payload_byte(j, bytes, pattern);
                }
                recv[..bytes].fill(0);
                let round_trip = measure(comm, &o.stability, |reps| {
                    Self::batch(ctx, role, reps, &send[..bytes], &mut recv[..bytes])
                });
                // The responder got the ping, the initiator its echo: both hold it now.
                if role != Role::Idle {
                    if let Some(offset) = first_difference(&recv[..bytes], &send[..bytes]) {
                        return Err(KernelError::CorruptMessage {
                            what: format!("pingpong {} {bytes} B", pattern.name()),
                            offset,
                        });
                    }
                }
                let latency_s = round_trip.median_s / 2.0;
                let bandwidth = bytes as f64 / latency_s;
                rows.push(PingpongRow {
                    pattern,
                    bytes: bytes as u64,
                    pairs: pairs.len() as u32,
                    latency_s,
                    bandwidth_bytes_per_s: bandwidth,
                    aggregate_bandwidth_bytes_per_s: bandwidth * pairs.len() as f64,
                    round_trip,
                });
            }
        }
        Ok(PingpongResults {
            rows,
            single_pair_hosts,
        })
    }
}

/// The results as a table.
pub fn table(r: &PingpongResults, s: &Stability) -> String {
    let mut headers = vec![
        "pattern",
        "bytes",
        "pairs",
        "latency",
        "bandwidth",
        "aggregate",
    ];
    headers.extend(REPETITION_HEADERS);
    let mut t = Table::new(&headers);
    for row in &r.rows {
        let mut cells = vec![
            row.pattern.name().to_string(),
            results::bytes(row.bytes),
            row.pairs.to_string(),
            results::seconds(row.latency_s),
            results::rate(row.bandwidth_bytes_per_s),
            results::rate(row.aggregate_bandwidth_bytes_per_s),
        ];
        cells.extend(results::repetition_cells(&row.round_trip));
        t.row(cells);
    }
    let measured: Vec<&Measurement> = r.rows.iter().map(|row| &row.round_trip).collect();
    format!(
        "{}latency: half the slowest pair's round trip; bandwidth: bytes / latency per pair; \
         aggregate: all pairs together\n{}\n",
        t.render(),
        results::repetition_note(s, &measured)
    )
}

/// The network model of the `single` figures, or `None` when `single` did not run.
pub fn network_model(r: &PingpongResults, ranks: u32) -> Option<NetworkModel> {
    let points: Vec<ModelPoint> = r
        .rows
        .iter()
        .filter(|row| row.pattern == Pattern::Single)
        .map(|row| ModelPoint {
            bytes: row.bytes,
            latency_ns: row.latency_s * 1e9,
            bandwidth_bytes_per_s: row.bandwidth_bytes_per_s,
        })
        .collect();
    let source = ModelSource {
        kernel: "pingpong".into(),
        pattern: Pattern::Single.name().into(),
        ranks,
        hosts: r.single_pair_hosts.clone(),
    };
    NetworkModel::new(source, points).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn pairs_follow_the_suite() {
        assert_eq!(pairs(Pattern::Single, 4), vec![(0, 3)]);
        assert_eq!(pairs(Pattern::Multiple, 6), vec![(0, 3), (1, 4), (2, 5)]);
        assert_eq!(pairs(Pattern::Crossing, 6), vec![(0, 3), (4, 1), (2, 5)]);
        let p = pairs(Pattern::Crossing, 4);
        assert_eq!(role(1, &p), Role::Responder(3));
        assert_eq!(role(3, &p), Role::Initiator(1));
        assert_eq!(role(1, &pairs(Pattern::Single, 4)), Role::Idle);
    }

    #[test]
    fn patterns_and_sizes_follow_the_rank_count() {
        let o = Options::default();
        assert_eq!(o.patterns(2), vec![Pattern::Single]);
        assert_eq!(o.patterns(3), vec![Pattern::Single]);
        assert_eq!(o.patterns(4), Pattern::ALL.to_vec());
        let sizes = o.sizes();
        assert_eq!(
            (sizes[0], sizes[sizes.len() - 1], sizes.len()),
            (8, 4 << 20, 20)
        );
        let o = Options {
            patterns: Some(vec![Pattern::Multiple]),
            ..Options::default()
        };
        let err = o.check(2).unwrap_err();
        assert!(
            err.contains("--patterns multiple: needs an even number"),
            "{err}"
        );
        assert!(o.check(4).is_ok());
        let o = Options {
            min_bytes: 12,
            ..Options::default()
        };
        assert!(o
            .check(2)
            .unwrap_err()
            .contains("--min-bytes must be a power of two"));
        assert!(Options::default()
            .check(1)
            .unwrap_err()
            .contains("at least 2 ranks"));
    }

    #[test]
    fn payloads_are_never_zero_and_differ_by_size() {
        assert!((0..4096).all(|j| payload_byte(j, 4096, Pattern::Single) != 0));
        let a: Vec<u8> = (0..64)
            .map(|j| payload_byte(j, 64, Pattern::Single))
            .collect();
        let b: Vec<u8> = (0..64)
            .map(|j| payload_byte(j, 128, Pattern::Single))
            .collect();
        assert_ne!(a, b);
        assert_eq!(first_difference(&a, &a), None);
        assert!(first_difference(&a, &b).is_some());
    }
}
