//! Synchronisation overhead (after the EPCC coarray micro-benchmark suite, in MPI): the
//! time of a delay loop followed by a synchronisation, less the time of the delay loop
//! alone, per synchronisation.
//!
//! Patterns (a point-to-point synchronisation with a set of neighbours is a zero-byte
//! `MPI_Irecv` from each, a zero-byte `MPI_Isend` to each, and one `MPI_Waitall`):
//!
//! - `barrier`: `MPI_Barrier`.
//! - `pairwise`: rank `i < N/2` with `i + N/2` (with an odd count the last rank has no
//!   partner and only runs the delay loop).
//! - `ring ±k`: neighbours `i ± 1 .. i ± k`, periodic.
//! - `random ±k`: a ring of `±k` on a random permutation of the ranks (the same on every
//!   rank, from `--seed`), so every neighbour relation is mutual and all messages match.
//! - `grid3d`: the up and down neighbours in each dimension of a periodic 3-D grid whose
//!   dimensions come from `MPI_Dims_create`, the pattern of the `halo3d` kernel.
//!
//! `k` runs from 1 to `min(max_neighbours / 2, N / 2)`. Neighbour sets never hold the
//! rank itself or a rank twice (on small grids and rings `+d` and `-d` can coincide).
//! The overhead is `max_r (T_sync,r - T_delay,r) / reps`: each rank's own delay loops
//! cancel its own speed, and the slowest rank sets the figure, the median over samples
//! (see [`crate::stats`]); it can come out slightly negative when the synchronisation
//! costs less than the noise.

use std::time::Instant;

use mpi::request::scope;
use overlap_instrument::schema::{ParamValue, Params};
use serde::Serialize;

use crate::results::{self, Table, REPETITION_HEADERS};
use crate::stats::{measure, BatchTime, Measurement, Stability};
use crate::{access, Kernel, KernelContext, KernelError};

const TAG: i32 = 93;

pub use crate::options::sync::{Options, SyncKind};

/// One synchronisation pattern to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SyncPattern {
    /// Its kind.
    pub kind: SyncKind,
    /// For ring and random: neighbours up to this many places away on each side.
    pub hops: usize,
}

impl SyncPattern {
    /// Its label in the table (`ring ±2`).
    pub fn label(&self) -> String {
        match self.kind {
            SyncKind::Ring | SyncKind::Random => format!("{} ±{}", self.kind.name(), self.hops),
            _ => self.kind.name().to_string(),
        }
    }
}

impl Options {
    /// Why these options cannot run on `ranks` ranks, naming the option.
    pub fn check(&self, ranks: usize) -> Result<(), String> {
        if ranks < 2 {
            return Err(format!(
                "sync needs at least 2 ranks (--ranks), got {ranks}"
            ));
        }
        if self.max_neighbours < 2 {
            return Err(format!(
                "--max-neighbours must be at least 2, got {}",
                self.max_neighbours
            ));
        }
        if !(self.delay_us > 0.0 && self.delay_us <= 1e6) {
            return Err(format!(
                "--delay-us must be above 0 and at most 1000000, got {}",
                self.delay_us
            ));
        }
        if self.kinds.as_ref().is_some_and(Vec::is_empty) {
            return Err("--kinds names no kind".into());
        }
        self.stability.check()
    }

    /// The patterns to measure on `ranks` ranks, in order.
    pub fn patterns(&self, ranks: usize) -> Vec<SyncPattern> {
        let kinds = self.kinds.clone().unwrap_or_else(|| SyncKind::ALL.to_vec());
        let max_hops = (self.max_neighbours / 2).min(ranks / 2).max(1);
        let mut out = Vec::new();
        for kind in kinds {
            match kind {
                SyncKind::Ring | SyncKind::Random => {
                    out.extend((1..=max_hops).map(|hops| SyncPattern { kind, hops }));
                }
                _ => out.push(SyncPattern { kind, hops: 0 }),
            }
        }
        out
    }
}

/// `MPI_Dims_create(ranks, 3)`: a balanced 3-D grid, largest dimension first.
pub fn dims_3d(ranks: i32) -> [i32; 3] {
    let mut dims = [0i32; 3];
    // SAFETY: MPI_Dims_create only writes the 3 entries of `dims`; it needs MPI to be
    // initialised, which every kernel runs under.
    unsafe { mpi::ffi::MPI_Dims_create(ranks, 3, dims.as_mut_ptr()) };
    dims
}

/// Coordinates of `rank` on a grid of `dims`, row-major as `MPI_Cart_create` numbers
/// them (the last dimension varies fastest).
pub fn coords(rank: i32, dims: [i32; 3]) -> [i32; 3] {
    [
        rank / (dims[1] * dims[2]),
        (rank / dims[2]) % dims[1],
        rank % dims[2],
    ]
}

/// The rank at `c` (taken modulo `dims`: the grid is periodic).
pub fn rank_at(c: [i32; 3], dims: [i32; 3]) -> i32 {
    let w = |i: usize| c[i].rem_euclid(dims[i]);
    (w(0) * dims[1] + w(1)) * dims[2] + w(2)
}

/// A permutation of `0..n` from `seed` (splitmix64 driving Fisher-Yates): the same on
/// every rank.
pub fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
    p
}

/// The neighbours of `rank` in `pattern` (sorted, without itself or repeats); empty for
/// the barrier.
pub fn neighbours(pattern: SyncPattern, rank: i32, ranks: i32, seed: u64) -> Vec<i32> {
    let ring = |position: i32, hops: usize| -> Vec<i32> {
        (1..=hops as i32)
            .flat_map(|d| [position + d, position - d])
            .map(|p| p.rem_euclid(ranks))
            .collect()
    };
    let mut n: Vec<i32> = match pattern.kind {
        SyncKind::Barrier => Vec::new(),
        SyncKind::Pairwise => {
            let half = ranks / 2;
            if rank < half {
                vec![rank + half]
            } else if rank < 2 * half {
                vec![rank - half]
            } else {
                Vec::new()
            }
        }
        SyncKind::Ring => ring(rank, pattern.hops),
        SyncKind::Random => {
            let perm = permutation(ranks as usize, seed);
            let position = perm.iter().position(|&r| r == rank as usize).unwrap_or(0);
            ring(position as i32, pattern.hops)
                .into_iter()
                .map(|p| perm[p as usize] as i32)
                .collect()
        }
        SyncKind::Grid3d => {
            let dims = dims_3d(ranks);
            let c = coords(rank, dims);
            (0..3)
                .flat_map(|d| {
                    [-1, 1].map(|step| {
                        let mut n = c;
                        n[d] += step;
                        rank_at(n, dims)
                    })
                })
                .collect()
        }
    };
    n.retain(|&r| r != rank);
    n.sort_unstable();
    n.dedup();
    n
}

/// One figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SyncRow {
    /// The pattern.
    pub pattern: SyncPattern,
    /// Its label.
    pub label: String,
    /// Most neighbours any rank synchronises with.
    pub neighbours: usize,
    /// Overhead per synchronisation, seconds.
    pub overhead_s: f64,
    /// How it was measured (seconds per delay + synchronisation, less the delay).
    pub overhead: Measurement,
}

/// What a sync run reports (the same on every rank).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SyncResults {
    /// The delay loop's length on rank 0, seconds (each rank calibrates its own).
    pub delay_s: f64,
    /// The 3-D grid's dimensions.
    pub grid: [i32; 3],
    /// Every figure.
    pub rows: Vec<SyncRow>,
}

/// The kernel.
#[derive(Clone, Debug, Default)]
pub struct Sync {
    /// Its options.
    pub options: Options,
}

/// `iters` dependent multiply-adds: a delay the compiler cannot remove.
fn delay(iters: u64) -> f64 {
    let mut x = 1.0f64;
    for _ in 0..iters {
        x = std::hint::black_box(x.mul_add(0.999_999_9, 1e-7));
    }
    x
}

/// Iterations of [`delay`] that last about `us` microseconds on this rank.
fn calibrate_delay(us: f64) -> u64 {
    let probe = 200_000u64;
    delay(probe / 10); // warm up
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        delay(probe);
        best = best.min(t.elapsed().as_secs_f64());
    }
    ((probe as f64 * us * 1e-6 / best).round() as u64).max(1)
}

impl Sync {
    fn synchronise(ctx: &KernelContext<'_>, pattern: SyncPattern, with: &[i32]) {
        let comm = &ctx.comm;
        if pattern.kind == SyncKind::Barrier {
            comm.barrier();
            return;
        }
        let mut inbox = vec![[0u8; 0]; with.len()];
        scope(|s| {
            let mut requests = Vec::with_capacity(2 * with.len());
            for (&peer, buf) in with.iter().zip(inbox.iter_mut()) {
                requests.push(comm.irecv(s, peer, TAG, &mut buf[..]));
            }
            for &peer in with {
                requests.push(comm.isend(s, peer, TAG, &[0u8; 0][..]));
            }
            comm.wait_all(&mut requests);
        });
    }
}

impl Kernel for Sync {
    type Output = SyncResults;

    fn name(&self) -> &'static str {
        "sync"
    }

    fn params(&self) -> Params {
        let o = &self.options;
        let mut p = Params::new();
        p.insert("kernel".into(), ParamValue::Text(self.name().into()));
        p.insert(
            "max_neighbours".into(),
            ParamValue::Int(o.max_neighbours as i64),
        );
        p.insert("delay_us".into(), ParamValue::Float(o.delay_us));
        p.insert("seed".into(), ParamValue::Int(o.seed as i64));
        p
    }

    fn run(&self, ctx: &KernelContext<'_>) -> Result<SyncResults, KernelError> {
        let o = &self.options;
        let comm = &ctx.comm;
        let rec = ctx.recorder;
        let (rank, ranks) = (comm.rank(), comm.size());
        o.check(ranks as usize)
            .map_err(KernelError::InvalidOption)?;
        // The delay works in registers: its spans touch no buffer (said, not unknown).
        let touches_nothing = access(&[], &[])?;
        let iters = calibrate_delay(o.delay_us);
        let delay_s = {
            let t = Instant::now();
            delay(iters);
            t.elapsed().as_secs_f64()
        };
        let mut rows = Vec::new();
        for pattern in o.patterns(ranks as usize) {
            let with = neighbours(pattern, rank, ranks, o.seed);
            let most = (0..ranks)
                .map(|r| neighbours(pattern, r, ranks, o.seed).len())
                .max()
                .unwrap_or(0);
            let overhead = measure(comm, &o.stability, |reps| {
                let t0 = Instant::now();
                for _ in 0..reps {
                    let _g = rec.compute_with("delay", touches_nothing);
                    delay(iters);
                }
                let baseline = t0.elapsed().as_secs_f64();
                comm.barrier();
                let t1 = Instant::now();
                for _ in 0..reps {
                    {
                        let _g = rec.compute_with("delay", touches_nothing);
                        delay(iters);
                    }
                    Self::synchronise(ctx, pattern, &with);
                }
                BatchTime {
                    total: t1.elapsed().as_secs_f64(),
                    baseline,
                }
            });
            rows.push(SyncRow {
                pattern,
                label: pattern.label(),
                neighbours: if pattern.kind == SyncKind::Barrier {
                    ranks as usize - 1
                } else {
                    most
                },
                overhead_s: overhead.median_s,
                overhead,
            });
        }
        Ok(SyncResults {
            delay_s,
            grid: dims_3d(ranks),
            rows,
        })
    }
}

/// The results as a table.
pub fn table(r: &SyncResults, s: &Stability) -> String {
    let mut headers = vec!["pattern", "neighbours", "overhead"];
    headers.extend(REPETITION_HEADERS);
    let mut t = Table::new(&headers);
    for row in &r.rows {
        let mut cells = vec![
            row.label.clone(),
            row.neighbours.to_string(),
            results::seconds(row.overhead_s),
        ];
        cells.extend(results::repetition_cells(&row.overhead));
        t.row(cells);
    }
    let measured: Vec<&Measurement> = r.rows.iter().map(|row| &row.overhead).collect();
    format!(
        "{}overhead: (delay + sync) - (delay alone) per synchronisation, slowest rank; delay \
         loop {}; 3-D grid {}x{}x{}\n{}\n",
        t.render(),
        results::seconds(r.delay_s),
        r.grid[0],
        r.grid[1],
        r.grid[2],
        results::repetition_note(s, &measured)
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn pattern(kind: SyncKind, hops: usize) -> SyncPattern {
        SyncPattern { kind, hops }
    }

    #[test]
    fn neighbour_relations_are_mutual() {
        for ranks in [2, 3, 4, 7, 8] {
            for p in Options::default().patterns(ranks as usize) {
                if p.kind == SyncKind::Grid3d {
                    continue; // needs MPI for the dimensions; see grid_neighbours
                }
                for r in 0..ranks {
                    for n in neighbours(p, r, ranks, 7) {
                        assert!(
                            neighbours(p, n, ranks, 7).contains(&r),
                            "{p:?} on {ranks}: {r} -> {n} not mutual"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn rings_and_pairs_as_in_the_suite() {
        assert_eq!(
            neighbours(pattern(SyncKind::Ring, 2), 0, 8, 1),
            vec![1, 2, 6, 7]
        );
        // On 4 ranks, +2 and -2 are the same rank: counted once.
        assert_eq!(
            neighbours(pattern(SyncKind::Ring, 2), 0, 4, 1),
            vec![1, 2, 3]
        );
        assert_eq!(neighbours(pattern(SyncKind::Ring, 1), 1, 2, 1), vec![0]);
        assert_eq!(neighbours(pattern(SyncKind::Pairwise, 0), 1, 4, 1), vec![3]);
        assert!(neighbours(pattern(SyncKind::Pairwise, 0), 2, 3, 1).is_empty());
        let hops: Vec<usize> = Options::default()
            .patterns(4)
            .iter()
            .filter(|p| p.kind == SyncKind::Ring)
            .map(|p| p.hops)
            .collect();
        assert_eq!(hops, vec![1, 2]);
        assert_eq!(
            Options::default()
                .patterns(64)
                .iter()
                .filter(|p| p.kind == SyncKind::Random)
                .count(),
            6,
            "max_neighbours 12: up to ±6"
        );
    }

    #[test]
    fn permutations_are_seeded_permutations() {
        let p = permutation(10, 3);
        let mut sorted = p.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
        assert_eq!(p, permutation(10, 3));
        assert_ne!(p, permutation(10, 4));
    }

    #[test]
    fn grid_coordinates_round_trip() {
        let dims = [3, 2, 2];
        for r in 0..12 {
            assert_eq!(rank_at(coords(r, dims), dims), r);
        }
        assert_eq!(rank_at([-1, 0, 0], dims), rank_at([2, 0, 0], dims));
        assert_eq!(coords(1, dims), [0, 0, 1]);
    }

    #[test]
    fn bad_options_name_the_flag() {
        let o = Options {
            delay_us: 0.0,
            ..Options::default()
        };
        assert!(o.check(2).unwrap_err().contains("--delay-us"));
        assert!(Options::default()
            .check(1)
            .unwrap_err()
            .contains("at least 2 ranks"));
        let o = Options {
            max_neighbours: 1,
            ..Options::default()
        };
        assert!(o.check(4).unwrap_err().contains("--max-neighbours"));
    }

    #[test]
    fn the_delay_loop_scales() {
        let iters = calibrate_delay(50.0);
        assert!(iters > 1);
        assert!(delay(10).is_finite());
    }
}
