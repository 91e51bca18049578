//! 3-D halo swaps (after the EPCC coarray micro-benchmark suite, in MPI): every rank
//! holds an `e x e x e` block of a periodic 3-D array, with a halo one cell deep, on a
//! periodic 3-D grid of ranks whose dimensions come from `MPI_Dims_create`.
//!
//! One swap packs the six faces, posts six `MPI_Irecv` (one per halo face) and six
//! `MPI_Isend`, waits for all twelve with one `MPI_Waitall`, and unpacks the received
//! faces into the halo. The tag is the direction of travel, so that the two messages
//! between ranks that are neighbours on both sides (a grid dimension of 2) stay apart;
//! on a dimension of 1 a rank swaps with itself. The time per swap is the slowest
//! rank's, median over samples (see [`crate::stats`]); bandwidth is the bytes one rank
//! sends per swap (`6 * e^2 * 8`) over that time.
//!
//! Each cell holds its global index, so after the swaps every halo cell is checked
//! against the cell it mirrors, with the grid's periodic wrap; the halo is filled with
//! NaN before the first swap of each size.

use std::time::Instant;

use mpi::request::scope;
use overlap_instrument::recorder::BufferAccess;
use overlap_instrument::schema::{ParamValue, Params};
use serde::Serialize;

use crate::results::{self, Table, REPETITION_HEADERS};
use crate::stats::{measure, BatchTime, Measurement, Stability};
use crate::sync::{coords, dims_3d, rank_at};
use crate::{access, Kernel, KernelContext, KernelError};

/// Tags `TAG_BASE + direction`, direction `2 * dim + (0: down, 1: up)`.
const TAG_BASE: i32 = 300;

pub use crate::options::halo3d::Options;

impl Options {
    /// Why these options cannot run, naming the option.
    pub fn check(&self) -> Result<(), String> {
        if self.sizes.is_empty() {
            return Err("--sizes names no size".into());
        }
        if let Some(bad) = self.sizes.iter().find(|&&e| !(1..=1024).contains(&e)) {
            return Err(format!(
                "--sizes: {bad} is not an edge length from 1 to 1024 cells"
            ));
        }
        self.stability.check()
    }
}

/// A rank's block with its halo: `(e + 2)^3` cells, x slowest, z fastest.
struct Block {
    e: usize,
    cells: Vec<f64>,
}

/// Which cells of a block a face is: `dim`, and the layer along it.
#[derive(Clone, Copy)]
struct Face {
    dim: usize,
    layer: usize,
}

/// Index of cell `c` in a block of edge `e` (halo included).
fn index(e: usize, c: [usize; 3]) -> usize {
    let s = e + 2;
    (c[0] * s + c[1]) * s + c[2]
}

/// Visits the `e^2` cells of `face` (the two other coordinates in 1..=e), in order.
fn for_face(e: usize, face: Face, mut f: impl FnMut(usize)) {
    let (a, b) = match face.dim {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    for u in 1..=e {
        for v in 1..=e {
            let mut c = [0; 3];
            c[face.dim] = face.layer;
            c[a] = u;
            c[b] = v;
            f(index(e, c));
        }
    }
}

impl Block {
    fn pack(&self, face: Face, out: &mut [f64]) {
        let mut k = 0;
        for_face(self.e, face, |i| {
            out[k] = self.cells[i];
            k += 1;
        });
    }

    fn unpack(&mut self, face: Face, from: &[f64]) {
        let cells = &mut self.cells;
        let mut k = 0;
        for_face(self.e, face, |i| {
            cells[i] = from[k];
            k += 1;
        });
    }
}

/// The direction `2 * dim + up`: the face sent that way, and the halo face filled from
/// that side.
fn send_face(e: usize, dir: usize) -> Face {
    let dim = dir / 2;
    Face {
        dim,
        layer: if dir % 2 == 1 { e } else { 1 },
    }
}

fn halo_face(e: usize, dir: usize) -> Face {
    let dim = dir / 2;
    Face {
        dim,
        layer: if dir % 2 == 1 { e + 1 } else { 0 },
    }
}

/// One figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HaloRow {
    /// Local block edge, cells.
    pub edge: usize,
    /// Bytes one rank sends per swap.
    pub bytes_per_rank: u64,
    /// Time per swap (slowest rank), seconds.
    pub swap_s: f64,
    /// `bytes_per_rank / swap_s`.
    pub bandwidth_bytes_per_s: f64,
    /// All ranks' bytes per swap over the swap time.
    pub aggregate_bandwidth_bytes_per_s: f64,
    /// How it was measured (seconds per swap).
    pub swap: Measurement,
}

/// What a halo run reports (the same on every rank).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HaloResults {
    /// The grid of ranks.
    pub grid: [i32; 3],
    /// Every figure.
    pub rows: Vec<HaloRow>,
}

/// The kernel.
#[derive(Clone, Debug, Default)]
pub struct Halo3d {
    /// Its options.
    pub options: Options,
}

/// Where this rank sits and who its neighbours are, per direction.
struct Grid {
    dims: [i32; 3],
    at: [i32; 3],
    neighbour: [i32; 6],
}

impl Grid {
    fn new(rank: i32, ranks: i32) -> Grid {
        Grid::with_dims(rank, dims_3d(ranks))
    }

    /// `rank`'s place on a periodic grid of `dims` and its six neighbours (-x, +x, -y,
    /// +y, -z, +z).
    fn with_dims(rank: i32, dims: [i32; 3]) -> Grid {
        let at = coords(rank, dims);
        let neighbour = std::array::from_fn(|dir| {
            let mut c = at;
            c[dir / 2] += if dir % 2 == 1 { 1 } else { -1 };
            rank_at(c, dims)
        });
        Grid {
            dims,
            at,
            neighbour,
        }
    }

    /// The value a cell holds: its global index (exact in f64 for any grid that fits).
    fn value(&self, e: usize, global: [usize; 3]) -> f64 {
        let extent = |d: usize| self.dims[d] as usize * e;
        ((global[0] * extent(1) + global[1]) * extent(2) + global[2]) as f64
    }

    /// The global cell that local cell `c` (halo included) mirrors.
    fn global(&self, e: usize, c: [usize; 3]) -> [usize; 3] {
        std::array::from_fn(|d| {
            let extent = self.dims[d] as i64 * e as i64;
            let g = self.at[d] as i64 * e as i64 + c[d] as i64 - 1;
            g.rem_euclid(extent) as usize
        })
    }
}

/// Names of the send buffers (the faces packed for each direction: -x, +x, -y, +y, -z,
/// +z) and of the receive buffers (the halo on each side), as compute spans name them.
const FACES: [&str; 6] = [
    "face_xm", "face_xp", "face_ym", "face_yp", "face_zm", "face_zp",
];
const HALOS: [&str; 6] = [
    "halo_xm", "halo_xp", "halo_ym", "halo_yp", "halo_zm", "halo_zp",
];

/// What the swap's compute spans read and write: pack reads the block and writes the
/// six faces; unpack reads the six halos and writes the block.
struct SwapBuffers {
    pack: BufferAccess,
    unpack: BufferAccess,
}

impl SwapBuffers {
    fn new() -> Result<SwapBuffers, KernelError> {
        Ok(SwapBuffers {
            pack: access(&["block"], &FACES)?,
            unpack: access(&HALOS, &["block"])?,
        })
    }
}

impl Halo3d {
    fn swap(
        ctx: &KernelContext<'_>,
        grid: &Grid,
        b: &mut Block,
        out: &mut [Vec<f64>; 6],
        inn: &mut [Vec<f64>; 6],
        buffers: &SwapBuffers,
    ) {
        let comm = &ctx.comm;
        let e = b.e;
        {
            let _g = ctx.recorder.compute_with("pack", buffers.pack);
            for (dir, buf) in out.iter_mut().enumerate() {
                b.pack(send_face(e, dir), buf);
            }
        }
        scope(|s| {
            let mut requests = Vec::with_capacity(12);
            // The halo on side `dir` is filled by the neighbour there, which sent it
            // travelling the opposite way.
            for (dir, buf) in inn.iter_mut().enumerate() {
                let travelling = dir ^ 1;
                let tag = TAG_BASE + travelling as i32;
                requests.push(comm.irecv(s, grid.neighbour[dir], tag, &mut buf[..]));
            }
            for (dir, buf) in out.iter().enumerate() {
                let tag = TAG_BASE + dir as i32;
                requests.push(comm.isend(s, grid.neighbour[dir], tag, &buf[..]));
            }
            comm.wait_all(&mut requests);
        });
        let _g = ctx.recorder.compute_with("unpack", buffers.unpack);
        for (dir, buf) in inn.iter().enumerate() {
            b.unpack(halo_face(e, dir), buf);
        }
    }

    /// Every face halo cell against the global cell it mirrors.
    fn verify(grid: &Grid, b: &Block) -> Result<(), KernelError> {
        let e = b.e;
        for dir in 0..6 {
            let mut bad = None;
            for_face(e, halo_face(e, dir), |i| {
                if bad.is_some() {
                    return;
                }
                let s = e + 2;
                let c = [i / (s * s), (i / s) % s, i % s];
                let global = grid.global(e, c);
                let expected = grid.value(e, global);
                if b.cells[i].to_bits() != expected.to_bits() {
                    bad = Some(KernelError::WrongHalo {
                        edge: e,
                        x: c[0],
                        y: c[1],
                        z: c[2],
                        got: b.cells[i],
                        expected,
                        global,
                    });
                }
            });
            if let Some(err) = bad {
                return Err(err);
            }
        }
        Ok(())
    }

    /// A block of edge `e` holding its global indices, the halo NaN.
    fn block(grid: &Grid, e: usize) -> Block {
        let s = e + 2;
        let mut b = Block {
            e,
            cells: vec![f64::NAN; s * s * s],
        };
        for x in 1..=e {
            for y in 1..=e {
                for z in 1..=e {
                    let i = index(e, [x, y, z]);
                    b.cells[i] = grid.value(e, grid.global(e, [x, y, z]));
                }
            }
        }
        b
    }
}

impl Kernel for Halo3d {
    type Output = HaloResults;

    fn name(&self) -> &'static str {
        "halo3d"
    }

    fn params(&self) -> Params {
        let mut p = Params::new();
        p.insert("kernel".into(), ParamValue::Text(self.name().into()));
        let sizes: Vec<String> = self.options.sizes.iter().map(usize::to_string).collect();
        p.insert("sizes".into(), ParamValue::Text(sizes.join(",")));
        p
    }

    fn run(&self, ctx: &KernelContext<'_>) -> Result<HaloResults, KernelError> {
        let o = &self.options;
        o.check().map_err(KernelError::InvalidOption)?;
        let comm = &ctx.comm;
        let (rank, ranks) = (comm.rank(), comm.size());
        let grid = Grid::new(rank, ranks);
        let buffers = SwapBuffers::new()?;
        let mut rows = Vec::new();
        for &e in &o.sizes {
            let mut b = Self::block(&grid, e);
            let mut out: [Vec<f64>; 6] = std::array::from_fn(|_| vec![0.0; e * e]);
            let mut inn: [Vec<f64>; 6] = std::array::from_fn(|_| vec![0.0; e * e]);
            // Each size allocates its own buffers: bound again, the names move with them.
            ctx.recorder.bind_vec("block", &b.cells);
            for dir in 0..6 {
                ctx.recorder.bind_vec(FACES[dir], &out[dir]);
                ctx.recorder.bind_vec(HALOS[dir], &inn[dir]);
            }
            let swap = measure(comm, &o.stability, |reps| {
                let t0 = Instant::now();
                for _ in 0..reps {
                    Self::swap(ctx, &grid, &mut b, &mut out, &mut inn, &buffers);
                }
                BatchTime {
                    total: t0.elapsed().as_secs_f64(),
                    baseline: 0.0,
                }
            });
            Self::verify(&grid, &b)?;
            let bytes_per_rank = (6 * e * e * 8) as u64;
            let bandwidth = bytes_per_rank as f64 / swap.median_s;
            rows.push(HaloRow {
                edge: e,
                bytes_per_rank,
                swap_s: swap.median_s,
                bandwidth_bytes_per_s: bandwidth,
                aggregate_bandwidth_bytes_per_s: bandwidth * ranks as f64,
                swap,
            });
        }
        Ok(HaloResults {
            grid: grid.dims,
            rows,
        })
    }
}

/// The results as a table.
pub fn table(r: &HaloResults, s: &Stability) -> String {
    let mut headers = vec!["edge", "bytes/rank", "swap", "bandwidth", "aggregate"];
    headers.extend(REPETITION_HEADERS);
    let mut t = Table::new(&headers);
    for row in &r.rows {
        let mut cells = vec![
            format!("{}^3", row.edge),
            results::bytes(row.bytes_per_rank),
            results::seconds(row.swap_s),
            results::rate(row.bandwidth_bytes_per_s),
            results::rate(row.aggregate_bandwidth_bytes_per_s),
        ];
        cells.extend(results::repetition_cells(&row.swap));
        t.row(cells);
    }
    let measured: Vec<&Measurement> = r.rows.iter().map(|row| &row.swap).collect();
    format!(
        "{}swap: pack 6 faces, 6 Irecv + 6 Isend, Waitall, unpack (slowest rank); bandwidth: \
         bytes one rank sends per swap / swap time; grid {}x{}x{}, periodic\n{}\n",
        t.render(),
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

    fn grid(dims: [i32; 3], rank: i32) -> Grid {
        Grid::with_dims(rank, dims)
    }

    /// The swap done by hand on a whole grid of blocks: each halo face copied from the
    /// neighbour's packed face, as the messages carry it.
    #[test]
    fn faces_carried_between_blocks_fill_the_halo_with_the_right_cells() {
        let dims = [2, 2, 1];
        let e = 3;
        let grids: Vec<Grid> = (0..4).map(|r| grid(dims, r)).collect();
        let mut blocks: Vec<Block> = grids.iter().map(|g| Halo3d::block(g, e)).collect();
        for (r, g) in grids.iter().enumerate() {
            assert!(Halo3d::verify(g, &blocks[r]).is_err(), "NaN halo must fail");
        }
        for (r, g) in grids.iter().enumerate() {
            for dir in 0..6 {
                // Neighbour on side `dir` sent its face travelling `dir ^ 1`.
                let from = g.neighbour[dir] as usize;
                let mut buf = vec![0.0; e * e];
                blocks[from].pack(send_face(e, dir ^ 1), &mut buf);
                blocks[r].unpack(halo_face(e, dir), &buf);
            }
        }
        for (r, g) in grids.iter().enumerate() {
            Halo3d::verify(g, &blocks[r]).expect("every halo cell right");
        }
        // One wrong cell is named.
        let i = index(e, [0, 2, 2]);
        blocks[1].cells[i] += 1.0;
        let err = Halo3d::verify(&grids[1], &blocks[1]).expect_err("corrupt");
        assert!(err.to_string().contains("halo cell (0, 2, 2)"), "{err}");
    }

    #[test]
    fn values_are_global_indices() {
        let g = grid([2, 1, 1], 1);
        // Local (1,1,1) of rank 1 is global (e, 0, 0) on a 2e x e x e array.
        assert_eq!(g.global(4, [1, 1, 1]), [4, 0, 0]);
        assert_eq!(g.value(4, [4, 0, 0]), (4 * 4 * 4) as f64);
        // Its low x halo mirrors global (e-1, ..); its high x halo wraps to 0.
        assert_eq!(g.global(4, [0, 1, 1]), [3, 0, 0]);
        assert_eq!(g.global(4, [5, 1, 1]), [0, 0, 0]);
    }

    #[test]
    fn sizes_are_checked() {
        let o = Options {
            sizes: vec![0],
            ..Options::default()
        };
        assert!(o.check().unwrap_err().contains("--sizes: 0"));
        assert!(Options::default().check().is_ok());
    }
}
